"""The nodes answer ROS's own services (``ros2 lifecycle get``, ``ros2 param list``): a node that
assigned its own list to rclpy's ``Node._services`` (or ``_timers``) hid the lifecycle and
parameter services from the executor, so nothing answered them, and a probe that walks a node
through its lifecycle (the safety test's phases) waited forever."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros


def test_robot_node_answers_lifecycle_and_parameter_services(ros_session):
    from lifecycle_msgs.srv import GetState
    from rcl_interfaces.srv import ListParameters

    from morl_robot.session.processes import NodeSpec

    s = ros_session
    s.group.start(NodeSpec("robot_node", "robot_node", "/lc", {"robot": "sawyer", "timing": "realtime"}))
    s.group.start(NodeSpec("safety_monitor", "safety_monitor", "/lc", {"robot": "sawyer", "autostart": False}))
    assert s.probe.call("/lc/robot_node/get_state", GetState, timeout=60).current_state.label == "active", s.logs()
    names = s.probe.call("/lc/robot_node/list_parameters", ListParameters, timeout=30).result.names
    assert {"robot", "timing", "use_sim_time"} <= set(names)
    # a node left unconfigured is walked to active and back, as the safety test's phases are
    s.probe.lifecycle("/lc/safety_monitor", "active")
    assert s.probe.call("/lc/safety_monitor/get_state", GetState).current_state.label == "active"
    s.probe.lifecycle("/lc/safety_monitor", "unconfigured")
    assert s.probe.call("/lc/safety_monitor/get_state", GetState).current_state.label == "unconfigured"
    s.probe.lifecycle("/lc/robot_node", "unconfigured")
    assert s.probe.call("/lc/robot_node/get_state", GetState).current_state.label == "unconfigured"
