"""The one robot interface shared by the MuJoCo backend and the ros2_control hardware backend.

A :class:`Robot` is driven at a fixed control period: ``send_command`` sets what the actuators
track, ``advance`` lets one control period pass (physics substeps in simulation, a rate-keeping
wait on hardware) and ``read_state`` returns the newest timestamped state.  Tasks only ever see
this interface, so a task never knows whether its robot is simulated.
"""
from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Self

import numpy as np

from morl_robot.errors import CommandError
from morl_robot.robots.spec import ControlMode, RobotSpec, RobotState


class Robot(abc.ABC):
    """A robot (simulated or real) behind a uniform, timestamped, mode-checked interface."""

    spec: RobotSpec
    control_period: float  # s

    def __init__(self, spec: RobotSpec, control_period: float) -> None:
        if control_period <= 0:
            raise ValueError(f"control_period must be positive, got {control_period}")
        self.spec = spec
        self.control_period = control_period
        self._mode = spec.default_control_mode

    # --- control mode --------------------------------------------------------------------
    @property
    def control_mode(self) -> ControlMode:
        return self._mode

    def set_control_mode(self, mode: ControlMode | str) -> None:
        """Switch how commands are interpreted; raises for a mode the robot does not declare."""
        mode = ControlMode(mode)
        if mode not in self.spec.control_modes:
            raise CommandError(
                f"robot '{self.spec.name}' does not support control mode '{mode.value}'; "
                f"supported: {[m.value for m in self.spec.control_modes]}"
            )
        self._on_mode_change(mode)
        self._mode = mode

    def _on_mode_change(self, mode: ControlMode) -> None:
        """Backend hook: reconfigure actuators for ``mode``."""

    # --- the loop ------------------------------------------------------------------------
    def send_command(self, command: np.ndarray) -> None:
        """Validate (size, finiteness, mode) and apply a command in the active control mode."""
        arr = self.spec.validate_command(command, self._mode)
        self._apply(arr)

    @abc.abstractmethod
    def _apply(self, command: np.ndarray) -> None:
        """Backend: apply an already validated command of shape (command_size,)."""

    @abc.abstractmethod
    def advance(self) -> None:
        """Let one control period pass with the current command held."""

    @abc.abstractmethod
    def read_state(self) -> RobotState:
        """The newest state reading."""

    def step(self, command: np.ndarray) -> RobotState:
        """``send_command`` + ``advance`` + ``read_state``."""
        self.send_command(command)
        self.advance()
        return self.read_state()

    @abc.abstractmethod
    def hold_command(self) -> np.ndarray:
        """The command that holds the robot still in the active mode (zero velocity, current
        position targets, zero effort beyond gravity compensation)."""

    @abc.abstractmethod
    def reset(
        self,
        seed: int | None = None,
        joint_positions: Mapping[str, float] | None = None,
        scene: Mapping[str, Any] | None = None,
    ) -> RobotState:
        """Bring the robot to a start configuration.  ``joint_positions`` by joint name;
        ``scene`` sets named task-object joints (simulation; hardware needs a person or a
        fixture for that and says so)."""

    def apply_context(self, context: Any) -> None:
        """Put the robot in an environment context (a :class:`morl_robot.robots.context.RobotContext`;
        None: nominal) before the next :meth:`reset`.  Only a simulated robot can change its physics:
        this backend accepts the nominal context and refuses any other, naming where it applies
        instead (the driver emulator's ``context`` parameter for hardware through the emulator)."""
        name = getattr(context, "name", "nominal") if context is not None else "nominal"
        if context is not None and (context.body_mass or context.geom_friction or context.joint_damping
                                    or context.body_offset or context.actuator_gain != 1.0
                                    or context.sensor_faults or context.link_faults):
            raise CommandError(f"{type(self).__name__} cannot apply context '{name}': a physical robot's "
                               "dynamics are what they are; give the context to the driver emulator "
                               "(parameter 'context') or evaluate in simulation")

    def apply_external_force(self, body: str, force: np.ndarray, torque: np.ndarray | None = None) -> None:
        """Simulation only: push the named body with an external wrench (force (3,) N and torque
        (3,) N·m in the world frame, at the body's centre of mass) until changed; zeros remove it,
        and a reset removes it.  What a force gauge pressed against the robot does on a test rig
        (the safety test's fingertip press); on hardware a person holds the gauge, so a backend
        that cannot push raises :class:`CommandError` saying so."""
        raise CommandError(f"{type(self).__name__} cannot apply an external force to '{body}' (simulation "
                           "only): on hardware, press the body with a force gauge by hand")

    def landmark(self, name: str) -> np.ndarray:
        """Pose (7,) [m, quaternion wxyz] of a named fixed landmark of the work cell (e.g. the
        hole of a peg-in-hole fixture) in the robot base frame: an MJCF site in simulation, a
        calibrated pose on hardware."""
        raise NotImplementedError(f"{type(self).__name__} has no landmarks")

    def close(self) -> None:
        """Release the backend's resources."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
