"""Safety post-mortem: re-run the safety rules over a recorded session (``morl-robot replay``).

The recorded readings (``joint_states``, ``wrench``, ``tactile``), the policy's ``command`` and
``heartbeat`` of each monitored namespace are fed, in log-time order with their own stamps, to a
fresh :class:`~morl_robot.safety.monitor.SafetyMonitor` built from any safety config; every
violation it finds is reported with its time, and compared with what the live monitor published
on ``safety/violations``.  No ROS: messages come decoded from an MCAP file (or any iterable).

What is replayed exactly and what approximately: docs/howto/post_mortem.md.  In short: threshold
rules on readings are a function of the recorded samples (exact); command rules depend on the
monitor's state when the command came (ordering against readings, stops), the approach and rate
clamps on the previous forwarded command, watchdogs (``stale.*``) on arrival times and the check
timer (approximate: the recorder's clock, not the monitor's); resets and manual triggers are taken
from the recording (``safety/estop`` releases, ``manual`` events).
"""
from __future__ import annotations

import itertools
import math
import os
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import MorlRobotError
from morl_robot.recording.reader import RecordingError
from morl_robot.safety.rules import Response, Violation

#: The topics (relative to a monitor's namespace) the replay reads.
STREAMS = ("joint_states", "wrench", "tactile", "command", "heartbeat", "safety/estop", "safety/violations")
#: The message type of each stream (a topic of another type that ends the same way, e.g. the
#: robot node's ``view/command`` JointState, is not the stream).
STREAM_TYPES = {"joint_states": "sensor_msgs/msg/JointState", "wrench": "geometry_msgs/msg/WrenchStamped",
                "tactile": "std_msgs/msg/Float64MultiArray", "command": "std_msgs/msg/Float64MultiArray",
                "heartbeat": "std_msgs/msg/Header", "safety/estop": "std_msgs/msg/Bool",
                "safety/violations": "diagnostic_msgs/msg/DiagnosticStatus"}
#: Rules whose replay is a function of the recorded samples alone.
EXACT_PREFIXES = ("wrench.", "tactile", "joints.", "workspace", "joint_states.")
#: The watchdog timer of the replayed monitor (s; the node's ``check_period`` default is 2 ms).
CHECK_PERIOD = 0.002
#: Slack added to one sample period when matching a replayed event to a recorded one (s).
MATCH_SLACK = 0.002
STEP_KEY_LABEL = "answers_task_step"  # morl_robot.nodes.wire (not imported: no rclpy here)
SESSION_LABEL = "session"
_FOREIGN_CLOCK = 60.0  # s: a header stamp this far from the log time is on another clock (sim time)




