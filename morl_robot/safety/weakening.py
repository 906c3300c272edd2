"""Safety settings weaker than the robot allows, and their opt-outs.

A safety YAML can loosen the monitor without a word: a 1e9 N collision level, a 1e9 s heartbeat
deadline, ``on_stale_sensor: warn``, a 100 m/s twist limit on a 0.2 m/s arm all compile.  Here each
such setting is found, compared with the robot's own limit (its
:class:`~morl_robot.robots.spec.RobotSpec`) or with a fixed bound where the robot model has no
limit to compare with, and refused unless the YAML opts out of it with a reason
(``opt_out: {<key>: "why"}``, the mechanism required rules use); the monitor logs every accepted
one at start-up.

What counts as weakened (the bounds are named constants below):

* command twist limits above the robot's Cartesian limits; a ``position_rate`` above the joints'
  velocity limits (fraction > 1, or rad/s above the slowest actuator's limit);
* joint velocity / effort levels above the robot's own limit (fraction > 1); a joint position
  ``hard_tolerance`` above :data:`MAX_HARD_TOLERANCE` past the joint's range;
* force levels (wrench, tactile) above :data:`MAX_FORCE`, torque levels above
  :data:`MAX_TORQUE` (the robot model states no sensor range);
* a watchdog deadline above :data:`MAX_DEADLINE`; the ``heartbeat`` or ``command`` watchdog
  switched off (null);
* a *stopping* response milder than its default (``on_collision``/``on_hard``/``on_stale_sensor``/
  ``on_missing_heartbeat``: ``estop``; ``on_stale_command``: ``hold``).  The contact and soft
  levels may warn instead of clamping: the stop level above them still stops.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from morl_robot.configuration import fail
from morl_robot.safety.config import (
    REQUIRED_RULES,
    RESPONSE_ORDER,
    AxisThresholds,
    SafetyConfig,
    Thresholds,
    to_si,
    unit_factor,
)

#: N: the largest force level a force rule may have.  ISO/TS 15066 Table A.2: the maximum
#: permissible quasi-static contact force on hands and fingers (the body region closest to a
#: robot's tool) is 140 N; a monitor that lets the tool push harder no longer protects a person.
MAX_FORCE = 140.0
#: N·m: the largest torque level (a wrist F/T sensor's usual rated torque, e.g. ATI Mini45: 10 N·m).
MAX_TORQUE = 10.0
#: s: the longest watchdog deadline (at the Sawyer's 0.2 m/s, 20 cm moved blind).
MAX_DEADLINE = 1.0
#: rad: the most a joint may run past its range before the hard level trips.
MAX_HARD_TOLERANCE = 0.05
#: Fractions of the robot's own per-joint limits: 1.0 is the limit itself.
MAX_FRACTION = 1.0


@dataclass(frozen=True)
class Weakening:
    """One setting weaker than the robot allows: its YAML key, its value and the limit it passes
    (both as text with units), and the opt-out's reason ("" = not opted out)."""

    key: str
    value: str
    limit: str
    reason: str = ""

    def describe(self) -> str:
        return f"{self.key} = {self.value} (limit: {self.limit})"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def weakenings(config: SafetyConfig, spec: Any) -> list[Weakening]:
    """Every weakened setting of ``config`` for robot ``spec`` (a RobotSpec), with the reason of
    its opt-out where ``config.opt_out`` has one."""
    found: list[Weakening] = []

    def add(key: str, value: str, limit: str) -> None:
        found.append(Weakening(key, value, limit, config.opt_out.get(key, "")))

    def response(key: str, value: str, default: str) -> None:
        if RESPONSE_ORDER.index(value) < RESPONSE_ORDER.index(default):
            add(key, value, f"'{default}' (the default; responses rise {' < '.join(RESPONSE_ORDER)})")

    def level(key: str, value: float | list[float] | None, unit: str, dims: tuple[str, ...], bound: float,
              why: str) -> None:
        if value is None:
            return
        values = value if isinstance(value, list) else [value]
        si = max(to_si(v, unit, dims) for v in values)
        if not si <= bound:  # (NaN and inf included)
            shown = ", ".join(_fmt(v) for v in values)
            add(key, f"{'[' + shown + ']' if isinstance(value, list) else shown} {unit}", why)

    def thresholds(key: str, t: Thresholds | AxisThresholds | None, dims: tuple[str, ...], bound: float,
                   unit: str, source: str) -> None:
        if t is None:
            return
        for name in ("contact", "collision"):
            level(f"{key}.{name}", getattr(t, name), t.unit, dims, bound, f"{_fmt(bound)} {unit} ({source})")
        response(f"{key}.on_collision", t.on_collision, "estop")

    c = config.command
    cart = spec.cartesian
    if cart is not None:
        for name, dims, limit, unit in (("linear_velocity", ("linear_velocity",), cart.max_linear_velocity, "m/s"),
                                        ("angular_velocity", ("angular_velocity",), cart.max_angular_velocity,
                                         "rad/s")):
            q = getattr(c, name)
            if q is not None:
                level(f"command.{name}", q.value, q.unit, dims, limit,
                      f"{_fmt(limit)} {unit} (robot '{spec.name}' Cartesian limit)")
    if c.position_rate is not None and spec.actuators:
        q = c.position_rate
        dim, _ = unit_factor(q.unit, ("angular_velocity", "fraction"), "", "command.position_rate.unit")
        if dim == "fraction":
            level("command.position_rate", q.value, q.unit, ("fraction",), MAX_FRACTION,
                  f"{_fmt(MAX_FRACTION)} fraction (each actuator's own velocity limit)")
        else:
            slowest = min(spec.actuators, key=lambda a: a.velocity_limit)
            level("command.position_rate", q.value, q.unit, ("angular_velocity",), slowest.velocity_limit,
                  f"{_fmt(slowest.velocity_limit)} rad/s (velocity limit of actuator '{slowest.name}')")

    j = config.joints
    if j is not None:
        p = j.position
        if p is not None:
            level("joints.position.hard_tolerance", p.hard_tolerance, p.unit, ("angle",), MAX_HARD_TOLERANCE,
                  f"{_fmt(MAX_HARD_TOLERANCE)} rad past each joint's range")
            response("joints.position.on_hard", p.on_hard, "estop")
        for name, what in (("velocity", "velocity"), ("effort", "effort")):
            f = getattr(j, name)
            if f is None:
                continue
            for lv in ("soft", "hard"):
                level(f"joints.{name}.{lv}", getattr(f, lv), f.unit, ("fraction",), MAX_FRACTION,
                      f"{_fmt(MAX_FRACTION)} fraction (each joint's own {what} limit, robot '{spec.name}')")
            response(f"joints.{name}.on_hard", f.on_hard, "estop")

    w = config.wrench
    if w is not None:
        for prefix, group in (("wrench", w), ("wrench.accelerating", w.accelerating)):
            if group is None:
                continue
            for family in ("force_norm", "force_axis"):
                thresholds(f"{prefix}.{family}", getattr(group, family), ("force",), MAX_FORCE, "N",
                           "ISO/TS 15066 quasi-static maximum, hands and fingers")
            for family in ("torque_norm", "torque_axis"):
                thresholds(f"{prefix}.{family}", getattr(group, family), ("torque",), MAX_TORQUE, "N·m",
                           "a wrist F/T sensor's rated torque")

    t = config.tactile
    if t is not None:
        thresholds("tactile.default", t.default, ("force",), MAX_FORCE, "N",
                   "ISO/TS 15066 quasi-static maximum, hands and fingers")
        for name, s in t.sensors.items():
            thresholds(f"tactile.sensors.{name}", s, ("force",), MAX_FORCE, "N",
                       "ISO/TS 15066 quasi-static maximum, hands and fingers")

    if config.workspace is not None:
        response("workspace.on_hard", config.workspace.on_hard, "estop")

    wd = config.watchdogs
    if wd is not None and "watchdogs" not in config.opt_out:
        streams = ["joint_states"] + [k for k in ("wrench", "tactile") if spec.has_sensor(k)] + ["heartbeat",
                                                                                                  "command"]
        for stream in streams:
            q = getattr(wd, stream)
            if q is None:
                if stream in ("heartbeat", "command"):  # (a missing sensor deadline is a missing rule)
                    add(f"watchdogs.{stream}", "null (not watched)", f"a deadline of at most {_fmt(MAX_DEADLINE)} s")
                continue
            level(f"watchdogs.{stream}", q.value, q.unit, ("time",), MAX_DEADLINE,
                  f"{_fmt(MAX_DEADLINE)} s (longest watchdog deadline)")
        response("watchdogs.on_stale_sensor", wd.on_stale_sensor, "estop")
        response("watchdogs.on_missing_heartbeat", wd.on_missing_heartbeat, "estop")
        response("watchdogs.on_stale_command", wd.on_stale_command, "hold")
    return found


def check_weakenings(config: SafetyConfig, spec: Any, source: str) -> list[Weakening]:
    """The weakened settings of ``config``, each opted out with a reason (returned, for the monitor
    to log); a weakened setting without an opt-out, or an opt-out of a setting that is not weakened,
    is a :class:`~morl_robot.errors.ConfigError` naming the key, the value and the limit."""
    found = weakenings(config, spec)
    for wk in found:
        if not wk.reason:
            fail(source, wk.key,
                 f"{wk.value} is weaker than robot '{spec.name}' allows (limit: {wk.limit}); if this is on "
                 f"purpose, say why under `opt_out:` (e.g. `opt_out: {{{wk.key}: \"reason\"}}`)")
    weakened = {wk.key for wk in found}
    for key in config.opt_out:
        if key not in REQUIRED_RULES and key not in weakened:
            fail(source, f"opt_out.{key}", "names no weakened setting (the value is within the robot's limits, or "
                                           "there is no such key): remove the opt-out")
    return found
