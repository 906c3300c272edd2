"""Force-limited Cartesian admittance: contact made safe below the policy.

Why, where it runs, its parameters and measured effect: docs/explanation/contact_control.md.  The
update per tick dt (commanded velocity v_cmd, tared contact force f, both (3,) in the base frame),
as implemented here: f_e = f·max(‖f‖ − f_0, 0)/‖f‖; with n = f/‖f‖, s = −v_cmdᵀn > 0 and
g = clip((F_max − ‖f‖)/(F_max − f_0), 0, 1), v_ref = v_cmd + (1 − g) s n; the compliant offset e
(D ė + K e = f_e, implicit: unconditionally stable for any dt) becomes e' = (D e + dt f_e)/(D + dt K);
the output v = v_ref + (e' − e)/dt, its norm capped at the robot's linear speed limit.  A persistent
push settles below F_max (K = 0: at f_0 + D s g, :meth:`ForceLimitedAdmittance.steady_force`); above
F_max the tool backs off at (‖f‖ − f_0)/D.  The law bounds the steady force, not an impact (that is the
safety layer's ``approach`` rule).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from morl_robot.configuration import fail


@dataclass
class ComplianceConfig:
    """The robot YAML's ``cartesian.compliance`` section (the law: the module docstring)."""

    stiffness: float = 0.0  # N/m (K): pulls the compliant frame back to the commanded path; 0: damping control
    damping: float = 100.0  # N·s/m (D): the tool yields at f/D m/s to a contact force f
    force_limit: float = 20.0  # N (F_max): inward motion stops at this tared contact force
    force_deadband: float = 2.0  # N (f_0): contact forces below this are ignored (noise, tool inertia)

    def validate(self) -> None:
        for key in ("stiffness", "damping", "force_limit", "force_deadband"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                fail("", key, f"must be a finite number >= 0, got {value!r}")
        if self.damping <= 0:
            fail("", "damping", f"must be positive (N·s/m), got {self.damping}")
        if self.force_limit <= self.force_deadband:
            fail("", "force_limit", f"must exceed force_deadband ({self.force_deadband} N), got {self.force_limit} N")


class ForceLimitedAdmittance:
    """The law of the module docstring, with its one piece of state, the offset e (3,) (m).

    Args:
        config: stiffness, damping, force limit, dead band, offset bound.
        max_speed: the robot's linear speed limit (m/s); the output's norm never exceeds it.
    """

    def __init__(self, config: ComplianceConfig, max_speed: float) -> None:
        self.config = config
        self.max_speed = float(max_speed)
        self.offset = np.zeros(3)  # e (3,) m, compliant frame − commanded path
        self._denominator = 0.0

    def reset(self) -> None:
        """A new start (an episode, a mode change): no offset."""
        self.offset = np.zeros(3)

    def step(self, v_cmd: np.ndarray, force: np.ndarray, dt: float) -> np.ndarray:
        """One tick: commanded velocity v_cmd (3,) m/s and contact force (3,) N (on the tool, base
        frame) → the velocity (3,) m/s to execute for ``dt`` seconds."""
        c = self.config
        fx, fy, fz = np.asarray(force, dtype=np.float64).tolist()
        f_norm = math.sqrt(fx * fx + fy * fy + fz * fz)
        v = np.array(v_cmd, dtype=np.float64)  # (3,), a copy
        if f_norm > c.force_deadband:
            n = np.array([fx, fy, fz]) / f_norm
            inward = -float(v @ n)
            if inward > 0.0:
                g = min(max((c.force_limit - f_norm) / (c.force_limit - c.force_deadband), 0.0), 1.0)
                v += (1.0 - g) * inward * n
            f_e = n * (f_norm - c.force_deadband)
        else:
            f_e = None
        e = self.offset
        if f_e is None and c.stiffness == 0.0:
            e_new = e  # free motion under damping control: the offset stays
        else:
            num = c.damping * e if f_e is None else c.damping * e + dt * f_e
            e_new = num / (c.damping + dt * c.stiffness)
            v += (e_new - e) / dt
            self.offset = e_new
        speed = math.sqrt(float(v.dot(v)))  # np.linalg.norm's own arithmetic, without its checks
        if speed > self.max_speed:
            v *= self.max_speed / speed
        return v

    @staticmethod
    def steady_force(config: ComplianceConfig, speed: float) -> float:
        """The contact force (N) at which a push at ``speed`` (m/s) into a rigid surface comes to rest
        under damping control (K = 0): the root of D s g(f) = f − f_0, i.e.
        f = f_0 + D s (F_max − f_0) / (F_max − f_0 + D s).  Always below F_max."""
        c, ds = config, config.damping * max(speed, 0.0)
        span = c.force_limit - c.force_deadband
        return c.force_deadband + ds * span / (span + ds)
