"""Per-robot safety limits (``config/safety/<robot>.yaml``) as typed dataclasses with units.

Every number carries its unit in the YAML (``force_norm: {contact: 20.0, collision: 40.0, unit:
N}``); :func:`to_si` converts it to SI (N, N·m, m, rad, s) when the rules are built, so a file
may say ``deg`` or ``ms``.  Joint limits are never repeated here: position ranges, velocity and
effort limits come from the robot model (``config/robots/<robot>.yaml`` + its MJCF, through
:class:`~morl_robot.robots.spec.RobotSpec`); this file only says how close to them the monitor
lets the robot go (a margin in rad, fractions of the robot's own limits).

Two threshold levels per quantity, after Franka's collision behaviour (a *contact* level that
warns or slows and a *collision* level that stops, optionally different while accelerating,
libfranka ``Robot::setCollisionBehavior``) and after the soft/hard joint limits of ROS
``joint_limits``.  Each level has a response, in rising order ``warn`` < ``clamp`` < ``hold`` <
``estop`` (:class:`~morl_robot.safety.rules.Response`); the higher level's response must not be
the milder one.

Unknown keys, unknown units, negative limits, ``contact > collision`` and ``soft > hard`` are
:class:`~morl_robot.errors.ConfigError` naming the file and the key.  A required rule left out, or
a setting weaker than the robot's own limits or the default responses
(:mod:`morl_robot.safety.weakening`), needs an ``opt_out`` entry with the reason.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail, load_config
from morl_robot.resources import resolve_config

ResponseName = Literal["warn", "clamp", "hold", "estop"]
RESPONSE_ORDER: tuple[str, ...] = ("warn", "clamp", "hold", "estop")

#: Accepted units per physical dimension, with the factor to SI.
UNITS: dict[str, dict[str, float]] = {
    "force": {"N": 1.0, "kN": 1e3},
    "torque": {"N·m": 1.0, "N*m": 1.0, "Nm": 1.0, "N m": 1.0},
    "length": {"m": 1.0, "cm": 1e-2, "mm": 1e-3},
    "angle": {"rad": 1.0, "deg": math.pi / 180.0},
    "time": {"s": 1.0, "ms": 1e-3},
    "linear_velocity": {"m/s": 1.0, "mm/s": 1e-3},
    "angular_velocity": {"rad/s": 1.0, "deg/s": math.pi / 180.0},
    "linear_acceleration": {"m/s^2": 1.0, "m/s²": 1.0},
    "angular_acceleration": {"rad/s^2": 1.0, "rad/s²": 1.0, "deg/s^2": math.pi / 180.0, "deg/s²": math.pi / 180.0},
    "torque_rate": {"N·m/s": 1.0, "Nm/s": 1.0},
    # a fraction of the robot's own per-joint limit (1.0 = the limit itself)
    "fraction": {"fraction": 1.0, "%": 0.01},
}


def unit_factor(unit: str, dims: tuple[str, ...], source: str, key: str) -> tuple[str, float]:
    """(dimension, factor to SI) of ``unit``, which must belong to one of ``dims``."""
    for dim in dims:
        if unit in UNITS[dim]:
            return dim, UNITS[dim][unit]
    allowed = ", ".join(u for d in dims for u in UNITS[d])
    fail(source, key, f"unknown unit {unit!r}; allowed for {' or '.join(dims)}: {allowed}")


def to_si(value: float, unit: str, dims: tuple[str, ...], source: str = "", key: str = "") -> float:
    """``value`` in ``unit`` converted to SI (the dimension must be one of ``dims``)."""
    return float(value) * unit_factor(unit, dims, source, f"{key}.unit" if key else "unit")[1]


# --- the YAML schema -------------------------------------------------------------------------
@dataclass
class Quantity:
    """One number with its unit, e.g. ``{value: 0.25, unit: s}``."""

    value: float
    unit: str


@dataclass
class Thresholds:
    """Two levels on a magnitude (force norm, a tactile force): reaching ``contact`` triggers
    ``on_contact`` (default: slow the command down), reaching ``collision`` triggers
    ``on_collision`` (default: the latched e-stop).  Either level may be left out."""

    unit: str
    contact: float | None = None
    collision: float | None = None
    on_contact: ResponseName = "clamp"
    on_collision: ResponseName = "estop"


@dataclass
class AxisThresholds:
    """Per-axis levels (x, y, z) on |component|, e.g. ``|fz|``."""

    unit: str
    contact: list[float] | None = None
    collision: list[float] | None = None
    on_contact: ResponseName = "clamp"
    on_collision: ResponseName = "estop"


@dataclass
class AcceleratingWrench:
    """Franka's acceleration-phase thresholds: used instead of the nominal ones while any joint
    accelerates faster than ``above`` (measured from successive ``joint_states`` velocities)."""

    above: Quantity  # angular acceleration
    force_norm: Thresholds | None = None
    force_axis: AxisThresholds | None = None
    torque_norm: Thresholds | None = None
    torque_axis: AxisThresholds | None = None


@dataclass
class WrenchSafety:
    """Limits on the wrist F/T reading (raw, as published on ``wrench``: not tared)."""

    force_norm: Thresholds | None = None
    force_axis: AxisThresholds | None = None
    torque_norm: Thresholds | None = None
    torque_axis: AxisThresholds | None = None
    accelerating: AcceleratingWrench | None = None


@dataclass
class PositionLimits:
    """Joint position: *soft* range = the robot's range shrunk by ``soft_margin`` (commands are
    clamped into it; a measured position outside triggers ``on_soft``); *hard* range = the
    robot's range widened by ``hard_tolerance`` (a measured position outside it triggers
    ``on_hard``)."""

    soft_margin: float
    unit: str
    hard_tolerance: float = 0.0
    on_soft: ResponseName = "clamp"
    on_hard: ResponseName = "estop"


@dataclass
class FractionLimits:
    """Levels as fractions of each joint's own limit (velocity or effort from the robot model)."""

    unit: str
    soft: float | None = None
    hard: float | None = None
    on_soft: ResponseName = "clamp"
    on_hard: ResponseName = "estop"


