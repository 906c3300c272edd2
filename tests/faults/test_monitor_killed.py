"""Fail-safe across the graph: if the safety monitor dies, the robot node receives no commands and
holds on its own command timeout (issue 5)."""
from __future__ import annotations

import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header
from std_srvs.srv import Trigger

from morl_robot.nodes import wire
from morl_robot.session.processes import NodeSpec


def test_robot_holds_when_the_monitor_is_killed(ros_session):
    s = ros_session
    ns = "/cell"
    s.group.start(NodeSpec("robot_node", "robot_node", ns, {"task": "sawyer_peg_in_hole", "timing": "realtime",
                                                             "command_timeout": 0.2}))
    monitor = s.group.start(NodeSpec("safety_monitor", "safety_monitor", ns,
                                     {"robot": "sawyer", "action_labels": "vx,vy,vz"}))
    joints = s.probe.subscribe(f"{ns}/joint_states", JointState, wire.SENSOR_QOS)
    safe = s.probe.subscribe(f"{ns}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    cmd = s.probe.publisher(f"{ns}/command", Float64MultiArray, wire.COMMAND_QOS)
    hb = s.probe.publisher(f"{ns}/heartbeat", Header, wire.COMMAND_QOS)
    s.probe.wait_for(lambda: len(joints) > 5, 60, "joint_states")
    deadline = time.monotonic() + 60
    while not s.probe.call(f"{ns}/safety/reset", Trigger, timeout=10).success:
        assert time.monotonic() < deadline, "the monitor never released"
        time.sleep(0.3)

    def policy_step(vz: float) -> None:
        now = time.time()
        h = Header()
        h.stamp.sec, h.stamp.nanosec = int(now), int((now % 1) * 1e9)
        hb.publish(h)
        cmd.publish(wire.labelled_array([0.0, 0.0, vz], ["vx", "vy", "vz"]))

    for _ in range(12):  # 0.6 s up at 4 cm/s, through the monitor
        policy_step(0.04)
        time.sleep(0.05)
    assert safe, "the monitor forwarded nothing"
    moving = max(float(np.abs(m.velocity).max()) for _, m in joints[-4:])
    assert moving > 0.01
    published_before = len(joints)
    monitor.kill()  # SIGKILL: no goodbye, no e-stop message
    for _ in range(20):  # the policy keeps going, but nothing reaches the robot any more
        policy_step(0.04)
        time.sleep(0.05)
    still = max(float(np.abs(m.velocity).max()) for _, m in joints[-4:])
    assert still < 0.2 * moving, (moving, still)
    assert len(joints) - published_before >= 12  # the robot node kept publishing (20 Hz) while it held
