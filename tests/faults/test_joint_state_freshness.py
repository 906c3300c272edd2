"""Fault: a JointState naming no known joint, or an empty one, counted as a fresh reading, so a
reset was accepted while the robot's real joint sensors were down."""
from __future__ import annotations

import numpy as np

from morl_robot.safety.monitor import build_monitor


def test_only_readings_of_the_robots_joints_keep_the_stream_fresh():
    m = build_monitor("sawyer", None, watchdogs=True, now=0.0)
    joints = m.spec.joint_names
    home = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])  # peg above the hole
    still = np.zeros(len(joints))
    m.on_wrench(np.zeros(6), 0.1, 0.1)
    # the real joint states never come; other publishers' messages do
    for t in (0.1, 0.2, 0.3, 0.4):
        m.on_joint_state([], [], [], [], t, t)  # empty
        m.on_joint_state(["head_pan", "gripper_l"], [0.0, 0.0], [], [], t, t)  # no joint of this robot
        m.on_wrench(np.zeros(6), t, t)
    ok, why = m.reset(0.45)
    assert not ok and "stale.joint_states" in why
    # the robot's own joints: fresh, and the reset goes through
    m.on_joint_state(joints, home, still, still, 0.46, 0.46)
    m.on_wrench(np.zeros(6), 0.46, 0.46)
    assert m.reset(0.47)[0]
