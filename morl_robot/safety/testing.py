"""Force-threshold safety testing: judging probe traces against the configured rules, and the report.

A probe (``morl-robot safety-test``) drives the robot through the full graph until a rule trips and
records what the monitor published.  This module turns those records into one
:class:`RuleCheck` per rule: the configured threshold, the value at which the rule tripped, the
latency from the sensor sample's stamp to the first held/stopped command, and pass/fail against
the tolerances:

* **threshold error** — the tripped value must not be below the threshold (no early trips) and
  may exceed it by at most one sensor sample's increment of the traced quantity (a monitor that
  checks every sample cannot do better; issue 5's "within one sensor sample");
* **latency** — at most ``latency_tolerance`` (default 20 ms) from the sample's stamp to the held
  command on ``command_safe``; watchdogs: the deadline plus one check period plus that tolerance.

A check whose only problem is its timing while this machine ran late (the probe's own timer
lateness in the check's window, the monitor's reported delay: :class:`SchedulingDelays`) is *not
judged (machine)*, not a robot FAIL.  :data:`VERDICTS` lists every exit code with its meaning and
what to do (docs/tutorials/safety_test.md explains how to read a report).

It writes ``report.json`` (atomically), ``report.md`` (every number with its unit) and one plot per
traced probe (the trace, the threshold, the trip point), and counts the missed deadlines no probe caused on purpose: those a
late process on this host explains (the monitor's own watchdog check, the robot node's publishing,
the delivery) with the measured delays' p50/max, apart from unexplained ones.
"""
from __future__ import annotations

import contextlib
import math
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.records import write_json_atomic

if TYPE_CHECKING:
    from morl_robot.robots.config import RobotConfig, SafetyTestConfig


@dataclass(frozen=True)
class Verdict:
    """One way a safety test ends: its exit code, the ``result`` in ``report.json``, what it means
    and what to do (docs/reference/exit_codes.md and the CLI's exit-code table are made from
    :data:`VERDICTS`)."""

    code: int
    result: str  # report.json "result" ("" = no report: the run did not get that far)
    label: str  # as report.md and the console say it
    meaning: str
    action: str


#: Every exit code of ``morl-robot safety-test``, most severe verdict first (the run ends with the
#: first that applies: FAIL > NOT JUDGED > INCOMPLETE > PASS).
VERDICTS: tuple[Verdict, ...] = (
    Verdict(0, "pass", "PASS",
            "Every rule tripped at its threshold (within one sensor sample) and held, slowed or stopped the "
            "command within its latency tolerance.",
            "Nothing to fix. Keep report.json and report.md with the release record."),
    Verdict(1, "fail", "FAIL",
            "At least one rule did not trip, tripped early, tripped too far past its threshold, or its command "
            "was not held/stopped in time while this machine kept its deadlines: the robot, its driver or its "
            "safety configuration is at fault.",
            "Read the FAIL rows of report.md (each says what was wrong, with units). Fix the safety YAML, the "
            "driver or the robot before using it; do not deploy. Rerun to confirm."),
    Verdict(4, "not_judged", "NOT JUDGED (machine)",
            "No rule failed, but a check could not be judged because this machine missed its deadlines: the "
            "check's only problem was its timing (a latency over the tolerance) and the host's scheduling delay "
            "measured in the same window was at least as long as the excess. The robot may be fine; the host was "
            "late.",
            "Rerun on an idle machine (stop training runs, builds and other tests) or on a real-time "
            "(PREEMPT_RT) kernel. The report gives the measured scheduling delay (median and max per check)."),
    Verdict(3, "incomplete", "INCOMPLETE",
            "No rule failed, but a threshold could not be reached by the probes (e.g. on hardware nobody pressed "
            "the force gauge within the 60 s the probe waits). A rule that was not exercised is not a pass.",
            "Rerun and press the gauge when the probe asks (the instructions appear on stderr), or reach the "
            "'not reached' levels on a test rig."),
    Verdict(2, "", "ERROR (usage or configuration)",
            "The command line or a YAML file is invalid (a bad flag value, an unknown robot, a robot YAML whose "
            "safety_test section is wrong); one line names what is wrong. No node was started.",
            "Fix what the message names and rerun."),
    Verdict(5, "", "ERROR (probe aborted)",
            "A probe could not go on (the graph did not start, the robot never touched the fixture, the safety "
            "monitor would not release, or a bug: its traceback is printed); one line names it. Nothing was "
            "judged, no report was written (so 1 always means a rule failed).",
            "Read the message and the node logs in OUT/logs; fix the cause (e.g. the scene, the robot's start "
            "pose) and rerun."),
    Verdict(130, "", "INTERRUPTED", "Stopped with Ctrl-C; the nodes were shut down.", "Rerun."),
)
#: report.json ``result`` → exit code.
EXIT_CODES: dict[str, int] = {v.result: v.code for v in VERDICTS if v.result}


