"""The safety monitor's state machine: every command to the robot passes :meth:`SafetyMonitor.on_command`.

Graded responses (warn < clamp < hold < e-stop), the latched e-stop that starts engaged, and the
hold command per control mode: docs/explanation/safety_design.md.  The rules come compiled from
:mod:`morl_robot.safety.compiled` (the same rules the inner layer, :mod:`morl_robot.safety.inner`,
checks); this module holds the supervisor's state only.  No rclpy and no clock reads: every call
takes ``now`` (s) from the caller, and sensor stamps are the readings' own.  Sensor callbacks
return the hold command when they start a stop, so the node can publish it at once (that
publication is what the latency benchmark times).
"""
from __future__ import annotations

import json
import math
import os
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from morl_robot.errors import CommandError, ConfigError
from morl_robot.robots.context import RobotContext
from morl_robot.robots.spec import (
    CARTESIAN_LABELS,
    ControlMode,
    delta_actuator,
    delta_label,
)
from morl_robot.safety.compiled import (
    SENSOR_STREAMS,
    CommandPlan,
    CompiledRules,
    load_rules,
)
from morl_robot.safety.config import REQUIRED_RULES
from morl_robot.safety.rules import (
    Response,
    RuleLimit,
    Violation,
    away_from_limits,
    clamp,
    non_finite,
    rate_limit,
    slow_down,
    staleness,
)
from morl_robot.safety.weakening import Weakening, weakenings

#: A watchdog check that runs this much (s) later than its period was delayed by the host's
#: scheduling: a deadline it then finds missed is reported as the monitor's own delay.
LATE_CHECK_TOLERANCE = 0.01
#: Causes of a missed deadline (:class:`DeadlineMiss`); the first three measured a host delay.
MISS_CAUSES = ("monitor_late", "published_late", "delivered_late", "unexplained")
HOST_CAUSES = MISS_CAUSES[:3]


@dataclass
class DeadlineMiss:
    """One missed deadline (``stale.<stream>``) and what the monitor measured of its cause:

    * ``monitor_late`` — this monitor's own watchdog check ran ``delay`` s late (the host did not
      schedule the monitor's process): the stream may have been fresh, its messages waiting;
    * ``published_late`` — the stream's next message carried a stamp ``delay`` s after the one
      before: its publisher (the robot node, a driver) sent nothing in between (a late or stalled
      process, a paused simulation, a dead sensor);
    * ``delivered_late`` — the next message arrived ``delay`` s after its stamp: published in
      time, delivered or processed late;
    * ``unexplained`` — the stream has not recovered yet, or its stamps cannot tell (a stream
      dated by its arrival, e.g. under ``use_sim_time``).
    """

    stream: str
    cause: str
    delay: float  # s (nan: unexplained)
    age: float  # s, the newest processed message's age when the miss was found
    at: float  # monitor clock when the miss was found

    def as_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "cause": self.cause, "delay_ms": round(self.delay * 1e3, 1),
                "age_ms": round(self.age * 1e3, 1), "at": round(self.at, 3)}


def summarise_misses(misses: Iterable[DeadlineMiss | dict[str, Any]]) -> dict[str, Any]:
    """Counts and delays of missed deadlines, flat (``/diagnostics`` values, reports):
    ``deadline_misses``, ``host_deadline_misses`` (a host delay was measured) with
    ``host_delay_p50_ms`` / ``host_delay_max_ms``, and per cause ``deadline_misses/<cause>``."""
    rows = [m.as_dict() if isinstance(m, DeadlineMiss) else m for m in misses]
    out: dict[str, Any] = {"deadline_misses": len(rows)}
    host = [float(r["delay_ms"]) for r in rows if r["cause"] in HOST_CAUSES]
    out["host_deadline_misses"] = len(host)
    out["host_delay_p50_ms"] = float(np.median(host)) if host else math.nan
    out["host_delay_max_ms"] = max(host) if host else math.nan
    for cause in MISS_CAUSES:
        out[f"deadline_misses/{cause}"] = sum(r["cause"] == cause for r in rows)
    return out


#: Rules whose ``clamp`` response is a directional clamp rather than slowing down.
DIRECTIONAL = ("workspace", "joints.position")


@dataclass(frozen=True)
class Command:
    """A labelled command in robot units (the control mode's units)."""

    values: np.ndarray  # (n,)
    labels: tuple[str, ...]


class Outcome(NamedTuple):
    """What a monitor call decided: the command to publish now (None: publish nothing) and the
    violations that *started* with this call (events to publish; a lasting violation is reported
    once, when it begins)."""

    command: Command | None
    violations: list[Violation]


@dataclass(frozen=True)
class _JointLayout:
    """How a ``joint_states`` reading with one name order maps onto the spec's joints (cached per order)."""

    index: np.ndarray  # (J',) spec joint index of each name, -1 for unknown names
    known: np.ndarray  # (J',) bool: index >= 0
    any_known: bool
    identity: bool  # the names are the spec's joints in the spec's order
    labels: dict[str, tuple[str, ...]]  # field -> "<name>.<field>" (J',), the non-finite rule's keys

    @classmethod
    def of(cls, names: tuple[str, ...], joint_pos: dict[str, int]) -> _JointLayout:
        index = np.array([joint_pos.get(n, -1) for n in names], dtype=int)
        identity = list(index) == list(range(len(joint_pos))) and len(names) == len(joint_pos)
        return cls(index, index >= 0, bool((index >= 0).any()), identity,
                   {f: tuple(f"{n}.{f}" for n in names) for f in ("position", "velocity", "effort")})


