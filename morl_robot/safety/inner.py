"""The inner (hard) safety layer: the stopping rules, checked in the robot's own loop before actuating.

Which rules it keeps (only levels that hold or e-stop; warn and clamp levels forward) and the
approach-speed clamp it also runs: docs/explanation/safety_design.md ("Layer 1").  Both layers read
the same :class:`~morl_robot.safety.compiled.CompiledRules`.  :meth:`InnerSafety.check` is the fast
path (numpy comparisons; :data:`FORWARD` or a :class:`Decision` whose violations are worked out only
when read, after the hold has been actuated).  The arrays passed must not be modified afterwards,
and an instance keeps the previous velocity reading (the acceleration phase): one per robot.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence

import numpy as np

from morl_robot.robots.context import RobotContext
from morl_robot.robots.spec import CARTESIAN_LABELS, ControlMode, RobotState
from morl_robot.safety.compiled import CompiledRules, load_rules
from morl_robot.safety.rules import (
    MagnitudeRule,
    RangeRule,
    Response,
    Violation,
    WrenchRule,
    non_finite,
)

#: Responses the inner layer enforces (by holding): the levels that stop the robot.
STOPPING = Response.HOLD


class Decision:
    """The inner layer's verdict on one command: forward it, or hold and why.

    The violations of a hold are worked out when first read (:attr:`violations`), so a caller can
    actuate the hold before paying for the report."""

    __slots__ = ("_explain", "_violations", "hold")

    def __init__(self, hold: bool, explain: Callable[[], list[Violation]] | None = None) -> None:
        self.hold = hold
        self._explain = explain
        self._violations: tuple[Violation, ...] | None = None if explain is not None else ()

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Every stopping rule the readings and the command violate (empty when forwarded)."""
        if self._violations is None:
            assert self._explain is not None
            self._violations, self._explain = tuple(self._explain()), None
        return self._violations

    def describe(self) -> str:
        return "; ".join(v.describe() for v in self.violations) if self.hold else "forward"

    def __repr__(self) -> str:
        return f"Decision(hold={self.hold}, violations={self.violations!r})"


FORWARD = Decision(False)


def _magnitude_limits(rule: MagnitudeRule | None, n: int) -> np.ndarray:
    """(n,) the lowest stopping threshold per component (inf: none)."""
    out = np.full(n, np.inf)
    for lv in rule.levels if rule is not None else ():
        if lv.response >= STOPPING:
            out = np.minimum(out, lv.thresholds)
    return out