@dataclass
class JointSafety:
    position: PositionLimits | None = None
    velocity: FractionLimits | None = None
    effort: FractionLimits | None = None


@dataclass
class TactileSafety:
    """Touch-sensor force levels: ``default`` for every sensor, ``sensors`` overrides by name."""

    default: Thresholds
    sensors: dict[str, Thresholds] = field(default_factory=dict)


@dataclass
class Workspace:
    """An axis-aligned box for a site (the end effector), in the robot base frame.  Inside the box
    but closer than ``margin`` to a face triggers ``on_soft`` (Cartesian commands lose the
    velocity component that moves further out); outside the box triggers ``on_hard``."""

    site: str
    lower: list[float]
    upper: list[float]
    unit: str
    margin: float = 0.0
    on_soft: ResponseName = "clamp"
    on_hard: ResponseName = "estop"


@dataclass
class ApproachBox:
    """One known obstacle of the cell: an axis-aligned box in the robot base frame.  ``body``: the
    scene's static body the box belongs to ("" = none); a context that moves that body
    (``body_offset``, e.g. ``hole_offset`` moves ``fixture``) moves the box with it, as re-measuring
    the moved cell would (:meth:`~morl_robot.safety.compiled.CompiledRules.placed`)."""

    lower: list[float]
    upper: list[float]
    body: str = ""


@dataclass
class Approach:
    """Speed and separation near the cell's known obstacles (ISO/TS 15066 speed and separation
    monitoring, applied to the tool): the speed of the tool (a vertical cylinder of radius
    ``tool_radius`` and length ``tool_length`` above the workspace site, its lower face: the peg held
    straight down) *toward* each obstacle box is limited to

        max(contact_speed, (d − margin) / braking_time)

    where d is the tool's distance to the box (and, within ``sliding_gap`` of a box, its whole speed
    to ``sliding_speed``: a slightly tilted peg sliding down its hole meets the rim), so the tool arrives at any known surface no faster
    than ``contact_speed`` (an impact's force peak grows with the arrival speed; the compliant
    controller bounds only the steady force).  Motion along or away from a surface is not limited.
    Lengths in ``unit``; the response is ``clamp`` (reported as rule ``approach``)."""

    obstacles: dict[str, ApproachBox]
    unit: str
    contact_speed: Quantity
    braking_time: Quantity
    tool_radius: float = 0.0
    tool_length: float = 0.0
    margin: float = 0.0
    sliding_gap: float = 0.0
    sliding_speed: Quantity | None = None


@dataclass
class CommandLimits:
    """Limits applied to every command (by clamping) and how sensor ``clamp`` responses act.

    ``linear_velocity`` / ``angular_velocity``: per-axis Cartesian twist limits; the joint-space
    modes are limited by ``joints`` (position targets into the soft range, velocity/effort to
    ``soft`` × the robot's limit).  Rate-of-change limits bound the change between consecutive
    commands to ``rate × period`` (``period``: the commander's nominal period).  ``slow_scale``:
    while a ``clamp``-response sensor rule is active (contact force, joint speed), velocity-like
    commands are scaled by it and position targets move that fraction of the way."""

    period: Quantity
    slow_scale: Quantity
    linear_velocity: Quantity | None = None
    angular_velocity: Quantity | None = None
    linear_acceleration: Quantity | None = None
    angular_acceleration: Quantity | None = None
    position_rate: Quantity | None = None  # rad/s, or a fraction of each actuator's velocity limit
    velocity_rate: Quantity | None = None  # rad/s^2
    effort_rate: Quantity | None = None  # N·m/s


