"""``morl-robot release``: what ``deploy.launch.py release:=after_checks`` runs beside a launched
graph.  The deploy graph's monitor starts latched (no command reaches the robot); the console
script, through its real parser, waits for the monitor's checks and releases it; commands then flow."""
from __future__ import annotations

import subprocess
import sys

import pytest

from morl_robot.session.config import load_session_config
from morl_robot.session.graph import deploy_nodes


def _release(domain: int, namespace: str, timeout: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "morl_robot.cli", "release", "--namespace", namespace,
                           "--timeout", timeout, "--domain-id", str(domain)],
                          env=env, capture_output=True, text=True, timeout=180, check=False)


def test_release_refuses_a_non_positive_timeout(capsys):
    from morl_robot.cli import main

    assert main(["release", "--timeout", "0"]) == 2
    assert "--timeout must be > 0 s" in capsys.readouterr().err


@pytest.mark.ros
def test_release_cli_frees_a_launched_deploy_graph(ros_session, tmp_path):
    from std_msgs.msg import Float64MultiArray

    from morl_robot.bench.graph import _export_policy
    from morl_robot.nodes import wire

    s = ros_session
    policy = tmp_path / "policy.onnx"
    _export_policy("sawyer_peg_in_hole", policy)
    cfg = load_session_config("deploy", {"namespace": "rel", "policy": str(policy)})
    safe = s.probe.subscribe("/rel/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    for spec in deploy_nodes(cfg):
        s.group.start(spec)
    done = _release(s.domain_id, "rel", "90", s.env)
    assert done.returncode == 0, done.stderr + s.logs()
    assert "released the safety monitor in /rel" in done.stderr
    s.probe.wait_for(lambda: len(safe) > 20, 60, "policy commands through the released monitor")
    for rc in s.group.stop().values():
        assert rc == 0, s.logs()


@pytest.mark.ros
def test_release_cli_says_when_no_monitor_answers(domain_id):
    from morl_robot.session.processes import ros_env

    done = _release(domain_id, "nobody", "3", ros_env(domain_id))
    assert done.returncode == 1, done.stderr
    assert "not released" in done.stderr