def _range_limits(rule: RangeRule | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n,), (n,) the narrowest stopping range per component (-inf, inf: none)."""
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    for lv in rule.levels if rule is not None else ():
        if lv.response >= STOPPING:
            lo, hi = np.maximum(lo, lv.lower), np.minimum(hi, lv.upper)
    return lo, hi


def _wrench_limits(families: dict[str, MagnitudeRule], fallback: np.ndarray | None = None) -> np.ndarray:
    """(8,) stopping thresholds on [‖f‖, fx, fy, fz, ‖τ‖, tx, ty, tz]; families missing here take
    ``fallback`` (the nominal set, for the acceleration phase)."""
    out = np.full(8, np.inf) if fallback is None else fallback.copy()
    for family, sl in _WRENCH_SLICES.items():
        if family in families:
            out[sl] = _magnitude_limits(families[family], sl.stop - sl.start)
    return out


_WRENCH_SLICES = {"force_norm": slice(0, 1), "force_axis": slice(1, 4), "torque_norm": slice(4, 5),
                  "torque_axis": slice(5, 8)}


def _stopping(found: list[Violation]) -> list[Violation]:
    return [v for v in found if v.response >= STOPPING]


class InnerSafety:
    """The hard rules of one robot, checked before every actuation (docs/explanation/safety_design.md).

    Args:
        rules: the robot's compiled safety rules (the monitor's).
    """

    def __init__(self, rules: CompiledRules) -> None:
        self.rules, spec = rules, rules.spec
        self._unplaced = rules  # the YAML's cell; place() moves its approach boxes per context
        nj = len(spec.joints)
        self.joint_names = spec.joint_names
        self._q_lo, self._q_hi = _range_limits(rules.position, nj)  # (J,) rad
        self._qd_max = _magnitude_limits(rules.velocity, nj)  # (J,) rad/s
        self._tau_max = _magnitude_limits(rules.effort, nj)  # (J,) N·m
        self._wrench_max = self._wrench_max_accel = None
        if rules.wrench is not None:
            self._wrench_max = _wrench_limits(rules.wrench.nominal)  # (8,)
            self._wrench_max_accel = _wrench_limits(rules.wrench.accelerating, self._wrench_max)
        self._tactile_rule = rules.tactile_rule(rules.tactile_labels) if rules.tactile_labels else None
        self._tactile_max = _magnitude_limits(self._tactile_rule, len(rules.tactile_labels))  # (T,) N
        # position commands: the actuators' hard range (the robot's range widened by the tolerance)
        acts = spec.actuators
        self._act_index = {a.name: i for i, a in enumerate(acts)}
        tol = rules.hard_tolerance
        self._cmd_lo = np.array([a.lower for a in acts]) - tol  # (A,) rad
        self._cmd_hi = np.array([a.upper for a in acts]) + tol
        self._cmd_index: dict[tuple[str, ...], np.ndarray | None] = {}
        self._qd_before = np.full(nj, np.nan)  # (J,) the previous velocity reading
        self._qd_stamp = math.nan
        self.accelerating = False
        self.checks = 0
        self.holds = 0
        self.approach_limits = 0  # commands the approach-speed limit slowed in the robot's own loop
        self._linear_axes: dict[tuple[str, ...], np.ndarray] = {}

    @classmethod
    def load(cls, robot_or_config: str | os.PathLike[str]) -> InnerSafety:
        """The inner layer for a robot name (``config/safety/<robot>.yaml``) or a safety YAML path."""
        return cls(load_rules(robot_or_config))

    def place(self, context: RobotContext | None) -> None:
        """From now on, the approach boxes of the cell as ``context`` placed it (a body it moves
        carries its boxes: :meth:`~morl_robot.safety.compiled.CompiledRules.placed`); None: as the
        YAML measured them."""
        self.rules = self._unplaced.placed(context)

    # --- the fast path ----------------------------------------------------------------------
    def check(self, position: np.ndarray, velocity: np.ndarray, effort: np.ndarray,
              wrench: np.ndarray | None = None, tactile: np.ndarray | None = None, stamp: float = math.nan,
              command: np.ndarray | None = None, labels: Sequence[str] = (), mode: ControlMode | None = None
              ) -> Decision:
        """Hold or forward ``command`` (n,) labelled ``labels``, in robot units, given the newest
        readings: position (J,) rad, velocity (J,) rad/s, effort (J,) N·m in the spec's joint order,
        wrench (6,) [N, N·m], tactile (T,) N in the spec's sensor order, stamped ``stamp`` (s).
        ``mode`` says how actuator-labelled commands are read (position targets are range-checked)."""
        self.checks += 1
        q, qd, tau = position, velocity, effort
        self._update_acceleration(qd, stamp)
        w_max = self._wrench_max_accel if self.accelerating else self._wrench_max
        tripped = bool(
            (q <= self._q_lo).any() or (q >= self._q_hi).any() or (np.abs(qd) >= self._qd_max).any()
            or (np.abs(tau) >= self._tau_max).any()
            or not (np.isfinite(q).all() and np.isfinite(qd).all() and np.isfinite(tau).all()))
        if not tripped and wrench is not None and w_max is not None:
            f, t = wrench[:3], wrench[3:]
            mags = np.array([math.sqrt(float(f @ f)), *np.abs(f), math.sqrt(float(t @ t)), *np.abs(t)])
            tripped = bool((mags >= w_max).any()) or not np.isfinite(mags).all()
        if not tripped and tactile is not None and tactile.size:
            tripped = bool((np.abs(tactile) >= self._tactile_max).any()) or not np.isfinite(tactile).all()
        if not tripped and command is not None:
            tripped = not np.isfinite(command).all() or self._command_out_of_range(command, labels, mode)
        if not tripped:
            return FORWARD
        self.holds += 1
        accelerating = self.accelerating
        return Decision(True, lambda: self._violations(q, qd, tau, wrench, tactile, stamp, command, labels, mode,
                                                       accelerating))

    def limit_approach(self, command: np.ndarray, labels: Sequence[str], position: np.ndarray,
                       age: float = 0.0, velocity: np.ndarray | None = None) -> np.ndarray:
        """The approach-speed limit (safety YAML ``approach``, the monitor's rule) on a Cartesian
        command (n,) labelled ``labels`` at joint positions ``position`` (J,), applied again in the
        robot's own loop on its newest reading (the monitor decided on the reading before): the
        command unchanged where the rule is absent, the command is not a twist, or it is within
        bounds.

        A reading ``age`` s old (:attr:`~morl_robot.robots.spec.RobotState.age`: a slow driver link)
        with joint ``velocity`` (J,) rad/s is first carried forward to now, position + velocity·age
        (the arm keeps moving while the reading travels), and its age adds to the stopping time (the
        next reading that could show an overshoot is as late: :func:`~morl_robot.safety.rules.approach_limit`).
        Measured on the emulated Sawyer driver with 0.15 s state latency, a 0.2 m/s push onto the
        fixture: 166 N without either, 133 N with the stopping time alone, 13 N with both
        (docs/explanation/contact_control.md)."""
        rule, kin = self.rules.approach, self.rules.kinematics
        if rule is None or kin is None:
            return command
        key = tuple(labels)
        axes = self._linear_axes.get(key)
        if axes is None:
            axes = self._linear_axes[key] = np.array(
                [CARTESIAN_LABELS.index(lab) if lab in CARTESIAN_LABELS[:3] else -1 for lab in key]
                if set(key) <= set(CARTESIAN_LABELS) else [-1] * len(key))
        lin = axes >= 0
        if not lin.any():
            return command
        v = np.zeros(3)
        v[axes[lin]] = command[lin]
        q = np.asarray(position, np.float64)
        if age > 0.0 and velocity is not None and np.isfinite(velocity).all():
            q = q + np.asarray(velocity, np.float64) * age  # (J,) where the arm is now, by dead reckoning
        limited, allowed = rule.limit(v, kin.position(q), age)
        if not np.isfinite(allowed).any():
            return command
        self.approach_limits += 1
        out = np.array(command, dtype=np.float64)
        out[lin] = limited[axes[lin]]
        return out

    def check_state(self, state: RobotState, command: np.ndarray | None = None, labels: Sequence[str] = (),
                    mode: ControlMode | None = None) -> Decision:
        """:meth:`check` on a robot's :class:`~morl_robot.robots.spec.RobotState`."""
        return self.check(state.position, state.velocity, state.effort, state.wrench, state.tactile, state.stamp,
                          command, labels, mode)

    def _update_acceleration(self, qd: np.ndarray, stamp: float) -> None:
        """The monitor's acceleration phase (:meth:`CompiledRules.accelerating`) from successive
        readings, updated as the monitor updates it."""
        dt = stamp - self._qd_stamp
        if math.isfinite(dt) and dt > 0:
            self.accelerating = self.rules.accelerating(qd, self._qd_before, dt)
        self._qd_before, self._qd_stamp = np.array(qd, np.float64), stamp

    def _command_index(self, labels: tuple[str, ...], mode: ControlMode | None) -> np.ndarray | None:
        """Actuator indices (n,) of a position command's labels; None for other commands."""
        key = (labels, mode)
        if key not in self._cmd_index:
            actuator = labels and not set(labels) <= set(CARTESIAN_LABELS) \
                and all(lab in self._act_index for lab in labels)
            self._cmd_index[key] = (np.array([self._act_index[lab] for lab in labels])
                                    if actuator and mode == ControlMode.POSITION else None)
        return self._cmd_index[key]

    def _command_out_of_range(self, command: np.ndarray, labels: Sequence[str], mode: ControlMode | None) -> bool:
        idx = self._command_index(tuple(labels), mode)
        return idx is not None and bool(((command <= self._cmd_lo[idx]) | (command >= self._cmd_hi[idx])).any())

    # --- the report (only when something tripped) ----------------------------------------------
    def _violations(self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, wrench: np.ndarray | None,
                    tactile: np.ndarray | None, stamp: float, command: np.ndarray | None, labels: Sequence[str],
                    mode: ControlMode | None, accelerating: bool) -> list[Violation]:
        r, names, now = self.rules, self.joint_names, stamp
        found: list[Violation] = []
        for field, values in (("position", q), ("velocity", qd), ("effort", tau)):
            bad = non_finite("joint_states.non_finite", [f"{n}.{field}" for n in names], np.asarray(values), stamp, now)
            if bad is not None:
                found.append(bad)
        for rule, values in ((r.position, q), (r.velocity, qd), (r.effort, tau)):
            if rule is not None:
                found += _stopping(rule.evaluate(np.asarray(values), stamp, now))
        if wrench is not None and r.wrench is not None:
            bad = non_finite("wrench.non_finite", WrenchRule.KEYS["force_axis"] + WrenchRule.KEYS["torque_axis"],
                             np.asarray(wrench), stamp, now)
            found += [bad] if bad is not None else _stopping(r.wrench.evaluate(np.asarray(wrench), accelerating,
                                                                                stamp, now))
        if tactile is not None and self._tactile_rule is not None:
            bad = non_finite("tactile.non_finite", r.tactile_labels, np.asarray(tactile), stamp, now)
            found += [bad] if bad is not None else _stopping(self._tactile_rule.evaluate(np.asarray(tactile), stamp,
                                                                                           now))
        if command is not None:
            labels = tuple(labels)
            bad = non_finite("command.non_finite", labels, np.asarray(command), math.nan, now)
            if bad is not None:
                found.append(bad)
            idx = self._command_index(labels, mode)
            if idx is not None and bad is None:
                for i in np.flatnonzero((command <= self._cmd_lo[idx]) | (command >= self._cmd_hi[idx])):
                    low = command[i] <= self._cmd_lo[idx[i]]
                    bound = self._cmd_lo[idx[i]] if low else self._cmd_hi[idx[i]]
                    found.append(Violation("command.hard_range", labels[i], "hard", float(command[i]), float(bound),
                                           "rad", Response.HOLD, math.nan, now))
        return found