@dataclass
class Watchdogs:
    """Deadlines per stream (time since the last message).  A sensor stream is watched from
    start-up (never received counts as stale); ``heartbeat`` and ``command`` from their first
    message.  Null leaves a stream unwatched.  All are off with the node's ``watchdogs:=false``
    (lockstep simulation, where wall-clock time means nothing)."""

    joint_states: Quantity | None = None
    wrench: Quantity | None = None
    tactile: Quantity | None = None
    heartbeat: Quantity | None = None
    command: Quantity | None = None
    on_stale_sensor: ResponseName = "estop"
    on_missing_heartbeat: ResponseName = "estop"
    on_stale_command: ResponseName = "hold"


@dataclass
class SafetyConfig:
    robot: str  # robot name (config/robots/<robot>.yaml) whose model gives the joint limits
    command: CommandLimits
    description: str = ""
    joints: JointSafety | None = None
    wrench: WrenchSafety | None = None
    tactile: TactileSafety | None = None
    workspace: Workspace | None = None
    approach: Approach | None = None
    watchdogs: Watchdogs | None = None
    #: Rules deliberately left out and settings deliberately weakened, each with the reason (logged by
    #: the monitor at start-up): keys of REQUIRED_RULES, e.g. ``opt_out: {wrench: "F/T sensor removed
    #: for …"}``, or keys of weakened settings (:mod:`morl_robot.safety.weakening`), e.g.
    #: ``opt_out: {joints.velocity.hard: "the servos overshoot …"}``.
    opt_out: dict[str, str] = field(default_factory=dict)

    # --- checks naming the key ------------------------------------------------------------
    def validate(self) -> None:
        c = self.command
        _quantity(c.period, ("time",), "command.period", positive=True)
        _quantity(c.slow_scale, ("fraction",), "command.slow_scale")
        if not 0.0 <= to_si(c.slow_scale.value, c.slow_scale.unit, ("fraction",)) <= 1.0:
            fail("", "command.slow_scale.value", f"must be within [0, 1], got {c.slow_scale.value}")
        for name, dims in (("linear_velocity", ("linear_velocity",)), ("angular_velocity", ("angular_velocity",)),
                           ("linear_acceleration", ("linear_acceleration",)),
                           ("angular_acceleration", ("angular_acceleration",)),
                           ("position_rate", ("angular_velocity", "fraction")),
                           ("velocity_rate", ("angular_acceleration",)), ("effort_rate", ("torque_rate",))):
            q = getattr(c, name)
            if q is not None:
                _quantity(q, dims, f"command.{name}", positive=True)
        if self.joints is not None:
            _joints(self.joints)
        if self.wrench is not None:
            _wrench(self.wrench, "wrench")
            acc = self.wrench.accelerating
            if acc is not None:
                _quantity(acc.above, ("angular_acceleration",), "wrench.accelerating.above", positive=True)
                _wrench(acc, "wrench.accelerating")
        if self.tactile is not None:
            _thresholds(self.tactile.default, ("force",), "tactile.default")
            for name, t in self.tactile.sensors.items():
                _thresholds(t, ("force",), f"tactile.sensors.{name}")
        if self.workspace is not None:
            _workspace(self.workspace)
        if self.approach is not None:
            _approach(self.approach, self.workspace)
        for key, why in self.opt_out.items():
            if key not in REQUIRED_RULES and key.split(".")[0] not in WEAKENABLE_SECTIONS:
                fail("", f"opt_out.{key}", f"not a required rule nor a weakened setting; allowed: "
                                           f"{', '.join(REQUIRED_RULES)} (a rule left out) or the key of a "
                                           "weakened setting (e.g. watchdogs.on_stale_sensor)")
            if not isinstance(why, str) or not why.strip():
                fail("", f"opt_out.{key}", "give the reason the rule is left out (a non-empty text)")
        w = self.watchdogs or Watchdogs()
        for name in ("joint_states", "wrench", "tactile", "heartbeat", "command"):
            q = getattr(w, name)
            if q is not None:
                _quantity(q, ("time",), f"watchdogs.{name}", positive=True)


