"""The hardware backend against the driver emulator over real DDS (each its own process and domain):
joint order and unit remapping, commands reaching the driver, the stale-state fault, reconnecting
after the driver restarts, and a faulty link that never makes the state go back in time."""
from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from hw_helpers import SAWYER_JOINTS, robot_yaml
from std_msgs.msg import Float64MultiArray

from morl_robot.nodes import wire
from morl_robot.robots.hardware import (
    HardwareRobot,
    StaleStateError,
    load_hardware_robot,
)
from morl_robot.session.processes import NodeSpec

pytestmark = pytest.mark.ros

HOME = np.array([-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516])
SHUFFLED = ["right_j3", "head_pan", "right_j0", "right_j6", "right_j1", "right_j5", "right_j2", "right_j4", "torso_t0"]
COMMAND_ORDER = ["right_j6", "right_j0", "right_j5", "right_j1", "right_j4", "right_j2", "right_j3"]


class LinkHost:
    """A HardwareRobot + HardwareLink on an rclpy node of its own context on the test's domain (as
    the robot node would hold them)."""

    def __init__(self, domain_id: int, config: str, control_period: float = 0.05) -> None:
        import rclpy
        from rclpy.context import Context

        from morl_robot.nodes.hardware_link import HardwareLink

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("hardware_test", context=self.context)
        self.robot: HardwareRobot = load_hardware_robot(config, control_period=control_period)
        self.link = HardwareLink(self.node, self.robot)

    def close(self) -> None:
        import rclpy

        self.link.close()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture
def host_factory(ros_session):
    hosts: list[LinkHost] = []

    def make(config: str, control_period: float = 0.05) -> LinkHost:
        hosts.append(LinkHost(ros_session.domain_id, config, control_period))
        return hosts[-1]

    yield make
    for h in hosts:
        h.close()


def start_emulator(session, config: str, **params) -> None:
    session.group.start(NodeSpec("driver_emulator", "driver_emulator", "/", {"config": config, "rate": 50.0, **params}))


def send_when_fresh(robot: HardwareRobot, command: np.ndarray, timeout: float = 10.0) -> None:
    """Send once the state is fresh (on 2 busy shared cores a 0.1 s gap is a real, passing fault)."""
    give_up = time.monotonic() + timeout
    while True:
        try:
            robot.send_command(command)
            return
        except StaleStateError:
            if time.monotonic() > give_up:
                raise
            time.sleep(0.01)


#: The tests that are not about the deadline give the driver a generous one (shared CI cores).
RELAXED = {"state": {"deadline": 1.0}, "wrench": {"deadline": 1.0}}


def test_driver_order_degrees_and_extra_joints_are_remapped_and_commands_reach_the_driver(
        ros_session, host_factory, tmp_path):
    s = ros_session
    cfg = str(robot_yaml(tmp_path, "sawyer", {"units": {"position": "deg", "velocity": "deg/s"},
                                              "state": {"joints": SHUFFLED, "deadline": 1.0},
                                              "wrench": {"deadline": 1.0},
                                              "command": {"joints": COMMAND_ORDER}}))
    commands = s.probe.subscribe("/forward_position_controller/commands", Float64MultiArray, wire.COMMAND_QOS)
    start_emulator(s, cfg)
    host = host_factory(cfg)
    state = host.link.wait_for_state(25.0)
    np.testing.assert_allclose(state.position, HOME, atol=0.01)  # our order, radians
    assert state.wrench is not None and state.wrench[2] < -1.0  # the tool's weight on the F/T sensor

    target = state.position.copy()
    target[0] += 0.2  # right_j0
    s.probe.wait_for(lambda: host.link._pub.get_subscription_count() >= 2, 10, "the controller and the probe")
    deadline = time.monotonic() + 8.0
    while time.monotonic() < deadline:
        send_when_fresh(host.robot, target)
        time.sleep(0.05)
        if abs(host.robot.read_state().position[0] - target[0]) < 0.01:
            break
    moved = host.robot.read_state().position
    assert moved[0] == pytest.approx(target[0], abs=0.01)
    np.testing.assert_allclose(moved[1:], state.position[1:], atol=0.01)
    # on the wire: the controller's joint order, in degrees
    s.probe.wait_for(lambda: commands, 5, "a command on the wire")
    wire_values = np.asarray(commands[-1][1].data)
    expected = [math.degrees(target[SAWYER_JOINTS.index(n)]) for n in COMMAND_ORDER]
    np.testing.assert_allclose(wire_values, expected, atol=1e-9)


