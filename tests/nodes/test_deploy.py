"""`morl-robot deploy` end to end: the sim-to-sim check, and the hardware path against the driver
emulator with injected latency (the policy keeps its rate; deadline misses are counted)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from morl_robot.bench.graph import _export_policy
from morl_robot.session.processes import ros_env
from tests.conftest import _next_domain, run_cli


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("policy") / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", path)
    return path


def deploy(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    out = args[args.index("--out") + 1] if "--out" in args else None
    return run_cli(["deploy", *args], timeout, out=out)


def test_sim_to_sim_check_matches_the_in_process_evaluation(policy, tmp_path):
    done = deploy("--policy", str(policy), "--episodes", "1", "--seed", "500", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "deploy_report.json").read_text())
    assert report["episodes"] == 1 and report["objectives"] == ["task", "wrist_force"]
    assert report["seeds"] == [500]  # --seed is the first counted episode's seed (reset_world restarts them)
    assert "onnxruntime in-process" in report["in_process_source"]  # no checkpoint next to this policy
    # the same ONNX policy on the same seed, through the graph and in-process: the same episode
    assert max(report["max_abs_difference"]) < 1e-3, report
    assert report["graph_success"] == report["in_process_success"] and len(report["graph_success"]) == 1


def test_hardware_backend_against_the_emulator_keeps_the_rate(policy, tmp_path):
    done = deploy("--policy", str(policy), "--backend", "hardware", "--emulate", "latency=0.02,jitter=0.01",
                  "--duration", "12", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    status = json.loads(done.stdout[done.stdout.index("{"):])
    server = status["policy_server"]
    assert float(server["rate_hz"]) == 20
    assert "deadline_misses" in server
    assert int(server["commands"]) > 100  # ~12 s at 20 Hz, minus start-up and resets
    # (an untrained policy may well press the peg into the fixture: an e-stop is then correct, and
    # the policy server keeps its rate either way)
    assert "estop" in status["safety_monitor"]


def test_a_stalled_graph_ends_the_check_with_an_error_naming_the_nodes_statuses(policy, tmp_path):
    """The robot is paused (mujoco_ros2_control's ``set_pause``) while the check runs: instead of
    waiting forever for the episode end, deploy gives up after ``--stall-timeout`` with exit 2 and
    the newest status of each node."""
    import time

    from std_srvs.srv import SetBool

    from morl_robot.nodes.probe import GraphProbe

    domain = _next_domain()
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", "--policy", str(policy), "--episodes", "20",
           "--stall-timeout", "4", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, env=ros_env(domain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    probe = GraphProbe(domain, "pauser")
    try:
        deadline = time.monotonic() + 120
        while not probe.diagnostics("robot").get("steps", "0").isdigit() or \
                int(probe.diagnostics("robot").get("steps", "0")) < 5:
            assert time.monotonic() < deadline and proc.poll() is None, "the deploy never stepped the robot"
            time.sleep(0.2)
        assert probe.call("/morl/robot_node/set_pause", SetBool, SetBool.Request(data=True), timeout=30).success
        out, err = proc.communicate(timeout=120)
    finally:
        probe.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, out[-2000:] + err[-3000:]
    assert "no robot step and no episode end" in err and "--stall-timeout 4" in err
    assert '"paused": "True"' in err  # the robot node's status is in the message
