"""``morl-robot bench preference-live --policy P --out DIR``: turn an ε-conditioned policy's force
preference live, mid-insertion, and record the wrist-force traces that show the change.

The deploy graph (``config/sessions/deploy.yaml``, as ``morl-robot deploy`` starts it: robot node
and policy server in real time on the simulated robot, the safety monitor with its watchdogs) serves
the policy; the monitor is released once its checks pass.  For every episode (seeds S, S+1, …: the
robot node's ``seed`` parameter is set and ``reset_world`` restarts its seed sequence there) three
runs are recorded on the same seed:

* **switched** — served under ``--before``; ``--switch-after`` s into the episode the preference is
  changed live (the policy server's ``preference`` parameter, or its ``preference`` topic with
  ``--via topic``), and the episode goes on under ``--after``;
* **before only** / **after only** — the same seed under one preference throughout (the controls).

Per control step (each ``wrench`` sample the robot publishes) the record has the time since the
episode started, the wrist force ‖F‖ (N; tared at the episode's start as the task tares it, and raw),
the command on ``command_safe`` and the preference in effect (from the time the change was
accepted).  ``DIR/preference_live.json`` has per episode the seed, the switch time, the three traces,
mean/peak force before and after the switch (the controls split at the same time), whether the
peg went in (the ``episode`` end event), the e-stops, and the policy server's ``preference_changes``
(``/diagnostics``); ``DIR/preference_live.png`` plots force against time, one panel per episode.

Defaults: ``--before`` is the box's end that weighs force least (ε of the force objective at its
low end), ``--after`` the end that weighs it most (its high end); the other objectives stay at the
box's geometric centre, so only the force knob turns.  ``--switch-after`` defaults to half the
task's episode.

Everything but :func:`run` is plain Python (checks, traces, summaries, the table, the figure).
"""
from __future__ import annotations

import argparse
import bisect
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.cli.options import add_policy, add_set
from morl_robot.errors import UsageError

CONDITIONS = ("switched", "before", "after")
#: A wrench sample this close (s, probe receipt time) to the episode's start event is the reset
#: state's reading: the tare, as the task tares its F/T sensor at the start of the episode.
TARE_WINDOW_S = 0.025
#: how far (s) from the start event the reset reading named by the event's ``force`` is looked for
RESET_SEARCH_S = 1.0
TIME_DECIMALS = 4  # trace, switch and end times: seconds since the episode start, to 0.1 ms


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_policy(parser, "ε-conditioned ONNX policy of a robot with a wrist F/T sensor", required=True)
    parser.add_argument("--out", required=True, help="folder for preference_live.json, preference_live.png, node logs")
    parser.add_argument("--before", type=float, nargs="+", default=None, metavar="EPS",
                        help="preference before the switch, one ε per objective (default: the force objective at "
                             "the low end of its range, the others at the box's centre)")
    parser.add_argument("--after", type=float, nargs="+", default=None, metavar="EPS",
                        help="preference after the switch (default: the force objective at its high end)")
    parser.add_argument("--switch-after", type=float, default=None, metavar="SECONDS",
                        help="seconds into each episode to change the preference (default: half the episode)")
    parser.add_argument("--episodes", type=int, default=3, help="episodes (seeds SEED, SEED+1, …; default 3)")
    parser.add_argument("--seed", type=int, default=0, help="first episode's seed (default 0)")
    parser.add_argument("--via", choices=("parameter", "topic"), default="parameter",
                        help="change the preference through the policy server's parameter (default) or topic")
    parser.add_argument("--max-seconds", type=float, default=0.0,
                        help="cut each run after this many seconds (default 0: the whole episode)")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: random)")
    add_set(parser, ("session", "robot", "safety", "task"))


# --- checks and defaults (no ROS) ----------------------------------------------------------------
def force_objective(contract: Any) -> str:
    """The objective the wrist force is scored by (its name contains ``force``); :class:`UsageError`
    if the policy cannot be used here: its robot has no wrist wrench sensor, it is not
    ε-conditioned, or no (or more than one) objective is about force."""
    from morl_robot.robots.config import load_robot_config

    if load_robot_config(contract.robot).wrench is None:
        raise UsageError(f"--policy: the policy is for robot '{contract.robot}' (task {contract.task}), which has no "
                         "wrist wrench sensor (no 'wrench' topic): preference-live records the wrist force of a "
                         "Sawyer policy")
    if contract.preferences is None:
        raise UsageError(f"--policy: the policy (task {contract.task}) is not preference-conditioned (its contract "
                         "lists no preference inputs): train it with 'preferences:' in the learner config")
    names = [n for n in contract.preferences.names if "force" in n]
    if len(names) != 1:
        raise UsageError(f"--policy: expected one force objective among {contract.preferences.names}, found {names}")
    return names[0]


