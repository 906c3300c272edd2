"""An example task defined outside the package (docs/howto/add_task.md): the Sawyer's peg tip reaches
a point above the hole of the peg-in-hole cell, with as little effort as it can.

Objectives (per control step): ``reach`` ∈ [0, 1] = 1 − tanh(d / shaping_scale), d the distance (m)
from the peg tip to the target; ``effort`` ∈ [−1, 0] = −‖a‖² / D of the normalised action a (D).
``info['success']`` once d < tolerance.  Action: peg-tip linear velocity (vx, vy, vz).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from morl_robot.robots.base import Robot
from morl_robot.robots.spec import POSE_LABELS, ControlMode, RobotState
from morl_robot.tasks.base import (
    Quantity,
    ScriptedController,
    Task,
    TaskConfig,
    TaskDescription,
    Transition,
    TransitionReward,
    next_state_reward,
)


@dataclass
class SawyerReachConfig(TaskConfig):
    """The task's YAML keys beyond every task's (robot, scene, control_period, episode_duration)."""

    target_landmark: str = "hole_top"  # scene landmark the target is placed above
    target_height: float = 0.05  # m above the landmark
    tolerance: float = 0.01  # m: success radius
    shaping_scale: float = 0.1  # m
    init_joint_noise: float = 0.04  # rad, uniform noise on every joint at reset


class SawyerReach(Task):
    name: ClassVar[str] = "sawyer_reach"  # the task's name: --task sawyer_reach
    robot_name: ClassVar[str] = "sawyer"
    objective_names: ClassVar[tuple[str, ...]] = ("reach", "effort")
    control_mode: ClassVar[ControlMode] = ControlMode.CARTESIAN_VELOCITY
    tradeoff: ClassVar[tuple[str, str] | None] = ("reach", "effort")
    scripted: ClassVar[str | None] = "proportional reach"
    scripted_options: ClassVar[tuple[str, ...]] = ("gain",)
    observation_units: ClassVar[dict[str, str]] = {"target_dx": "m", "target_dy": "m", "target_dz": "m"}
    config: SawyerReachConfig  # the config dataclass the registry loads the YAML into

    def __init__(self, config: SawyerReachConfig) -> None:
        super().__init__(config)
        self._target = np.zeros(3)
        self._v_max = np.ones(3)

    # --- sizes, names, bounds ----------------------------------------------------------------
    @property
    def reward_lower(self) -> tuple[float, ...]:
        return (0.0, -1.0)

    @property
    def reward_upper(self) -> tuple[float, ...]:
        return (1.0, 0.0)

    @property
    def action_labels(self) -> tuple[str, ...]:
        return ("vx", "vy", "vz")  # components of the Cartesian command: their bounds are the robot's

    def observation_labels(self, robot: Robot) -> tuple[str, ...]:
        j = robot.spec.joint_names
        return tuple([f"ee_{p}" for p in POSE_LABELS] + [f"{n}/position" for n in j]
                     + [f"{n}/velocity" for n in j] + ["target_dx", "target_dy", "target_dz"])

    # --- episode -----------------------------------------------------------------------------
    def initial_configuration(self, robot: Robot, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, Any]]:
        home = robot.read_state().position
        q = home + rng.uniform(-self.config.init_joint_noise, self.config.init_joint_noise, size=home.shape)
        return {n: float(v) for n, v in zip(robot.spec.joint_names, q)}, {}

    def begin_episode(self, robot: Robot, state: RobotState) -> None:
        self._target = robot.landmark(self.config.target_landmark)[:3] + [0.0, 0.0, self.config.target_height]
        self._v_max = robot.spec.command_bounds(ControlMode.CARTESIAN_VELOCITY)[1][:3].copy()

    def command(self, action: np.ndarray, robot: Robot, state: RobotState) -> np.ndarray:
        twist = np.zeros(6)  # angular velocity 0: the orientation is held
        twist[:3] = np.clip(action, -1.0, 1.0) * self._v_max
        return twist

    def observe(self, state: RobotState) -> np.ndarray:
        assert state.ee_pose is not None
        return np.concatenate([state.ee_pose, state.position, state.velocity, state.ee_pose[:3] - self._target])

    def evaluate(self, state: RobotState, action: np.ndarray) -> Transition:
        f = self.transition_features(state)[None, :]
        a = np.asarray(action, np.float64)[None, :]
        reward = self.transition_rewards()["objectives"](f, a, f)[0]
        distance = float(np.linalg.norm(f[0]))
        return Transition(reward, None, {"distance": distance, "success": distance < self.config.tolerance})

    # --- rewards as pure functions of transitions (EPIC) ------------------------------------------
    def transition_feature_labels(self) -> tuple[str, ...]:
        return ("tip_dx", "tip_dy", "tip_dz")  # m, peg tip − target

    def transition_features(self, state: RobotState) -> np.ndarray:
        assert state.ee_pose is not None
        return state.ee_pose[:3] - self._target

    def transition_rewards(self) -> dict[str, TransitionReward]:
        c = self.config

        @next_state_reward
        def reach(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return 1.0 - np.tanh(np.linalg.norm(s2, axis=1) / c.shaping_scale)

        def effort(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return -np.mean(np.clip(a, -1.0, 1.0) ** 2, axis=1)

        def objectives(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return np.stack([reach(s, a, s2), effort(s, a, s2)], axis=1)

        return {"objectives": objectives, "reach": reach, "effort": effort}

    # --- optional: a hand-written controller and the reference card --------------------------------
    def scripted_policy(self, env: Any, gain: float = 2.0) -> ScriptedController:
        """v = gain · (target − p) (gain 1/s), read off the observation's target offset."""
        labels = list(env.observation_labels)
        index = [labels.index(f"target_d{axis}") for axis in "xyz"]
        v_max = env.robot.spec.command_bounds(ControlMode.CARTESIAN_VELOCITY)[1][:3]

        def act(obs: np.ndarray) -> np.ndarray:
            return np.clip(-gain * np.asarray(obs)[index] / v_max, -1.0, 1.0)

        return act, f"scripted proportional reach (gain {gain:g}/s)"

    def describe(self) -> TaskDescription:
        c = self.config
        return self._description(
            "Reach a point above the hole with little effort (an example plugin task).",
            [Quantity("ee_position", "m", "workspace", "peg-tip position (x, y, z)", 3),
             Quantity("ee_orientation", "", "unit quaternion", "peg-tip orientation (w, x, y, z)", 4),
             Quantity("joint_position", "rad", "joint limits", "joint angles", 7),
             Quantity("joint_velocity", "rad/s", "joint velocity limits", "joint velocities", 7),
             Quantity("target_offset", "m", "workspace", "peg tip − target", 3)],
            [Quantity(a, "m/s", "[-1, 1] → the robot's Cartesian limit", f"peg-tip velocity along {a[1]}")
             for a in self.action_labels],
            [Quantity("reach", "", "[0, 1]", f"1 − tanh(d / {c.shaping_scale:g} m), d the distance to the target"),
             Quantity("effort", "", "[-1, 0]", "−mean of the squared normalised action")],
            terminations=(("time_limit", f"after {c.episode_duration:g} s (truncation)"),),
            success=f"the peg tip is within {c.tolerance * 1e3:g} mm of the target")
