"""Every ``morl-robot bench …`` subcommand runs through the real CLI on a tiny budget and prints
finite figures (issue 40: ``bench graph`` had been broken for a while with no test to notice).

Which test runs which benchmark (:data:`SMOKE_TESTS`; a new benchmark without an entry fails
:func:`test_every_bench_subcommand_has_a_smoke_test`):

==================  ==========================================================================
subcommand          test(s)
==================  ==========================================================================
env                 this file ``test_in_process_bench_prints_finite_figures[env]``
learner             ``tests/bench/test_learner_bench.py`` + this file ``…[learner]``
train               ``tests/bench/test_train_bench.py``
graph               this file ``test_bench_graph_runs_its_session_graph``
safety              ``tests/bench/test_safety_bench_cli.py`` (in-process and across processes)
serve               this file ``test_bench_serve_through_the_node``
soak                ``tests/faults/test_soak.py``
scale-invariance    ``tests/learning/test_scale_invariance.py`` + this file ``…[scale-invariance]``
preference-live     ``tests/bench/test_preference_live_cli.py``
contact             ``tests/test_compliance.py::test_bench_contact_through_the_cli``
epic                ``tests/test_transition_rewards.py`` + this file ``…[epic]``
learning-speed      ``tests/bench/test_learning_speed_bench.py``
record              ``tests/recording/test_bench_record.py``
==================  ==========================================================================
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: benchmark -> the tests that run it through the CLI (``path::function``)
SMOKE_TESTS: dict[str, list[str]] = {
    "env": ["tests/bench/test_every_bench_runs.py::test_in_process_bench_prints_finite_figures"],
    "learner": ["tests/bench/test_learner_bench.py::test_the_learner_bench_prints_its_rate",
                "tests/bench/test_every_bench_runs.py::test_in_process_bench_prints_finite_figures"],
    "train": ["tests/bench/test_train_bench.py::test_the_train_bench_measures_three_sessions_and_prints_the_ratio"],
    "graph": ["tests/bench/test_every_bench_runs.py::test_bench_graph_runs_its_session_graph"],
    "safety": ["tests/bench/test_safety_bench_cli.py::test_bench_safety_reports_the_inner_layer",
               "tests/bench/test_safety_bench_cli.py::test_bench_safety_across_processes"],
    "serve": ["tests/bench/test_every_bench_runs.py::test_bench_serve_through_the_node"],
    "soak": ["tests/faults/test_soak.py::test_a_short_soak_detects_its_faults_and_lets_no_unsafe_command_through"],
    "scale-invariance": ["tests/learning/test_scale_invariance.py::test_the_benchmark_runs_through_the_cli",
                         "tests/bench/test_every_bench_runs.py::test_in_process_bench_prints_finite_figures"],
    "preference-live": ["tests/bench/test_preference_live_cli.py::test_a_short_live_switch_is_accepted_and_traced"],
    "contact": ["tests/test_compliance.py::test_bench_contact_through_the_cli"],
    "epic": ["tests/test_transition_rewards.py::test_bench_epic_through_the_cli",
             "tests/bench/test_every_bench_runs.py::test_in_process_bench_prints_finite_figures"],
    "learning-speed": ["tests/bench/test_learning_speed_bench.py::test_the_learning_speed_bench_prints_both_rates_and_the_ratio"],
    "record": ["tests/recording/test_bench_record.py::test_bench_record_prints_both_rates_the_overhead_and_the_drops"],
}

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w])", re.IGNORECASE)


def figures(out: str, pattern: str, at_least: int = 1) -> list[float]:
    """The numbers on the one output line matching ``pattern`` (a regex searched per line): at
    least ``at_least`` of them, every one finite."""
    lines = [line for line in out.splitlines() if re.search(pattern, line)]
    assert len(lines) == 1, f"expected one line matching {pattern!r}, got {lines}:\n{out}"
    values = [float(x) for x in _NUMBER.findall(lines[0])]
    assert len(values) >= at_least, f"{lines[0]!r}: expected at least {at_least} figures, got {values}"
    assert all(math.isfinite(v) for v in values), f"non-finite figure in {lines[0]!r}"
    return values


def test_every_bench_subcommand_has_a_smoke_test() -> None:
    """The table covers exactly the subcommands the CLI registers, and every test it names exists."""
    from morl_robot.cli.bench import BENCHMARKS

    assert set(SMOKE_TESTS) == set(BENCHMARKS), (
        f"bench subcommands without a smoke test: {sorted(set(BENCHMARKS) - set(SMOKE_TESTS))}; "
        f"table entries for no subcommand: {sorted(set(SMOKE_TESTS) - set(BENCHMARKS))}")
    for name, tests in SMOKE_TESTS.items():
        for test in tests:
            path, _, function = test.partition("::")
            source = (ROOT / path).read_text()
            assert re.search(rf"^def {re.escape(function)}\(", source, re.MULTILINE), f"{name}: {test} not found"
            assert f'"{name}"' in source, f"{name}: {path} never names it"


# --- in-process benchmarks: the figures their existing tests do not parse -----------------------------
IN_PROCESS = {
    "env": (["--task", "shadow_touch", "--steps", "50", "--repeats", "1"],
            [(r"^shadow_touch\s", 5), (r"^ratio = ", 1)]),
    "learner": (["--obs-dim", "5", "--batch-size", "16", "--num-samples", "4", "--sequence-length", "2",
                 "--updates", "2", "--warmup", "1", "--threads", "1"],
                [(r"^updates/s: ", 3), (r"^time in torch kernels", 3)]),
    "scale-invariance": (["--updates", "3", "--scale", "20"],
                         [(r"^gaussian\s+gradient", 4), (r"^gaussian\s+exact", 4),
                          (r"^categorical\s+gradient", 8), (r"^categorical\s+exact", 8)]),
    "epic": (["--task", "shadow_touch", "--n-v", "64", "--n-m", "32", "--coverage-steps", "200", "--bootstrap", "10",
              "--repeats", "1"],
             [(r"^  coverage: ", 2), (r"canonicalise, general \(black-box\) path", 2),
              (r"K x K distances", 2), (r"^  total ", 1)]),
}


@pytest.mark.parametrize("name", sorted(IN_PROCESS))
def test_in_process_bench_prints_finite_figures(name: str, capsys) -> None:
    from morl_robot.cli import main

    argv, lines = IN_PROCESS[name]
    assert main(["bench", name, *argv]) == 0
    out = capsys.readouterr().out
    for pattern, at_least in lines:
        figures(out, pattern, at_least)
    if name == "env":
        substeps, env_rate, raw_periods, raw_steps, ratio = figures(out, r"^shadow_touch\s", 5)[:5]
        assert ratio > 0 and env_rate > 0 and raw_periods > 0 and raw_steps == pytest.approx(raw_periods * substeps, rel=0.01)
    if name == "learner":
        assert figures(out, r"^updates/s: ")[0] > 0


def test_bench_env_unknown_task_is_an_error_not_a_traceback() -> None:
    """An unknown --task is the CLI's usage error (rc 2), not a traceback."""
    from morl_robot.cli import main

    assert main(["bench", "env", "--task", "no_such_task", "--steps", "10", "--repeats", "1"]) == 2