def resolve_preferences(preferences: Any, force: str, before: Sequence[float] | None,
                        after: Sequence[float] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(before, after)`` as ``[K]`` arrays, checked against the box (:class:`UsageError` naming the
    option and the objective); defaults: the centre with ``force`` at its low / high end."""
    from morl_robot.serving.contract import PreferenceError

    k = list(preferences.names).index(force)
    ends = []
    for given, end, option in ((before, preferences.low, "--before"), (after, preferences.high, "--after")):
        if given is None:
            eps = preferences.centre.copy()
            eps[k] = end[k]
            ends.append(eps)
            continue
        try:
            ends.append(preferences.check(given, option))
        except PreferenceError as exc:
            raise UsageError(str(exc)) from None
    if np.allclose(ends[0], ends[1], rtol=1e-9, atol=0.0):
        raise UsageError(f"--before and --after are the same preference ({preferences.describe(ends[0])}); the range of "
                         f"'{force}' is {preferences.ranges[k]}: give two different preferences")
    return ends[0], ends[1]


# --- traces and summaries (no ROS) ---------------------------------------------------------------
def relative_time(t: float, t0: float) -> float:
    """``t`` in seconds since ``t0``, rounded to :data:`TIME_DECIMALS` places: the one clock of a
    run's trace and its switch and end times."""
    return round(t - t0, TIME_DECIMALS)


def build_trace(t0: float, t_end: float, wrench: Sequence[tuple[float, Sequence[float]]],
                commands: Sequence[tuple[float, Sequence[float]]],
                preferences: Sequence[tuple[float, Sequence[float]]],
                reset_force: Sequence[float] | None = None) -> dict[str, list]:
    """One run's per-control-step record from what the probe received (receipt times, s).

    ``wrench``: ``(t, force xyz)`` in time order.  With ``reset_force`` (the start event's copy of
    the reset state's force) the first row and tare is the last sample within :data:`RESET_SEARCH_S`
    of ``t0`` equal to it at or before ``t0`` (the reset state is published more than once: during the
    reset and again as step 0), else the first such sample after ``t0``.  Without one, it is the
    sample nearest ``t0`` within :data:`TARE_WINDOW_S` (the reset reading, published just before the
    start event).  The samples after it up to ``t_end`` follow (earlier ones are the previous
    episode's).  Without either, the rows are the samples in ``[t0, t_end]`` and the first of them is
    the tare.  ``commands``: ``(t, command)`` from ``command_safe``,
    time order; each row gets the newest one received by then (None before the first one of the
    run).  ``preferences``: ``(t, ε)`` in time order, from the moment each was accepted; each row gets
    the one in effect (the first applies to anything earlier).  Times in the trace are relative to ``t0``
    and rounded to :data:`TIME_DECIMALS` places, as the report's switch times are; the preference in
    effect is decided on that rounded clock, so a row recorded at the reported switch time carries the
    new preference (a reading within 0.05 ms before the acceptance once got the old one and an equal
    time)."""
    trace: dict[str, list] = {"t": [], "force_N": [], "force_raw_N": [], "command": [], "preference": []}
    # the robot's start event carries the reset state's force (``reset_force``): the sample equal to it
    # is the reset reading however late or early it was received (a loaded machine once delivered it
    # more than the window before the event, and the trace began a step late)
    same = [(t, f) for t, f in wrench if reset_force is not None and abs(t - t0) <= RESET_SEARCH_S
            and tuple(map(float, f)) == tuple(map(float, reset_force))]
    if same:  # the reset state is republished (reset progress, step 0 again): the last copy before the event
        start = max((t for t, _ in same if t <= t0), default=same[0][0])
    else:
        window = [(t, f) for t, f in wrench if abs(t - t0) <= TARE_WINDOW_S]
        start = min(window, key=lambda r: abs(r[0] - t0))[0] if window else t0
    rows = [(t, np.asarray(f, float)) for t, f in wrench if start <= t <= t_end]
    if not rows:
        return trace
    tare = rows[0][1]
    command_times = [t for t, _ in commands]
    pref_times = [relative_time(t, t0) for t, _ in preferences]
    for t, f in rows:
        i = bisect.bisect_right(command_times, t) - 1
        command = [float(x) for x in commands[i][1]] if i >= 0 and command_times[i] >= t0 - TARE_WINDOW_S else None
        rel = relative_time(t, t0)
        j = max(0, bisect.bisect_right(pref_times, rel) - 1)
        trace["t"].append(rel)
        trace["force_N"].append(float(np.linalg.norm(f - tare)))
        trace["force_raw_N"].append(float(np.linalg.norm(f)))
        trace["command"].append(command)
        trace["preference"].append([float(x) for x in preferences[j][1]] if preferences else None)
    return trace


def _stats(values: np.ndarray) -> tuple[float | None, float | None]:
    return (float(values.mean()), float(values.max())) if values.size else (None, None)


def summarise(trace: Mapping[str, Sequence[Any]], split_s: float | None) -> dict[str, Any]:
    """Mean and peak force (``force_N``) before and after ``split_s`` (s since the episode's start;
    None: the whole trace counts as before), and the sample counts."""
    t = np.asarray(trace["t"], float)
    f = np.asarray(trace["force_N"], float)
    after = t >= split_s if split_s is not None else np.zeros(t.shape, bool)
    mean_b, peak_b = _stats(f[~after])
    mean_a, peak_a = _stats(f[after])
    return {"mean_before_switch": mean_b, "peak_before_switch": peak_b, "samples_before_switch": int((~after).sum()),
            "mean_after_switch": mean_a, "peak_after_switch": peak_a, "samples_after_switch": int(after.sum())}


def episode_record(seed: int, runs: Mapping[str, dict[str, Any]], switch_after: float) -> dict[str, Any]:
    """One episode of the report: the three runs (``switched``, ``before``, ``after``), each with its
    force summary split at the switched run's accepted switch time (the nominal ``switch_after``
    when the episode ended before the switch)."""
    switched = runs["switched"]
    switch_s = switched.get("switch_accepted_s")
    split = switch_s if switch_s is not None else switch_after
    out: dict[str, Any] = {"seed": seed, "switch_s": switch_s, "split_s": split}
    for name in CONDITIONS:
        run = dict(runs[name])
        run["force"] = summarise(run["trace"], split)
        out[name] = run
    out["pre_switch_difference_N"] = pre_switch_difference(runs["switched"]["trace"], runs["before"]["trace"], split)
    return out


def pre_switch_difference(switched: Mapping[str, Sequence[Any]], control: Mapping[str, Sequence[Any]],
                          split_s: float) -> float | None:
    """Mean |‖F‖ switched − ‖F‖ before-only| (N) before ``split_s``, the control interpolated onto the
    switched run's times: both act under the same preference on the same seed until then, so this is
    what real-time timing alone makes the same episode differ by (the figure's noise floor)."""
    t, f = np.asarray(switched["t"], float), np.asarray(switched["force_N"], float)
    tc, fc = np.asarray(control["t"], float), np.asarray(control["force_N"], float)
    keep = (t < split_s) & (t <= tc.max()) if tc.size else np.zeros(t.shape, bool)
    if not keep.any():
        return None
    return float(np.abs(f[keep] - np.interp(t[keep], tc, fc)).mean())


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(vals)) if vals else None