class SafetyMonitor:
    """The latched safety state machine for one robot (docs/explanation/safety_design.md).

    Args:
        rules: the robot's compiled safety rules (:func:`~morl_robot.safety.compiled.load_rules`).
        control_mode: how actuator-labelled commands are read (default: the robot's default
            mode); Cartesian-labelled commands are always ``cartesian_velocity``.
        watchdogs: wall-clock deadlines on; off for lockstep simulation.
        now: the clock at start-up (sensor streams are overdue from here on).
        action_labels: the running task's action components (accepted besides full commands).
    """

    def __init__(self, rules: CompiledRules, control_mode: ControlMode | str | None = None, watchdogs: bool = True,
                 now: float = 0.0, action_labels: Sequence[str] | None = None) -> None:
        spec = rules.spec
        self.rules, self.config, self.spec, self.source = rules, rules.config, spec, rules.source
        # the approach boxes as the YAML measured the cell; place() moves them per episode context
        self._yaml_rules = rules
        self._placement: dict[str, tuple[float, float, float]] = {}
        self.placement_context = ""  # the context the placement came from ("" : none said)
        self.placement_episode: int | None = None  # the episode it was announced for (None: none yet)
        self.placement_error = ""  # why the newest announced placement was refused ("" : it was not)
        self.placement_mismatch = ""  # how the robot node's inner layer's boxes differ from these ("" : agree)
        self.control_mode = ControlMode(control_mode) if control_mode else spec.default_control_mode
        if self.control_mode not in spec.control_modes:
            raise ConfigError(f"control mode '{self.control_mode.value}' is not one of robot '{spec.name}''s "
                              f"modes {[m.value for m in spec.control_modes]}")
        self.watchdogs = watchdogs
        # the label sets a command may have: a full command of one of the robot's control modes, or
        # the running task's action components (what the robot node executes; anything else is held)
        self.accepted_labels = {tuple(spec.command_labels(m)) for m in spec.control_modes}
        self._relative: dict[tuple[str, ...], tuple[tuple[str, ...], np.ndarray] | None] = {}
        if ControlMode.POSITION in spec.control_modes:  # relative position targets (``<actuator>/delta``)
            self.accepted_labels.add(tuple(delta_label(a) for a in spec.command_labels(ControlMode.POSITION)))
        if action_labels:
            self.accepted_labels.add(tuple(action_labels))
            relative = self._absolute_labels(tuple(action_labels))
            if relative is not None:
                self.accepted_labels.add(relative[0])
        self._kin = rules.kinematics
        self._joint_pos = {n: i for i, n in enumerate(spec.joint_names)}
        self._plans: dict[tuple[str, ...], CommandPlan] = {}
        self._joint_layouts: dict[tuple[str, ...], _JointLayout] = {}
        # state
        self._estopped = True
        self._cause: Violation | None = Violation("startup", "monitor", "manual", math.nan, math.nan, "",
                                                  Response.ESTOP, math.nan, now)
        self._holding = False
        self._active: dict[str, dict[tuple[str, str, str], Violation]] = {
            s: {} for s in (*SENSOR_STREAMS, "watchdog")}
        self._command_active: dict[tuple[str, str, str], Violation] = {}
        self._started = now
        self._last_rx: dict[str, float] = {}
        self._last_stamp: dict[str, float] = {}
        nj = len(spec.joints)
        self._q = np.full(nj, np.nan)
        self._qd = np.full(nj, np.nan)
        self._qd_stamp = math.nan
        self._accelerating = False
        self._ee: np.ndarray | None = None
        self._last_plan: CommandPlan | None = None
        self._held_q: np.ndarray | None = None  # (A,) actuator positions held since the stop began
        self._prev: tuple[tuple[str, ...], np.ndarray] | None = None
        self._prev_time: float | None = None  # clock of the previous command (per-unit-time rate limits)
        self._elapsed = 0.0  # time the command being checked follows the previous one (s)
        self.counters: Counter[str] = Counter()
        # watchdog timing: a deadline missed because this host scheduled a process late says so
        self._last_check: float | None = None
        self._check_period = 0.0
        self._misses: deque[DeadlineMiss] = deque(maxlen=1000)  # the newest missed deadlines
        self._unexplained: dict[str, DeadlineMiss] = {}  # stream -> its miss, until it recovers

    # --- commands ---------------------------------------------------------------------------
    def plan(self, labels: Sequence[str]) -> CommandPlan:
        """How a command with these labels is read and limited; raises :class:`CommandError` for
        labels that are neither Cartesian axes nor actuator names of the robot."""
        labels = tuple(labels)
        cached = self._plans.get(labels)
        if cached is not None:
            return cached
        spec = self.spec
        if not labels or len(set(labels)) != len(labels):
            raise CommandError(f"command labels {list(labels)} must be non-empty and distinct")
        if labels not in self.accepted_labels:
            raise CommandError(f"command labels {list(labels)} are none of the accepted sets "
                               f"{sorted(list(a) for a in self.accepted_labels)} (a full control-mode command "
                               "or the task's action components)")
        if all(lab in CARTESIAN_LABELS for lab in labels):
            mode = ControlMode.CARTESIAN_VELOCITY
            if mode not in spec.control_modes or spec.cartesian is None:
                raise CommandError(f"robot '{spec.name}' has no Cartesian control; got labels {list(labels)}")
        else:
            unknown = [lab for lab in labels if lab not in spec.actuator_names]
            if unknown:
                raise CommandError(f"command labels {unknown} are neither Cartesian axes {list(CARTESIAN_LABELS)} "
                                   f"nor actuators of robot '{spec.name}'")
            mode = self.control_mode
            if mode == ControlMode.CARTESIAN_VELOCITY:
                raise CommandError(f"actuator-labelled command while the monitor expects Cartesian commands: "
                                   f"{list(labels)}")
        plan = self.rules.command_plan(labels, mode)
        self._plans[labels] = plan
        return plan

    def hold_command(self, plan: CommandPlan | None = None) -> Command | None:
        """The command that holds the robot for ``plan``'s labels (default: the last command's),
        or None when it cannot be formed (no command seen; positions not measured yet)."""
        plan = plan or self._last_plan
        if plan is None:
            return None
        if plan.mode != ControlMode.POSITION:
            return Command(np.zeros(len(plan.labels)), plan.labels)
        assert plan.actuators is not None
        stopped = self._estopped or self._holding
        q = self._held_q if stopped and self._held_q is not None else self.spec.actuator_positions(self._q)
        if stopped and self._held_q is None and np.all(np.isfinite(q)):
            self._held_q = q.copy()  # the stop's targets, kept until it ends
        values = q[plan.actuators]
        if not np.all(np.isfinite(values)):
            return None
        return Command(values, plan.labels)

    @property
    def command_period(self) -> float:
        """The commander's nominal period (s, ``command.period``)."""
        return self.rules.period

    def on_command(self, values: np.ndarray | Sequence[float], labels: Sequence[str], now: float,
                   elapsed: float | None = None) -> Outcome:
        """Check one command (robot units, labelled); returns what to publish on ``command_safe``.

        Rate-of-change limits are per unit time: the change from the previous command is bounded by
        ``rate × elapsed``, ``elapsed`` being the time this command follows the previous one — the
        clock's (``now``) by default, capped at one ``command.period``, so a flood of commands gets no
        more change through than one command per period would; a lockstep caller passes the
        simulated time each command stands for (one control period)."""
        relative = self._absolute_labels(tuple(labels))
        if relative is not None:
            return self._on_delta_command(values, tuple(labels), *relative, now, elapsed)
        return self._check_command(values, labels, now, elapsed)

    def _check_command(self, values: np.ndarray | Sequence[float], labels: Sequence[str], now: float,
                       elapsed: float | None) -> Outcome:
        if elapsed is None:
            last = self._prev_time
            elapsed = self.rules.period if last is None else min(max(now - last, 0.0), self.rules.period)
        self._elapsed = max(0.0, float(elapsed))
        self._prev_time = now
        self.counters["commands"] += 1
        self._fresh("command", now, now)
        labels = tuple(labels)
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        found: list[Violation] = []
        plan: CommandPlan | None = None
        if arr.size != len(labels):
            found.append(Violation("command.malformed", "size", "fault", float(arr.size), float(len(labels)), "",
                                   Response.HOLD, math.nan, now,
                                   detail=f"{arr.size} values for {len(labels)} labels"))
        else:
            try:
                plan = self.plan(labels)
            except CommandError as exc:
                found.append(Violation("command.labels", ",".join(labels)[:200] or "-", "fault", math.nan, math.nan,
                                       "", Response.HOLD, math.nan, now, detail=str(exc)))
        if plan is not None:
            bad = non_finite("command.non_finite", labels, arr, math.nan, now)
            if bad is not None:
                found.append(bad)
        if found:  # a malformed, unknown or non-finite command is never forwarded
            onsets = self._command_edges(found)
            if any(v.response == Response.ESTOP for v in found):
                self._latch(next(v for v in found if v.response == Response.ESTOP))
            self.counters["held"] += 1
            hold = self.hold_command(plan)
            self._remember(hold)
            return Outcome(hold, onsets)
        assert plan is not None
        self._last_plan = plan
        if self._estopped or self._holding:
            self.counters["held"] += 1
            hold = self.hold_command(plan)
            self._remember(hold)
            return Outcome(hold, self._command_edges([]))
        out, found = self._shape(arr, plan, now)
        if found:
            self.counters["clamped"] += 1
        self.counters["forwarded"] += 1
        command = Command(out, labels)
        self._remember(command)
        return Outcome(command, self._command_edges(found))

    def _absolute_labels(self, labels: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray] | None:
        """The actuator labels and indices (n,) of a relative position command (``<actuator>/delta``
        each, actuators of this robot), or None for any other command (cached per label set)."""
        if labels not in self._relative:
            base = tuple(delta_actuator(lab) or "" for lab in labels)
            names = self.spec.actuator_names
            self._relative[labels] = ((base, np.array([names.index(b) for b in base]))
                                      if labels and all(b in names for b in base) else None)
        return self._relative[labels]

    def _on_delta_command(self, values: np.ndarray | Sequence[float], labels: tuple[str, ...],
                          base: tuple[str, ...], actuators: np.ndarray, now: float, elapsed: float | None
                          ) -> Outcome:
        """A relative position command, checked as the absolute targets it stands for: measured
        actuator positions + change.  Before the first ``joint_states`` there is nothing to add the
        change to: the command is held (``command.unmeasured``, nothing forwarded), not taken for a
        non-finite command and e-stopped, since in a graph a command can outrun the monitor's first
        reading (the robot node answers the policy server before DDS has matched its joint_states
        to the monitor).  Every position rule (range clamp, rate limit, slow-down, hold) applies to
        those targets; a forwarded command goes out relative again, under ``labels``; a hold goes out
        as absolute targets under the actuator labels (a full command)."""
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if labels not in self.accepted_labels or arr.size != len(labels):
            current = None  # rejected by the absolute path below, which names the fault
        else:
            current = self.spec.actuator_positions(self._q)[actuators]
            if not np.all(np.isfinite(current)) and np.all(np.isfinite(arr)):
                self.counters["commands"] += 1
                self.counters["held"] += 1
                self._fresh("command", now, now)
                missing = base[int(np.flatnonzero(~np.isfinite(current))[0])]
                return Outcome(None, self._command_edges([Violation(
                    "command.unmeasured", missing, "fault", math.nan, math.nan, "rad", Response.HOLD, math.nan, now,
                    detail="a relative (/delta) command before the first joint_states: no measured position to "
                           "add it to")]))
            arr = current + arr
        held = self.counters["held"]
        outcome = self._check_command(arr, labels if current is None else base, now, elapsed)
        command = outcome.command
        if current is None or command is None or self.counters["held"] > held or command.labels != base:
            return outcome
        return Outcome(Command(command.values - current, labels), outcome.violations)

    def _shape(self, values: np.ndarray, plan: CommandPlan, now: float) -> tuple[np.ndarray, list[Violation]]:
        found: list[Violation] = []
        out, hit = clamp(values, plan.lower, plan.upper)
        for i in np.flatnonzero(hit) if hit.any() else ():
            bound = plan.upper[i] if values[i] > plan.upper[i] else plan.lower[i]
            found.append(Violation("command.limit", plan.labels[i], "soft", float(values[i]), float(bound), plan.unit,
                                   Response.CLAMP, math.nan, now))
        clamping = self._clamping_rules()
        if "workspace" in clamping and plan.linear_axis is not None and self._ee is not None:
            lin = plan.linear_axis >= 0
            ax = plan.linear_axis[lin]
            out[lin], _ = away_from_limits(out[lin], self._ee[ax], self.rules.workspace_soft[0][ax], self.rules.workspace_soft[1][ax])
        if "joints.position" in clamping and plan.mode == ControlMode.VELOCITY and plan.actuators is not None:
            for i, a in enumerate(plan.actuators):
                joints = self.spec.actuators[a].joints
                if len(joints) == 1:
                    j = self._joint_pos[joints[0]]
                    out[i:i + 1], _ = away_from_limits(out[i:i + 1], self._q[j:j + 1], self.rules.soft_lower[j:j + 1],
                                                       self.rules.soft_upper[j:j + 1])
        previous = self._previous(plan)
        if clamping - set(DIRECTIONAL):
            out = slow_down(out, previous, self.rules.slow_scale, absolute=plan.mode != ControlMode.POSITION)
        if plan.max_rate is not None and previous is not None:
            requested = out
            dt = self._elapsed
            out, hit = rate_limit(out, previous, plan.max_rate * dt)
            for i in np.flatnonzero(hit) if hit.any() else ():
                rate = (requested[i] - previous[i]) / dt if dt > 0 else math.inf
                found.append(Violation("command.rate", plan.labels[i], "soft", float(rate), float(plan.max_rate[i]),
                                       f"{plan.unit}/s", Response.CLAMP, math.nan, now))
        if self.rules.approach is not None and plan.linear_axis is not None and self._ee is not None:
            out = self._limit_approach(out, plan, now, found)  # last: nothing after it may speed up
        return out, found

    def _limit_approach(self, out: np.ndarray, plan: CommandPlan, now: float, found: list[Violation]) -> np.ndarray:
        """The approach-speed limit (config ``approach``) on a twist's linear components."""
        rule = self.rules.approach
        assert rule is not None and plan.linear_axis is not None and self._ee is not None
        lin = plan.linear_axis >= 0
        v = np.zeros(3)
        v[plan.linear_axis[lin]] = out[lin]
        limited, allowed = rule.limit(v, self._ee)
        if not np.isfinite(allowed).any():
            return out
        out = out.copy()
        out[lin] = limited[plan.linear_axis[lin]]
        for b in np.flatnonzero(np.isfinite(allowed)):
            found.append(Violation("approach", rule.names[b], "near", float(np.linalg.norm(v)), float(allowed[b]),
                                   "m/s", Response.CLAMP, math.nan, now))
        return out

    def _previous(self, plan: CommandPlan) -> np.ndarray | None:
        if self._prev is not None and self._prev[0] == plan.labels:
            return self._prev[1]
        hold = self.hold_command(plan)
        return None if hold is None else hold.values

    def _remember(self, command: Command | None) -> None:
        if command is not None:
            self._prev = (command.labels, command.values.copy())

    def _command_edges(self, found: list[Violation]) -> list[Violation]:
        if not found and not self._command_active:
            return []
        new = {v.ident: v for v in found}
        onsets = [v for k, v in new.items() if k not in self._command_active]
        self._command_active = new
        self._count(onsets)
        return onsets

    # --- sensors ----------------------------------------------------------------------------
    def on_joint_state(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
                       effort: Sequence[float], stamp: float, now: float) -> Outcome:
        """A ``joint_states`` reading: names (J',), position rad, velocity rad/s, effort N·m
        (each (J',) or empty), ``stamp`` its header stamp (s).  Only a reading that carries positions
        of this robot's joints keeps the stream fresh: an empty one, or one naming no known joint,
        is not a sign of life of the robot's sensors."""
        names = tuple(names)
        layout = self._joint_layouts.get(names)
        if layout is None:
            layout = self._joint_layouts[names] = _JointLayout.of(names, self._joint_pos)
        if layout.any_known and len(position) == len(names):
            self._fresh("joint_states", stamp, now)
        found: list[Violation] = []
        arrays = {}
        for field_name, raw in (("position", position), ("velocity", velocity), ("effort", effort)):
            arr = np.asarray(raw, dtype=np.float64)
            if arr.size == 0:
                arrays[field_name] = None
                continue
            if arr.size != len(names):
                found.append(Violation(f"joint_states.{field_name}", "size", "fault", float(arr.size), float(len(names)),
                                       "", Response.ESTOP, stamp, now,
                                       detail=f"{arr.size} {field_name} values for {len(names)} names"))
                arrays[field_name] = None
                continue
            bad = non_finite("joint_states.non_finite", layout.labels[field_name], arr, stamp, now)
            if bad is not None:
                found.append(bad)
                arrays[field_name] = None
                continue
            if layout.identity:  # the spec's own joint order: the reading is the full vector (read only)
                arrays[field_name] = arr
                continue
            full = np.full(len(self.spec.joints), np.nan)
            full[layout.index[layout.known]] = arr[layout.known]
            arrays[field_name] = full
        q, qd, tau = arrays["position"], arrays["velocity"], arrays["effort"]
        if q is not None:
            if layout.identity:  # every joint measured, all finite
                self._q[:] = q
            else:
                known = ~np.isnan(q)
                self._q[known] = q[known]
            if self.rules.position is not None:
                found += self.rules.position.evaluate(q, stamp, now)
            if self.rules.workspace is not None and self._kin is not None and (
                    layout.identity or np.all(np.isfinite(self._q))):
                self._ee = self._kin.position(self._q)
                found += self.rules.workspace.evaluate(self._ee, stamp, now)
        if qd is not None:
            if self.rules.velocity is not None:
                found += self.rules.velocity.evaluate(qd, stamp, now)
            self._update_acceleration(qd, stamp)
        if tau is not None and self.rules.effort is not None:
            found += self.rules.effort.evaluate(tau, stamp, now)
        return self._sensor_update("joint_states", found, now)

    def _update_acceleration(self, qd: np.ndarray, stamp: float) -> None:
        """Franka's acceleration phase, measured: max |Δq̇ / Δt| over the joints (rad/s²)."""
        dt = stamp - self._qd_stamp
        if math.isfinite(dt) and dt > 0:
            self._accelerating = self.rules.accelerating(qd, self._qd, dt)
        self._qd, self._qd_stamp = qd.copy(), stamp

    def on_wrench(self, wrench: np.ndarray | Sequence[float], stamp: float, now: float) -> Outcome:
        """A wrist F/T reading (6,) [fx fy fz (N), tx ty tz (N·m)] stamped ``stamp`` (s)."""
        self._fresh("wrench", stamp, now)
        w = np.asarray(wrench, dtype=np.float64).reshape(-1)
        bad = non_finite("wrench.non_finite", ("fx", "fy", "fz", "tx", "ty", "tz"), w, stamp, now)
        if bad is not None:
            found = [bad]
        elif w.size != 6:
            found = [Violation("wrench.malformed", "size", "fault", float(w.size), 6.0, "", Response.ESTOP, stamp, now,
                               detail=f"{w.size} values instead of 6")]
        else:
            rule = self.rules.wrench
            found = rule.evaluate(w, self._accelerating, stamp, now) if rule is not None else []
        return self._sensor_update("wrench", found, now)

    def on_tactile(self, values: np.ndarray | Sequence[float], labels: Sequence[str], stamp: float,
                   now: float) -> Outcome:
        """A tactile reading (T,) N labelled by sensor name (no header: ``stamp`` = receipt time)."""
        self._fresh("tactile", stamp, now)
        labels = tuple(labels)
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        bad = non_finite("tactile.non_finite", labels, arr, stamp, now)
        if bad is not None:
            found = [bad]
        elif arr.size != len(labels):
            found = [Violation("tactile.malformed", "size", "fault", float(arr.size), float(len(labels)), "",
                               Response.ESTOP, stamp, now, detail=f"{arr.size} values for {len(labels)} labels")]
        else:
            rule = self.rules.tactile_rule(labels)
            found = rule.evaluate(arr, stamp, now) if rule is not None else []
        return self._sensor_update("tactile", found, now)

    def on_heartbeat(self, stamp: float, now: float) -> Outcome:
        """The commander is alive (arms the heartbeat watchdog)."""
        self._fresh("heartbeat", stamp, now)
        return Outcome(None, [])

    def _fresh(self, stream: str, stamp: float, now: float) -> None:
        miss = self._unexplained.pop(stream, None)
        if miss is not None:  # the stream recovers from a missed deadline: its stamps tell why
            self._explain(miss, stamp, self._last_stamp.get(stream, math.nan), now)
        self._last_rx[stream] = now
        self._last_stamp[stream] = stamp
        active = self._active["watchdog"]
        key = (f"stale.{stream}", stream, "deadline")
        if key in active:
            del active[key]
            self._refresh_holding()

    def check_watchdogs(self, now: float, period: float | None = None) -> Outcome:
        """Deadlines: a sensor stream is overdue ``deadline`` s after its last message (or after
        start-up if none came); heartbeat and command streams once they have started.

        ``period``: the nominal time between checks (the node's timer; remembered).  A check that
        comes more than :data:`LATE_CHECK_TOLERANCE` after it is due was delayed by the host: a
        deadline it finds missed is a ``monitor_late`` :class:`DeadlineMiss` and its violation says
        ``host scheduling delay X ms`` (the stream's messages may have been waiting unprocessed)."""
        if period is not None:
            self._check_period = float(period)
        late = 0.0 if self._last_check is None else now - self._last_check - self._check_period
        self._last_check = now
        if not self.watchdogs:
            return Outcome(None, [])
        found = []
        active = self._active["watchdog"]
        for stream, (deadline, response) in self.rules.deadlines.items():
            last = self._last_rx.get(stream)
            if last is None:
                if stream not in SENSOR_STREAMS:
                    continue  # heartbeat / command: armed by their first message
                last = self._started
            v = staleness(stream, now - last, deadline, response, self._last_stamp.get(stream, math.nan), now)
            if v is not None:
                onset = active.get(v.ident)
                if onset is not None:
                    v = replace(v, detail=onset.detail)
                elif stream in self._last_rx:  # a stream that never began misses no deadline of its own
                    v = self._miss(v, late)
                found.append(v)
        return self._sensor_update("watchdog", found, now)

    def _miss(self, v: Violation, late: float) -> Violation:
        """A deadline found missed: recorded, and said to be the host's when this check ran late."""
        if late >= LATE_CHECK_TOLERANCE:
            self._record(DeadlineMiss(v.key, "monitor_late", late, v.value, v.decided_at))
            return replace(v, detail=(
                f"host scheduling delay {late * 1e3:.0f} ms: this monitor's watchdog check ran {late * 1e3:.0f} ms "
                f"late, and the newest {v.key} it had processed was {v.value * 1e3:.0f} ms old (deadline "
                f"{v.threshold * 1e3:.0f} ms; newer messages may have been waiting)"))
        miss = DeadlineMiss(v.key, "unexplained", math.nan, v.value, v.decided_at)
        self._record(miss)
        self._unexplained[v.key] = miss
        return v

    def _record(self, miss: DeadlineMiss) -> None:
        self._misses.append(miss)
        self.counters["deadline_misses"] += 1

    @staticmethod
    def _explain(miss: DeadlineMiss, stamp: float, previous: float, now: float) -> None:
        """Classify a miss when its stream recovers: the new message's stamp is old (delivered
        late), or it jumped from the previous one (published late); a stream dated by its arrival
        (stamp = now) cannot tell."""
        if not math.isfinite(stamp) or stamp == now:
            return
        if now - stamp >= LATE_CHECK_TOLERANCE:
            miss.cause, miss.delay = "delivered_late", now - stamp
        elif math.isfinite(previous) and stamp - previous >= LATE_CHECK_TOLERANCE:
            miss.cause, miss.delay = "published_late", stamp - previous

    @property
    def deadline_misses(self) -> list[DeadlineMiss]:
        """The newest missed deadlines (up to 1000), oldest first."""
        return list(self._misses)

    def deadline_miss_values(self, log: int = 50) -> dict[str, Any]:
        """:func:`summarise_misses` of the missed deadlines, and ``deadline_miss_log``: the newest
        ``log`` of them as JSON (``/diagnostics``)."""
        import json

        return {**summarise_misses(self._misses),
                "deadline_miss_log": json.dumps([m.as_dict() for m in list(self._misses)[-log:]])}

    def _sensor_update(self, stream: str, found: list[Violation], now: float) -> Outcome:
        """Replace ``stream``'s active violations; latch / hold as needed; report the new ones."""
        if not found and not any(self._active.values()):
            # nothing active before or now: no onset, nothing to latch, nothing holds (the
            # general path below decides the same)
            self._holding = False
            self._forget_held_targets()
            return Outcome(None, [])
        old = self._active[stream]
        new = {v.ident: v for v in found}
        onsets = [v for k, v in new.items() if k not in old]
        self._active[stream] = new
        self._count(onsets)
        was_stopped = self._estopped or self._holding
        if not self._estopped:
            cause = next((v for v in onsets if v.response == Response.ESTOP), None) or next(
                (v for v in self.active_violations() if v.response == Response.ESTOP), None)
            if cause is not None:
                self._latch(cause)
        self._refresh_holding()
        command = None
        if not was_stopped and (self._estopped or self._holding):
            command = self.hold_command()
            self._remember(command)
        return Outcome(command, onsets)

    def _refresh_holding(self) -> None:
        self._holding = any(v.response == Response.HOLD for v in self.active_violations())
        self._forget_held_targets()

    def _forget_held_targets(self) -> None:
        """The stop has ended (neither e-stopped nor holding): the next one holds where it begins."""
        if not (self._holding or self._estopped):
            self._held_q = None

    def _clamping_rules(self) -> set[str]:
        if not any(self._active.values()):
            return set()
        return {v.rule for v in self.active_violations() if v.response == Response.CLAMP}

    def _count(self, onsets: list[Violation]) -> None:
        for v in onsets:
            self.counters[f"violations/{v.rule}"] += 1

    # --- latch, reset, trigger --------------------------------------------------------------
    def _latch(self, cause: Violation) -> None:
        if not self._estopped:
            self._estopped = True
            self._cause = cause
            self.counters["estops"] += 1

    def trigger(self, reason: str, now: float) -> Outcome:
        """Engage the e-stop on request (``safety/trigger``); returns the hold command to publish."""
        v = Violation("manual", reason or "request", "manual", math.nan, math.nan, "", Response.ESTOP, math.nan, now)
        was_stopped = self._estopped or self._holding
        self._latch(v)
        self._count([v])
        command = None
        if not was_stopped:
            command = self.hold_command()
            self._remember(command)
        return Outcome(command, [v])

    def persisting(self, now: float) -> list[Violation]:
        """E-stop-level conditions present in the newest readings (they block a reset)."""
        self.check_watchdogs(now)
        return [v for v in self.active_violations() if v.response == Response.ESTOP]

    def never_received(self) -> list[str]:
        """Watched sensor streams with no message yet (watchdogs on): a reset waits for them."""
        if not self.watchdogs:
            return []
        return [s for s in self.rules.deadlines if s in SENSOR_STREAMS and s not in self._last_rx]

    def reset(self, now: float) -> tuple[bool, str]:
        """Release the latched e-stop (``safety/reset``); refused, with the reasons, while an
        e-stop-level violation persists (newest readings, overdue streams) or a watched sensor
        stream has not spoken yet."""
        blocking = self.persisting(now)
        if blocking:
            self.counters["resets_refused"] += 1
            return False, "refused, still violating: " + "; ".join(v.describe() for v in blocking)
        silent = self.never_received()
        if silent:
            self.counters["resets_refused"] += 1
            return False, ("refused, no reading yet on " + ", ".join(silent)
                           + " (a monitor released before its sensors speak would trip their watchdogs)")
        if not self._estopped:
            return True, "not engaged"
        cause = self._cause
        self._estopped, self._cause = False, None
        self._forget_held_targets()
        self._prev = None  # the next command ramps from the hold command, over one period
        self._prev_time = None
        self._command_active = {}
        self.counters["resets"] += 1
        return True, f"released (was: {cause.describe() if cause else 'engaged'})"

    def new_episode(self) -> None:
        """The robot starts an episode at rest (a simulated reset puts it there at once): rate
        limits ramp the next command from the hold command, not from the previous episode's last.
        A stop that lasts into it holds the robot where the new episode starts."""
        self._held_q = None
        self._prev = None
        self._prev_time = None

    # --- placement (issue 37) ---------------------------------------------------------------
    def place(self, placement: RobotContext | Mapping[str, Any] | None, context: str = "",
              episode: int | None = None, robot_boxes: Any = None) -> None:
        """From now on, judge commands in the cell as a context placed it: ``placement`` is a
        :class:`~morl_robot.robots.context.RobotContext` or its ``body_offset`` ({static body:
        (dx, dy, dz) m, base frame, from the scene's nominal}, what the robot node announces on
        ``placement``); None or ``{}``: the cell as the safety YAML measured it.  Only the approach
        boxes of a moved body move (:meth:`~morl_robot.safety.compiled.CompiledRules.placed`, the
        one definition); every threshold stays.  A malformed offset, or a body none of the approach
        boxes belongs to, raises :class:`ConfigError`: the boxes are then the YAML's, and
        :attr:`placement_error` says why (never the previous episode's placement).

        ``robot_boxes``: the approach boxes the robot node's inner layer judges this episode at
        ({box: [[lower xyz], [upper xyz]]} m, its bodied boxes), the same offsets on its safety
        YAML; where they differ from this monitor's (a YAML already placed for a context and placed
        again, or two different YAMLs), :attr:`placement_mismatch` says how (these boxes stay)."""
        self.rules, self._placement, self.placement_error = self._yaml_rules, {}, ""
        self.placement_mismatch = ""
        self.placement_context, self.placement_episode = context, episode
        offsets = placement.body_offset if isinstance(placement, RobotContext) else placement
        try:
            checked = self._checked_offsets(offsets or {}, context)
        except ConfigError as exc:
            self.refuse_placement(str(exc), context, episode)
            raise
        self.counters["placements"] += 1
        self._placement = checked
        if checked:
            self.rules = self._yaml_rules.placed(RobotContext(name=context or "announced", body_offset=checked))
        if robot_boxes is not None:
            self.placement_mismatch = self._disagreement(robot_boxes)
            self.counters["placement_mismatches"] += bool(self.placement_mismatch)

    def _disagreement(self, robot_boxes: Any) -> str:
        """How the robot's announced boxes differ from this monitor's bodied boxes ("" : they agree)."""
        ours = self.rules.approach.bodied_boxes() if self.rules.approach is not None else {}
        if not isinstance(robot_boxes, Mapping):
            return f"the robot's boxes are not a mapping: {str(robot_boxes)[:80]}"
        for name in sorted(set(ours) | set(robot_boxes)):
            if name not in ours:
                return f"the robot node's inner layer has approach box '{name}' on a body, this monitor ({self.source}) none"
            if name not in robot_boxes:
                return f"this monitor ({self.source}) has approach box '{name}' on a body, the robot node's inner layer none"
            try:
                lo, hi = (np.asarray(x, dtype=np.float64).reshape(3) for x in robot_boxes[name])
            except (TypeError, ValueError):
                return f"the robot's box '{name}' is not [[lower xyz], [upper xyz]]: {str(robot_boxes[name])[:80]}"
            if not (np.allclose(lo, ours[name][0], rtol=0, atol=1e-6) and np.allclose(hi, ours[name][1], rtol=0, atol=1e-6)):
                return (f"approach box '{name}': the robot node's inner layer at {_box(lo, hi)}, this monitor "
                        f"({self.source}) at {_box(*ours[name])} (a safety YAML placed for a context and placed "
                        "again, or not the same YAML)")
        return ""

    def refuse_placement(self, why: str, context: str = "", episode: int | None = None) -> None:
        """An announced placement that cannot be read (``why``): the YAML's boxes, and saying so."""
        self.rules, self._placement, self.placement_mismatch = self._yaml_rules, {}, ""
        self.placement_context, self.placement_episode = context, episode
        self.placement_error = why
        self.counters["placement_errors"] += 1

    def _checked_offsets(self, offsets: Any, context: str) -> dict[str, tuple[float, float, float]]:
        where = f"placement{f' of context {context!r}' if context else ''}"
        if not isinstance(offsets, Mapping):
            raise ConfigError(f"{where}: body_offset must map static bodies to [dx, dy, dz] (m), got "
                              f"{type(offsets).__name__} {str(offsets)[:80]}")
        approach = self._yaml_rules.approach
        known = sorted({b for b in approach.bodies if b}) if approach is not None else []
        out: dict[str, tuple[float, float, float]] = {}
        for body, off in offsets.items():
            numbers = isinstance(off, (Sequence, np.ndarray)) and not isinstance(off, str) and all(
                isinstance(x, (int, float, np.number)) and not isinstance(x, bool) for x in off)
            vec = tuple(float(x) for x in off) if numbers else ()
            if not isinstance(body, str) or len(vec) != 3 or not all(math.isfinite(x) for x in vec):
                raise ConfigError(f"{where}: body_offset.{body} must be 3 finite numbers [dx, dy, dz] (m), got "
                                  f"{str(off)[:80]}")
            if approach is not None and body not in known:
                raise ConfigError(
                    f"{where}: body '{body}' has none of the approach boxes of {self.source} (they belong to "
                    f"{', '.join(repr(b) for b in known) or 'no body'}): the robot's cell and the monitor's "
                    "safety YAML disagree")
            out[body] = (vec[0], vec[1], vec[2])
        return out

    @property
    def placement(self) -> dict[str, tuple[float, float, float]]:
        """The body offsets (m) the approach boxes are moved by now ({}: the YAML's cell)."""
        return dict(self._placement)

    def moved_boxes(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The approach boxes the placement moved: name → (lower (3,), upper (3,)) m."""
        now, yaml = self.rules.approach, self._yaml_rules.approach
        if now is None or yaml is None or now is yaml:
            return {}
        return {n: (now.lower[i].copy(), now.upper[i].copy()) for i, n in enumerate(now.names)
                if not np.array_equal(now.lower[i], yaml.lower[i]) or not np.array_equal(now.upper[i], yaml.upper[i])}

    def describe_placement(self) -> str:
        """One line: where the approach boxes are and why."""
        if self.placement_error:
            return f"approach boxes where the safety YAML puts them, refused {self.placement_error}"
        moved = self.moved_boxes()
        differs = f"; disagrees with the robot node: {self.placement_mismatch}" if self.placement_mismatch else ""
        if not moved:
            return "approach boxes where the safety YAML puts them" + (
                f" (context {self.placement_context} moves none of them)" if self.placement_context else "") + differs
        shift = ", ".join(f"{b} by ({', '.join(f'{x * 1e3:+.1f}' for x in v)}) mm" for b, v in self._placement.items())
        return (f"approach boxes {', '.join(moved)} moved with {shift}"
                + (f" (context {self.placement_context})" if self.placement_context else "") + differs)

    def placement_values(self) -> dict[str, Any]:
        """``/diagnostics`` values of the placement: ``placement`` (JSON {body: [dx, dy, dz] m}),
        ``placement_context``, ``placement_episode``, ``placement_error``, ``placement_mismatch`` and ``approach_moved``
        (JSON {box: [lower xyz, upper xyz] m} of the boxes it moved)."""
        return {"placement": json.dumps({b: list(v) for b, v in self._placement.items()}),
                "placement_context": self.placement_context,
                "placement_episode": -1 if self.placement_episode is None else self.placement_episode,
                "placement_error": self.placement_error, "placement_mismatch": self.placement_mismatch,
                "approach_moved": json.dumps({n: [[round(float(x), 9) for x in lo], [round(float(x), 9) for x in hi]]
                                              for n, (lo, hi) in self.moved_boxes().items()})}

    # --- state ------------------------------------------------------------------------------
    @property
    def estopped(self) -> bool:
        return self._estopped

    @property
    def holding(self) -> bool:
        """A hold-level violation is active (not latched: commands resume when it clears)."""
        return self._holding

    @property
    def estop_cause(self) -> Violation | None:
        return self._cause if self._estopped else None

    @property
    def accelerating(self) -> bool:
        return self._accelerating

    @property
    def end_effector(self) -> np.ndarray | None:
        """Workspace site position (3,) m in the base frame from the newest joint positions."""
        return None if self._ee is None else self._ee.copy()

    def active_violations(self) -> list[Violation]:
        return [v for group in self._active.values() for v in group.values()]

    def describe_rules(self) -> list[RuleLimit]:
        """Every configured threshold (rule, component, level, SI value, unit, response)."""
        rows: list[RuleLimit] = []
        r = self.rules
        for rule in (r.position, r.velocity, r.effort, r.wrench, r.workspace, r.tactile_rule(r.tactile_labels)):
            if rule is not None:
                rows += rule.limits()
        for stream, (deadline, response) in self.rules.deadlines.items():
            rows.append(RuleLimit(f"stale.{stream}", stream, "deadline", deadline, "s", response))
        return rows

    @property
    def opted_out(self) -> dict[str, str]:
        """Required rules the configuration leaves out on purpose, with the reasons given."""
        return {k: why for k, why in self.config.opt_out.items() if k in REQUIRED_RULES}

    @property
    def weakened(self) -> list[Weakening]:
        """Settings weaker than the robot's limits or the default responses, each opted out with
        its reason (:mod:`morl_robot.safety.weakening`; the node logs them at start-up)."""
        return weakenings(self.config, self.spec)


def _box(lower: np.ndarray, upper: np.ndarray) -> str:
    return f"[{', '.join(f'{x:.4f}' for x in lower)}]..[{', '.join(f'{x:.4f}' for x in upper)}] m"


def build_monitor(robot_or_config: str | os.PathLike[str], control_mode: str | None = None, watchdogs: bool = True,
                  now: float = 0.0, action_labels: Sequence[str] | None = None) -> SafetyMonitor:
    """A monitor for a robot name (``config/safety/<robot>.yaml``) or a safety YAML path (the rules
    of :func:`~morl_robot.safety.compiled.load_rules`)."""
    return SafetyMonitor(load_rules(robot_or_config), control_mode or None, watchdogs, now, action_labels)