# --- benchmarks that start ROS nodes (each in a subprocess on a test domain) ----------------------------
def _run(argv: list[str], domain_id: int, timeout: float = 300) -> str:
    from morl_robot.session.processes import ros_env

    done = subprocess.run([sys.executable, "-m", "morl_robot.cli", "bench", *argv], env=ros_env(domain_id),
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.ros
@pytest.mark.extended  # make test-extended: a benchmark, 32 s
def test_bench_graph_runs_its_session_graph(domain_id) -> None:
    """The lockstep loop runs with and without the monitor (before the fix the monitor, started
    without the task's action labels, held every command: a 120 s timeout), the ratios printed are
    the rates' and the learner ingests."""
    pytest.importorskip("rclpy")
    out = _run(["graph", "--duration", "1", "--repeats", "1", "--steps", "100", "--warmup", "50"], domain_id)
    inproc = figures(out, r"^  in-process ", 2)[0]
    assert inproc > 0
    for label in (r"^  graph \(robot → policy → monitor → robot\)", r"^  graph without the safety monitor"):
        rate, _, percent, goal = figures(out, label, 4)[:4]
        assert rate > 0 and goal == 50
        assert percent == pytest.approx(100 * rate / inproc, abs=1.0)
    ingest, chunk, updates = figures(out, r"^  learner_node ingest: ", 3)[:3]
    assert ingest > 0 and chunk == 64 and updates >= 0


@pytest.mark.ros
def test_bench_serve_through_the_node(domain_id) -> None:
    pytest.importorskip("rclpy")
    out = _run(["serve", "--task", "sawyer_peg_in_hole", "--iterations", "100", "--pings", "20", "--duration", "1",
                "--rate", "200"], domain_id)
    for runtime in ("onnxruntime", "onnxruntime_session_run", "torch_eager", "torchscript"):
        p50, p99, peak, n = figures(out, rf"^    {runtime}\s+p50", 4)[:4]
        assert 0 < p50 <= p99 <= peak and n == 100
    p50, p99, peak, n, lost = figures(out, r"^  event-driven task_step -> command", 5)[:5]
    assert 0 < p50 <= p99 <= peak and 0 < n <= 20 and lost >= 0
    line = figures(out, r"^  realtime 200 Hz", 5)
    assert line[-1] > 0  # n latencies
    window = figures(out, r"s window: .* ticks", 8)
    ticks, misses, matched, published = window[1], window[2], window[4], window[5]
    assert ticks > 0 and misses >= 0 and 0 < matched <= published
