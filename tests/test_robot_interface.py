"""The robot interface on the MuJoCo backend: spec from MJCF + YAML, command checking, control
modes, timestamps, determinism."""
import numpy as np
import pytest

from morl_robot.errors import CommandError, ConfigError
from morl_robot.robots.config import load_robot_config
from morl_robot.robots.mujoco_robot import MujocoRobot
from morl_robot.robots.spec import ControlMode


@pytest.fixture(scope="module")
def sawyer():
    robot = MujocoRobot(load_robot_config("sawyer"), scene="sawyer/peg_in_hole.xml", control_period=0.05)
    yield robot
    robot.close()


def test_sawyer_spec(sawyer):
    spec = sawyer.spec
    assert spec.joint_names == tuple(f"right_j{i}" for i in range(7))
    assert len(spec.actuators) == 7
    assert set(spec.control_modes) == set(ControlMode)
    assert spec.sensor("wrench").units == ("N", "N", "N", "N·m", "N·m", "N·m")
    for j in spec.joints:
        assert j.lower < j.upper and j.velocity_limit > 0 and j.effort_limit and j.effort_limit > 0
    assert sawyer.substeps == round(0.05 / sawyer.model.opt.timestep)


@pytest.mark.parametrize(
    "mode, command, match",
    [
        (ControlMode.POSITION, np.zeros(6), r"must have shape \(7,\)"),
        (ControlMode.POSITION, np.array([0, 0, np.nan, 0, 0, 0, 0]), r"non-finite value nan at index 2 \('right_j2'\)"),
        (ControlMode.CARTESIAN_VELOCITY, np.zeros(7), r"must have shape \(6,\) \[vx, vy, vz, wx, wy, wz\]"),
        (ControlMode.EFFORT, np.full(7, np.inf), "non-finite"),
    ],
)
def test_bad_commands_raise(sawyer, mode, command, match):
    sawyer.set_control_mode(mode)
    with pytest.raises(CommandError, match=match):
        sawyer.send_command(command)


def test_out_of_mode_command_raises():
    hand = MujocoRobot(load_robot_config("shadow_hand"), control_period=0.05)
    with pytest.raises(CommandError, match="does not support control mode 'cartesian_velocity'"):
        hand.set_control_mode("cartesian_velocity")
    with pytest.raises(ValueError):
        hand.set_control_mode("torque_of_doom")


def test_state_is_timestamped_and_advances(sawyer):
    sawyer.set_control_mode(ControlMode.POSITION)
    s0 = sawyer.reset()
    s1 = sawyer.step(sawyer.hold_command())
    assert s1.stamp == pytest.approx(s0.stamp + 0.05)
    assert s1.position.shape == (7,) and s1.wrench.shape == (6,) and s1.ee_pose.shape == (7,)
    assert not s1.non_finite_fields()


def test_position_mode_tracks_target(sawyer):
    sawyer.set_control_mode(ControlMode.POSITION)
    s = sawyer.reset()
    target = s.position + np.array([0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.2])
    for _ in range(30):
        s = sawyer.step(target)
    assert np.allclose(s.position, target, atol=0.02)


def test_velocity_and_effort_modes_move_the_arm(sawyer):
    sawyer.set_control_mode(ControlMode.VELOCITY)
    s0 = sawyer.reset()
    for _ in range(10):
        s = sawyer.step(np.array([0.2, 0, 0, 0, 0, 0, 0]))
    assert s.position[0] - s0.position[0] == pytest.approx(0.2 * 0.5, abs=0.03)
    sawyer.set_control_mode(ControlMode.EFFORT)
    s0 = sawyer.reset()
    for _ in range(4):
        s = sawyer.step(np.array([0, 0, 0, 0, 0, 0, 2.0]))
    assert s.position[6] > s0.position[6] + 0.05  # gravity compensated: a torque turns the wrist
    sawyer.set_control_mode(ControlMode.POSITION)


def test_cartesian_velocity_moves_the_tip_straight(sawyer):
    sawyer.set_control_mode(ControlMode.CARTESIAN_VELOCITY)
    s0 = sawyer.reset()
    twist = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0])  # 5 cm/s up
    for _ in range(20):  # 1 s
        s = sawyer.step(twist)
    delta = s.ee_pose[:3] - s0.ee_pose[:3]
    assert delta[2] == pytest.approx(0.05, abs=0.01)
    assert np.linalg.norm(delta[:2]) < 0.01
    assert np.all(np.abs(s.velocity) <= np.array([j.velocity_limit for j in sawyer.spec.joints]) + 1e-6)
    sawyer.set_control_mode(ControlMode.POSITION)


def test_same_commands_same_trajectory():
    cfg = load_robot_config("sawyer")
    rng = np.random.default_rng(3)
    twists = rng.uniform(-0.1, 0.1, size=(40, 6))
    runs = []
    for _ in range(2):
        r = MujocoRobot(cfg, scene="sawyer/peg_in_hole.xml", control_period=0.05)
        r.set_control_mode(ControlMode.CARTESIAN_VELOCITY)
        r.reset()
        runs.append(np.array([r.step(t).position for t in twists]))
    assert np.array_equal(runs[0], runs[1])


def test_control_period_must_be_multiple_of_timestep():
    with pytest.raises(ConfigError, match="whole multiple of the physics timestep"):
        MujocoRobot(load_robot_config("sawyer"), control_period=0.0031)


def test_missing_scene_is_named():
    with pytest.raises(ConfigError, match="MJCF file not found"):
        MujocoRobot(load_robot_config("sawyer"), scene="sawyer/nope.xml")


def test_menagerie_is_optional(monkeypatch, tmp_path):
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="needs MuJoCo Menagerie"):
        MujocoRobot(load_robot_config("sawyer"), model_source="menagerie")


def test_shadow_hand_spec_coupling():
    hand = MujocoRobot(load_robot_config("shadow_hand"), control_period=0.05)
    spec = hand.spec
    assert len(spec.joints) == 24 and len(spec.actuators) == 20
    coupled = {a.name: a.joints for a in spec.actuators if len(a.joints) == 2}
    assert {name: set(joints) for name, joints in coupled.items()} == {
        f"rh_{f}J0": {f"rh_{f}J1", f"rh_{f}J2"} for f in ("FF", "MF", "RF", "LF")
    }
    assert spec.sensor("tactile").size == 15
    hand.reset()
    target = hand.hold_command()
    target[spec.actuator_names.index("rh_FFJ0")] = 1.2
    for _ in range(20):
        s = hand.step(target)
    j1, j2 = s.position[spec.joint_names.index("rh_FFJ1")], s.position[spec.joint_names.index("rh_FFJ2")]
    assert j1 == pytest.approx(j2, abs=0.05) and j1 + j2 == pytest.approx(1.2, abs=0.1)
