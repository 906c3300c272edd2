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

It writes ``report.json`` (atomically), ``report.md`` and one plot per traced probe (the trace, the
threshold, the trip point), and counts the missed deadlines no probe caused on purpose: those a
late process on this host explains (the monitor's own watchdog check, the robot node's publishing,
the delivery) with the measured delays' p50/max, apart from unexplained ones.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.evaluation.records import write_json_atomic

#: A safety test's phases: the control modes its probes need, one robot node + safety monitor pair
#: per mode in ``/<namespace>/<mode>`` (only one pair is active at a time: the later ones start
#: unconfigured and the probe walks them through their lifecycle, so two nodes never drive one robot).
SAFETY_TEST_PHASES: dict[str, tuple[str, ...]] = {
    "sawyer": ("cartesian_velocity", "position"),  # approach + gauge presses, watchdogs; joint soft limit
    "shadow_hand": ("position",),
}
#: The simulated scene each robot's probes press against.
SAFETY_TEST_SCENES = {"sawyer": "sawyer/peg_in_hole.xml", "shadow_hand": "shadow_hand/touch.xml"}


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
    """One rule exercised by one probe."""

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
    detail: str = ""
    plot: str = ""

    @property
    def status(self) -> str:
        return "pass" if self.passed else ("not reached" if not self.reachable else "FAIL")

    def judge(self) -> RuleCheck:
        """Set ``passed`` (and explain a failure in ``detail``)."""
        problems = []
        if not self.tripped:
            problems.append("did not trip")
        else:
            if not math.isnan(self.threshold_error):
                if self.threshold_error < -1e-9:
                    problems.append(f"tripped below the threshold ({self.tripped_value:.4g} < {self.threshold:.4g})")
                elif self.threshold_error > self.threshold_tolerance + 1e-9:
                    problems.append(f"tripped {self.threshold_error:.4g} {self.unit} past the threshold "
                                    f"(tolerance {self.threshold_tolerance:.4g})")
            if math.isinf(self.latency_tolerance):
                pass  # no latency is measured for this check (e.g. a command flood)
            elif math.isnan(self.latency):
                problems.append("no held/stopped command seen")
            elif self.latency > self.latency_tolerance:
                problems.append(f"latency {self.latency * 1e3:.1f} ms > {self.latency_tolerance * 1e3:.1f} ms")
        self.passed = not problems
        if problems:
            self.detail = "; ".join(problems) + (f" ({self.detail})" if self.detail else "")
        return self


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


def write_report(checks: list[RuleCheck], out_dir: str | Path, meta: dict[str, Any]) -> dict[str, Any]:
    """``report.json`` and ``report.md`` in ``out_dir``; returns the report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    judged = [c for c in checks if c.reachable]
    # a rule the probes could not exercise is not a pass: such a run is incomplete, not passed
    result = ("fail" if not judged or not all(c.passed for c in judged)
              else "incomplete" if len(judged) < len(checks) else "pass")
    report = {**meta, "result": result, "passed": result == "pass",
              "checks": [{**asdict(c), "status": c.status} for c in checks]}
    write_json_atomic(out / "report.json", report)
    lines = [f"# Safety test: {meta.get('robot', '?')} ({meta.get('backend', '?')})", "",
             (f"Result: **{result.upper()}** "
             f"({sum(c.passed for c in judged)}/{len(judged)} checks passed"
             + (f"; {len(checks) - len(judged)} threshold(s) not reachable by the probe" if len(judged) < len(checks)
                else "") + ")"), "",
             "| probe | rule | level | response | threshold | tripped at | error (tol.) | latency (tol.) | result |",
             "|---|---|---|---|---|---|---|---|---|"]

    def f(x: float, scale: float = 1.0, digits: int = 4) -> str:
        return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * scale:.{digits}g}"

    for c in checks:
        lines.append(
            f"| {c.probe} | `{c.rule}` | {c.level} | {c.expected_response} | {f(c.threshold)} {c.unit} | "
            f"{f(c.tripped_value)} | {f(c.threshold_error)} ({f(c.threshold_tolerance)}) | "
            f"{f(c.latency, 1e3, 3)} ms ({f(c.latency_tolerance, 1e3, 3)}) | "
            f"{c.status}{'' if c.passed else ': ' + c.detail} |")
    lines += _deadline_miss_lines(meta.get("deadline_misses") or {})
    plots = {c.plot: c for c in checks if c.plot}  # checks sharing one trace show it once
    if plots:
        lines += ["", "## Traces", ""] + [f"![{c.probe}]({plot})" for plot, c in plots.items()]
    lines += ["", ("Threshold error: tripped value − threshold; tolerance = one sensor sample's increment "
              "near the trip. Latency: sensor stamp → first held/stopped `command_safe` received by the "
              "probe (watchdogs: the last message's stamp + deadline → the e-stop decision).")]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return report
