"""The safety YAML compiled into rules for one robot: the single place both safety layers read.

:func:`compile_rules` turns a :class:`~morl_robot.safety.config.SafetyConfig` (units, fractions of
the robot's own limits, margins) and the robot's :class:`~morl_robot.robots.spec.RobotSpec` into
SI threshold rules (:mod:`morl_robot.safety.rules`), watchdog deadlines and per-label command
plans.  Two layers use the result, as on real arms (hard limits in the controller, supervision
above it):

* the *supervisor*, :class:`~morl_robot.safety.monitor.SafetyMonitor` (latched e-stop, watchdogs,
  clamping, reset), in the ``safety_monitor`` node;
* the *inner layer*, :class:`~morl_robot.safety.inner.InnerSafety`, in the robot's own loop (the
  robot node, a vectorized simulated actor): only the levels whose response stops the robot.

:func:`load_rules` builds them from a robot name or a safety YAML path; the robot's spec and the
workspace site's kinematics come from its robot YAML and compiled MJCF
(:func:`~morl_robot.robots.model.load_robot_model`): no simulator is built.

Shapes: J joints, A actuators, n components of one rule or command.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.configuration import fail
from morl_robot.errors import UnknownNameError
from morl_robot.robots.context import RobotContext
from morl_robot.robots.spec import CARTESIAN_LABELS, ControlMode, RobotSpec
from morl_robot.safety.config import (
    SafetyConfig,
    Thresholds,
    Watchdogs,
    check_required_rules,
    load_safety_config,
    to_si,
    unit_factor,
)
from morl_robot.safety.rules import (
    Level,
    MagnitudeRule,
    RangeLevel,
    RangeRule,
    Response,
    SiteKinematics,
    WrenchRule,
    approach_limit,
    two_levels,
)
from morl_robot.safety.weakening import check_weakenings

#: Sensor streams the rules read (and the watchdogs watch from start-up).
SENSOR_STREAMS = ("joint_states", "wrench", "tactile")


@dataclass(frozen=True)
class CommandPlan:
    """How commands with one label set are read and limited."""

    mode: ControlMode
    labels: tuple[str, ...]
    lower: np.ndarray  # (n,) soft limits, robot units
    upper: np.ndarray  # (n,)
    max_rate: np.ndarray | None  # (n,) change per second, or None
    actuators: np.ndarray | None  # (n,) index into spec.actuators (joint-space modes)
    linear_axis: np.ndarray | None  # (n,) 0..2 for vx/vy/vz, -1 otherwise (Cartesian)
    unit: str


@dataclass(frozen=True)
class ApproachRule:
    """``approach`` in SI (:func:`~morl_robot.safety.rules.approach_limit`'s arguments)."""

    names: tuple[str, ...]  # (B,) obstacle names
    lower: np.ndarray  # (B, 3) m
    upper: np.ndarray  # (B, 3) m
    radius: float  # m
    length: float  # m
    margin: float  # m
    contact_speed: float  # m/s
    braking_time: float  # s
    sliding_gap: float = 0.0  # m
    sliding_speed: float = math.inf  # m/s
    bodies: tuple[str, ...] = ()  # (B,) the static body each box belongs to ("" none; config ``body``)

    def placed(self, body_offset: Mapping[str, Sequence[float]]) -> ApproachRule:
        """The rule with each box moved by its body's offset (m, base frame; a context's
        ``body_offset``, the mapping the MuJoCo model and the hardware landmarks move by); self when
        the offset moves none of its boxes."""
        shift = np.array([body_offset.get(b, (0.0, 0.0, 0.0)) if b else (0.0, 0.0, 0.0)
                          for b in (self.bodies or ("",) * len(self.names))], np.float64).reshape(-1, 3)
        if not shift.any():
            return self
        return dataclasses.replace(self, lower=self.lower + shift, upper=self.upper + shift)

    def bodied_boxes(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The boxes that belong to a static body (config ``body``: those a context can move):
        name → (lower (3,), upper (3,)) m, as this rule places them."""
        bodies = self.bodies or ("",) * len(self.names)
        return {n: (self.lower[i], self.upper[i]) for i, (n, b) in enumerate(zip(self.names, bodies)) if b}

    def limit(self, velocity: np.ndarray, tip: np.ndarray, age: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(limited linear velocity (3,), allowed approach speed per obstacle (B,), inf: not limited);
        ``age``: s since the reading ``tip`` was measured (:func:`approach_limit`)."""
        return approach_limit(velocity, tip, self.lower, self.upper, self.radius, self.length, self.margin,
                              self.contact_speed, self.braking_time, self.sliding_gap, self.sliding_speed, age)


@dataclass
class CompiledRules:
    """A robot's safety rules in SI (see the module docstring); built by :func:`compile_rules`."""

    config: SafetyConfig
    spec: RobotSpec
    source: str
    kinematics: SiteKinematics | None
    position: RangeRule | None  # joints.position: soft and hard ranges (J,)
    velocity: MagnitudeRule | None  # joints.velocity (J,)
    effort: MagnitudeRule | None  # joints.effort (J,)
    soft_lower: np.ndarray  # (J,) joint soft range (rad)
    soft_upper: np.ndarray  # (J,)
    position_margin: float  # rad: the soft margin position commands are clamped by
    hard_tolerance: float  # rad: the hard range = the robot's range widened by this
    wrench: WrenchRule | None
    accelerating_above: float  # rad/s²: the acceleration phase starts here (inf: none)
    tactile_labels: tuple[str, ...]  # the robot's touch sensors (empty: no tactile rule)
    workspace: RangeRule | None
    workspace_soft: tuple[np.ndarray, np.ndarray] | None  # (3,), (3,) m
    deadlines: dict[str, tuple[float, Response]]  # stream -> (s, response)
    period: float  # s, the commander's nominal period
    slow_scale: float  # fraction
    approach: ApproachRule | None = None  # speed toward the cell's known obstacles (config ``approach``)
    _tactile: dict[tuple[str, ...], MagnitudeRule] = field(default_factory=dict, repr=False)
    _plans: dict[tuple[tuple[str, ...], ControlMode], CommandPlan] = field(default_factory=dict, repr=False)

    def placed(self, context: RobotContext | None) -> CompiledRules:
        """These rules in the cell as ``context`` placed it: the approach boxes of a body the context
        moves (``body_offset``) moved with it, as re-measuring the moved cell would; self when
        nothing moves.  Every layer that builds the approach rule for an episode or a cell calls this
        (the shield, the arrival limit, ``deploy`` through the emulator)."""
        if context is None or not context.body_offset or self.approach is None:
            return self
        approach = self.approach.placed(context.body_offset)
        return self if approach is self.approach else dataclasses.replace(self, approach=approach)

    def tactile_rule(self, labels: Sequence[str]) -> MagnitudeRule | None:
        """The touch-force rule for a reading labelled ``labels`` (T,) (cached per label set);
        None when the config has no tactile section."""
        cfg = self.config.tactile
        if cfg is None:
            return None
        labels = tuple(labels)
        rule = self._tactile.get(labels)
        if rule is None:
            contact, collision = np.full(len(labels), np.inf), np.full(len(labels), np.inf)
            for i, lab in enumerate(labels):
                t: Thresholds = cfg.sensors.get(lab, cfg.default)
                f = to_si(1.0, t.unit, ("force",))
                if t.contact is not None:
                    contact[i] = t.contact * f
                if t.collision is not None:
                    collision[i] = t.collision * f
            levels = [Level("contact", contact, Response.of(cfg.default.on_contact)),
                      Level("collision", collision, Response.of(cfg.default.on_collision))]
            rule = MagnitudeRule("tactile", labels, "N", [lv for lv in levels if np.isfinite(lv.thresholds).any()])
            self._tactile[labels] = rule
        return rule

    def command_plan(self, labels: tuple[str, ...], mode: ControlMode) -> CommandPlan:
        """Limits of a command labelled ``labels``: Cartesian axes (``cartesian_velocity``) or actuator
        names read in ``mode`` (the caller has checked that the labels are accepted)."""
        key = (labels, mode)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _command_plan(self, labels, mode)
        return plan

    def accelerating(self, qd: np.ndarray, qd_before: np.ndarray, dt: float) -> bool:
        """Franka's acceleration phase, measured: max |Δq̇ / Δt| over the joints (rad/s²) from two
        successive velocity readings (J,) ``dt`` s apart reaches ``accelerating_above``."""
        if not (math.isfinite(dt) and dt > 0) or self.accelerating_above == math.inf:
            return False  # (a finite acceleration never reaches an infinite threshold)
        acc = np.abs(qd - qd_before) / dt
        peak = float(acc.max()) if acc.size else math.nan
        if not math.isfinite(peak):  # the peak over the finite components only
            acc = acc[np.isfinite(acc)]
            return bool(acc.size and acc.max() >= self.accelerating_above)
        return peak >= self.accelerating_above


def compile_rules(config: SafetyConfig, spec: RobotSpec, kinematics: SiteKinematics | None = None,
                  source: str = "") -> CompiledRules:
    """The rules of ``config`` for robot ``spec`` (errors name ``source`` and the key)."""
    src = source
    joints = spec.joints
    names = tuple(j.name for j in joints)
    lo, hi = np.array([j.lower for j in joints]), np.array([j.upper for j in joints])
    soft_lo, soft_hi = lo, hi
    pos_rule = vel_rule = eff_rule = None
    margin = tolerance = 0.0
    jc = config.joints
    if jc is not None and jc.position is not None:
        p = jc.position
        margin = to_si(p.soft_margin, p.unit, ("angle",))
        tolerance = to_si(p.hard_tolerance, p.unit, ("angle",))
        if np.any(hi - lo <= 2 * margin):
            i = int(np.flatnonzero(hi - lo <= 2 * margin)[0])
            fail(src, "joints.position.soft_margin", f"{p.soft_margin} {p.unit} leaves no soft range for "
                                                     f"joint '{names[i]}' ({lo[i]:.4g} .. {hi[i]:.4g} rad)")
        soft_lo, soft_hi = lo + margin, hi - margin
        pos_rule = RangeRule("joints.position", names, "rad", [
            RangeLevel("soft", soft_lo, soft_hi, Response.of(p.on_soft)),
            RangeLevel("hard", lo - tolerance, hi + tolerance, Response.of(p.on_hard))])
    if jc is not None and jc.velocity is not None:
        v = jc.velocity
        limits = np.array([j.velocity_limit for j in joints]) * to_si(1.0, v.unit, ("fraction",))
        vel_rule = MagnitudeRule("joints.velocity", names, "rad/s", two_levels(
            v.soft, v.hard, len(names), "soft", "hard", Response.of(v.on_soft), Response.of(v.on_hard), limits))
    if jc is not None and jc.effort is not None:
        e = jc.effort
        limits = np.array([j.effort_limit if j.effort_limit is not None else np.inf for j in joints]) \
            * to_si(1.0, e.unit, ("fraction",))
        eff_rule = MagnitudeRule("joints.effort", names, "N·m", two_levels(
            e.soft, e.hard, len(names), "soft", "hard", Response.of(e.on_soft), Response.of(e.on_hard), limits))

    wrench_rule: WrenchRule | None = None
    accel_above = math.inf
    if config.wrench is not None:
        if not spec.has_sensor("wrench"):
            fail(src, "wrench", f"robot '{spec.name}' has no wrench sensor")
        accel: dict[str, MagnitudeRule] = {}
        if config.wrench.accelerating is not None:
            a = config.wrench.accelerating
            accel = _wrench_family(a)
            accel_above = to_si(a.above.value, a.above.unit, ("angular_acceleration",))
        wrench_rule = WrenchRule(_wrench_family(config.wrench), accel)

    tactile_labels: tuple[str, ...] = ()
    if config.tactile is not None:
        if not spec.has_sensor("tactile"):
            fail(src, "tactile", f"robot '{spec.name}' has no tactile sensors")
        tactile_labels = next(s for s in spec.sensors if s.kind == "tactile").labels
        for name in config.tactile.sensors:
            if name not in tactile_labels:
                fail(src, f"tactile.sensors.{name}", f"unknown touch sensor; the robot's: {', '.join(tactile_labels)}")

    ws_rule: RangeRule | None = None
    ws_soft = None
    if config.workspace is not None:
        if kinematics is None:
            fail(src, "workspace.site", "needs the robot's kinematics (build the rules with load_rules)")
        w = config.workspace
        wlo = np.array([to_si(x, w.unit, ("length",)) for x in w.lower])
        whi = np.array([to_si(x, w.unit, ("length",)) for x in w.upper])
        m = to_si(w.margin, w.unit, ("length",))
        ws_soft = (wlo + m, whi - m)
        levels = [RangeLevel("hard", wlo, whi, Response.of(w.on_hard))]
        if m > 0:
            levels.insert(0, RangeLevel("soft", wlo + m, whi - m, Response.of(w.on_soft)))
        ws_rule = RangeRule("workspace", ("x", "y", "z"), "m", levels)

    approach = None
    if config.approach is not None:
        a = config.approach
        length = to_si(1.0, a.unit, ("length",))
        names = tuple(a.obstacles)
        approach = ApproachRule(
            names, np.array([a.obstacles[n].lower for n in names], np.float64) * length,
            np.array([a.obstacles[n].upper for n in names], np.float64) * length, a.tool_radius * length,
            a.tool_length * length, a.margin * length, to_si(a.contact_speed.value, a.contact_speed.unit, ("linear_velocity",)),
            to_si(a.braking_time.value, a.braking_time.unit, ("time",)), a.sliding_gap * length,
            to_si(a.sliding_speed.value, a.sliding_speed.unit, ("linear_velocity",)) if a.sliding_speed else math.inf,
            tuple(a.obstacles[n].body for n in names))

    wd = config.watchdogs or Watchdogs()
    deadlines: dict[str, tuple[float, Response]] = {}
    for stream in (*SENSOR_STREAMS, "heartbeat", "command"):
        q = getattr(wd, stream)
        if q is None:
            continue
        if stream == "wrench" and not spec.has_sensor("wrench"):
            fail(src, "watchdogs.wrench", f"robot '{spec.name}' has no wrench sensor")
        if stream == "tactile" and not spec.has_sensor("tactile"):
            fail(src, "watchdogs.tactile", f"robot '{spec.name}' has no tactile sensors")
        response = {"heartbeat": wd.on_missing_heartbeat, "command": wd.on_stale_command}.get(stream,
                                                                                             wd.on_stale_sensor)
        deadlines[stream] = (to_si(q.value, q.unit, ("time",)), Response.of(response))

    c = config.command
    return CompiledRules(
        config=config, spec=spec, source=src, kinematics=kinematics, position=pos_rule, velocity=vel_rule,
        effort=eff_rule, soft_lower=soft_lo, soft_upper=soft_hi, position_margin=margin, hard_tolerance=tolerance,
        wrench=wrench_rule, accelerating_above=accel_above, tactile_labels=tactile_labels, workspace=ws_rule,
        workspace_soft=ws_soft, deadlines=deadlines, period=to_si(c.period.value, c.period.unit, ("time",)),
        slow_scale=to_si(c.slow_scale.value, c.slow_scale.unit, ("fraction",)), approach=approach)


def _wrench_family(w: object) -> dict[str, MagnitudeRule]:
    rules: dict[str, MagnitudeRule] = {}
    for family in WrenchRule.FAMILIES:
        t = getattr(w, family)
        if t is None:
            continue
        dims = ("force",) if family.startswith("force") else ("torque",)
        unit = "N" if dims == ("force",) else "N·m"
        keys = WrenchRule.KEYS[family]
        scale = to_si(1.0, t.unit, dims)
        rules[family] = MagnitudeRule(f"wrench.{family}", keys, unit, two_levels(
            t.contact, t.collision, len(keys), "contact", "collision", Response.of(t.on_contact),
            Response.of(t.on_collision), scale))
    return rules


def _command_plan(rules: CompiledRules, labels: tuple[str, ...], mode: ControlMode) -> CommandPlan:
    spec, c = rules.spec, rules.config.command
    if mode == ControlMode.CARTESIAN_VELOCITY:
        assert spec.cartesian is not None
        axis = np.array([CARTESIAN_LABELS.index(lab) for lab in labels])
        linear = axis < 3
        v = to_si(c.linear_velocity.value, c.linear_velocity.unit, ("linear_velocity",)) \
            if c.linear_velocity else spec.cartesian.max_linear_velocity
        w = to_si(c.angular_velocity.value, c.angular_velocity.unit, ("angular_velocity",)) \
            if c.angular_velocity else spec.cartesian.max_angular_velocity
        upper = np.where(linear, v, w)
        rate = None
        if c.linear_acceleration is not None or c.angular_acceleration is not None:
            a = to_si(c.linear_acceleration.value, c.linear_acceleration.unit, ("linear_acceleration",)) \
                if c.linear_acceleration else np.inf
            b = to_si(c.angular_acceleration.value, c.angular_acceleration.unit, ("angular_acceleration",)) \
                if c.angular_acceleration else np.inf
            rate = np.where(linear, a, b)
        return CommandPlan(mode, labels, -upper, upper, rate, None, np.where(linear, axis, -1), "m/s|rad/s")
    names = spec.actuator_names
    idx = np.array([names.index(lab) for lab in labels])
    acts = [spec.actuators[i] for i in idx]
    jc = rules.config.joints
    rate = None
    if mode == ControlMode.POSITION:
        lower = np.array([a.lower for a in acts]) + rules.position_margin
        upper = np.array([a.upper for a in acts]) - rules.position_margin
        unit = "rad"
        if c.position_rate is not None:
            dim, f = unit_factor(c.position_rate.unit, ("angular_velocity", "fraction"), "", "command.position_rate.unit")
            vmax = np.array([a.velocity_limit for a in acts])
            rate = c.position_rate.value * f * (vmax if dim == "fraction" else 1.0)
    elif mode == ControlMode.VELOCITY:
        soft = jc.velocity.soft if jc is not None and jc.velocity is not None and jc.velocity.soft else 1.0
        upper = np.array([a.velocity_limit for a in acts]) * soft
        lower, unit = -upper, "rad/s"
        if c.velocity_rate is not None:
            rate = np.full(len(labels), to_si(c.velocity_rate.value, c.velocity_rate.unit, ("angular_acceleration",)))
    else:
        soft = jc.effort.soft if jc is not None and jc.effort is not None and jc.effort.soft else 1.0
        upper = np.array([a.force_limit for a in acts]) * soft
        lower, unit = -upper, "N·m"
        if c.effort_rate is not None:
            rate = np.full(len(labels), to_si(c.effort_rate.value, c.effort_rate.unit, ("torque_rate",)))
    return CommandPlan(mode, labels, lower, upper, rate, idx, None, unit)


def load_rules(robot_or_config: str | os.PathLike[str]) -> CompiledRules:
    """The rules for a robot name (``config/safety/<robot>.yaml``) or a safety YAML path: joint
    limits, actuators and the workspace site's kinematics come from the robot's YAML and MJCF (the
    same :class:`RobotSpec` the robot node uses), parsed without building a simulator."""
    from morl_robot.robots.config import beside, load_robot_config
    from morl_robot.robots.model import load_robot_model

    config, source = load_safety_config(robot_or_config)
    try:  # a robot YAML path may be relative to this file's folder (docs/howto/add_robot.md)
        robot_config = load_robot_config(beside(Path(source), config.robot))
    except UnknownNameError as exc:
        fail(source, "robot", str(exc))
    robot = load_robot_model(robot_config)
    kin = None
    if config.workspace is not None:
        base = robot_config.cartesian.base_frame if robot_config.cartesian is not None else None
        try:
            kin = SiteKinematics(robot.model, config.workspace.site, robot.spec.joint_names, base)
        except KeyError:
            fail(source, "workspace.site", f"the model of robot '{config.robot}' has no site "
                                           f"'{config.workspace.site}'")
    _check_bodies(config, robot_config, source)
    check_required_rules(config, robot.spec, source)  # no rule its sensors allow may be missing silently
    check_weakenings(config, robot.spec, source)  # nor weakened past its limits without a reason
    return compile_rules(config, robot.spec, kin, source)


def _check_bodies(config: SafetyConfig, robot_config: Any, source: str) -> None:
    """Each approach box's ``body`` names a static body of the world in the robot's cell (its YAML's
    ``model.scene``, else its own MJCF): what a context can move (``body_offset``)."""
    a = config.approach
    named = {n: b.body for n, b in (a.obstacles.items() if a is not None else ()) if b.body}
    if not named:
        return
    import mujoco

    from morl_robot.robots.model import is_static_world_body, load_model, model_path

    path = model_path(robot_config, robot_config.model.scene or None)
    m = load_model(path)
    static = sorted(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or "" for i in range(1, m.nbody)
                    if is_static_world_body(m, i))
    for name, body in named.items():
        if body not in static:
            fail(source, f"approach.obstacles.{name}.body", f"'{body}' is not a static body of the world in "
                                                            f"{path} (those a context can move: {', '.join(static)})")