#: The rules a robot must declare, by what its sensors make possible (``spec``: a RobotSpec).
REQUIRED_RULES: dict[str, str] = {
    "joints": "joint position limits (every robot)",
    "watchdogs": "staleness deadlines for every sensor stream the robot has (every robot)",
    "wrench": "wrist force/torque thresholds (robots with an F/T sensor)",
    "tactile": "touch-sensor force thresholds (robots with tactile sensors)",
}


#: Sections whose settings may be weakened on purpose (``opt_out`` keys ``<section>.<…>``).
WEAKENABLE_SECTIONS: tuple[str, ...] = ("command", "joints", "wrench", "tactile", "workspace", "watchdogs")


def missing_rules(config: SafetyConfig, spec: Any) -> list[str]:
    """Required rules the config neither declares nor opts out of, each as ``key: why``."""
    missing = []
    if config.joints is None or config.joints.position is None:
        missing.append("joints")
    streams = ["joint_states"] + [k for k in ("wrench", "tactile") if spec.has_sensor(k)]
    w = config.watchdogs
    if w is None or any(getattr(w, k) is None for k in streams):
        missing.append("watchdogs")
    if spec.has_sensor("wrench") and config.wrench is None:
        missing.append("wrench")
    if spec.has_sensor("tactile") and config.tactile is None:
        missing.append("tactile")
    return [f"{k}: {REQUIRED_RULES[k]}" for k in missing if k not in config.opt_out]


def check_required_rules(config: SafetyConfig, spec: Any, source: str) -> None:
    """Refuse a config that silently lacks a rule its robot's sensors make possible."""
    missing = missing_rules(config, spec)
    if missing:
        fail(source, missing[0].split(":")[0],
             f"robot '{config.robot}' needs this section ({'; '.join(missing)}); to leave a rule out on "
             "purpose, say why under `opt_out:` (e.g. `opt_out: {wrench: \"reason\"}`)")


def _quantity(q: Quantity, dims: tuple[str, ...], key: str, positive: bool = False) -> float:
    unit_factor(q.unit, dims, "", f"{key}.unit")
    if q.value < 0 or (positive and q.value == 0):
        fail("", f"{key}.value", f"must be {'positive' if positive else 'non-negative'}, got {q.value}")
    return to_si(q.value, q.unit, dims)


def _responses(low: str, high: str, key: str, low_name: str, high_name: str) -> None:
    if RESPONSE_ORDER.index(high) < RESPONSE_ORDER.index(low):
        fail("", f"{key}.{high_name}", f"'{high}' is milder than {low_name}'s '{low}'; responses rise in the order "
                                       f"{' < '.join(RESPONSE_ORDER)}")


def _thresholds(t: Thresholds, dims: tuple[str, ...], key: str) -> None:
    unit_factor(t.unit, dims, "", f"{key}.unit")
    for name in ("contact", "collision"):
        v = getattr(t, name)
        if v is not None and v <= 0:
            fail("", f"{key}.{name}", f"must be positive, got {v}")
    if t.contact is None and t.collision is None:
        fail("", key, "give at least one of 'contact' and 'collision' (or leave the whole entry out)")
    if t.contact is not None and t.collision is not None and t.contact > t.collision:
        fail("", f"{key}.contact", f"contact level {t.contact} exceeds the collision level {t.collision}")
    _responses(t.on_contact, t.on_collision, key, "on_contact", "on_collision")


def _axis_thresholds(t: AxisThresholds, dims: tuple[str, ...], key: str) -> None:
    unit_factor(t.unit, dims, "", f"{key}.unit")
    for name in ("contact", "collision"):
        v = getattr(t, name)
        if v is None:
            continue
        if len(v) != 3:
            fail("", f"{key}.{name}", f"needs 3 values (x, y, z), got {len(v)}")
        for i, x in enumerate(v):
            if x <= 0:
                fail("", f"{key}.{name}[{i}]", f"must be positive, got {x}")
    if t.contact is None and t.collision is None:
        fail("", key, "give at least one of 'contact' and 'collision' (or leave the whole entry out)")
    if t.contact is not None and t.collision is not None:
        for i, (lo, hi) in enumerate(zip(t.contact, t.collision)):
            if lo > hi:
                fail("", f"{key}.contact[{i}]", f"contact level {lo} exceeds the collision level {hi}")
    _responses(t.on_contact, t.on_collision, key, "on_contact", "on_collision")


