"""What an environment context does to a robot, resolved to model names (issue 37).

A :class:`RobotContext` is the robot-side form of a named context (``morl_robot.contexts``
compiles a task's context YAML into one): scale factors per MJCF body / geom / joint, an actuator
gain, a static-body offset, and sensor and link faults.  A backend applies it at reset only
(:meth:`morl_robot.robots.base.Robot.apply_context`); the MuJoCo backend restores the nominal model
first, so contexts never accumulate across episodes.

Mass: scaling a body's mass by ``s`` scales its inertia tensor by ``s`` too (same geometry, uniform
density change; the centre of mass stays), always.  Sensor faults (``wrench_bias``,
``wrench_noise``, ``tactile_noise``) act on the readings the backend reports — the same readings
the driver emulator publishes; ``latency`` and ``jitter`` are link faults with
:class:`~morl_robot.robots.emulation.LinkFaults` semantics (fixed delay plus uniform extra delay in
[0, jitter], order kept).  Details: docs/howto/generalization.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from morl_robot.errors import ConfigError


@dataclass(frozen=True)
class RobotContext:
    """A context resolved to model names (empty: the nominal robot)."""

    name: str = "nominal"
    body_mass: dict[str, float] = field(default_factory=dict)  # body → mass (and inertia) scale
    geom_friction: dict[str, float] = field(default_factory=dict)  # geom → sliding-friction scale
    joint_damping: dict[str, float] = field(default_factory=dict)  # joint → damping scale
    actuator_gain: float = 1.0  # every actuator's force scale (servo gains, velocity gain, motor torque)
    body_offset: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # static body → Δpos (m)
    wrench_bias: tuple[float, ...] = (0.0,) * 6  # N, N·m added to the wrist reading after the reset's tare
    wrench_noise: float = 0.0  # N: std of Gaussian noise on each force component per reading
    tactile_noise: float = 0.0  # N: std of Gaussian noise on each tactile reading
    latency: float = 0.0  # s: every command (in-process) or message (emulator) delayed by this
    jitter: float = 0.0  # s: plus uniform [0, jitter], order kept
    seed: int = 0  # the sensor-noise and link-jitter stream

    def validate(self) -> None:
        for what, table in (("mass", self.body_mass), ("friction", self.geom_friction),
                            ("damping", self.joint_damping)):
            for name, s in table.items():
                if not (np.isfinite(s) and s > 0):
                    raise ConfigError(f"context '{self.name}': {what} scale of '{name}' must be > 0, got {s}")
        if not (np.isfinite(self.actuator_gain) and self.actuator_gain > 0):
            raise ConfigError(f"context '{self.name}': actuator_gain must be > 0, got {self.actuator_gain}")
        if len(self.wrench_bias) != 6:
            raise ConfigError(f"context '{self.name}': wrench_bias needs 6 values (N, N·m), got {len(self.wrench_bias)}")
        for key in ("wrench_noise", "tactile_noise", "latency", "jitter"):
            if not getattr(self, key) >= 0:
                raise ConfigError(f"context '{self.name}': {key} must be >= 0, got {getattr(self, key)}")

    @property
    def sensor_faults(self) -> bool:
        return bool(any(self.wrench_bias) or self.wrench_noise or self.tactile_noise)

    @property
    def link_faults(self) -> bool:
        return bool(self.latency or self.jitter)


NOMINAL = RobotContext()
