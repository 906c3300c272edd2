"""robot_node end to end on the real middleware (its own process, its own DDS domain)."""
from __future__ import annotations

import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from morl_robot.nodes import wire
from morl_robot.session.processes import NodeSpec

NS = "/arm"


def start(session, **params):
    session.group.start(NodeSpec("robot_node", "robot_node", NS, params))
    steps = session.probe.subscribe(f"{NS}/task_step", Float64MultiArray, wire.SENSOR_QOS)
    joints = session.probe.subscribe(f"{NS}/joint_states", JointState, wire.SENSOR_QOS)
    pub = session.probe.publisher(f"{NS}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    return steps, joints, pub


def decode(entry):
    return wire.split_task_step(*wire.read_labelled(entry[1]))


def step_once(session, steps, pub, values, labels=("vx", "vy", "vz")):
    n = len(steps)
    pub.publish(wire.labelled_array(values, list(labels)))
    session.probe.wait_for(lambda: len(steps) > n, 10, "a task_step after the command")
    return decode(steps[-1])


def test_lockstep_advances_one_control_period_per_command(ros_session):
    s = ros_session
    steps, _, pub = start(s, task="sawyer_peg_in_hole", timing="lockstep", seed=3)
    s.probe.wait_for(lambda: steps, 30, "the first task_step")
    s.probe.wait_for_subscribers(pub)
    first = decode(steps[-1])
    assert first.step == 0 and first.objectives == ("task", "wrist_force")
    assert len(first.observation) == 99 and first.observation_labels[0] == "t-0/ee_x"
    time.sleep(1.2)  # no command: the node re-sends the same step (for late-joining actors), never advances
    assert {decode(e).step for e in steps} == {0}
    stamps = [first.stamp]
    for i in range(1, 6):
        ts = step_once(s, steps, pub, [0.0, 0.0, 0.02])
        assert (ts.episode, ts.step) == (first.episode, i)
        stamps.append(ts.stamp)
    assert np.allclose(np.diff(stamps), 0.05)  # one control period of simulated time per command
    # the peg moved up (+z at 0.02 m/s × 0.25 s ≈ 5 mm; the newest frame's ee_z is observation[2])
    assert decode(steps[-1]).observation[2] - first.observation[2] == pytest.approx(0.005, abs=0.002)


def test_bad_commands_are_rejected_without_stepping(ros_session):
    """Wrong labels are rejected (nothing moves); a non-finite command is held by the inner safety
    layer (tests/nodes/test_robot_node_inner_safety.py): neither advances the task."""
    s = ros_session
    steps, _, pub = start(s, task="sawyer_peg_in_hole", timing="lockstep")
    diags = s.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
    s.probe.wait_for(lambda: steps, 30, "the first task_step")
    s.probe.wait_for_subscribers(pub)
    pub.publish(wire.labelled_array([0.0, 0.1], ["vx", "vy"]))  # wrong labels
    pub.publish(wire.labelled_array([0.0, float("nan"), 0.0], ["vx", "vy", "vz"]))  # non-finite

    def counter(name: str) -> int:
        for _, msg in reversed(diags):
            for st in msg.status:
                if "robot" in st.name:
                    return int({kv.key: kv.value for kv in st.values}[name])
        return -1

    s.probe.wait_for(lambda: counter("rejected_commands") == 1 and counter("inner_holds") == 1, 10,
                     "diagnostics counting 1 rejected and 1 held command")
    ts = step_once(s, steps, pub, [0.0, 0.0, 0.0])
    assert ts.step == 1  # only the good command stepped the task


def test_lockstep_executes_one_command_per_step_by_its_key(ros_session):
    """A command naming the step it answers runs only if that is the newest step: an answer to a
    re-sent step that comes twice is stale and must not move the robot a second time."""
    s = ros_session
    steps, _, pub = start(s, task="sawyer_peg_in_hole", timing="lockstep")
    s.probe.wait_for(lambda: steps, 30, "the first task_step")
    s.probe.wait_for_subscribers(pub)
    first = decode(steps[-1])
    labels = ["vx", "vy", "vz", wire.STEP_KEY_LABEL]
    ts = step_once(s, steps, pub, [0.0, 0.0, 0.02, wire.step_key(first.episode, 0)], labels)
    assert ts.step == 1
    n = len(steps)
    pub.publish(wire.labelled_array([0.0, 0.0, 0.02, wire.step_key(first.episode, 0)], labels))  # duplicate
    time.sleep(0.3)
    assert all(decode(e).step <= 1 for e in steps[n:]), "a stale answer moved the robot"
    ts = step_once(s, steps, pub, [0.0, 0.0, 0.02, wire.step_key(first.episode, 1)], labels)
    assert ts.step == 2


def test_pause_step_and_reset_world_services(ros_session):
    s = ros_session
    steps, _, pub = start(s, task="sawyer_peg_in_hole", timing="lockstep")
    events = s.probe.subscribe(f"{NS}/episode", String, wire.EVENT_QOS)
    s.probe.wait_for(lambda: steps, 30, "the first task_step")
    s.probe.wait_for_subscribers(pub)
    srv = f"{NS}/robot_node"
    refused = s.probe.call(f"{srv}/step_simulation", Trigger)
    assert not refused.success and "pause" in refused.message
    assert s.probe.call(f"{srv}/set_pause", SetBool, SetBool.Request(data=True)).success
    n = len(steps)
    pub.publish(wire.labelled_array([0.0, 0.0, 0.01], ["vx", "vy", "vz"]))
    time.sleep(0.5)
    assert len(steps) == n  # paused: the command waits
    reply = s.probe.call(f"{srv}/step_simulation", Trigger)
    assert reply.success and "step 1" in reply.message
    s.probe.wait_for(lambda: len(steps) > n and decode(steps[-1]).step == 1, 5, "the stepped task_step")
    assert s.probe.call(f"{srv}/set_pause", SetBool, SetBool.Request(data=False)).success
    episode = decode(steps[-1]).episode
    reply = s.probe.call(f"{srv}/reset_world", Trigger)
    assert reply.success and f"episode {episode + 1}" in reply.message
    s.probe.wait_for(lambda: decode(steps[-1]).episode == episode + 1 and decode(steps[-1]).step == 0, 5,
                     "step 0 of the next episode")
    ended = [e for e in (__import__("json").loads(m.data) for _, m in events) if e["event"] == "end"]
    assert ended and ended[-1]["termination"] == "reset"

    # reset_world restarts the seed sequence at the ``seed`` parameter as set while running
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    def start_under(seed: int) -> np.ndarray:
        value = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=seed)
        result = s.probe.call(f"{srv}/set_parameters", SetParameters,
                              SetParameters.Request(parameters=[Parameter(name="seed", value=value)])).results[0]
        assert result.successful, result.reason
        reply = s.probe.call(f"{srv}/reset_world", Trigger)
        number = int(reply.message.split()[1])
        s.probe.wait_for(lambda: decode(steps[-1]).episode == number, 5, f"step 0 of episode {number}")
        return np.asarray(decode(steps[-1]).observation)

    first, other, again = start_under(41), start_under(42), start_under(41)
    assert np.abs(first - other).max() > 1e-3
    np.testing.assert_array_equal(first, again)


def test_realtime_holds_when_commands_stop(ros_session):
    """The robot side's own command timeout: no command for command_timeout → hold (as when the
    safety monitor dies)."""
    s = ros_session
    _, joints, pub = start(s, task="sawyer_peg_in_hole", timing="realtime", command_timeout=0.2)
    s.probe.wait_for(lambda: len(joints) > 5, 30, "joint_states at the control rate")
    s.probe.wait_for_subscribers(pub)
    for _ in range(10):  # 0.5 s of moving up at 0.05 m/s
        pub.publish(wire.labelled_array([0.0, 0.0, 0.05], ["vx", "vy", "vz"]))
        time.sleep(0.05)
    moving = max(float(np.abs(m.velocity).max()) for _, m in joints[-5:])
    assert moving > 0.01
    time.sleep(1.0)  # commands stopped: after 0.2 s the robot holds
    still = max(float(np.abs(m.velocity).max()) for _, m in joints[-5:])
    assert still < 0.2 * moving
    t = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for _, m in joints[-20:]]
    assert np.median(np.diff(t)) == pytest.approx(0.05, abs=0.01)  # still publishing at 20 Hz while holding