def test_stale_state_fault_stops_commanding_and_clears_when_the_driver_comes_back(
        ros_session, host_factory, tmp_path):
    s = ros_session
    cfg = str(robot_yaml(tmp_path, "sawyer", {}))
    commands = s.probe.subscribe("/forward_position_controller/commands", Float64MultiArray, wire.COMMAND_QOS)
    start_emulator(s, cfg)
    host = host_factory(cfg)
    robot = host.robot
    host.link.wait_for_state(25.0)
    hold = robot.hold_command()
    send_when_fresh(robot, hold)

    s.group.processes[0].kill()  # the driver dies (no goodbye)
    deadline, period = robot.hardware.state.deadline, robot.control_period
    polled = time.monotonic()
    while True:
        try:
            robot.read_state()
        except StaleStateError as exc:
            raised_at, error, last = time.monotonic(), str(exc), robot._joints.last_receive
            break
        polled = time.monotonic()
        time.sleep(0.005)
    # detected at the first look after the deadline: within deadline + one period (plus however
    # late this polling loop itself was woken on a busy machine)
    # the age the robot measured when it raised, from its message (the stream's last_receive may move
    # afterwards: a message the dead driver sent can still be delivered late on a loaded host)
    assert last is not None and "joint state last message on /robot/joint_states" in error
    age = float(re.search(r"last message on /robot/joint_states ([0-9.]+) s ago", error).group(1))
    assert deadline < age + 5e-4 and age <= deadline + period + (raised_at - polled) + 5e-4, (age, error)
    # commanding stops: the command raises and nothing reaches the wire
    s.probe.wait_for(lambda: commands, 5, "the command sent before the fault")
    time.sleep(0.2)
    n = len(commands)
    with pytest.raises(StaleStateError):
        robot.send_command(hold)
    time.sleep(0.3)
    assert len(commands) == n

    start_emulator(s, cfg)  # the driver restarts: the subscription reconnects, the fault clears
    state = host.link.wait_for_state(25.0)
    np.testing.assert_allclose(state.position, HOME, atol=0.01)
    send_when_fresh(robot, robot.hold_command())
    s.probe.wait_for(lambda: len(commands) > n, 5, "a command after the reconnect")


def test_a_faulty_link_never_makes_the_state_go_back_in_time(ros_session, host_factory, tmp_path):
    s = ros_session
    cfg = str(robot_yaml(tmp_path, "sawyer", RELAXED))
    start_emulator(s, cfg, latency=0.02, jitter=0.01, drop=0.1, reorder=0.25, reorder_delay=0.05, seed=7)
    host = host_factory(cfg)
    robot = host.robot
    host.link.wait_for_state(25.0)
    stamps = []
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        stamps.append(robot.read_state().stamp)  # also: never stale (deadline 1 s) with these faults
        time.sleep(0.004)
    assert np.all(np.diff(stamps) >= 0.0)
    st = robot.status()
    assert st["joint_state/out_of_order"] > 5  # reordered messages did arrive, and were discarded
    assert st["joint_state/accepted"] > 50
    # a reading's age (RobotState.age) from the driver's stamps on the node's ROS clock: at least the link's latency
    assert 0.02 <= robot.read_state().age < 0.5 and st["reading_age"] >= 0.02
    # stamps advance at the driver's 50 Hz, minus drops
    assert len(set(stamps)) > 50