def overall(episodes: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per run kind, the mean over episodes of mean/peak force before and after the switch."""
    keys = ("mean_before_switch", "mean_after_switch", "peak_before_switch", "peak_after_switch")
    return {c: {k: _mean([e[c]["force"][k] for e in episodes]) for k in keys} for c in CONDITIONS}


def _num(x: float | None, width: int = 9) -> str:
    return f"{x:{width}.2f}" if x is not None else f"{'-':>{width}s}"


def _inserted(run: Mapping[str, Any]) -> str:
    success = run.get("success")
    return "?" if success is None else ("yes" if success else "no")


def format_table(report: Mapping[str, Any]) -> str:
    """The summary: per episode (and the mean over episodes) the mean tared force before and after
    the switch in the switched run against the before-only and after-only runs; inserted or not."""
    head = (f"{'seed':>5s} {'switch s':>8s} | {'mean ‖F‖ (N) before the switch':^31s} | "
            f"{'mean ‖F‖ (N) after the switch':^31s} | inserted")
    sub = f"{'':5s} {'':8s} | {'switched':>9s} {'before':>10s} {'after':>10s} | {'switched':>9s} {'before':>10s} " \
          f"{'after':>10s} | sw/b/a"
    lines = [head, sub, "-" * len(sub)]
    for e in report["episodes"]:
        sw = e["switch_s"]
        lines.append(
            f"{e['seed']:5d} {(f'{sw:.2f}' if sw is not None else 'none'):>8s} | "
            f"{_num(e['switched']['force']['mean_before_switch'])} {_num(e['before']['force']['mean_before_switch'], 10)} "
            f"{_num(e['after']['force']['mean_before_switch'], 10)} | "
            f"{_num(e['switched']['force']['mean_after_switch'])} {_num(e['before']['force']['mean_after_switch'], 10)} "
            f"{_num(e['after']['force']['mean_after_switch'], 10)} | "
            + "/".join(_inserted(e[c]) for c in CONDITIONS))
    if len(report["episodes"]) > 1:
        m = overall(report["episodes"])
        lines.append("-" * len(sub))
        lines.append(f"{'mean':>5s} {'':8s} | {_num(m['switched']['mean_before_switch'])} "
                     f"{_num(m['before']['mean_before_switch'], 10)} {_num(m['after']['mean_before_switch'], 10)} | "
                     f"{_num(m['switched']['mean_after_switch'])} {_num(m['before']['mean_after_switch'], 10)} "
                     f"{_num(m['after']['mean_after_switch'], 10)} |")
    return "\n".join(lines)


def plot(report: Mapping[str, Any], path: str | Path) -> Path:
    """``preference_live.png``: force against time, one panel per episode (see
    :func:`morl_robot.evaluation.plots.plot_switched_force_traces`)."""
    from morl_robot.evaluation.plots import plot_switched_force_traces

    force = report["force_objective"]
    k = list(report["objectives"]).index(force)
    b, a = report["before"][k], report["after"][k]
    panels = []
    for e in report["episodes"]:
        def tf(run: Mapping[str, Any]) -> tuple[list[float], list[float]]:
            return run["trace"]["t"], run["trace"]["force_N"]

        sw = e["switch_s"]
        panels.append({
            "title": f"seed {e['seed']}" + (f", switched at {sw:.2f} s" if sw is not None else ", ended before the switch"),
            "switch_s": sw,
            "switched": (f"switched ε_{force} {b:g} → {a:g}", tf(e["switched"])),
            "controls": {f"ε_{force} {b:g} only": tf(e["before"]), f"ε_{force} {a:g} only": tf(e["after"])},
        })
    return plot_switched_force_traces(
        panels, path, threshold=report.get("force_threshold_N"),
        title=f"{Path(report['policy']).name}: ε_{force} changed live (force tared at the episode's start)")


# --- the live graph ------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    from morl_robot.serving.runtime import OnnxPolicy
    from morl_robot.tasks.registry import load_task

    policy_path = Path(args.policy).resolve()
    if not policy_path.is_file():
        raise UsageError(f"--policy: no such file {policy_path}")
    contract = OnnxPolicy.from_file(policy_path).contract
    force = force_objective(contract)
    before, after = resolve_preferences(contract.preferences, force, args.before, args.after)
    task = load_task(contract.task)
    duration = float(task.config.episode_duration)
    switch_after = duration / 2 if args.switch_after is None else float(args.switch_after)
    if not 0 < switch_after < duration:
        raise UsageError(f"--switch-after must be in (0, {duration:g}) s (the task's episode lasts {duration:g} s), "
                         f"got {switch_after:g}")
    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    if args.max_seconds < 0 or (args.max_seconds and args.max_seconds <= switch_after):
        raise UsageError(f"--max-seconds must be 0 (whole episodes) or more than --switch-after ({switch_after:g} s), "
                         f"got {args.max_seconds:g}")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "policy": str(policy_path), "task": contract.task, "robot": contract.robot,
        "objectives": list(contract.preferences.names), "force_objective": force,
        "preference_ranges": contract.preferences.ranges,
        "before": [float(x) for x in before], "after": [float(x) for x in after], "via": args.via,
        "switch_after_s": switch_after, "max_seconds": args.max_seconds or None, "episodes_requested": args.episodes,
        "seed": args.seed, "command_labels": list(contract.action_labels),
        "force_threshold_N": float(getattr(task.config, "force_threshold", 0.0)) or None,
        "force": "‖F‖ of the wrench topic's force, tared at the episode's start (force_N, as the task tares it) "
                 "and raw (force_raw_N); t: s since the episode's start event (probe receipt times)",
        "episodes": [],
    }
    from morl_robot.evaluation.provenance import write_results_json

    finished = _run_graph(args, contract, before, after, switch_after, out, report)
    write_results_json(out / "preference_live.json", report)
    if report["episodes"]:
        plot(report, out / "preference_live.png")
    print(format_table(report))
    gaps = [e["pre_switch_difference_N"] for e in report["episodes"] if e["pre_switch_difference_N"] is not None]
    if gaps:
        print(f"before the switch the switched and before-only runs (same seed, same preference) differ by "
              f"{np.mean(gaps):.2f} N on average: real-time timing alone (the noise floor of this comparison)")
    print(f"report {out / 'preference_live.json'}, figure {out / 'preference_live.png'}")
    return 0 if finished else 130


class _Recorder:
    """What the probe receives, with receipt times (monotonic s)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.wrench: list[tuple[float, tuple[float, float, float]]] = []
        self.commands: list[tuple[float, np.ndarray]] = []
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.violations: list[tuple[float, str]] = []
        self.estop = True
        self.estop_times: list[float] = []

    def clear(self) -> None:
        with self.lock:
            self.wrench, self.commands, self.violations, self.estop_times = [], [], [], []

    def on_wrench(self, msg: Any) -> None:
        f = msg.wrench.force
        with self.lock:
            self.wrench.append((time.monotonic(), (f.x, f.y, f.z)))

    def on_command(self, msg: Any) -> None:
        from morl_robot.nodes import wire

        values = wire.split_command(*wire.read_labelled(msg)).values
        with self.lock:
            self.commands.append((time.monotonic(), values))

    def on_event(self, msg: Any) -> None:
        import json

        with self.lock:
            self.events.append((time.monotonic(), json.loads(msg.data)))

    def on_estop(self, msg: Any) -> None:
        with self.lock:
            self.estop = bool(msg.data)
            if self.estop:
                self.estop_times.append(time.monotonic())

    def on_violation(self, msg: Any) -> None:
        with self.lock:
            self.violations.append((time.monotonic(), msg.name))

    def event(self, kind: str, episode: int) -> tuple[float, dict[str, Any]] | None:
        with self.lock:
            return next(((t, e) for t, e in self.events if e.get("event") == kind and int(e["episode"]) == episode),
                        None)


def _policy_statuses(probe: Any, start: float, end: float) -> list[tuple[float, dict[str, str]]]:
    """The policy server's ``/diagnostics`` values received in ``[start, end]``."""
    out = []
    for t, msg in list(probe.received.get("/diagnostics", [])):
        if start <= t <= end:
            for status in msg.status:
                if "policy" in status.name:
                    out.append((t, {kv.key: kv.value for kv in status.values}))
    return out


def _run_graph(args: argparse.Namespace, contract: Any, before: np.ndarray, after: np.ndarray, switch_after: float,
               out: Path, report: dict[str, Any]) -> bool:
    """Start the deploy graph, record the runs into ``report['episodes']``; False if interrupted."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import WrenchStamped
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, SetParameters
    from std_msgs.msg import Bool, Float64MultiArray, String
    from std_srvs.srv import Trigger

    from morl_robot.nodes import wire
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import deploy_nodes
    from morl_robot.session.runner import SessionRunner, release_estop

    prefs = contract.preferences
    overrides: dict[str, Any] = {
        "task": contract.task, "robot": contract.robot, "backend": "sim", "policy": report["policy"],
        "seed": args.seed, "robot_node": {"timing": "realtime"},
        "policy_server": {"timing": "realtime", "preference": [float(x) for x in before]}}
    cfg = load_session_config("deploy", overrides)
    ns = "/" + cfg.namespace.strip("/")
    runner = SessionRunner(deploy_nodes(cfg), out / "logs", args.domain_id)
    rec = _Recorder()
    print(f"preference-live: {Path(report['policy']).name} on {contract.task} (sim, real time), "
          f"{prefs.describe(before)} -> {prefs.describe(after)} at {switch_after:g} s via the {args.via}, "
          f"{args.episodes} episode(s) from seed {args.seed}; ROS_DOMAIN_ID={runner.domain_id}", file=sys.stderr)

    def param(name: str, value: Any) -> Parameter:
        if isinstance(value, (list, np.ndarray)):
            v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=[float(x) for x in value])
        else:
            v = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=int(value))
        return Parameter(name=name, value=v)

    try:
        runner.start()
        p = runner.probe
        p.diagnostics()
        p.subscribe(f"{ns}/wrench", WrenchStamped, wire.SENSOR_QOS, callback=rec.on_wrench)
        p.subscribe(f"{ns}/command_safe", Float64MultiArray, wire.COMMAND_QOS, callback=rec.on_command)
        p.subscribe(f"{ns}/episode", String, wire.EVENT_QOS, callback=rec.on_event)
        p.subscribe(f"{ns}/safety/estop", Bool, wire.LATCHED_QOS, callback=rec.on_estop)
        p.subscribe(f"{ns}/safety/violations", DiagnosticStatus, wire.EVENT_QOS, callback=rec.on_violation)
        topic = p.publisher(f"{ns}/preference", Float64MultiArray, wire.COMMAND_QOS)
        runner.release_safety([ns])
        if args.via == "topic":
            p.wait_for_subscribers(topic)

        def set_params(node: str, *params: Parameter) -> None:
            for result in p.call(f"{ns}/{node}/set_parameters", SetParameters,
                                 SetParameters.Request(parameters=list(params)), timeout=10.0).results:
                if not result.successful:
                    raise UsageError(f"{node} refused a parameter: {result.reason}")

        def served_preference() -> np.ndarray:
            reply = p.call(f"{ns}/policy_server/get_parameters", GetParameters,
                           GetParameters.Request(names=["preference"]), timeout=10.0)
            return np.asarray(reply.values[0].double_array_value, float)

        def switch() -> float:
            """Change to ``after`` through the chosen channel; returns when it was accepted."""
            if args.via == "parameter":
                set_params("policy_server", param("preference", after))
                return time.monotonic()
            topic.publish(wire.labelled_array(np.asarray(after, float), list(prefs.names)))
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:  # the parameter follows an accepted message
                runner.check_alive()
                if np.allclose(served_preference(), after, rtol=1e-9):
                    return time.monotonic()
                time.sleep(0.005)
            raise UsageError("the policy server did not take the preference message within 5 s; see its log "
                             f"{runner.process('policy_server').log_path}")

        def changes_after(t: float, timeout: float = 5.0) -> int | None:
            """The server's preference_changes in its first status received after ``t``."""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                statuses = _policy_statuses(p, t, math.inf)
                if statuses:
                    return int(statuses[0][1].get("preference_changes", -1))
                time.sleep(0.05)
            return None

        count = changes_after(time.monotonic())
        for i in range(args.episodes):
            seed = args.seed + i
            runs: dict[str, dict[str, Any]] = {}
            for condition in CONDITIONS:
                runs[condition], count = _one_run(
                    condition, seed, before if condition != "after" else after, after, switch_after, args, rec, p, ns,
                    runner, set_params, param, switch, changes_after, count, release_estop, Trigger, prefs)
                if runs[condition].get("interrupted"):
                    return False
            episode = episode_record(seed, runs, switch_after)
            report["episodes"].append(episode)
            s = episode["switched"]
            print(f"episode {i + 1}/{args.episodes} (seed {seed}): switch at "
                  f"{'-' if episode['switch_s'] is None else format(episode['switch_s'], '.2f')} s; mean ‖F‖ "
                  f"before/after the switch {_num(s['force']['mean_before_switch'], 0)}/"
                  f"{_num(s['force']['mean_after_switch'], 0)} N (before only "
                  f"{_num(episode['before']['force']['mean_after_switch'], 0)}, after only "
                  f"{_num(episode['after']['force']['mean_after_switch'], 0)} N after the switch time)", file=sys.stderr)
            if episode["switch_s"] is None:
                print(f"  the episode ended ({s['termination']}) at {s['duration_s']:.2f} s, before the switch at "
                      f"{switch_after:g} s: nothing changed live; a smaller --switch-after switches earlier",
                      file=sys.stderr)
        report["policy_server"] = p.diagnostics("policy")
        report["safety_monitor"] = p.diagnostics("safety")
    finally:
        runner.stop()
    return True


def _one_run(condition: str, seed: int, start: np.ndarray, after: np.ndarray, switch_after: float,
             args: argparse.Namespace, rec: _Recorder, p: Any, ns: str, runner: Any, set_params: Any, param: Any,
             switch: Any, changes_after: Any, count: int | None, release_estop: Any, trigger: Any,
             prefs: Any) -> tuple[dict[str, Any], int | None]:
    """One episode on ``seed`` under ``start`` (switched: then ``after``); the run's record and the
    server's preference_changes count after it."""
    if rec.estop:  # the last run ended in an e-stop: a fresh episode clears the contact, then release
        p.call(f"{ns}/robot_node/reset_world", trigger, timeout=30.0)
        release_estop(p, ns, 30.0, runner.check_alive)
    set_params("robot_node", param("seed", seed))  # reset_world restarts the seed sequence here
    set_params("policy_server", param("preference", start))
    t_set = time.monotonic()
    expected_start = None if count is None else count + 1
    rec.clear()
    reply = p.call(f"{ns}/robot_node/reset_world", trigger, timeout=30.0)
    t_reply = time.monotonic()
    if not reply.success:
        raise UsageError(f"the robot node refused reset_world: {reply.message}")
    episode = int(reply.message.split()[1])  # "episode N started"
    p.wait_for(lambda: rec.event("start", episode) is not None, 5.0, f"the start event of episode {episode}")
    started = rec.event("start", episode)
    t0 = started[0] if started is not None else t_reply
    timeline: list[tuple[float, np.ndarray]] = [(t_set, start)]
    state: dict[str, Any] = {"requested": None, "accepted": None, "end": None}

    def tick() -> None:
        now = time.monotonic()
        if condition == "switched" and state["requested"] is None and now - t0 >= switch_after:
            state["requested"] = now
            state["accepted"] = switch()
            timeline.append((state["accepted"], after))

    def done() -> bool:
        ended = rec.event("end", episode)
        if ended is not None:
            state["end"] = ended
            return True
        return bool(args.max_seconds) and time.monotonic() - t0 >= args.max_seconds

    finished = runner.wait(done, tick, period=0.005)
    t_end = state["end"][0] if state["end"] is not None else time.monotonic()
    if not finished:
        return {"interrupted": True}, count
    end = state["end"][1] if state["end"] is not None else {}
    with rec.lock:
        wrench, commands = list(rec.wrench), list(rec.commands)
        violations = sorted({name for t, name in rec.violations if t0 <= t <= t_end})
        estop = any(t0 <= t <= t_end for t in rec.estop_times)
    new_count = changes_after(t_end)
    diag = [(round(t - t0, 3), {n: float(v[f"preference/{n}"]) for n in prefs.names if f"preference/{n}" in v})
            for t, v in _policy_statuses(p, t0, t_end)]
    record = {
        "condition": condition, "seed": seed, "robot_episode": episode,
        "preference_start": [float(x) for x in start],
        "preference_end": [float(x) for x in (after if state["accepted"] is not None else start)],
        "switch_requested_s": None if state["requested"] is None else relative_time(state["requested"], t0),
        "switch_accepted_s": None if state["accepted"] is None else relative_time(state["accepted"], t0),
        "duration_s": relative_time(t_end, t0),
        "termination": end.get("termination", "cut (--max-seconds)"), "success": end.get("success"),
        "returns": end.get("returns"), "estop": estop, "violations": violations,
        "preference_changes": new_count,
        "preference_changes_in_episode": None if new_count is None or expected_start is None
        else new_count - expected_start,
        "preference_diagnostics": diag,
        "trace": build_trace(t0, t_end, wrench, commands, timeline,
                             started[1].get("force") if started is not None else None),
    }
    return record, new_count
