"""Fault (issue 33 item 8): a session whose safety config lacked a section left the monitor
logging ``configure failed`` without publishing anything, and ``morl-robot deploy`` waited 60 s and
exited 2 with "the safety monitor does not publish its e-stop state", not naming the cause.

Now a node whose autostart configure fails exits with status 2, the reason as its last error line,
and every wait of a CLI session on the graph (SessionRunner's probe) ends as soon as a node exits
with an error, showing the end of its log.  A node configured later by a lifecycle manager
(``autostart: false``) stays alive in unconfigured when that configure fails (nodes/base.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from morl_robot.resources import config_path
from morl_robot.session.processes import NodeSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from policy_models import SAWYER, make_policy, task_contract

from tests.conftest import run_cli

pytestmark = pytest.mark.ros


def _safety_without(tmp_path: Path, section: str) -> Path:
    data = yaml.safe_load(config_path("safety/sawyer.yaml").read_text())
    data.pop(section)
    path = tmp_path / f"sawyer_without_{section}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def test_a_monitor_whose_configure_fails_exits_with_the_reason_as_its_last_error(ros_session, tmp_path):
    proc = ros_session.group.start(NodeSpec("safety_monitor", "safety_monitor", "/broken",
                                            {"config": str(_safety_without(tmp_path, "wrench"))}))
    rc = proc.wait_exit(60.0)
    errors = [ln for ln in proc.log_text().splitlines() if "ERROR" in ln or ln.startswith("error")]
    assert rc == 2, proc.log_text()
    assert errors and "configure failed" in errors[-1] and "'wrench'" in errors[-1] and "needs this section" in errors[-1], \
        proc.log_text()


def test_a_monitor_walked_by_a_manager_stays_unconfigured_when_configure_fails(ros_session, tmp_path):
    proc = ros_session.group.start(NodeSpec("safety_monitor", "safety_monitor", "/managed", {
        "config": str(_safety_without(tmp_path, "joints")), "autostart": False}))
    with pytest.raises(RuntimeError, match="refused the lifecycle transition"):
        ros_session.probe.lifecycle("/managed/safety_monitor", "active")
    assert proc.alive, proc.log_text()
    assert "configure failed" in proc.log_text() and "'joints'" in proc.log_text()


def test_deploy_with_a_safety_config_lacking_a_section_fails_at_once_naming_it(tmp_path):
    contract = task_contract(SAWYER)
    policy = tmp_path / "policy.onnx"
    from morl_robot.serving.export import export_policy

    export_policy(make_policy(contract), contract, policy)
    session = yaml.safe_load(config_path("sessions/deploy.yaml").read_text())
    session["safety_monitor"]["config"] = str(_safety_without(tmp_path, "wrench"))
    session_path = tmp_path / "session.yaml"
    session_path.write_text(yaml.safe_dump(session))
    out = tmp_path / "deploy"
    # the start-up waits are 60 s each; the run must end long before (a hang fails at the timeout)
    result = run_cli(["deploy", str(policy), "--session", str(session_path), "--episodes", "1",
                      "--out", str(out)], timeout=45, out=out)
    assert result.returncode == 2, result.stderr
    assert "safety_monitor exited with status 2" in result.stderr, result.stderr
    assert "'wrench'" in result.stderr and "needs this section" in result.stderr, result.stderr
    assert "does not publish its e-stop state" not in result.stderr
