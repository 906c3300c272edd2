"""Nodes declare their ROS parameters from their settings dataclasses
(``nodes/base.declare_settings``): a node started with a parameter it does not have, or with a
value of the wrong type, exits with one clear line naming the parameter (real node processes);
a later ``ros2 param set`` is checked the same way and, when accepted, updates the settings."""
from __future__ import annotations

import pytest

from morl_robot.session.processes import NodeSpec

pytest.importorskip("rclpy")


@pytest.mark.parametrize("executable, params, words", [
    ("safety_monitor", {"robot": "sawyer", "watchdgs": False},
     ("error: parameters of /cfg/safety_monitor: unknown parameter 'watchdgs'; allowed: action_labels, autostart, "
     "check_period, config, control_mode, diagnostics_period, robot, session, session_started, watchdogs")),
    ("robot_node", {"robot": "sawyer", "seed": "abc"},
     "error: parameters of /cfg/robot_node: key 'seed': expected an integer, got str 'abc'"),
    ("policy_server", {"timing": "fast"},
     "error: parameters of /cfg/policy_server: key 'timing': got 'fast'; allowed values: 'lockstep', 'realtime'"),
    ("learner_node", {"snapshot_every": 0},
     "error: parameters of /cfg/learner_node: key 'snapshot_every': must be a whole number in [1, 2^53], got 0"),
    ("driver_emulator", {"robot": "sawyer", "rate": "fast"},
     "error: parameters of /driver_emulator: key 'rate': expected a number, got str 'fast'"),
])
def test_a_node_refuses_an_unknown_or_mistyped_parameter(ros_session, executable, params, words):
    namespace = "/" if executable == "driver_emulator" else "/cfg"
    process = ros_session.group.start(NodeSpec(executable, executable, namespace, params))
    assert process.wait_exit(120.0) == 2, process.log_text()[-3000:]
    log = process.log_text()
    assert words in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_parameter_changes_are_checked_and_update_the_settings():
    import rclpy
    from rclpy.parameter import Parameter

    from morl_robot.nodes.safety_monitor import SafetyMonitorNode

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=0)
    try:
        node = SafetyMonitorNode(context=context, parameter_overrides=[Parameter("check_period", value=0.01)])
        try:
            assert node.settings.check_period == 0.01  # the override, read through the dataclass
            bad = node.set_parameters([Parameter("check_period", value=-1.0)])[0]
            assert not bad.successful and "key 'check_period': must be > 0, got -1.0" in bad.reason
            wrong = node.set_parameters([Parameter("watchdogs", value="no")])[0]
            assert not wrong.successful and "key 'watchdogs': expected true or false" in wrong.reason
            assert node.settings.check_period == 0.01 and node.settings.watchdogs is True
            assert node.set_parameters([Parameter("check_period", value=5)])[0].successful  # an int fills a float
            assert node.settings.check_period == 5.0 and isinstance(node.settings.check_period, float)
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