# --- the recording, decoded ------------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    """One recorded message of a monitored namespace: ``stream`` (one of :data:`STREAMS`), ``time``
    its log time (s, POSIX), ``data`` the decoded fields (see :func:`decode`)."""

    namespace: str
    stream: str
    time: float
    data: tuple


def split_topic(topic: str) -> tuple[str, str] | None:
    """(namespace, stream) of a recorded topic name, or None if the replay does not read it."""
    for stream in STREAMS:
        if topic == stream or topic.endswith("/" + stream):
            return topic[: len(topic) - len(stream)].rstrip("/") or "/", stream
    return None


def _seconds(stamp: Any) -> float:
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def _labelled(msg: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    data = np.asarray(msg.data, dtype=np.float64)
    dims = msg.layout.dim
    labels = tuple(dims[0].label.split(",")) if len(dims) == 1 and dims[0].label else ()
    return data, labels


def decode(stream: str, msg: Any) -> tuple:
    """The fields the replay uses of a decoded ROS message (any object with the ROS fields):

    * joint_states: (names, position, velocity, effort, stamp); wrench: (6 values, stamp);
    * tactile: (values, labels); command: (values, labels, step key or None); heartbeat: (stamp,);
    * safety/estop: (bool,); safety/violations: (hardware_id, {value key: text})."""
    if stream == "joint_states":
        return (tuple(msg.name), np.asarray(msg.position, float), np.asarray(msg.velocity, float),
                np.asarray(msg.effort, float), _seconds(msg.header.stamp))
    if stream == "wrench":
        f, t = msg.wrench.force, msg.wrench.torque
        return np.array([f.x, f.y, f.z, t.x, t.y, t.z]), _seconds(msg.header.stamp)
    if stream == "tactile":
        return _labelled(msg)
    if stream == "command":
        values, labels = _labelled(msg)
        if labels and labels[-1] == SESSION_LABEL:
            values, labels = values[:-1], labels[:-1]
        key = None
        if labels and labels[-1] == STEP_KEY_LABEL:
            values, labels, key = values[:-1], labels[:-1], float(values[-1])
        return values, labels, key
    if stream == "heartbeat":
        return (_seconds(msg.stamp),)
    if stream == "safety/estop":
        return (bool(msg.data),)
    if stream == "safety/violations":
        return msg.hardware_id, {kv.key: kv.value for kv in msg.values}
    raise ValueError(f"unknown stream {stream!r}")


def read_recording(path: str | os.PathLike[str]) -> tuple[list[Record], dict[str, Any]]:
    """The records of an MCAP recording (ROS 2 CDR, read by :func:`morl_robot.recording.read_messages`)
    in log-time order, and facts about the file (``start``/``end`` POSIX s, ``topics``: name →
    count, ``watchdogs``: what the monitors' ``/diagnostics`` said, ``truncated``: why a file cut
    short ended).  Raises :class:`RecordingError` naming the problem."""
    from morl_robot.recording import read_messages, recording_path, topics_of

    p = recording_path(path)
    records: list[Record] = []
    counts: Counter[str] = Counter()
    watchdogs: set[bool] = set()  # what the safety monitors' /diagnostics said
    cut: list[str] = []
    try:
        for m in read_messages(p, lambda t: split_topic(t) is not None or t == "/diagnostics", cut.append):
            where = split_topic(m.topic)
            if where is not None and m.type != STREAM_TYPES[where[1]]:
                continue  # e.g. view/command: the command as a JointState for plotting tools
            counts[m.topic] += 1
            if where is None:
                _watchdogs_of(m.message, watchdogs)
            else:
                records.append(Record(where[0], where[1], m.log_time * 1e-9, decode(where[1], m.message)))
    except RecordingError:
        raise
    except Exception as exc:  # a corrupt message: struct, CDR decoding
        raise RecordingError(f"recording {p}: not a readable MCAP file ({type(exc).__name__}: {exc})") from exc
    if not records:
        if cut and _magic(p) and cut[0].startswith(("EndOfFile", "error: unpack requires")):
            raise RecordingError(f"recording {p}: the MCAP file ends before its first complete chunk of messages "
                                 f"(truncated: the recording stopped before it wrote one; {cut[0]})")
        if cut:
            raise RecordingError(f"recording {p}: not a readable MCAP file ({cut[0]})")
        raise RecordingError(f"recording {p}: none of the topics the safety rules read ({', '.join(STREAMS)}) under "
                             f"any namespace; it has {sorted(topics_of(p))}")
    records.sort(key=lambda r: r.time)
    return records, {"path": str(p), "start": records[0].time, "end": records[-1].time, "topics": dict(counts),
                     "watchdogs": next(iter(watchdogs)) if len(watchdogs) == 1 else None,
                     "truncated": cut[0] if cut else ""}


def _magic(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(8) == b"\x89MCAP0\r\n"


def _watchdogs_of(msg: Any, out: set[bool]) -> None:
    """The ``watchdogs`` value of each safety monitor's ``/diagnostics`` status (its name carries
    no namespace: the recording's monitors are taken to agree, else the default holds)."""
    for status in msg.status:
        if status.name.startswith("safety_monitor"):
            for kv in status.values:
                if kv.key == "watchdogs":
                    out.add(kv.value.strip().lower() == "true")