def test_robot_node_runs_the_peg_task_on_the_emulated_sawyer_driver(ros_session):
    """The whole hardware path: robot_node (backend hardware, real time) + HardwareLink + the
    emulated driver; a policy's Cartesian command moves the peg up."""
    s = ros_session
    s.group.start(NodeSpec("driver_emulator", "driver_emulator", "/", {"robot": "sawyer", "rate": 50.0}))
    s.group.start(NodeSpec("robot_node", "robot_node", "/arm", {
        "backend": "hardware", "timing": "realtime", "task": "sawyer_peg_in_hole", "state_timeout": 25.0}))
    steps = s.probe.subscribe("/arm/task_step", Float64MultiArray, wire.SENSOR_QOS)
    pub = s.probe.publisher("/arm/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    # In real time the node publishes task_step once at the reset (step 0), then only for steps it
    # executes: a late subscriber gets its first one by commanding (here: stand still).
    give_up = time.monotonic() + 40.0
    while not steps and time.monotonic() < give_up:
        pub.publish(wire.labelled_array([0.0, 0.0, 0.0], ["vx", "vy", "vz"]))
        time.sleep(0.05)
    assert steps, "no task_step within 40 s (hardware reset and the first command)"
    first = wire.split_task_step(*wire.read_labelled(steps[-1][1]))
    assert first.observation_labels[2] == "t-0/ee_z"
    end = time.monotonic() + 2.0
    while time.monotonic() < end:  # 2 s at vz = +0.05 m/s
        pub.publish(wire.labelled_array([0.0, 0.0, 0.05], ["vx", "vy", "vz"]))
        time.sleep(0.05)
    last = wire.split_task_step(*wire.read_labelled(steps[-1][1]))
    assert last.episode == first.episode and last.step >= 10
    assert last.stamp > first.stamp  # driver time moves on
    assert last.observation[2] - first.observation[2] > 0.03  # the peg went up (≈ 0.1 m if never faulted)
    status = s.probe.next_diagnostics("robot_node", "robot", timeout=5.0)  # the driver link's counters too
    assert int(status["driver/joint_state/accepted"]) > 50 and 0.0 <= float(status["driver/reading_age"]) < 0.5


def test_shadow_hand_trajectory_commands_and_tactile_array(ros_session, host_factory, tmp_path):
    """The Shadow Hand's driver shape: JointTrajectory with J1/J2 listed separately, tactile as a
    labelled array."""
    from trajectory_msgs.msg import JointTrajectory

    s = ros_session
    cfg = str(robot_yaml(tmp_path, "shadow_hand", {"state": {"deadline": 1.0}, "tactile": {"deadline": 1.0}}))
    sent = s.probe.subscribe("/rh_trajectory_controller/joint_trajectory", JointTrajectory, wire.COMMAND_QOS)
    start_emulator(s, cfg)
    host = host_factory(cfg)
    hand = host.robot
    state = host.link.wait_for_state(25.0)
    assert state.tactile is not None and state.tactile.shape == (15,)
    cmd = hand.hold_command()
    names = hand.spec.actuator_names
    cmd[names.index("rh_RFJ0")] = 1.0
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        send_when_fresh(hand, cmd)
        time.sleep(0.05)
        q = dict(zip(hand.spec.joint_names, hand.read_state().position))
        if abs(q["rh_RFJ1"] + q["rh_RFJ2"] - 1.0) < 0.05:
            break
    q = dict(zip(hand.spec.joint_names, hand.read_state().position))
    assert q["rh_RFJ1"] == pytest.approx(0.5, abs=0.05) and q["rh_RFJ2"] == pytest.approx(0.5, abs=0.05)
    s.probe.wait_for(lambda: sent, 5, "a trajectory on the wire")
    msg = sent[-1][1]
    point = dict(zip(msg.joint_names, msg.points[0].positions))
    assert "rh_RFJ0" not in point and point["rh_RFJ1"] == pytest.approx(0.5) and point["rh_RFJ2"] == pytest.approx(0.5)
    assert msg.points[0].time_from_start.nanosec == 50_000_000  # one control period
