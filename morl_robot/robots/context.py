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
from typing import Any

import numpy as np

from morl_robot.errors import ConfigError, UnknownNameError


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


#: the model arrays :func:`scale_model` rewrites (copy them from the nominal model once)
SCALED_FIELDS = ("body_mass", "body_inertia", "geom_friction", "dof_damping")


def scale_model(model: Any, nominal: dict[str, np.ndarray], ctx: RobotContext, where: str) -> None:
    """Put a MuJoCo ``model``'s masses (inertia with them), geoms' sliding friction and joints'
    damping in ``ctx``, starting from ``nominal`` (``SCALED_FIELDS`` copied at load), so contexts
    never accumulate.  ``where`` names the model in the error for a name it does not have."""
    import mujoco

    for k in SCALED_FIELDS:
        getattr(model, k)[:] = nominal[k]

    def ident(kind: Any, name: str, what: str) -> int:
        i = mujoco.mj_name2id(model, kind, name)
        if i < 0:
            raise UnknownNameError(f"context '{ctx.name}': {where} has no {what} named '{name}'")
        return int(i)

    for body, s in ctx.body_mass.items():
        b = ident(mujoco.mjtObj.mjOBJ_BODY, body, "body")
        model.body_mass[b] = nominal["body_mass"][b] * s
        model.body_inertia[b] = nominal["body_inertia"][b] * s  # same geometry: inertia scales with mass
    for geom, s in ctx.geom_friction.items():
        g = ident(mujoco.mjtObj.mjOBJ_GEOM, geom, "geom")
        model.geom_friction[g, 0] = nominal["geom_friction"][g, 0] * s
    for joint, s in ctx.joint_damping.items():
        j = ident(mujoco.mjtObj.mjOBJ_JOINT, joint, "joint")
        adr, n = int(model.jnt_dofadr[j]), {0: 6, 1: 3}.get(int(model.jnt_type[j]), 1)  # free 6, ball 3 dofs
        model.dof_damping[adr : adr + n] = nominal["dof_damping"][adr : adr + n] * s