def _wrench(w: WrenchSafety | AcceleratingWrench, key: str) -> None:
    for name, dims in (("force_norm", ("force",)), ("torque_norm", ("torque",))):
        t = getattr(w, name)
        if t is not None:
            _thresholds(t, dims, f"{key}.{name}")
    for name, dims in (("force_axis", ("force",)), ("torque_axis", ("torque",))):
        t = getattr(w, name)
        if t is not None:
            _axis_thresholds(t, dims, f"{key}.{name}")


def _joints(j: JointSafety) -> None:
    p = j.position
    if p is not None:
        unit_factor(p.unit, ("angle",), "", "joints.position.unit")
        if p.soft_margin < 0:
            fail("", "joints.position.soft_margin", f"must be non-negative, got {p.soft_margin}")
        if p.hard_tolerance < 0:
            fail("", "joints.position.hard_tolerance", f"must be non-negative, got {p.hard_tolerance}")
        _responses(p.on_soft, p.on_hard, "joints.position", "on_soft", "on_hard")
    for name in ("velocity", "effort"):
        f = getattr(j, name)
        if f is None:
            continue
        key = f"joints.{name}"
        unit_factor(f.unit, ("fraction",), "", f"{key}.unit")
        for level in ("soft", "hard"):
            v = getattr(f, level)
            if v is not None and v <= 0:
                fail("", f"{key}.{level}", f"must be positive, got {v}")
        if f.soft is None and f.hard is None:
            fail("", key, "give at least one of 'soft' and 'hard' (or leave the whole entry out)")
        if f.soft is not None and f.hard is not None and f.soft > f.hard:
            fail("", f"{key}.soft", f"soft limit {f.soft} is outside the hard limit {f.hard}")
        _responses(f.on_soft, f.on_hard, key, "on_soft", "on_hard")


def _workspace(w: Workspace) -> None:
    unit_factor(w.unit, ("length",), "", "workspace.unit")
    for name in ("lower", "upper"):
        if len(getattr(w, name)) != 3:
            fail("", f"workspace.{name}", f"needs 3 values (x, y, z), got {len(getattr(w, name))}")
    if w.margin < 0:
        fail("", "workspace.margin", f"must be non-negative, got {w.margin}")
    for i, (lo, hi) in enumerate(zip(w.lower, w.upper)):
        if lo >= hi:
            fail("", f"workspace.lower[{i}]", f"must be below upper[{i}] ({hi}), got {lo}")
        if 2 * w.margin >= hi - lo:
            fail("", "workspace.margin", f"{w.margin} leaves no room inside the box along axis {'xyz'[i]} "
                                         f"({lo} .. {hi})")
    _responses(w.on_soft, w.on_hard, "workspace", "on_soft", "on_hard")


def _approach(a: Approach, workspace: Workspace | None) -> None:
    if workspace is None:
        fail("", "approach", "needs the 'workspace' section (its site is the tool the approach speed applies to)")
    unit_factor(a.unit, ("length",), "", "approach.unit")
    _quantity(a.contact_speed, ("linear_velocity",), "approach.contact_speed", positive=True)
    _quantity(a.braking_time, ("time",), "approach.braking_time", positive=True)
    if a.sliding_speed is not None:
        _quantity(a.sliding_speed, ("linear_velocity",), "approach.sliding_speed", positive=True)
    for key in ("tool_radius", "tool_length", "margin", "sliding_gap"):
        value = getattr(a, key)
        if not (math.isfinite(value) and value >= 0):
            fail("", f"approach.{key}", f"must be a finite length >= 0 ({a.unit}), got {value}")
    if not a.obstacles:
        fail("", "approach.obstacles", "name at least one obstacle box (or leave the whole section out)")
    for name, box in a.obstacles.items():
        for side in ("lower", "upper"):
            values = getattr(box, side)
            if len(values) != 3 or not all(math.isfinite(v) for v in values):
                fail("", f"approach.obstacles.{name}.{side}", f"needs 3 finite values (x, y, z), got {values}")
        for i, (lo, hi) in enumerate(zip(box.lower, box.upper)):
            if lo >= hi:
                fail("", f"approach.obstacles.{name}.lower[{i}]", f"must be below upper[{i}] ({hi}), got {lo}")
        if not isinstance(box.body, str) or box.body != box.body.strip():
            fail("", f"approach.obstacles.{name}.body", f"must be the name of a static body of the cell's scene, "
                                                        f"got {box.body!r}")


def load_safety_config(name_or_path: str | os.PathLike[str]) -> tuple[SafetyConfig, str]:
    """(config, source path) for a robot name (``config/safety/<robot>.yaml``) or a YAML path
    (:func:`~morl_robot.resources.resolve_config`)."""
    path = resolve_config("safety", name_or_path)
    return load_config(SafetyConfig, path), str(path)
