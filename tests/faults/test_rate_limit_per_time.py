"""Fault: the command rate-of-change limit applied per message, not per unit time: a 2 kHz flood of
alternating commands got 328 full reversals through in one 50 ms period.  Now the change any
command gets through is bounded by rate × the time since the previous command (at most one
period), in the monitor core and in the live monitor node; lockstep commands (keyed) stand for one
control period of simulated time each."""
from __future__ import annotations

import time
from itertools import pairwise

import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray

from morl_robot.nodes import wire
from morl_robot.safety.monitor import build_monitor
from morl_robot.session.processes import NodeSpec

XYZ = ("vx", "vy", "vz")
HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])


def test_a_2khz_flood_gets_no_more_change_through_than_the_rate_allows():
    m = build_monitor("sawyer", None, watchdogs=False, action_labels=XYZ)
    assert m.reset(0.0)[0]
    rate = 4.0  # m/s² (config/safety/sawyer.yaml linear_acceleration)
    sent = [0.2 if k % 2 else -0.2 for k in range(200)]  # 100 ms at 2 kHz
    got = [m.on_command([0.0, 0.0, v], XYZ, 1.0 + 0.0005 * k).command.values[2] for k, v in enumerate(sent)]
    steps = np.abs(np.diff(got))
    assert steps.max() <= rate * 0.0005 + 1e-12  # per command: rate × 0.5 ms
    assert np.abs(np.diff(got[:101])).sum() <= rate * 0.05 + 1e-9  # total travel in 50 ms: rate × 50 ms
    reversals = sum(1 for a, b in pairwise(got) if abs(b - a) >= 0.4 - 1e-9)
    assert reversals == 0


def test_lockstep_commands_each_stand_for_one_period():
    m = build_monitor("sawyer", None, watchdogs=False, action_labels=XYZ)
    assert m.reset(0.0)[0]
    a = m.on_command([0.0, 0.0, 0.2], XYZ, 1.0, elapsed=m.command_period).command.values[2]
    b = m.on_command([0.0, 0.0, -0.2], XYZ, 1.0001, elapsed=m.command_period).command.values[2]
    assert a == pytest.approx(0.2) and b == pytest.approx(0.0)  # 4 m/s² × 50 ms = 0.2 m/s per command


@pytest.mark.ros
def test_the_live_monitor_limits_a_flood_per_unit_time(ros_session):
    s = ros_session
    ns = "/flood"
    s.group.start(NodeSpec("safety_monitor", "safety_monitor", ns,
                           {"robot": "sawyer", "action_labels": "vx,vy,vz", "watchdogs": False}))
    safe = s.probe.subscribe(f"{ns}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    cmd = s.probe.publisher(f"{ns}/command", Float64MultiArray, wire.COMMAND_QOS)
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    joints = s.probe.publisher(f"{ns}/joint_states", JointState, wire.SENSOR_QOS)
    s.probe.wait_for_subscribers(cmd)
    names = [f"right_j{i}" for i in range(7)]
    js = JointState(name=names, position=HOME.tolist(), velocity=[0.0] * 7, effort=[0.0] * 7)
    joints.publish(js)
    s.probe.wait_for(lambda: s.probe.call(f"{ns}/safety/reset", Trigger, timeout=5).success, 20, "release")
    for k in range(400):  # as fast as the probe publishes (several kHz), alternating full reversals
        cmd.publish(wire.labelled_array([0.0, 0.0, 0.2 if k % 2 else -0.2], list(XYZ)))
        if k % 10 == 0:
            time.sleep(0.001)
    # the command queue keeps the newest 10, so a flood is answered in part: judge what was answered
    # (at least 10: a loaded machine answers far fewer of the 400 than an idle one; one CI run under
    # load answered fewer than 20 within 30 s)
    s.probe.wait_for(lambda: len(safe) >= 10 and time.monotonic() - safe[-1][0] > 1.0, 30, "the flood answered")
    vz = np.array([wire.read_labelled(m)[0][2] for _, m in safe])
    assert sum(1 for a, b in pairwise(vz) if abs(b - a) >= 0.4 - 1e-9) == 0  # no full reversal
    # each answer follows the previous by at most rate × one period (4 m/s² × 50 ms): exactly that when the
    # monitor's thread stalled a period between two answers (seen once in a full local run at load ~3)
    assert np.abs(np.diff(vz)).max() <= 0.2 + 1e-9
