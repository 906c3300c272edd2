"""The inner safety layer inside a real robot_node process (own DDS domain): a command that a
stopping rule forbids is not actuated, the robot holds for the period, and the hold is counted and
shown in /diagnostics; the next good command is executed again."""
from __future__ import annotations

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from morl_robot.nodes import wire
from morl_robot.session.processes import NodeSpec

NS = "/arm"
JOINTS = [f"right_j{i}" for i in range(7)]


def _robot_status(diags):
    """(message, values) of the newest robot_node diagnostics status, or None."""
    for _, msg in reversed(diags):
        for st in msg.status:
            if "robot" in st.name:
                return st.message, {kv.key: kv.value for kv in st.values}
    return None


def _wait_status(session, diags, predicate, what):
    session.probe.wait_for(lambda: (st := _robot_status(diags)) is not None and predicate(*st), 10, what)
    return _robot_status(diags)


def test_a_non_finite_command_is_held_and_reported(ros_session):
    s = ros_session
    s.group.start(NodeSpec("robot_node", "robot_node", NS, {"task": "sawyer_peg_in_hole", "timing": "lockstep"}))
    steps = s.probe.subscribe(f"{NS}/task_step", Float64MultiArray, wire.SENSOR_QOS)
    joints = s.probe.subscribe(f"{NS}/joint_states", JointState, wire.SENSOR_QOS)
    diags = s.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
    pub = s.probe.publisher(f"{NS}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    s.probe.wait_for(lambda: steps, 30, "the first task_step")
    s.probe.wait_for_subscribers(pub)
    first = wire.split_task_step(*wire.read_labelled(steps[-1][1]))
    n = len(steps)
    pub.publish(wire.labelled_array([0.0, float("nan"), 0.0], ["vx", "vy", "vz"]))
    # the step is re-sent (the actor answers it again) one control period later: the robot held
    s.probe.wait_for(lambda: len(steps) > n, 10, "the task_step re-sent after the hold")
    again = wire.split_task_step(*wire.read_labelled(steps[n][1]))
    assert (again.episode, again.step) == (first.episode, 0)
    assert again.stamp == pytest.approx(first.stamp + 0.05)
    message, values = _wait_status(s, diags, lambda m, v: v.get("inner_holds") == "1", "inner_holds = 1")
    assert "inner safety layer holding" in message and "command.non_finite" in message
    assert "command.non_finite" in values["inner_hold"] and values["steps"] == "0"
    # a good command is executed again and the status clears
    n = len(steps)
    pub.publish(wire.labelled_array([0.0, 0.0, 0.02], ["vx", "vy", "vz"]))
    s.probe.wait_for(lambda: len(steps) > n, 10, "the next task_step")
    assert wire.split_task_step(*wire.read_labelled(steps[-1][1])).step == 1
    _wait_status(s, diags, lambda m, v: "holding" not in m and v.get("steps") == "1", "the hold cleared")
    assert "command not actuated" in s.logs()
    assert joints


def test_a_position_target_beyond_the_joint_limit_is_not_actuated(ros_session):
    """A bare Sawyer in position mode: a target past right_j3's hard limit (MuJoCo would clamp it to
    the limit and drive there) leaves the arm where it is; a target inside the range moves it."""
    s = ros_session
    s.group.start(NodeSpec("robot_node", "robot_node", NS, {"robot": "sawyer", "control_mode": "position",
                                                            "timing": "lockstep"}))
    joints = s.probe.subscribe(f"{NS}/joint_states", JointState, wire.SENSOR_QOS)
    diags = s.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
    pub = s.probe.publisher(f"{NS}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    s.probe.wait_for(lambda: joints, 30, "the first joint_states")
    s.probe.wait_for_subscribers(pub)
    home = np.array(joints[-1][1].position)

    def command(j3: float, count: int = 10) -> np.ndarray:
        target = home.copy()
        target[3] = j3
        for _ in range(count):
            n = len(joints)
            pub.publish(wire.labelled_array(target, JOINTS))
            s.probe.wait_for(lambda n=n: len(joints) > n, 10, "joint_states after the command")
        return np.array(joints[-1][1].position)

    held = command(3.3)  # right_j3's range ends at 3.0439 rad (+0.01 rad hard tolerance)
    assert abs(held[3] - home[3]) < 0.01
    message, _ = _wait_status(s, diags, lambda m, v: v.get("inner_holds") == "10", "10 inner holds")
    assert "command.hard_range [right_j3]" in message
    moved = command(home[3] + 0.3)
    assert moved[3] - home[3] > 0.1
    _wait_status(s, diags, lambda m, v: "holding" not in m, "the hold cleared")


def test_a_collision_force_from_the_driver_holds_the_real_robot(ros_session):
    """The hardware backend in real time, its driver played by the probe (joint states at home, a
    wrist wrench): while the wrench is at the 40 N collision level, the target the node is given
    never reaches the driver (the node sends the hold: the measured positions); once the force drops,
    the same target goes through."""
    import threading
    import time

    from geometry_msgs.msg import WrenchStamped

    s = ros_session
    home = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])
    driver_names = ["head_pan", *JOINTS, "torso_t0"]
    force = [60.0]
    stop = threading.Event()
    pub_js = s.probe.publisher("/robot/joint_states", JointState, wire.SENSOR_QOS)
    pub_w = s.probe.publisher("/wrist_ft/wrench", WrenchStamped, wire.SENSOR_QOS)
    pub_cmd = s.probe.publisher(f"{NS}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    driver = s.probe.subscribe("/forward_position_controller/commands", Float64MultiArray, wire.COMMAND_QOS)
    diags = s.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
    target = home.copy()
    target[0] += 0.2

    def play_driver() -> None:
        k = 0
        while not stop.is_set():
            now = time.time()
            js = JointState(name=driver_names, position=[0.0, *home, 0.0], velocity=[0.0] * 9, effort=[0.0] * 9)
            js.header.stamp.sec, js.header.stamp.nanosec = int(now), int((now % 1) * 1e9)
            pub_js.publish(js)
            w = WrenchStamped()
            w.header.stamp = js.header.stamp
            w.header.frame_id = "right_hand_ft"
            w.wrench.force.z = -force[0]
            pub_w.publish(w)
            if k % 2 == 0:
                pub_cmd.publish(wire.labelled_array(target, JOINTS))
            k += 1
            time.sleep(0.02)

    thread = threading.Thread(target=play_driver, daemon=True)
    thread.start()
    try:
        s.group.start(NodeSpec("robot_node", "robot_node", NS, {"robot": "sawyer", "backend": "hardware",
                                                                "timing": "realtime", "command_timeout": 0.5}))
        message, _ = _wait_status(s, diags, lambda m, v: int(v.get("inner_holds", "0")) >= 10, "inner holds")
        assert "wrench.force_norm [norm]" in message and "collision" in message
        held = [np.array(m.data) for _, m in driver]
        assert held, "the node sent nothing to the driver while holding"
        assert all(abs(v[0] - home[0]) < 0.01 for v in held), "the forbidden target reached the driver"
        force[0] = 3.4  # the tool's weight: no violation
        s.probe.wait_for(lambda: any(abs(m.data[0] - target[0]) < 1e-9 for _, m in driver), 10,
                         "the target at the driver once the force dropped")
        _wait_status(s, diags, lambda m, v: "holding" not in m, "the hold cleared")
    finally:
        stop.set()
        thread.join(2)
