"""Fault: the policy server used to die on its first error-level hold after a warning-level one
(rclpy: "Logger severity cannot be changed between calls"), leaving the robot with a dead
commander.  A real-time deploy always starts with a ``missing_input`` warning; here a NaN
observation, a bad layout and a NaN-producing policy follow, and the server must stay alive,
keep holding with the reason in its diagnostics, and serve again when good input returns."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from std_msgs.msg import Float64MultiArray, Header

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from policy_models import SAWYER, make_policy, task_contract

from morl_robot.nodes import wire
from morl_robot.session.processes import NodeSpec

pytestmark = pytest.mark.ros
NS = "/faulty"


def _status(diags) -> dict[str, str]:
    for _, msg in reversed(diags):
        for st in msg.status:
            if "policy" in st.name:
                return {kv.key: kv.value for kv in st.values}
    return {}


@pytest.mark.parametrize("nan_policy", [False, True], ids=["bad-input", "nan-policy"])
def test_error_holds_after_a_warning_hold_keep_the_server_alive(ros_session, tmp_path, nan_policy):
    from morl_robot.serving.export import export_policy

    contract = task_contract(SAWYER)
    path = tmp_path / "p.onnx"
    export_policy(make_policy(contract, nan=nan_policy), contract, path)
    s = ros_session
    proc = s.group.start(NodeSpec("policy_server", "policy_server", NS, {
        "mode": "deploy", "timing": "realtime", "rate": 50.0, "observation_timeout": 0.2, "policy": str(path)}))
    diags = s.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
    heartbeats = s.probe.subscribe(f"{NS}/heartbeat", Header, wire.COMMAND_QOS)
    steps = s.probe.publisher(f"{NS}/task_step", Float64MultiArray, wire.SENSOR_QOS)
    s.probe.wait_for(lambda: steps.get_subscription_count() >= 1, 30, "the policy server")
    labels = wire.task_step_labels(contract.objective_names, contract.observation_labels)
    # 1. no observation yet: warning-level holds (missing_input)
    s.probe.wait_for(lambda: int(_status(diags).get("held_missing_input", 0)) > 0, 10, "a missing_input hold")
    obs = np.zeros(len(contract.observation_labels))
    head = [1, 0, 0, 0, 0.0, 0.0, 0.0]
    if nan_policy:  # 2a. good input, but the model outputs NaN: error-level holds
        steps.publish(wire.labelled_array(np.concatenate([head, obs]), labels))
        s.probe.wait_for(lambda: int(_status(diags).get("held_non_finite_output", 0)) > 0, 10, "a NaN-output hold")
    else:  # 2b. a NaN observation, then a layout that does not fit: error-level holds
        bad = obs.copy()
        bad[3] = np.nan
        steps.publish(wire.labelled_array(np.concatenate([head, bad]), labels))
        s.probe.wait_for(lambda: int(_status(diags).get("held_non_finite_input", 0)) > 0, 10, "a NaN-input hold")
        steps.publish(wire.labelled_array(np.concatenate([head, obs[:-1]]), labels[:-1]))
        s.probe.wait_for(lambda: int(_status(diags).get("held_bad_layout", 0)) > 0, 10, "a bad-layout hold")
    # 3. the loop thread lives on: holds keep being counted, diagnostics keep coming, process alive
    before = int(_status(diags)["held"])
    s.probe.wait_for(lambda: int(_status(diags).get("held", 0)) > before + 5, 10, "holds after the error")
    assert proc.alive, proc.log_text()[-3000:]
    assert "severity cannot be changed" not in proc.log_text()
    if not nan_policy:  # good input again: serving resumes, with heartbeats
        n = len(heartbeats)
        for k in range(1, 20):
            steps.publish(wire.labelled_array(np.concatenate([[1, k, 0, 0, 0.05 * k, 0.0, 0.0], obs]), labels))
        s.probe.wait_for(lambda: len(heartbeats) > n, 10, "heartbeats once serving again")