# --- events ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Event:
    """A violation as it began: replayed, or as the live monitor published it."""

    namespace: str
    time: float  # s, POSIX (the monitor's decision time)
    t: float  # s from the start of the recording
    rule: str
    key: str
    level: str
    value: float
    threshold: float
    unit: str
    response: str
    detail: str = ""

    @property
    def ident(self) -> tuple[str, str, str, str]:
        return (self.namespace, self.rule, self.key, self.level)

    @property
    def estop(self) -> bool:
        return self.response == "estop"

    @property
    def exact(self) -> bool:
        """Whether replaying this rule depends only on the recorded samples."""
        return self.rule.startswith(EXACT_PREFIXES) or self.rule.endswith((".non_finite", ".malformed"))

    def describe(self) -> str:
        if self.level in ("fault", "manual") or math.isnan(self.value):
            what = self.detail or self.level
        elif self.level == "deadline":
            what = f"no message for {self.value:.3g} s (deadline {self.threshold:.3g} s)"
        else:
            what = f"{self.value:.4g} {self.unit} reached the {self.level} limit {self.threshold:.4g} {self.unit}"
        return f"{self.rule} [{self.key}]: {what} -> {self.response}"


def _event(ns: str, v: Violation, start: float) -> Event:
    return Event(ns, v.decided_at, v.decided_at - start, v.rule, v.key, v.level, v.value, v.threshold, v.unit,
                 v.response.label, v.detail)


def _recorded_event(ns: str, values: dict[str, str], log_time: float, start: float) -> Event:
    def num(k: str) -> float:
        try:
            return float(values.get(k, "nan"))
        except ValueError:
            return math.nan

    decided = num("decided_at")
    at = decided if math.isfinite(decided) and abs(decided - log_time) < _FOREIGN_CLOCK else log_time
    return Event(ns, at, at - start, values.get("rule", "?"), values.get("key", ""), values.get("level", ""),
                 num("value"), num("threshold"), values.get("unit", ""), values.get("response", ""),
                 values.get("detail", ""))


# --- replay -------------------------------------------------------------------------------------
@dataclass
class Stream:
    """What one namespace's replay saw and decided."""

    namespace: str
    robot: str
    control_mode: str
    watchdogs: bool
    replayed: list[Event] = field(default_factory=list)
    recorded: list[Event] = field(default_factory=list)
    resets: list[dict[str, Any]] = field(default_factory=list)  # t, accepted, message
    periods: dict[str, float] = field(default_factory=dict)  # stream -> median sample period (s)
    notes: list[str] = field(default_factory=list)


@dataclass
class Match:
    """Replayed vs recorded events of one namespace: pairs within one sample, and the rest."""

    pairs: list[tuple[Event, Event]]  # (replayed, recorded)
    replayed_only: list[Event]
    recorded_only: list[Event]


def rule_stream(rule: str) -> str:
    """The stream whose sample period bounds a rule's timing."""
    if rule.startswith(("wrench.",)):
        return "wrench"
    if rule.startswith("tactile"):
        return "tactile"
    if rule.startswith(("joints.", "workspace", "joint_states.")):
        return "joint_states"
    if rule.startswith("stale."):
        return rule[len("stale."):]
    return "command"


def tolerance(stream: Stream, rule: str) -> float:
    """One sample of the rule's stream (its median period) plus :data:`MATCH_SLACK`, s."""
    period = stream.periods.get(rule_stream(rule), math.nan)
    return (period if math.isfinite(period) else 0.0) + MATCH_SLACK


