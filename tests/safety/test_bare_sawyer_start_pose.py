"""The bare Sawyer (its own MJCF, no task scene: the safety test's robot) started outstretched, in
MuJoCo's all-zero pose, with the peg tip 1.136 m out: past the workspace's hard limit (1.05 m), so
the monitor e-stopped at start-up.  A model without the 'home' keyframe now starts in the robot
YAML's home pose, which is inside the workspace."""
from __future__ import annotations

from morl_robot.robots.config import load_robot_config
from morl_robot.robots.mujoco_robot import MujocoRobot
from morl_robot.safety.monitor import build_monitor


def test_the_bare_sawyer_starts_inside_the_safety_workspace():
    config = load_robot_config("sawyer")
    robot = MujocoRobot(config, scene=None, control_period=0.05)
    try:
        state = robot.reset()
        names = list(robot.spec.joint_names)
        for name, q in config.hardware.home.items():  # the configured home, not MuJoCo's zero pose
            assert abs(state.position[names.index(name)] - q) < 0.05, name
        monitor = build_monitor("sawyer", "cartesian_velocity", watchdogs=False)
        monitor.on_joint_state(names, state.position, state.velocity, state.effort, 0.0, 0.0)
        assert monitor.active_violations() == []
    finally:
        robot.close()
