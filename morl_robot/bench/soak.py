"""``morl-robot bench soak --minutes N [--seed S]``: a deploy session under a randomised fault schedule.

The deploy graph (``config/sessions/deploy.yaml``) serves a policy on the simulated robot while a
seeded schedule injects faults through the live graph, one at a time, ``--gap`` s apart
(``sensor_dropout``, ``nan_burst``, ``latency_spike``, ``command_flood``, ``node_restart``), after
``second_session`` and ``refused_resume`` once.  What each fault expects, how false trips are told
from overrun ones and a measured run: docs/explanation/reliability.md ("Soak test").
"""
from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.cli.options import add_policy, add_set

FAULTS = ("sensor_dropout", "nan_burst", "latency_spike", "command_flood", "node_restart")
#: Faults injected once per soak, before the schedule.
ONCE = ("second_session", "refused_resume")
EXPECTED = {"sensor_dropout": "stale.", "nan_burst": "wrench.non_finite", "command_flood": "command.rate",
            "node_restart": "stale.heartbeat", "latency_spike": None}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minutes", type=float, default=5.0, help="soak duration (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="fault schedule seed")
    add_policy(parser, "ONNX policy to serve (default: a freshly initialised Sawyer peg-in-hole policy)")
    parser.add_argument("--gap", type=float, default=3.0, help="seconds between faults (default 3)")
    parser.add_argument("--out", default="runs/soak", help="report and node logs (default runs/soak)")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: random)")
    add_set(parser, ("session", "robot", "safety", "task"))


def _fresh_policy(path: Path) -> Path:
    """A freshly initialised Sawyer peg-in-hole policy (the soak tests the graph, not the policy)."""
    import torch

    from morl_robot.envs.mo_env import make_sim_robot
    from morl_robot.learning.networks import GaussianPolicy
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy
    from morl_robot.tasks.registry import load_task

    task = load_task("sawyer_peg_in_hole")
    robot = make_sim_robot(task)
    try:
        contract = contract_for_task(task, robot, policy_version=1, run_id="soak")
    finally:
        robot.close()
    torch.manual_seed(0)
    policy = GaussianPolicy(len(contract.observation_labels), len(contract.action_labels), (64, 64))
    export_policy(policy, contract, path)
    return path