def verdict(result: str) -> Verdict:
    """The :class:`Verdict` of a report's ``result``."""
    return next(v for v in VERDICTS if v.result == result)


@dataclass(frozen=True)
class SafetyTestPlan:
    """What the safety test runs on a robot, all from its robot YAML's ``safety_test:`` section:
    per phase (a control mode) one robot node + safety monitor pair in ``/<namespace>/<mode>`` and
    its probes (only one pair is active at a time: the later ones start unconfigured and the probe
    walks them through their lifecycle, so two nodes never drive one robot)."""

    robot: str  # as the nodes load it: a shipped robot's name or a robot YAML path
    config: RobotConfig
    test: SafetyTestConfig
    scene: str  # simulation: the scene the probes press against ("" = the robot alone)
    safety: str  # the safety YAML (name or path)

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(p.mode for p in self.test.phases)


def safety_test_plan(robot: str) -> SafetyTestPlan:
    """The plan for ``robot`` (a name, an alias such as ``shadow`` or a robot YAML path); a robot
    YAML without a ``safety_test:`` section is a ConfigError saying where to add it."""
    from morl_robot.errors import ConfigError
    from morl_robot.resources import is_config_path, resolve_config
    from morl_robot.robots.config import load_robot_config, resolve_robot

    ref = resolve_robot(robot)
    if is_config_path(ref):  # the nodes (other processes, other folders) get the file's absolute path
        ref = str(resolve_config("robots", ref).resolve())
    config = load_robot_config(ref)
    if config.safety_test is None:
        raise ConfigError(f"robot '{robot}': its YAML has no 'safety_test:' section (the phases and probes of "
                          "`morl-robot safety-test`; see docs/howto/add_robot.md)")
    st = config.safety_test
    return SafetyTestPlan(ref, config, st, st.scene or config.model.scene, config.safety or config.name)


def check_scene(plan: SafetyTestPlan) -> None:
    """Simulation: the scene compiles and has the body the force gauge pushes (a ConfigError naming
    the robot YAML's key, before any node starts)."""
    import mujoco

    from morl_robot.errors import ConfigError
    from morl_robot.robots.model import load_model, model_path

    press = plan.test.press
    if press is None:
        return
    model = load_model(model_path(plan.config, plan.scene or None))
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, press.gauge.body) < 0:
        bodies = sorted(filter(None, (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, i)
                                      for i in range(model.nbody))))
        raise ConfigError(f"robot '{plan.robot}': safety_test.press.gauge.body: '{press.gauge.body}' is not a body of "
                          f"the scene {plan.scene or plan.config.model.mjcf}; bodies: {', '.join(bodies)}")


#: The unit of each number a :class:`RuleCheck` carries in report.json (``unit``: the rule's own,
#: e.g. N, N·m, rad, m/s, s), as its ``units`` field.
CHECK_UNITS = {"threshold": "unit", "tripped_value": "unit", "threshold_error": "unit",
               "threshold_tolerance": "unit", "latency": "s", "latency_tolerance": "s",
               "host_delay_median": "s", "host_delay_max": "s"}
#: Scheduling delays below this (s) are the ordinary jitter of a non-real-time kernel, not a
#: machine that missed its deadlines.
HOST_DELAY_FLOOR = 0.002


@dataclass
class Trace:
    """A sampled quantity during a probe: times (s, sensor stamps) and values (in ``unit``)."""

    name: str
    unit: str
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def add(self, t: float, v: float) -> None:
        self.times.append(float(t))
        self.values.append(float(v))

    def increment_before(self, t: float, window: int = 5) -> float:
        """Largest |Δ| between consecutive samples among the ``window`` samples up to time ``t``
        (the resolution with which a per-sample check can see a threshold crossing)."""
        idx = [i for i, ti in enumerate(self.times) if ti <= t + 1e-9]
        if len(idx) < 2:
            return math.inf
        last = idx[-1]
        v = np.asarray(self.values[max(0, last - window):last + 1])
        return float(np.abs(np.diff(v)).max()) if v.size > 1 else math.inf


