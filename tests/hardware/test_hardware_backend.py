"""The hardware backend's pure core: typed driver config, name/order/unit/coupling conversions,
stale-state deadlines, out-of-order messages, landmarks (no ROS)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hw_helpers import SAWYER_JOINTS, robot_yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.robots.config import HardwareConfig, load_robot_config
from morl_robot.robots.driver_codec import DriverCommand, split_coupled
from morl_robot.robots.hardware import (
    HardwareRobot,
    StaleStateError,
    load_hardware_robot,
)
from morl_robot.robots.spec import ControlMode

DEG = math.pi / 180.0


class Clock:
    def __init__(self, t: float = 50.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:  # the robot's waits pass on this clock (no driver answers meanwhile)
        self.t += dt


def make_robot(source: str, clock: Clock | None = None) -> tuple[HardwareRobot, list[DriverCommand]]:
    sent: list[DriverCommand] = []
    clock = clock or Clock()
    robot = load_hardware_robot(source, control_period=0.05, sink=sent.append, clock=clock, sleep=clock.sleep)
    return robot, sent


def feed_sawyer(robot: HardwareRobot, q: np.ndarray, stamp: float, wrench: bool = True) -> None:
    robot.on_joint_state(SAWYER_JOINTS, q, np.zeros(7), np.zeros(7), stamp)
    if wrench:
        robot.on_wrench([0, 0, -3.0], [0, 0, 0], stamp, "right_hand_ft")


# --- configuration ---------------------------------------------------------------------------
def test_robot_yamls_have_typed_hardware_sections():
    sawyer, hand = load_robot_config("sawyer"), load_robot_config("shadow_hand")
    assert isinstance(sawyer.hardware, HardwareConfig) and isinstance(hand.hardware, HardwareConfig)
    assert sawyer.hardware.state.topic == "/robot/joint_states" and "head_pan" in sawyer.hardware.state.joints
    assert hand.hardware.command.interface == "trajectory" and len(hand.hardware.command.joints) == 24
    arm, _ = make_robot("sawyer")
    # a forward *position* controller serves position and (integrated) Cartesian velocity only
    assert arm.spec.control_modes == (ControlMode.POSITION, ControlMode.CARTESIAN_VELOCITY)
    assert arm.spec.has_sensor("wrench") and arm.spec.cartesian is not None
    hand_robot, _ = make_robot("shadow_hand")
    assert hand_robot.spec.control_modes == (ControlMode.POSITION,)
    assert [s.kind for s in hand_robot.spec.sensors] == ["tactile"]  # no scene sensors on hardware


@pytest.mark.parametrize(
    "hardware, key, words",
    [
        ({"units": {"position": "grad"}}, "hardware.units.position", "allowed values: 'rad', 'deg'"),
        ({"command": {"joints": SAWYER_JOINTS[:6] + ["right_j9"]}}, "hardware.command.joints[6]",
         "'right_j9' is not a joint or actuator of 'sawyer'"),
        ({"command": {"joints": SAWYER_JOINTS + ["right_j0"]}}, "hardware.command.joints", "more than once"),
        ({"state": {"deadline": -0.1}}, "hardware.state.deadline", "must be positive"),
        ({"state": {"joints": ["head_pan"] + SAWYER_JOINTS[:6]}}, "hardware.state.joints", "lacks joints of 'sawyer': right_j6"),
        ({"landmarks": {"hole_top": [0.6, 0, 0]}}, "hardware.landmarks.hole_top", "needs 7 values"),
        ({"landmarks": {"hole_top": [0.6, 0, 0, 1, 1, 0, 0]}}, "hardware.landmarks.hole_top", "unit norm"),
        ({"command": {"interface": "trajectory", "mode": "velocity"}}, "hardware.command.mode", "takes positions"),
        ({"home": {"right_j7": 0.0}}, "hardware.home.right_j7", "not a joint of 'sawyer'"),
        ({"wrench": None}, "hardware.wrench", "wrench sensor"),
        ({"reset": {"speed": 2.0}}, "hardware.reset.speed", "fraction"),
    ],
)
def test_bad_hardware_sections_name_file_and_key(tmp_path, hardware, key, words):
    path = robot_yaml(tmp_path, "sawyer", hardware)
    with pytest.raises(ConfigError) as exc:
        load_robot_config(str(path))
    msg = str(exc.value)
    assert str(path) in msg and f"key '{key}'" in msg and words in msg


def test_uncovered_actuator_is_a_config_error(tmp_path):
    path = robot_yaml(tmp_path, "sawyer", {"command": {"joints": SAWYER_JOINTS[:6]}})
    with pytest.raises(ConfigError, match=r"hardware.command.joints.*must command actuator right_j6 exactly once"):
        load_hardware_robot(str(path), control_period=0.05)
    hand = robot_yaml(tmp_path, "shadow_hand", {"command": {"joints": [j for j in load_robot_config(
        "shadow_hand").hardware.command.joints if j != "rh_MFJ2"]}}, "hand.yaml")
    with pytest.raises(ConfigError, match=r"rh_MFJ0 \(or all of rh_MFJ1, rh_MFJ2\)"):
        load_hardware_robot(str(hand), control_period=0.05)


def test_no_hardware_section_is_a_clear_error(tmp_path):
    import yaml

    data = yaml.safe_load(robot_yaml(tmp_path, "sawyer", {}).read_text())
    del data["hardware"]
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(ConfigError, match="no 'hardware:' section"):
        load_hardware_robot(str(path), control_period=0.05)


# --- state: names, order, units, extra joints -------------------------------------------------
def test_joint_state_in_driver_order_and_degrees_comes_out_in_our_order_and_radians(tmp_path):
    path = robot_yaml(tmp_path, "sawyer", {"units": {"position": "deg", "velocity": "deg/s", "effort": "mN·m"}})
    robot, _ = make_robot(str(path))
    q = np.array([0.1, -0.7, 0.05, 1.6, -0.05, 0.7, 3.1])  # rad, ours
    order = [3, "head_pan", 0, 6, 1, "right_gripper_l_finger_joint", 5, 2, 4]
    names = [n if isinstance(n, str) else SAWYER_JOINTS[n] for n in order]
    pos = [7.5 if isinstance(n, str) else q[n] / DEG for n in order]  # extras hold junk values
    vel = [1.0 if isinstance(n, str) else 10.0 * n for n in order]  # deg/s
    eff = [2.0 if isinstance(n, str) else 1000.0 * n for n in order]  # mN·m
    robot.on_joint_state(names, pos, vel, eff, 1.0)
    robot.on_wrench([0, 0, 1], [0, 0, 0], 1.0, "right_hand_ft")
    s = robot.read_state()
    np.testing.assert_allclose(s.position, q, atol=1e-12)
    np.testing.assert_allclose(s.velocity, 10.0 * np.arange(7) * DEG, atol=1e-12)
    np.testing.assert_allclose(s.effort, np.arange(7.0), atol=1e-12)
    assert s.stamp == 1.0 and s.ee_pose is not None and s.ee_pose.shape == (7,)


def test_messages_without_our_joints_are_ignored_and_partial_ones_merge():
    clock = Clock()
    robot, _ = make_robot("sawyer", clock)
    robot.on_wrench([0, 0, 1], [0, 0, 0], 1.0, "right_hand_ft")
    assert not robot.on_joint_state(["right_gripper_l_finger_joint"], [0.01], [], [], 1.0)  # a gripper on the same topic
    robot.on_joint_state(SAWYER_JOINTS[:4], [0.1, 0.2, 0.3, 0.4], [], [], 1.0)
    with pytest.raises(StaleStateError, match="never sent joints right_j4, right_j5, right_j6"):
        robot.read_state()
    robot.on_joint_state(SAWYER_JOINTS[4:], [0.5, 0.6, 0.7], [], [], 1.0)
    np.testing.assert_allclose(robot.read_state().position, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])


def test_missing_velocities_are_finite_differences():
    clock = Clock()
    robot, _ = make_robot("sawyer", clock)
    robot.on_wrench([0, 0, 1], [0, 0, 0], 1.0, "right_hand_ft")
    robot.on_joint_state(SAWYER_JOINTS, np.zeros(7), [], [], 1.0)
    clock.t += 0.01
    robot.on_joint_state(SAWYER_JOINTS, np.full(7, 0.02), [], [], 1.01)
    np.testing.assert_allclose(robot.read_state().velocity, np.full(7, 2.0))
    np.testing.assert_allclose(robot.read_state().effort, 0.0)


def test_malformed_and_non_finite_joint_states_are_rejected_with_the_reason():
    clock = Clock()
    robot, _ = make_robot("sawyer", clock)
    robot.on_wrench([0, 0, 1], [0, 0, 0], 1.0, "right_hand_ft")
    assert not robot.on_joint_state(SAWYER_JOINTS, np.zeros(6), [], [], 1.0)
    q = np.zeros(7)
    q[2] = np.nan
    assert not robot.on_joint_state(SAWYER_JOINTS, q, [], [], 1.0)
    with pytest.raises(StaleStateError, match="2 message\\(s\\) rejected: non-finite joint positions"):
        robot.read_state()


# --- commands: order, units, couplings -------------------------------------------------------
def test_position_command_goes_out_in_the_controllers_order_and_units(tmp_path):
    order = [6, 0, 5, 1, 4, 2, 3]
    path = robot_yaml(tmp_path, "sawyer", {"units": {"position": "deg"},
                                           "command": {"joints": [SAWYER_JOINTS[i] for i in order]}})
    robot, sent = make_robot(str(path))
    feed_sawyer(robot, np.zeros(7) / DEG, 1.0)
    target = np.array([0.1, -0.5, 0.2, 1.0, -0.1, 0.3, 1.5])
    robot.send_command(target)
    (cmd,) = sent
    assert cmd.kind == "forward" and cmd.mode == "position"
    assert cmd.joint_names == tuple(SAWYER_JOINTS[i] for i in order)
    np.testing.assert_allclose(cmd.values, target[order] / DEG)
    robot.send_command(np.full(7, 100.0))  # beyond the joint ranges: clipped to the actuator limits
    hi = np.array([a.upper for a in robot.spec.actuators])
    np.testing.assert_allclose(sent[-1].values, hi[order] / DEG)


def test_shadow_j0_command_becomes_j1_and_j2_of_the_trajectory_controller():
    hand, sent = make_robot("shadow_hand")
    names = hand.spec.joint_names
    hand.on_joint_state(names, np.zeros(24), np.zeros(24), np.zeros(24), 1.0)
    hand.on_tactile(np.zeros(15), (), 1.0)
    cmd = hand.hold_command()
    ff0 = hand.spec.actuator_names.index("rh_FFJ0")
    cmd[ff0] = 1.2
    hand.send_command(cmd)
    out = dict(zip(sent[-1].joint_names, sent[-1].values))
    assert sent[-1].kind == "trajectory" and sent[-1].time_from_start == pytest.approx(0.05)
    assert out["rh_FFJ1"] == pytest.approx(0.6) and out["rh_FFJ2"] == pytest.approx(0.6)
    assert "rh_FFJ0" not in out and len(out) == 24


@given(st.floats(-1.0, 4.0), st.floats(0.0, 1.0), st.floats(0.5, 2.0))
def test_split_coupled_keeps_the_sum_within_the_joint_ranges(total, lo, width):
    lower, upper = np.array([lo, 0.0]), np.array([lo + width, 1.5])
    x = split_coupled(total, lower, upper)
    assert np.all(x >= lower - 1e-12) and np.all(x <= upper + 1e-12)
    reachable = np.clip(total, lower.sum(), upper.sum())
    assert x.sum() == pytest.approx(reachable, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=20, max_size=20), st.sampled_from(["position", "effort"]))
def test_driver_codec_round_trips_actuator_commands(fractions, mode):
    hand, _ = make_robot("shadow_hand")
    lo, hi = hand.spec.command_bounds(ControlMode(mode))
    values = lo + np.asarray(fractions) * (hi - lo)
    driver = hand.codec.encode_command(values, mode)
    assert driver.shape == (24,)
    # atol: the MJCF states ranges to 6 decimals, so a coupled J0's ctrlrange (3.141593) and the
    # sum of its joints' ranges (2 × 1.570796) differ by 1e-6
    np.testing.assert_allclose(hand.codec.decode_command(driver, mode), values, atol=2e-6)


# --- freshness and ordering ------------------------------------------------------------------
def test_stale_state_is_a_fault_that_stops_commanding_and_clears_with_fresh_state():
    clock = Clock(10.0)
    robot, sent = make_robot("sawyer", clock)
    with pytest.raises(StaleStateError, match="joint state never received on /robot/joint_states"):
        robot.read_state()
    q = np.array([0.0, -0.7, 0.0, 1.6, 0.0, 0.7, 3.1])
    feed_sawyer(robot, q, 100.0)
    robot.read_state()
    clock.t += 0.1  # exactly the deadline: still fresh
    robot.send_command(q)
    assert len(sent) == 1
    clock.t += 0.001
    with pytest.raises(StaleStateError, match=r"joint state last message on /robot/joint_states 0.101 s ago \(deadline 0.100 s\)"):
        robot.read_state()
    with pytest.raises(StaleStateError):
        robot.send_command(q)
    waited_from = clock.t
    with pytest.raises(StaleStateError):
        robot.reset()  # after waiting reset.stale_grace for the driver
    assert clock.t - waited_from >= robot.hardware.reset.stale_grace
    assert len(sent) == 1  # nothing went to the driver while stale
    feed_sawyer(robot, q, 100.2)
    robot.send_command(q)
    assert len(sent) == 2


def test_a_stale_wrench_alone_is_a_fault():
    clock = Clock()
    robot, _ = make_robot("sawyer", clock)
    feed_sawyer(robot, np.zeros(7), 1.0)
    clock.t += 0.08
    robot.on_joint_state(SAWYER_JOINTS, np.zeros(7), [], [], 1.08)
    clock.t += 0.05
    with pytest.raises(StaleStateError, match="wrench last message on /wrist_ft/wrench") as exc:
        robot.read_state()
    assert "joint state" not in str(exc.value)


def test_out_of_order_messages_are_discarded_until_the_stream_goes_stale():
    clock = Clock()
    robot, _ = make_robot("sawyer", clock)
    feed_sawyer(robot, np.full(7, 0.2), 5.0)
    clock.t += 0.01
    assert not robot.on_joint_state(SAWYER_JOINTS, np.full(7, 0.1), [], [], 4.99)  # older: never go back
    assert not robot.on_joint_state(SAWYER_JOINTS, np.full(7, 0.1), [], [], 5.0)  # a duplicate
    assert robot.read_state().stamp == 5.0 and robot.read_state().position[0] == 0.2
    assert robot.status()["joint_state/out_of_order"] == 2
    clock.t += 0.2  # the driver was silent past its deadline, then restarted with its clock at zero
    assert robot.on_joint_state(SAWYER_JOINTS, np.full(7, 0.3), [], [], 0.5)
    robot.on_wrench([0, 0, 1], [0, 0, 0], 0.5, "right_hand_ft")
    assert robot.read_state().stamp == 0.5 and robot.read_state().position[0] == 0.3


def test_wrench_units_and_frame(tmp_path):
    path = robot_yaml(tmp_path, "sawyer", {"units": {"force": "kgf", "torque": "mN·m"}})
    clock = Clock()
    robot, _ = make_robot(str(path), clock)
    robot.on_joint_state(SAWYER_JOINTS, np.zeros(7), [], [], 1.0)
    assert not robot.on_wrench([0, 0, 1.0], [0, 0, 0], 1.0, "tool0")
    with pytest.raises(StaleStateError, match="rejected: frame 'tool0' is not 'right_hand_ft'"):
        robot.read_state()
    robot.on_wrench([0, 0, 1.0], [1000.0, 0, 0], 1.0, "right_hand_ft")
    np.testing.assert_allclose(robot.read_state().wrench, [0, 0, 9.80665, 1.0, 0, 0])


def test_tactile_by_label_or_in_our_order(tmp_path):
    hand, _ = make_robot("shadow_hand")
    hand.on_joint_state(hand.spec.joint_names, np.zeros(24), [], [], 1.0)
    ours = hand.spec.sensor("tactile").labels
    values = np.arange(15.0)
    hand.on_tactile(values[::-1], ours[::-1], 1.0)  # labelled, any order
    np.testing.assert_allclose(hand.read_state().tactile, values)
    assert not hand.on_tactile(np.zeros(5), (), 2.0)  # unlabelled and the wrong size
    assert not hand.on_tactile(np.zeros(15), tuple(f"x{i}" for i in range(15)), 2.0)
    hand.on_tactile(values * 2, (), 2.0)
    np.testing.assert_allclose(hand.read_state().tactile, values * 2)
    scaled = robot_yaml(tmp_path, "shadow_hand", {"tactile": {"scale": 0.5, "labels": [f"pad{i}" for i in range(15)]}})
    hand2, _ = make_robot(str(scaled))
    hand2.on_joint_state(hand2.spec.joint_names, np.zeros(24), [], [], 1.0)
    hand2.on_tactile(values, [f"pad{i}" for i in range(15)], 1.0)
    np.testing.assert_allclose(hand2.read_state().tactile, values * 0.5)


# --- landmarks -------------------------------------------------------------------------------
def test_landmarks_are_calibrated_poses_from_the_yaml():
    robot, _ = make_robot("sawyer")
    np.testing.assert_allclose(robot.landmark("hole_top"), [0.65, 0.0, -0.10, 1, 0, 0, 0])
    with pytest.raises(UnknownNameError, match="no calibrated landmark 'peg_rack'.*hardware.landmarks in .*/config/robots/sawyer.yaml"):
        robot.landmark("peg_rack")


def test_name_map_translates_driver_joint_names(tmp_path):
    driver = {j: f"arm_joint_{i + 1}" for i, j in enumerate(SAWYER_JOINTS)}
    path = robot_yaml(tmp_path, "sawyer", {"name_map": driver, "state": {"joints": list(driver.values())},
                                           "command": {"joints": list(driver.values())[::-1]}})
    robot, sent = make_robot(str(path))
    q = np.linspace(-0.3, 0.3, 7)
    robot.on_joint_state(list(driver.values()), q, [], [], 1.0)
    robot.on_wrench([0, 0, 1], [0, 0, 0], 1.0, "right_hand_ft")
    np.testing.assert_allclose(robot.read_state().position, q)
    robot.send_command(q)
    assert sent[-1].joint_names == tuple(driver.values())[::-1]
    np.testing.assert_allclose(sent[-1].values, q[::-1])