def match(stream: Stream) -> Match:
    """Pair each recorded event with the nearest unpaired replayed one of the same rule, key and
    level within :func:`tolerance`."""
    free = list(stream.replayed)
    pairs: list[tuple[Event, Event]] = []
    missing: list[Event] = []
    for rec in stream.recorded:
        tol = tolerance(stream, rec.rule)
        best = min((e for e in free if e.ident == rec.ident and abs(e.time - rec.time) <= tol),
                   key=lambda e: abs(e.time - rec.time), default=None)
        if best is None:
            missing.append(rec)
        else:
            free.remove(best)
            pairs.append((best, rec))
    return Match(pairs, free, missing)


def _robot_of(records: list[Record], ns: str) -> tuple[str | None, tuple[str, ...]]:
    """The robot named by the live monitor's events, and the recorded joint names."""
    names: tuple[str, ...] = ()
    for r in records:
        if r.namespace != ns:
            continue
        if r.stream == "safety/violations" and r.data[0]:
            return r.data[0], names
        if r.stream == "joint_states" and not names:
            names = r.data[0]
    return None, names


def _guess_robot(names: tuple[str, ...]) -> str | None:
    """The project's robot (sawyer, shadow_hand) with the most of these joint names, or None."""
    from morl_robot.safety.compiled import load_rules

    best, overlap = None, 0
    for robot in ("sawyer", "shadow_hand"):
        try:
            spec = load_rules(robot).spec
        except MorlRobotError:
            continue
        n = len(set(names) & set(spec.joint_names))
        if n > overlap:
            best, overlap = robot, n
    return best


def _median_period(times: list[float]) -> float:
    if len(times) < 2:
        return math.nan
    dts = [b - a for a, b in itertools.pairwise(times) if b > a]
    return statistics.median(dts) if dts else math.nan


def replay(records: list[Record], safety: str | os.PathLike[str] | None = None, start: float | None = None,
           watchdogs: bool | dict[str, bool] | None = None, control_mode: str | None = None) -> list[Stream]:
    """Replay every monitored namespace of ``records`` (log-time order) through a fresh monitor.

    ``safety``: a robot name or safety YAML (default: each namespace's own robot); ``watchdogs``:
    on/off, per namespace, or None (on); ``control_mode``: how actuator-labelled commands are read
    (default: the namespace's last part if it names a mode, else the robot's default)."""
    from morl_robot.robots.spec import CARTESIAN_LABELS, ControlMode
    from morl_robot.safety.compiled import load_rules
    from morl_robot.safety.monitor import SafetyMonitor

    records = sorted(records, key=lambda r: r.time)
    if not records:
        raise RecordingError("the recording holds no message of the safety rules' topics")
    t0 = records[0].time if start is None else start
    namespaces = sorted({r.namespace for r in records if r.stream in ("command", "joint_states", "wrench", "tactile")})
    if not namespaces:
        raise RecordingError("the recording has no joint_states, wrench, tactile or command under any namespace: "
                             "nothing to replay")
    rules_cache: dict[str, Any] = {}
    out = []
    for ns in namespaces:
        mine = [r for r in records if r.namespace == ns]
        robot, names = _robot_of(mine, ns)
        if robot is None and safety is None:
            robot = _guess_robot(names)
        source = str(safety) if safety is not None else robot
        if source is None:
            raise RecordingError(f"namespace {ns}: cannot tell the robot (no safety/violations event, joint names "
                                 f"{list(names)[:4]}…); give --safety")
        if source not in rules_cache:
            rules_cache[source] = load_rules(source)
        rules = rules_cache[source]
        wd = watchdogs.get(ns, True) if isinstance(watchdogs, dict) else (True if watchdogs is None else watchdogs)
        mode = control_mode
        last = ns.rstrip("/").rsplit("/", 1)[-1]
        if mode is None and last in {m.value for m in rules.spec.control_modes}:
            mode = last
        shown = (ControlMode(mode) if mode else rules.spec.default_control_mode).value
        commands = {r.data[1] for r in mine if r.stream == "command"}
        if commands and all(set(labels) <= set(CARTESIAN_LABELS) for labels in commands):
            shown = ControlMode.CARTESIAN_VELOCITY.value  # Cartesian-labelled commands are read as twists
        stream = Stream(ns, rules.spec.name, shown, wd)
        if robot and rules.spec.name != robot:
            stream.notes.append(f"the recording's robot is {robot}, the safety config's {rules.spec.name}: skipped")
            out.append(stream)
            continue
        # the task's action components: the command label set the live monitor accepted, if not a full command
        full = {tuple(rules.spec.command_labels(m)) for m in rules.spec.control_modes}
        refused = any(r.stream == "safety/violations" and r.data[1].get("rule") == "command.labels" for r in mine)
        label_sets = Counter(r.data[1] for r in mine if r.stream == "command" and r.data[1] not in full)
        actions = None
        if label_sets and not refused:
            actions = label_sets.most_common(1)[0][0]
        # started just before the first reading, as the live monitor started with its robot node
        # (its start-up time is not recorded; a sensor that never comes is still overdue from here)
        begun = next((r.time for r in mine if r.stream in ("joint_states", "wrench", "tactile")), mine[0].time)
        try:
            monitor = SafetyMonitor(rules, mode, wd, now=begun, action_labels=actions)
        except MorlRobotError as exc:
            raise RecordingError(f"namespace {ns}: {exc}") from exc
        _run(monitor, mine, stream, t0)
        out.append(stream)
    return out


