"""`make demo` is the main job: its exact code path (`morl-robot demo`, the console script's own
parser building every sub-command) runs here on a tiny budget, so CI fails when the demo breaks."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_demo_runs_end_to_end_on_a_tiny_budget(tmp_path, domain_id):
    pytest.importorskip("rclpy")
    from morl_robot.session.processes import ros_env

    out = tmp_path / "demo"
    # the console script `make demo` runs (the venv's morl-robot), else the same CLI module
    script = Path(sys.executable).with_name("morl-robot")
    cli = [str(script)] if script.is_file() else [sys.executable, "-m", "morl_robot.cli"]
    # docs/howto/reproduce_result.md's `morl-robot demo --seed 0 --out …` on a tiny budget (its fence is
    # parse-only: this test runs it, with checks of what it wrote, instead of the docs harness)
    # the recipe's behaviour cloning (3 000 updates when the 300 steps are in) cut to 10 as in the docs
    # harness: what is checked is what the demo wrote, not what the clone learned
    demos = "learner.training.demonstrations"
    cmd = [*cli, "demo", "--seed", "0", "--steps", "300", "--eval-episodes", "2",
           "--episodes", "1", "--out", str(out), "--no-progress", "--domain-id", str(domain_id),
           "--set", f"{demos}.pretrain_updates=10", "--set", f"{demos}.critic_warmup_updates=2"]
    done = subprocess.run(cmd, env={**ros_env(domain_id), **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}},
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-4000:]
    # 1. training left a run directory with the initial and the final policy snapshots
    snapshots = sorted(p.name for p in (out / "snapshots").glob("policy_*.onnx"))
    assert snapshots[0] == "policy_00000000.onnx" and len(snapshots) >= 2, snapshots
    # 2. the before/after report, in the protocol's EVAL format, and the evaluation curve
    report = json.loads((out / "demo_report.json").read_text())
    for side in ("before", "after"):
        ev = report[side]
        assert ev["episodes"] == 2 and set(ev["objectives"]) == {"task", "wrist_force"}
        assert {"success_rate", "terminations", "peak_force", "force"} <= set(ev)
        assert ev["seeds"] == report["before"]["seeds"]  # same fixed seeds before and after
        # force as a result: the per-episode peak-force distribution and the rates above the levels
        force = ev["force"]
        assert force["episodes"] == 2 and set(force["peak"]) == {"p50", "p90", "p99", "max"}
        assert all(math.isfinite(v) for p in ("p50", "p90", "p99") for v in force["peak"][p].values())
        assert math.isfinite(force["peak"]["max"])
        for level in ("threshold", "collision"):
            b = force[level]
            assert b["episodes"] == 2 and math.isfinite(b["level"])
            assert 0.0 <= b["ci_low"] <= b["rate"] <= b["ci_high"] <= 1.0
    assert report["before_env_steps"] == 0 and report["after_env_steps"] >= 300
    assert (out / "eval_curve.csv").is_file() and (out / "plots" / "eval_curve.png").stat().st_size > 1000
    assert "before (initial policy)" in done.stdout and "success rate" in done.stdout
    for row in ("peak force p50 (N)", "peak force p90 (N)", "peak force max (N)",
                "episodes above force threshold 30 N", "episodes at collision level 40 N"):
        assert row in done.stdout, row
    # 3. the deploy check ran through the graph and compared with the in-process evaluation
    deploy = json.loads((out / "deploy" / "deploy_report.json").read_text())
    assert deploy["episodes"] == 1 and len(deploy["in_process_terminations"]) == 1
    stopped = (deploy["in_process_terminations"][0] == "safety" or deploy["graph_estops"] > 0
               or deploy["safety_monitor"].get("estops", "0") != "0")
    # Returns agree when no safety stop happened.  A stop ends the in-process episode at once, while
    # the graph's monitor holds the robot until the time limit, and on contact the two have been seen
    # to trip at different steps (a known gap, README "The demo"): agreement is not checked then.
    if not stopped:
        assert max(deploy["max_abs_difference"]) < 0.05, deploy


def test_demo_refuses_bad_budgets():
    from morl_robot.cli import main

    assert main(["demo", "--steps", "0"]) == 2
    assert main(["demo", "--eval-episodes", "0"]) == 2


def test_make_demo_runs_the_command_this_file_tests():
    """The link between `make demo` and the end-to-end test above: the Makefile's demo recipe is the
    `morl-robot demo` console script with the embedded defaults (no options), so the test, which runs
    the same script and adds only budget options, covers the main job's code path; and those
    options parse through the real CLI parser to the same sub-command."""
    import re

    from morl_robot.cli import build_parser

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe is not None, "no demo target in the Makefile"
    assert recipe.group(1).split()[-2:] == ["$(BIN)/morl-robot", "demo"], recipe.group(1)
    args = build_parser().parse_args(["demo", "--steps", "300", "--eval-episodes", "2", "--episodes", "1",
                                      "--out", "x", "--no-progress", "--domain-id", "7"])
    defaults = build_parser().parse_args(["demo"])
    assert args.func is defaults.func and args.command == "demo"