class _Watch:
    """Probe-side bookkeeping: the e-stop state, violation events, commands reaching the robot."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.estop = True
        self.frozen = False
        self.events: list[tuple[float, dict[str, str]]] = []  # (receipt time, values)
        self.unsafe_commands = 0
        self.safe: list[tuple[float, np.ndarray]] = []
        self.arrivals: dict[str, list[float]] = {}  # stream -> probe receipt times

    def on_sensor(self, stream: str) -> Any:
        def callback(_msg: Any) -> None:
            with self.lock:
                self.arrivals.setdefault(stream, []).append(time.time())
        return callback

    def largest_gap(self, stream: str, start: float, end: float) -> float:
        """The longest interval without a ``stream`` sample the probe saw, over [start, end] (s)."""
        with self.lock:
            times = [t for t in self.arrivals.get(stream, []) if start <= t <= end]
            before = [t for t in self.arrivals.get(stream, []) if t < start]
        if before:
            times.insert(0, before[-1])
        return max((b - a for a, b in pairwise(times)), default=end - start)

    def on_estop(self, msg: Any) -> None:
        """The session's e-stop state; not while :attr:`frozen` (a second session that gives way
        may have published its own start-up state on the same latched topic before it heard this
        one: the state is read afresh once it is gone)."""
        with self.lock:
            if not self.frozen:
                self.estop = bool(msg.data)

    def on_event(self, msg: Any) -> None:
        with self.lock:
            self.events.append((time.time(), {kv.key: kv.value for kv in msg.values} | {"name": msg.name}))

    def on_safe(self, msg: Any) -> None:
        from morl_robot.nodes import wire

        values = wire.split_command(*wire.read_labelled(msg)).values
        with self.lock:
            self.safe.append((time.time(), values))
            if self.estop and np.any(np.abs(values) > 1e-9):
                self.unsafe_commands += 1

    def first_event(self, prefix: str, after: float) -> dict[str, str] | None:
        with self.lock:
            for t, e in self.events:
                if t >= after and e.get("rule", e["name"]).startswith(prefix):
                    return e
        return None

    def estop_events(self, after: float) -> list[dict[str, str]]:
        with self.lock:
            return [e for t, e in self.events if t >= after and e.get("response") == "estop"]


def _second_session(specs: list[Any], env: dict[str, str], log_dir: Path, running: str, watch: _Watch,
                    timeout: float = 60.0) -> dict[str, Any]:
    """Start another deploy session's nodes on the running session's names; they must all give way
    (exit status 2 naming ``running``) and the running monitor must not trip."""
    from morl_robot.session.processes import ProcessGroup

    group = ProcessGroup(env, log_dir)
    t0 = time.time()
    for spec in specs:
        group.start(spec)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.alive for p in group.processes):
        time.sleep(0.05)
    took = time.time() - t0
    codes = group.stop(10.0)
    named = all(f"already used by session {running}" in p.log_text() for p in group.processes)
    trips = watch.estop_events(t0)
    # The intruder's nodes publish nothing but their announcement before giving way, so what it could
    # do to this session is a reading or a command of its own (a wrench, joint or command rule).
    # Starting three node processes loads the host, though: a stale-stream stop is the host's
    # scheduling (its cause is in the monitor's violation), counted apart.
    host = [e for e in trips if e.get("rule", "").startswith("stale.")]
    return {"fault": "second_session", "injected_at": t0, "detected": named and all(c == 2 for c in codes.values()),
            "rule": "session", "time_to_detect_s": took, "exit_codes": sorted({int(c or 0) for c in codes.values()}),
            "trip_rules": sorted({e.get("rule", e["name"]) for e in trips}), "host_trips": len(host),
            "false_trip": len(host) < len(trips)}


def _refused_resume(out: Path) -> dict[str, Any]:
    """:func:`~morl_robot.bench.faults_resume.refused_resume_check` as a soak record."""
    import shutil

    from morl_robot.bench.faults_resume import refused_resume_check

    t0 = time.time()
    work = out / "refused_resume"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    result = refused_resume_check(work)
    return {"fault": "refused_resume", "injected_at": t0, "detected": bool(result["ok"]), "rule": "preflight",
            "time_to_detect_s": time.time() - t0, "check": result}


def _percentile_ms(values: list[float], q: float) -> float:
    return float(np.percentile(values, q) * 1e3) if values else math.nan


def run(args: argparse.Namespace) -> int:
    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Float64MultiArray
    from std_srvs.srv import SetBool, Trigger

    from morl_robot.errors import UsageError
    from morl_robot.evaluation.provenance import write_results_json
    from morl_robot.nodes import wire
    from morl_robot.serving.runtime import OnnxPolicy
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import deploy_nodes, session_of
    from morl_robot.session.runner import SessionRunner

    if args.minutes <= 0 or args.gap <= 0:
        raise UsageError("--minutes and --gap must be > 0")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    policy = Path(args.policy) if args.policy else _fresh_policy(out / "soak_policy.onnx")
    contract = OnnxPolicy.from_file(policy).contract
    cfg = load_session_config("deploy", {"task": contract.task, "robot": contract.robot, "backend": "sim",
                                         "policy": str(policy), "namespace": "soak", "seed": args.seed})
    ns = "/" + cfg.namespace.strip("/")
    specs = deploy_nodes(cfg)
    server_spec = next(s for s in specs if s.executable == "policy_server")
    token = wire.session_token(session_of(specs))  # the flood comes from inside the session (the policy's)
    runner = SessionRunner(specs, out / "logs", args.domain_id)
    watch = _Watch()
    rng = np.random.default_rng(args.seed)
    records: list[dict[str, Any]] = []
    print(f"soak: {args.minutes:g} min of faults every {args.gap:g} s on {contract.task} (sim, real time); "
          f"ROS_DOMAIN_ID={runner.domain_id}", file=sys.stderr)
    try:
        runner.start()
        p = runner.probe
        estop_sub = [p.node.create_subscription(Bool, f"{ns}/safety/estop", watch.on_estop, wire.LATCHED_QOS)]

        def resync_estop() -> None:
            """A fresh subscription: the latched e-stop state of the live monitor(s) alone."""
            p.node.destroy_subscription(estop_sub[0])
            watch.frozen = False
            estop_sub[0] = p.node.create_subscription(Bool, f"{ns}/safety/estop", watch.on_estop, wire.LATCHED_QOS)
        p.subscribe(f"{ns}/safety/violations", DiagnosticStatus, wire.EVENT_QOS, callback=watch.on_event)
        p.subscribe(f"{ns}/command_safe", Float64MultiArray, wire.COMMAND_QOS, callback=watch.on_safe)
        p.subscribe(f"{ns}/joint_states", JointState, wire.SENSOR_QOS, callback=watch.on_sensor("joint_states"))
        p.subscribe(f"{ns}/wrench", WrenchStamped, wire.SENSOR_QOS, callback=watch.on_sensor("wrench"))
        wrench_pub = p.publisher(f"{ns}/wrench", WrenchStamped, wire.SENSOR_QOS)
        command_pub = p.publisher(f"{ns}/command", Float64MultiArray, wire.COMMAND_QOS)
        runner.release_safety([ns])

        def pause(seconds: float) -> None:
            p.call(f"{ns}/robot_node/set_pause", SetBool, SetBool.Request(data=True), timeout=10.0)
            time.sleep(seconds)
            p.call(f"{ns}/robot_node/set_pause", SetBool, SetBool.Request(data=False), timeout=10.0)

        def release() -> bool:
            deadline = time.monotonic() + 15.0
            while time.monotonic() < deadline:
                try:
                    if p.call(f"{ns}/safety/reset", Trigger, timeout=5.0).success:
                        return True
                except TimeoutError:
                    pass
                time.sleep(0.3)
            return False

        time.sleep(2.0)  # the running session settles after its release first
        watch.frozen = True
        records.append(_second_session(deploy_nodes(cfg), runner.env, out / "logs" / "second_session",
                                       session_of(specs), watch))
        resync_estop()
        records.append(_refused_resume(out))
        if watch.estop:
            records[-1]["released"] = release()
        for record in records:
            print(f"  {record['fault']:15s} detected={record['detected']!s:5s} "
                  f"{record.get('time_to_detect_s', math.nan) * 1e3:7.1f} ms  {record.get('rule') or ''}",
                  file=sys.stderr)
        end = time.monotonic() + 60.0 * args.minutes
        while time.monotonic() < end:
            time.sleep(args.gap * rng.uniform(0.7, 1.3))
            kind = str(rng.choice(FAULTS))
            t0 = time.time()
            if kind == "sensor_dropout":
                pause(rng.uniform(0.4, 0.8))
            elif kind == "latency_spike":
                pause(rng.uniform(0.03, 0.10))
            elif kind == "nan_burst":
                for _ in range(int(rng.integers(1, 5))):
                    msg = WrenchStamped()
                    msg.header.stamp = p.node.get_clock().now().to_msg()
                    msg.wrench.force.z = float("nan")
                    wrench_pub.publish(msg)
                    time.sleep(0.01)
            elif kind == "command_flood":
                labels = list(contract.action_labels)
                high = np.asarray(contract.action_high)
                for k in range(int(rng.integers(100, 400))):
                    command_pub.publish(wire.command_message(high * (1 if k % 2 else -1), labels, session=token))
            elif kind == "node_restart":
                live = [q for q in runner.group.processes if q.spec.executable == "policy_server" and q.alive]
                live[-1].send_signal(signal.SIGKILL)
                time.sleep(0.8)  # past the heartbeat deadline
                runner.group.start(server_spec)
            expected = EXPECTED[kind]
            detected: dict[str, str] | None = None
            if expected is not None:
                deadline = time.monotonic() + 3.0
                while detected is None and time.monotonic() < deadline:
                    detected = watch.first_event(expected, t0)
                    time.sleep(0.02)
            record: dict[str, Any] = {"fault": kind, "injected_at": t0, "detected": detected is not None,
                                      "rule": detected.get("rule") if detected else None}
            if detected is not None:
                record["time_to_detect_s"] = max(0.0, float(detected.get("decided_at", t0)) - t0)
            if kind == "latency_spike":
                time.sleep(0.5)
                trips = watch.estop_events(t0)
                overran = [e for e in trips if e.get("rule", "").startswith("stale.")
                           and watch.largest_gap(e["rule"].removeprefix("stale."), t0 - 0.5, time.time())
                           >= float(e.get("threshold", "inf"))]
                record["trip_rules"] = sorted({e.get("rule", e["name"]) for e in trips})
                record["overran"] = bool(overran)
                record["false_trip"] = bool(trips) and not overran
            if watch.estop:
                record["released"] = release()
            records.append(record)
            print(f"  {kind:15s} detected={record['detected']!s:5s} "
                  f"{record.get('time_to_detect_s', math.nan) * 1e3:7.1f} ms  {record.get('rule') or ''}",
                  file=sys.stderr)
    finally:
        runner.stop()
    # full reversals on command_safe within one control period (a flood getting through)
    with watch.lock:
        safe = list(watch.safe)
    span = np.asarray(contract.action_high) - np.asarray(contract.action_low)
    reversals = sum(1 for (_, a), (_, b) in pairwise(safe) if np.any(np.abs(b - a) >= span - 1e-9))
    summary: dict[str, Any] = {"minutes": args.minutes, "seed": args.seed, "policy": str(policy),
                               "faults_injected": len(records), "unsafe_commands": watch.unsafe_commands,
                               "full_reversals_on_command_safe": reversals, "by_fault": {}}
    for kind in (*FAULTS, *ONCE):
        rows = [r for r in records if r["fault"] == kind]
        times = [r["time_to_detect_s"] for r in rows if "time_to_detect_s" in r]
        summary["by_fault"][kind] = {
            "injected": len(rows), "detected": sum(r["detected"] for r in rows),
            "detect_p50_ms": _percentile_ms(times, 50), "detect_p99_ms": _percentile_ms(times, 99),
            **({"false_trips": sum(bool(r.get("false_trip")) for r in rows),
                "overran": sum(bool(r.get("overran")) for r in rows)} if kind == "latency_spike" else {}),
        }
    summary["records"] = records
    write_results_json(out / "soak_report.json", summary)
    print(f"{'fault':16s} {'injected':>8s} {'detected':>8s} {'p50 ms':>8s} {'p99 ms':>8s}")
    for kind, s in summary["by_fault"].items():
        det = s["detected"] if EXPECTED.get(kind, kind) else f"{s.get('false_trips', 0)} false"
        print(f"{kind:16s} {s['injected']:8d} {det!s:>8s} {s['detect_p50_ms']:8.1f} {s['detect_p99_ms']:8.1f}")
    spikes = summary["by_fault"]["latency_spike"]
    if spikes["overran"]:
        print(f"latency spikes the machine stretched past the stream deadline (correct trips, not false): "
              f"{spikes['overran']}")
    print(f"commands reaching the robot during an e-stop: {watch.unsafe_commands}; full reversals on "
          f"command_safe: {reversals}; report {out / 'soak_report.json'}")
    print(json.dumps({k: summary[k] for k in ("faults_injected", "unsafe_commands")}))
    return 0 if watch.unsafe_commands == 0 and reversals == 0 else 1