def _run(monitor: Any, records: list[Record], stream: Stream, t0: float) -> None:
    """Feed one namespace's records to ``monitor``; fill ``stream``."""
    ns = stream.namespace
    times: dict[str, list[float]] = {}
    for r in records:
        times.setdefault(r.stream, []).append(r.time)
    stream.periods = {k: _median_period(v) for k, v in times.items() if k in STREAMS[:5]}
    recorded = [_recorded_event(ns, r.data[1], r.time, t0) for r in records if r.stream == "safety/violations"]
    stream.recorded = recorded
    # the recording's manual triggers (safety/trigger, shutdown) happen again at their times
    triggers = sorted((e.time, e.key) for e in recorded if e.rule == "manual")
    has_estop = "safety/estop" in times
    if not has_estop:
        stream.notes.append("no safety/estop recorded: the e-stop is taken as released at the first message")
        _reset(monitor, stream, records[0].time, t0)
    next_check = records[0].time
    estop_state: bool | None = None
    ti = 0

    def emit(outcome: Any) -> None:
        stream.replayed.extend(_event(ns, v, t0) for v in outcome.violations if v.rule != "startup")

    for r in records:
        now = r.time
        if monitor.watchdogs:
            while next_check <= now:
                emit(monitor.check_watchdogs(next_check, CHECK_PERIOD))
                next_check += CHECK_PERIOD
        while ti < len(triggers) and triggers[ti][0] <= now:
            emit(monitor.trigger(triggers[ti][1], triggers[ti][0]))
            ti += 1
        d = r.data
        if r.stream == "joint_states":
            emit(monitor.on_joint_state(d[0], d[1], d[2], d[3], _stamp(d[4], now), now))
        elif r.stream == "wrench":
            emit(monitor.on_wrench(d[0], _stamp(d[1], now), now))
        elif r.stream == "tactile":
            emit(monitor.on_tactile(d[0], d[1], now, now))
        elif r.stream == "heartbeat":
            monitor.on_heartbeat(_stamp(d[0], now), now)
        elif r.stream == "command":
            values, labels, key = d
            if key is not None and int(key) % 2**24 == 0:
                monitor.new_episode()
            elapsed = monitor.command_period if key is not None else None
            emit(monitor.on_command(values, labels, now, elapsed))
        elif r.stream == "safety/estop":
            if estop_state is not False and d[0] is False:
                _reset(monitor, stream, now, t0)
            estop_state = d[0]
    stream.replayed.sort(key=lambda e: e.time)


