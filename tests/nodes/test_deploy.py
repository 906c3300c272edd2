"""`morl-robot deploy` end to end: the sim-to-sim check, and the hardware path against the driver
emulator with injected latency (the policy keeps its rate; deadline misses are counted)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from morl_robot.bench.graph import _export_policy
from morl_robot.session.processes import pick_domain_id, ros_env


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("policy") / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", path)
    return path


def deploy(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", *args]
    return subprocess.run(cmd, env=ros_env(pick_domain_id()), capture_output=True, text=True, timeout=timeout,
                          check=False)


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