@dataclass
class RuleCheck:
    """One rule exercised by one probe.  Numbers are in ``unit`` (the rule's) or s (:data:`CHECK_UNITS`)."""

    probe: str  # e.g. "peg press 0.02 m/s + force gauge"
    rule: str  # monitor rule name, e.g. "wrench.force_norm"
    level: str  # contact | collision | soft | hard | fault | deadline
    expected_response: str  # clamp | hold | estop
    threshold: float  # configured (unit)
    unit: str
    tripped: bool = False
    tripped_value: float = math.nan  # the monitor's reading at the trip (unit)
    threshold_error: float = math.nan  # tripped_value − threshold (unit); watchdogs: the overshoot in s
    threshold_tolerance: float = math.nan  # allowed threshold error (unit)
    latency: float = math.nan  # s, sensor stamp → first held/stopped command received
    latency_tolerance: float = math.nan  # s
    passed: bool = False
    reachable: bool = True  # False: the probe could not drive the quantity to the threshold
    detail: str = ""  # the probe's note (how the threshold was reached)
    plot: str = ""
    # the host's scheduling delay measured while the check was decided (s; nan: not measured):
    # the probe's own timer lateness in ``window`` and the monitor's reported check delay
    host_delay_median: float = math.nan
    host_delay_max: float = math.nan
    window: tuple[float, float] | None = None  # wall-clock s in which the check was decided
    machine: bool = False  # not judged: only its timing failed, and the host was at least that late
    robot_problems: list[str] = field(default_factory=list)  # found by the probe beyond judge()'s
    problems: list[str] = field(default_factory=list)  # set by judge()

    @property
    def status(self) -> str:
        if self.passed:
            return "pass"
        if self.machine:
            return "not judged (machine)"
        return "not reached" if not self.reachable else "FAIL"

    def fail(self, problem: str) -> RuleCheck:
        """A problem the probe found (e.g. no e-stop after a NaN command): the check fails."""
        self.robot_problems.append(problem)
        return self.judge()

    def judge(self) -> RuleCheck:
        """Set ``passed``, ``machine`` and ``problems`` (idempotent: may run again once the host
        delay is known).  Robot problems fail the check; a check whose only problems are timing
        (latency over its tolerance; a watchdog's overshoot) is *not judged (machine)* when the
        host's measured scheduling delay covers the excess, else it fails too."""
        robot: list[str] = []
        timing: list[str] = []
        excess = 0.0
        u = f" {self.unit}" if self.unit else ""
        if not self.tripped:
            robot.append("did not trip")
        else:
            if not math.isnan(self.threshold_error):
                if self.threshold_error < -1e-9:
                    robot.append(f"tripped below the threshold ({self.tripped_value:.4g}{u} < {self.threshold:.4g}{u})")
                elif self.threshold_error > self.threshold_tolerance + 1e-9:
                    over = (f"tripped {self.threshold_error:.4g}{u} past the threshold "
                            f"(tolerance {self.threshold_tolerance:.4g}{u})")
                    if self.level == "deadline" and self.unit == "s":  # a watchdog's overshoot is its latency
                        timing.append(over)
                        excess = max(excess, self.threshold_error - self.threshold_tolerance)
                    else:
                        robot.append(over)
            if math.isinf(self.latency_tolerance):
                pass  # no latency is measured for this check (e.g. a command flood)
            elif math.isnan(self.latency):
                robot.append("no held/stopped command seen")
            elif self.latency > self.latency_tolerance:
                timing.append(f"latency {self.latency * 1e3:.1f} ms > {self.latency_tolerance * 1e3:.1f} ms")
                excess = max(excess, self.latency - self.latency_tolerance)
        robot += self.robot_problems
        delay = self.host_delay_max
        self.machine = bool(timing) and not robot and not math.isnan(delay) and delay >= max(excess, HOST_DELAY_FLOOR)
        if self.machine:
            timing.append(f"host scheduling delay up to {delay * 1e3:.1f} ms (median "
                          f"{self.host_delay_median * 1e3:.1f} ms) in the same window: the machine was late; "
                          "rerun on an idle machine or a real-time kernel")
        elif timing and not math.isnan(delay):
            timing.append(f"host scheduling delay at most {delay * 1e3:.1f} ms in the same window: "
                          "not enough to explain it")
        self.problems = robot + timing
        self.passed = not self.problems
        return self

    def summary(self) -> str:
        """What was wrong (problems) and the probe's note: ``problems (note)``; a level the probe
        could not reach is said by its note alone."""
        text = "; ".join(p for p in self.problems if self.reachable or p != "did not trip")
        if self.detail:
            text = f"{text} ({self.detail})" if text else self.detail
        return text

    def as_dict(self) -> dict[str, Any]:
        """report.json's row: the fields, ``status``, ``units`` and ``detail`` = :meth:`summary`."""
        row = asdict(self)
        row.pop("window")
        row.pop("robot_problems")
        row["note"], row["detail"] = self.detail, self.summary()
        row["status"] = self.status
        row["units"] = {k: (self.unit if v == "unit" else v) for k, v in CHECK_UNITS.items()}
        return row