def _stamp(stamp: float, now: float) -> float:
    """A header stamp on the log's clock, or the log time when it is on another clock (sim time:
    the live monitor then dates readings by arrival too)."""
    return stamp if math.isfinite(stamp) and abs(stamp - now) < _FOREIGN_CLOCK else now


def _reset(monitor: Any, stream: Stream, now: float, t0: float) -> None:
    accepted, message = monitor.reset(now)
    stream.resets.append({"t": round(now - t0, 6), "accepted": accepted, "message": message})


# --- the report ---------------------------------------------------------------------------------
@dataclass
class Report:
    """A post-mortem: per namespace the replayed and recorded events, their match, and the verdict."""

    recording: dict[str, Any]
    safety: str
    streams: list[Stream]
    rules: tuple[str, ...] = ()  # the rule prefixes reported and judged (empty: all)
    records: list[Record] = field(default_factory=list, repr=False)  # what was replayed (for plots)

    @property
    def replayed(self) -> list[Event]:
        return sorted((e for s in self.streams for e in s.replayed), key=lambda e: e.time)

    @property
    def trips(self) -> list[Event]:
        """E-stop-level violations the rules found (manual triggers, taken from the recording, are not counted)."""
        return [e for e in self.replayed if e.estop and e.rule != "manual"]

    @property
    def would_trip(self) -> bool:
        return bool(self.trips)

    def counts(self) -> dict[str, int]:
        """Replayed onsets per ``rule/level (response)``."""
        c = Counter(f"{e.rule}/{e.level} ({e.response})" for e in self.replayed)
        return dict(sorted(c.items()))

    def comparison(self) -> dict[str, Any]:
        rows: dict[str, Any] = {}
        for s in self.streams:
            m = match(s)
            exact = [(a, b) for a, b in m.pairs if b.exact]
            rows[s.namespace] = {
                "recorded": len(s.recorded), "replayed": len(s.replayed), "matched": len(m.pairs),
                "max_dt_ms": round(max((abs(a.time - b.time) for a, b in m.pairs), default=0.0) * 1e3, 3),
                # threshold rules on readings (replayed exactly): recorded, matched, and how far apart
                "exact_recorded": sum(e.exact for e in s.recorded), "exact_matched": len(exact),
                "exact_max_dt_ms": round(max((abs(a.time - b.time) for a, b in exact), default=0.0) * 1e3, 3),
                "replayed_only": [_row(e) for e in m.replayed_only],
                "recorded_only": [_row(e) for e in m.recorded_only],
                "tolerance_ms": {k: round((v + MATCH_SLACK) * 1e3, 3) for k, v in s.periods.items() if math.isfinite(v)},
            }
        return rows

    def as_dict(self) -> dict[str, Any]:
        first = self.trips[0] if self.trips else None
        return {
            "recording": self.recording, "safety": self.safety, "rules": list(self.rules), "would_trip": self.would_trip,
            "first_trip": _row(first) if first else None, "counts": self.counts(),
            "violations": [_row(e) for e in self.replayed],
            "namespaces": {s.namespace: {"robot": s.robot, "control_mode": s.control_mode, "watchdogs": s.watchdogs,
                                         "resets": s.resets, "notes": s.notes} for s in self.streams},
            "comparison": self.comparison(),
        }

    def lines(self, limit: int = 200) -> list[str]:
        """The human report: every violation (up to ``limit``), the comparison, the summary last."""
        out = [f"recording {self.recording.get('path', '?')}: {_duration(self.recording)}; safety rules: {self.safety}"
               + (f"; only rules {', '.join(self.rules)}*" if self.rules else "")]
        for s in self.streams:
            out.append(f"  {s.namespace}: robot {s.robot}, {s.control_mode} commands, watchdogs "
                       f"{'on' if s.watchdogs else 'off'}; {len(s.resets)} release(s) replayed"
                       + "".join(f"; {n}" for n in s.notes))
        events = self.replayed
        out.append(f"violations replayed: {len(events)}")
        out.append(f"  {'t (s)':>9}  {'time (UTC)':<26} {'namespace':<24} {'rule':<22} {'key':<20} {'level':<22} "
                   f"{'value':>11} {'threshold':>11} {'unit':<6} response")
        for e in events[:limit]:
            out.append(f"  {e.t:9.3f}  {_utc(e.time):<26} {e.namespace:<24} {e.rule:<22} {e.key[:20]:<20} "
                       f"{e.level:<22} {e.value:11.5g} {e.threshold:11.5g} {e.unit:<6} {e.response}"
                       + ("" if e.exact else "  ~"))
        if len(events) > limit:
            out.append(f"  … {len(events) - limit} more (--json has all)")
        out.append("  (~: timing-dependent rule, replayed approximately: docs/howto/post_mortem.md)")
        for ns, c in self.comparison().items():
            out.append(f"live monitor {ns}: {c['recorded']} recorded, {c['replayed']} replayed, {c['matched']} matched "
                       f"within one sample (max {c['max_dt_ms']} ms apart); threshold rules on readings: "
                       f"{c['exact_matched']} of {c['exact_recorded']} matched (max {c['exact_max_dt_ms']} ms apart)")
            for label, rows in (("recorded, not replayed", c["recorded_only"]), ("replayed, not recorded", c["replayed_only"])):
                for row in rows[:10]:
                    out.append(f"  {label}: t={row['t']:.3f} s {row['rule']} [{row['key']}] {row['level']} "
                               f"{row['value']:.5g} {row['unit']} -> {row['response']}")
                if len(rows) > 10:
                    out.append(f"  {label}: … {len(rows) - 10} more")
        per = ", ".join(f"{k}: {v}" for k, v in self.counts().items()) or "none"
        if self.trips:
            f = self.trips[0]
            out.append(f"WOULD TRIP: first e-stop at t={f.t:.3f} s ({_utc(f.time)}) by {f.describe()} "
                       f"in {f.namespace}; {len(self.trips)} e-stop-level violation(s); per rule: {per}")
        else:
            out.append(f"NO TRIP: no e-stop-level violation under {self.safety}; per rule: {per}")
        return out


