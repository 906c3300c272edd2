"""Faults the stack already handled before the hostile pass, kept handled: NaN, inf and stale sensor
readings e-stop and latch; a corrupt checkpoint is named and the previous one used, nothing lost; a
corrupt or wrong-shaped ONNX model is refused with the reason.

The same faults on the live graph: the safety monitor node with NaN and stale streams
(tests/safety/test_safety_monitor_node.py), the monitor killed (test_monitor_killed.py here), the
learner SIGKILLed and resumed (tests/nodes/test_training_session.py), a bad snapshot refused while
the old model keeps serving (tests/serving/test_policy_server_node.py)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from morl_robot.learning.checkpoint import load_latest, save_checkpoint
from morl_robot.safety.monitor import build_monitor
from morl_robot.serving.runtime import OnnxPolicy, PolicyLoadError

HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])
REST = np.array([0.0, 0.0, -3.4, 0.0, 0.0, 0.0])


def _released():
    m = build_monitor("sawyer", None, watchdogs=True, now=0.0, action_labels=("vx", "vy", "vz"))
    m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), 0.01, 0.01)
    m.on_wrench(REST, 0.01, 0.01)
    assert m.reset(0.02)[0]
    return m


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_wrench_estops_latches_and_names_the_rule(bad):
    m = _released()
    w = REST.copy()
    w[2] = bad
    m.on_wrench(w, 0.1, 0.1)
    assert m.estopped and m.estop_cause.rule == "wrench.non_finite"
    m.on_wrench(REST, 0.15, 0.15)
    m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), 0.15, 0.15)
    assert m.estopped  # latched after the reading is good again
    assert np.array_equal(m.on_command([0.1, 0.0, 0.0], ("vx", "vy", "vz"), 0.16).command.values, np.zeros(3))
    assert m.reset(0.17)[0]


def test_a_stale_stream_estops_and_reset_is_refused_until_it_is_back():
    m = _released()
    m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), 0.5, 0.5)  # joints stay fresh
    m.check_watchdogs(0.6)  # the wrench stream's last message was at 0.01
    assert m.estopped and m.estop_cause.rule == "stale.wrench"
    ok, why = m.reset(0.61)
    assert not ok and "stale.wrench" in why
    m.on_wrench(REST, 0.62, 0.62)
    m.on_joint_state(m.spec.joint_names, HOME, np.zeros(7), np.zeros(7), 0.62, 0.62)
    assert m.reset(0.63)[0]


def test_a_corrupt_newest_checkpoint_is_named_and_the_previous_used(tmp_path):
    save_checkpoint(tmp_path, 100, {"x": 1})
    newest = save_checkpoint(tmp_path, 200, {"x": 2})
    newest.write_bytes(newest.read_bytes()[:20])  # truncated, as by a crash mid-write elsewhere
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path, payload = load_latest(tmp_path, fallback=True)
    assert payload == {"x": 1} and path.name.endswith("100.pt")
    assert any(newest.name in str(w.message) for w in caught)


@pytest.mark.parametrize("data, words", [(b"", "empty"), (b"not onnx at all", "")])
def test_a_corrupt_model_is_refused_with_the_reason(data, words):
    with pytest.raises(PolicyLoadError, match=words):
        OnnxPolicy.from_bytes(data)