#: The sampler process of :class:`SchedulingDelays`: wakes every ``period`` s and prints
#: ``<wall time> <lateness>`` per wake-up (flushed every 0.1 s) until its stdin closes.
_SAMPLER = """
import sys, threading, time
period = float(sys.argv[1])
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
due, lines, flushed = time.monotonic() + period, [], time.monotonic()
while not stop.is_set():
    time.sleep(max(0.0, due - time.monotonic()))
    now = time.monotonic()
    lines.append(f"{time.time():.6f} {now - due:.6f}")
    due = max(due + period, now)
    if now - flushed > 0.1:
        sys.stdout.write("\\n".join(lines) + "\\n"); sys.stdout.flush(); lines, flushed = [], now
sys.stdout.write("".join(x + "\\n" for x in lines))
"""


class SchedulingDelays:
    """How late this host runs a timer: the lateness (s) of a periodic wake-up in a small process
    of its own (what cyclictest measures, at normal priority; apart from this process, so the
    probe's own threads do not count), recorded against wall-clock time.  :meth:`start` runs the
    sampler; :meth:`add` records a sample (tests)."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.times: list[float] = []
        self.delays: list[float] = []
        self._lock = threading.Lock()
        self._proc: Any = None
        self._reader: threading.Thread | None = None

    def add(self, t: float, delay: float) -> None:
        with self._lock:
            self.times.append(float(t))
            self.delays.append(max(0.0, float(delay)))

    def start(self) -> SchedulingDelays:
        import subprocess
        import sys

        self._proc = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(self.period)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)

        def read() -> None:
            for line in self._proc.stdout:
                with contextlib.suppress(ValueError):
                    t, d = line.split()
                    self.add(float(t), float(d))
        self._reader = threading.Thread(target=read, name="scheduling-delays", daemon=True)
        self._reader.start()
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(OSError):
            self._proc.stdin.close()  # the sampler flushes nothing more and ends
        try:
            self._proc.wait(timeout=2.0)
        except Exception:  # noqa: BLE001 - never leave it behind
            self._proc.kill()
            self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=1.0)
        self._proc = None

    def window(self, t0: float, t1: float) -> tuple[float, float]:
        """(median, max) delay (s) of the wake-ups due in [t0, t1] (a wake-up's stamp is its actual
        time: one that ends in the window counts); (nan, nan) without any."""
        with self._lock:
            d = [d for t, d in zip(self.times, self.delays) if t0 <= t and t - d <= t1]
        return (float(np.median(d)), float(max(d))) if d else (math.nan, math.nan)

    def summary(self) -> dict[str, float]:
        """The whole run: samples, median / p99 / max delay (ms)."""
        with self._lock:
            d = np.asarray(self.delays) * 1e3
        if not d.size:
            return {"samples": 0}
        return {"samples": int(d.size), "period_ms": self.period * 1e3, "median_ms": float(np.median(d)),
                "p99_ms": float(np.percentile(d, 99)), "max_ms": float(d.max())}


#: The safety monitor's violation detail when its own watchdog check ran late (morl_robot.nodes.wire).
_MONITOR_DELAY = re.compile(r"host scheduling delay (\d+(?:\.\d+)?) ms")


def monitor_delay(detail: str) -> float:
    """The monitor's own scheduling delay (s) a violation's detail reports; nan if none."""
    m = _MONITOR_DELAY.search(detail or "")
    return float(m.group(1)) * 1e-3 if m else math.nan


def add_host_delay(check: RuleCheck, delays: SchedulingDelays | None, margin: float = 0.05) -> RuleCheck:
    """Add the probe's :class:`SchedulingDelays` in ``check``'s ``window`` (widened by ``margin`` s)
    to the host delay it already has (the monitor's, :func:`watchdog_check`), and judge it again."""
    med, mx = (delays.window(check.window[0] - margin, check.window[1] + margin)
               if delays is not None and check.window is not None else (math.nan, math.nan))
    prior = check.host_delay_max
    if not math.isnan(mx):
        check.host_delay_median = med
        check.host_delay_max = mx if math.isnan(prior) else max(mx, prior)
    return check.judge()


def watchdog_check(probe: str, rule: str, deadline: float, response: str, event: dict[str, str] | None,
                   command_period: float, check_period: float, tolerance: float) -> RuleCheck:
    """A deadline rule's check from the monitor's violation event (``None``: it never came): the
    age of the newest message at the e-stop (``decided_at − sensor_stamp``) against ``deadline``;
    latency = the overshoot, allowed ``check_period + tolerance``.  The monitor's own reported
    scheduling delay (its detail) counts as the host's."""
    c = RuleCheck(probe, rule, "deadline", response, deadline, "s", latency_tolerance=check_period + tolerance)
    if event is None:
        return c.judge()

    def num(key: str) -> float:
        try:
            return float(event.get(key, "nan"))
        except ValueError:
            return math.nan
    c.rule = event.get("rule", rule)
    c.tripped = True
    last, decided = num("sensor_stamp"), num("decided_at")
    c.tripped_value = decided - last  # age of the newest sample at the e-stop
    c.threshold_error = c.tripped_value - deadline
    c.threshold_tolerance = command_period + check_period  # deadline + one period
    c.latency = c.threshold_error  # beyond the deadline
    c.window = (last, decided)
    # the host's share, in series: the newest message reached the monitor late (its age counts from
    # its arrival: the event's value), and the monitor's own check ran late (its detail says so)
    delivered = c.tripped_value - num("value")
    late = monitor_delay(event.get("detail", ""))
    host = (delivered if math.isfinite(delivered) and delivered > 0 else 0.0) + (0.0 if math.isnan(late) else late)
    c.host_delay_median = c.host_delay_max = host
    return c.judge()


def plot_trace(trace: Trace, threshold: float, trip_time: float | None, trip_value: float | None,
               title: str, path: Path, extra_thresholds: dict[str, float] | None = None) -> Path:
    """The traced quantity over time with the threshold line(s) and the trip point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = trace.times[0] if trace.times else 0.0
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.plot(np.asarray(trace.times) - t0, trace.values, lw=1.2, label=trace.name)
    ax.axhline(threshold, color="tab:red", ls="--", lw=1, label=f"threshold {threshold:g} {trace.unit}")
    for name, value in (extra_thresholds or {}).items():
        ax.axhline(value, color="tab:orange", ls=":", lw=1, label=f"{name} {value:g} {trace.unit}")
    if trip_time is not None and trip_value is not None:
        ax.plot([trip_time - t0], [trip_value], "o", color="tab:red", ms=7, label="trip")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"{trace.name} ({trace.unit})")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def deadline_miss_report(misses: list[dict[str, Any]]) -> dict[str, Any]:
    """The missed deadlines the probes did not cause (the monitor's ``deadline_miss_log`` rows):
    :func:`~morl_robot.safety.monitor.summarise_misses` (how many a late process on this host
    explains, which process, the delays' p50/max) and the rows themselves."""
    from morl_robot.safety.monitor import summarise_misses

    return {**summarise_misses(misses), "log": list(misses)}


def _deadline_miss_lines(m: dict[str, Any]) -> list[str]:
    if not m:
        return []
    n = {cause: m.get(f"deadline_misses/{cause}", 0) for cause in
         ("monitor_late", "published_late", "delivered_late", "unexplained")}
    line = f"Missed deadlines the probes did not cause: {m.get('deadline_misses', 0)}"
    if m.get("host_deadline_misses"):
        line += (f"; {m['host_deadline_misses']} from host scheduling delays (the monitor's own check late "
                 f"{n['monitor_late']}, published late {n['published_late']}, delivered late {n['delivered_late']}),"
                 f" delay p50 {m['host_delay_p50_ms']:.0f} ms, max {m['host_delay_max_ms']:.0f} ms")
    if n["unexplained"]:
        line += f"; {n['unexplained']} unexplained (no host delay measured)"
    return ["", line + "."]


def overall_result(checks: list[RuleCheck]) -> str:
    """The run's ``result`` (a :data:`VERDICTS` entry): ``fail`` if any check failed or nothing could
    be exercised at all, else ``not_judged`` if the machine was too late to judge a check, else
    ``incomplete`` if a threshold was not reached, else ``pass``."""
    reachable = [c for c in checks if c.reachable]
    if not reachable or any(c.status == "FAIL" for c in checks):
        return "fail"
    if any(c.machine for c in checks):
        return "not_judged"
    return "incomplete" if len(reachable) < len(checks) else "pass"


def _cell(text: str) -> str:
    """``text`` inside a Markdown table cell (a ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def _num(x: float | None, unit: str = "", scale: float = 1.0, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"  # not measured (nan), or no limit (inf: e.g. a flood has no latency tolerance)
    return f"{x * scale:.{digits}g}" + (f" {unit}" if unit else "")


def write_report(checks: list[RuleCheck], out_dir: str | Path, meta: dict[str, Any]) -> dict[str, Any]:
    """``report.json`` and ``report.md`` in ``out_dir``; returns the report.  Every number carries
    its unit (report.json: a ``units`` field per check, ``_s``/``_ms``/``_n_s`` key suffixes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = overall_result(checks)
    v = verdict(result)
    report = {**meta, "result": result, "passed": result == "pass", "exit_code": v.code,
              "verdict": {"label": v.label, "meaning": v.meaning, "action": v.action},
              "checks": [c.as_dict() for c in checks]}
    write_json_atomic(out / "report.json", report)
    counts = {s: sum(c.status == s for c in checks) for s in ("pass", "FAIL", "not judged (machine)", "not reached")}
    parts = [f"{counts['pass']}/{len(checks)} checks passed"] + [
        f"{n} {s}" for s, n in counts.items() if s != "pass" and n]
    lines = [f"# Safety test: {meta.get('robot', '?')} ({meta.get('backend', '?')})", "",
             f"Result: **{v.label}** ({'; '.join(parts)}); exit code {v.code}.", "",
             f"{v.meaning} *What to do:* {v.action}", "",
             ("| probe | rule | level | response | threshold | tripped at | error (tol.) | latency (tol.) "
             "| host delay median / max | result |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(
            f"| {c.probe} | `{c.rule}` | {c.level} | {c.expected_response} | {_num(c.threshold, c.unit)} | "
            f"{_num(c.tripped_value, c.unit)} | {_num(c.threshold_error, c.unit)} "
            f"({_num(c.threshold_tolerance, c.unit)}) | "
            f"{_num(c.latency, 'ms', 1e3, 3)} ({_num(c.latency_tolerance, 'ms', 1e3, 3)}) | "
            f"{_num(c.host_delay_median, 'ms', 1e3, 3)} / {_num(c.host_delay_max, 'ms', 1e3, 3)} | "
            f"{c.status}{': ' + _cell(c.summary()) if c.summary() else ''} |")
    lines += _deadline_miss_lines(meta.get("deadline_misses") or {})
    host = meta.get("scheduling_delays") or {}
    if host.get("samples"):
        lines += ["", (f"Host scheduling delay (a sampler process's {host['period_ms']:g} ms timer, {host['samples']} "
                       f"wake-ups): median {host['median_ms']:.2f} ms, p99 {host['p99_ms']:.2f} ms, max "
                       f"{host['max_ms']:.1f} ms" + (f"; load average {meta['load_average']:.2f} on "
                                                     f"{meta.get('cpus', '?')} CPUs" if 'load_average' in meta
                                                     else "") + ".")]
    plots = {c.plot: c for c in checks if c.plot}  # checks sharing one trace show it once
    if plots:
        lines += ["", "## Traces", ""] + [f"![{c.probe}]({plot})" for plot, c in plots.items()]
    lines += ["", ("Threshold error: tripped value − threshold; tolerance = one sensor sample's increment "
              "near the trip. Latency: sensor stamp → first held/stopped `command_safe` received by the "
              "probe (watchdogs: the last message's stamp + deadline → the e-stop decision). Host delay: how "
              "late this machine ran the probe's timer in the check's window, and the monitor's own reported "
              "delay; a check whose only problem is its timing is NOT JUDGED (machine) when that delay covers "
              "the excess."),
              "", "Exit codes: " + "; ".join(f"{x.code} {x.label}" for x in VERDICTS) + "."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return report