def _row(e: Event) -> dict[str, Any]:
    d = asdict(e)
    d["utc"] = _utc(e.time)
    d["exact"] = e.exact
    return d


def _utc(t: float) -> str:
    import datetime

    if not math.isfinite(t):
        return "nan"
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _duration(info: dict[str, Any]) -> str:
    start, end = info.get("start", math.nan), info.get("end", math.nan)
    n = sum(info.get("topics", {}).values())
    cut = f" (truncated, read up to: {info['truncated']})" if info.get("truncated") else ""
    return f"{n} messages over {end - start:.2f} s from {_utc(start)}{cut}"


def post_mortem(path: str | os.PathLike[str], safety: str | os.PathLike[str] | None = None,
                watchdogs: bool | None = None, control_mode: str | None = None,
                rules: Iterable[str] = ()) -> Report:
    """Read ``path`` and replay it under ``safety`` (default: the recorded robots' own rules);
    ``rules``: report and judge only the rules starting with one of these (e.g. ``wrench.``), both
    replayed and recorded (every rule still runs: a stop by another one changes what follows)."""
    records, info = read_recording(path)
    wd = watchdogs if watchdogs is not None else info["watchdogs"]
    streams = replay(records, safety, info["start"], wd, control_mode)
    rules = tuple(rules)
    if rules:
        for s in streams:
            s.replayed = [e for e in s.replayed if e.rule.startswith(rules)]
            s.recorded = [e for e in s.recorded if e.rule.startswith(rules)]
    label = str(safety) if safety is not None else ", ".join(sorted({s.robot for s in streams})) + " (as recorded)"
    return Report(info, label, streams, rules, records)


