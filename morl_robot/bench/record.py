"""``morl-robot bench record``: what ``--record`` costs a lockstep training session.

The per-step training graph of ``morl-robot train`` (one actor: ``robot_node`` in lockstep →
``policy_server`` → ``safety_monitor``, the learner), measured on the learner's ``/diagnostics``
(env steps it received per second over ``--duration`` s after ``--warmup`` steps), alternately
without and with the ``recorder`` node (:func:`morl_robot.session.graph.observer_specs`),
``--repeats`` pairs.  Prints per run and the medians: env steps/s without and with recording, the
slowdown (goal ≤ 10 %), messages dropped by the recorder (goal 0), the recording's size and rate,
and the CPU time per env step of the recorder and of the rest of the graph (``/proc``: a figure a
shared, loaded host disturbs less than steps/s).
The learner is set as in ``bench train`` (low samples-per-insert: the actors are measured).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from morl_robot.bench.train import TASK, bench_learner_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default=TASK, help="task to train")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds measured per session")
    parser.add_argument("--warmup", type=int, default=300, help="env steps the learner must have before measuring")
    parser.add_argument("--repeats", type=int, default=3, help="pairs of sessions (without, with --record)")
    parser.add_argument("--learner", dest="learner_config", default="mo_mpo_cpu_small", metavar="NAME|PATH",
                        help="learner profile, name under config/learner/ or path")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _cpu(runner: Any) -> dict[str, float]:
    """CPU seconds so far per node process of the session (by executable)."""
    out: dict[str, float] = {}
    for p in runner.group.processes:
        if p.proc is not None:
            out[p.spec.executable] = out.get(p.spec.executable, 0.0) + _cpu_seconds(p.proc.pid)
    return out


def session(task: str, learner: Path, duration: float, warmup: int, work: Path, record: bool) -> dict[str, Any]:
    """One per-step training session: env steps/s, and with ``record`` the recorder's counts."""
    from diagnostic_msgs.msg import DiagnosticArray

    from morl_robot.nodes import wire
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import observer_specs, train_nodes
    from morl_robot.session.runner import SessionRunner

    cfg = load_session_config("train", {
        "task": task, "actors": 1, "actors_kind": "per-step", "namespace": "bench", "total_steps": 0,
        "learner_node": {"config": str(learner), "snapshot_every": 200}})
    out = work / "run"
    specs = observer_specs("/bench", out, record, None) + train_nodes(cfg, out)
    runner = SessionRunner(specs, work / "logs")
    samples: list[tuple[float, float]] = []
    lock = threading.Lock()

    def on_diag(msg: Any) -> None:
        for s in msg.status:
            if "learner" in s.name:
                values = {kv.key: kv.value for kv in s.values}
                with lock:
                    samples.append((time.monotonic(), float(values.get("env_steps", 0) or 0)))

    try:
        runner.start()
        runner.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS, callback=on_diag)
        runner.release_safety(sorted({s.namespace for s in specs if s.executable == "safety_monitor"}))
        runner.probe.wait_for(lambda: bool(samples) and samples[-1][1] >= warmup, 300,
                              f"the learner to receive {warmup} env steps")
        with lock:
            start = len(samples) - 1
        cpu0 = _cpu(runner)
        time.sleep(duration)
        runner.probe.wait_for(lambda: len(samples) > start + 1, 30, "learner diagnostics")
        runner.check_alive()
        cpu1 = _cpu(runner)
        with lock:
            (t0, e0), (t1, e1) = samples[start], samples[-1]
    finally:
        runner.stop()
    steps = max(e1 - e0, 1.0)
    cpu = {k: (cpu1.get(k, 0.0) - v) / steps * 1e3 for k, v in cpu0.items()}  # ms of CPU per env step
    result: dict[str, Any] = {"steps_per_s": (e1 - e0) / max(t1 - t0, 1e-9),
                              "recorder_ms_per_step": cpu.pop("recorder", 0.0),
                              "graph_ms_per_step": sum(cpu.values())}
    if record:
        stats = json.loads((out / "session.recording.json").read_text())
        size = (out / "session.mcap").stat().st_size
        result.update(dropped=stats["dropped"], messages=stats["messages"], bytes=size,
                      mb_per_s=size / 1e6 / max(stats["seconds"], 1e-9))
    return result


def run(args: argparse.Namespace) -> int:
    from morl_robot.errors import UsageError

    if args.repeats < 1 or not args.duration > 0 or args.warmup < 0:
        raise UsageError("--repeats must be >= 1, --duration > 0 and --warmup >= 0")
    work = Path(tempfile.mkdtemp(prefix="bench_record_"))
    learner = bench_learner_config(args.learner_config, 0.1, 256, work / "learner.yaml")
    print(f"bench record: task {args.task}, per-step lockstep training graph (1 actor), {args.duration:g} s per "
          f"session after {args.warmup} env steps, {args.repeats} pair(s) without / with --record; logs in {work}",
          flush=True)
    plain: list[float] = []
    recorded: list[dict[str, Any]] = []
    for r in range(args.repeats):
        a = session(args.task, learner, args.duration, args.warmup, work / f"{r}_plain", False)
        b = session(args.task, learner, args.duration, args.warmup, work / f"{r}_record", True)
        plain.append(a["steps_per_s"])
        recorded.append(b)
        print(f"  pair {r}: env steps/s {a['steps_per_s']:7.1f} without, {b['steps_per_s']:7.1f} with --record; "
              f"{b['messages']} messages, {b['dropped']} dropped, {b['mb_per_s']:.2f} MB/s; CPU per env step: "
              f"graph {a['graph_ms_per_step']:.2f} ms without, {b['graph_ms_per_step']:.2f} ms with, recorder "
              f"{b['recorder_ms_per_step']:.2f} ms", flush=True)
    p = statistics.median(plain)
    w = statistics.median(b["steps_per_s"] for b in recorded)
    print(f"median env steps/s: {p:.1f} without --record, {w:.1f} with (slowdown {100 * (1 - w / p):.1f} %, "
          "goal <= 10 %)" if p > 0 else "median env steps/s: 0 without --record")
    rec = statistics.median(b["recorder_ms_per_step"] for b in recorded)
    graph = statistics.median(b["graph_ms_per_step"] for b in recorded)
    print(f"median CPU per env step: recorder {rec:.2f} ms, the rest of the graph {graph:.2f} ms "
          f"(the recorder adds {100 * rec / graph:.1f} %)" if graph > 0 else "no CPU figures (no /proc)")
    print(f"recorder drops: {sum(b['dropped'] for b in recorded)} (goal 0); recording "
          f"{statistics.median(b['mb_per_s'] for b in recorded):.2f} MB/s")
    return 0