def traces(records: Iterable[Record], event: Event, window: float = 1.0) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(label, t (s), values) of what ``event``'s rule watched, ``window`` s either side of it."""
    lo, hi = event.time - window, event.time + window
    near = [r for r in records if r.namespace == event.namespace and lo <= r.time <= hi]
    stream = rule_stream(event.rule)
    rows = [r for r in near if r.stream == stream]
    if not rows:
        return
    t = np.array([r.time for r in rows])
    if stream == "wrench":
        w = np.stack([r.data[0] for r in rows])
        if event.rule.startswith("wrench.force"):
            yield "‖F‖ (N)", t, np.linalg.norm(w[:, :3], axis=1)
            for i, ax in enumerate("xyz"):
                yield f"f{ax} (N)", t, w[:, i]
        else:
            yield "‖τ‖ (N·m)", t, np.linalg.norm(w[:, 3:], axis=1)
    elif stream == "tactile":
        labels = rows[0].data[1]
        if event.key in labels:
            i = labels.index(event.key)
            yield f"{event.key} (N)", t, np.array([r.data[0][i] if len(r.data[0]) > i else np.nan for r in rows])
        else:
            yield "max tactile (N)", t, np.array([np.nanmax(r.data[0]) if len(r.data[0]) else np.nan for r in rows])
    elif stream == "joint_states":
        field_ = {"joints.velocity": 2, "joints.effort": 3}.get(event.rule, 1)
        name = event.key
        if name in rows[0].data[0]:
            i = rows[0].data[0].index(name)
            yield f"{name} {('', '', 'velocity', 'effort')[field_] or 'position'}", t, np.array(
                [r.data[field_][i] if len(r.data[field_]) > i else np.nan for r in rows])
    elif stream == "command":
        labels = rows[0].data[1]
        if event.key in labels:
            i = labels.index(event.key)
            yield f"command {event.key}", t, np.array([r.data[0][i] if r.data[1] == labels else np.nan for r in rows])


def plot_trips(report: Report, out_dir: str | os.PathLike[str], limit: int = 5,
               window: float = 1.0) -> list[Path]:
    """A PNG per trip (the first of each rule, key and level whose quantity was recorded; at most
    ``limit``): the watched quantity ±``window`` s, the threshold, the replayed and recorded onsets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorded = [e for s in report.streams for e in s.recorded]
    written: list[Path] = []
    seen: set[tuple[str, str, str, str]] = set()
    for e in report.trips:
        if len(written) >= limit or e.ident in seen:
            continue
        seen.add(e.ident)
        series = list(traces(report.records, e, window))
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(8, 4))
        for label, t, y in series:
            ax.plot(t - e.time, y, label=label, lw=1.2, marker=".", ms=3)
        if math.isfinite(e.threshold):
            ax.axhline(e.threshold, color="red", ls="--", lw=1, label=f"{e.level} limit {e.threshold:.4g} {e.unit}")
        ax.axvline(0.0, color="black", lw=1, label="replayed onset")
        for r in recorded:
            if r.ident == e.ident and abs(r.time - e.time) <= window:
                ax.axvline(r.time - e.time, color="orange", ls=":", lw=1.5, label="recorded onset")
        ax.set_xlabel(f"s from the replayed trip (t = {e.t:.3f} s, {_utc(e.time)})")
        ax.set_title(f"{e.namespace}: {e.describe()}", fontsize=9)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        path = out_dir / f"trip_{len(written):02d}_{e.rule}_{e.key}_{e.level}.png".replace("/", "_")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


__all__ = ["Event", "Record", "RecordingError", "Report", "Response", "Stream", "match", "plot_trips", "post_mortem",
           "read_recording", "replay", "traces"]
