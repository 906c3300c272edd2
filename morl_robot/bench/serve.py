"""``morl-robot bench serve``: how fast a policy turns an observation into a command.

* **in-process inference**, per task, at the task's real observation/action sizes and the paper's
  policy size (300, 200) with an observation normaliser (weights untrained: latency does not
  depend on them): one observation → deterministic robot-unit command with onnxruntime
  (:class:`~morl_robot.serving.runtime.OnnxPolicy`, 1 intra-op + 1 inter-op thread), torch eager
  and TorchScript (traced and frozen), all single-threaded.  Also the time one export takes (the
  learner exports every few hundred updates).
* **through the node, event-driven** — a ``policy_server`` process (deploy, lockstep timing) on a
  private DDS domain; the probe publishes a ``task_step`` and times until the ``command`` arrives
  (one at a time, paced at ``--rate``): two DDS hops, decoding, inference, encoding.
* **through the node, real time** — ``policy_server`` (deploy, realtime timer at ``--rate`` Hz) for
  ``--duration`` s while the probe publishes ``task_step`` at 0.9 × that rate (so the phase between
  observation and tick sweeps a whole period); latency = publish of an observation → arrival of the
  first command computed from it (matched by value against the same model run in-process), so it
  includes the wait for the next tick (uniform in [0, period));
  deadline misses and ticks from the node's ``/diagnostics``.

Goals (issue 6): inference p99 < 0.2 ms; end-to-end p99 < 2 ms; no deadline miss at 500 Hz on an
idle machine.  Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.cli.options import add_set

TASKS = ("sawyer_peg_in_hole", "shadow_touch", "shadow_turn", "shadow_orient")
#: The real-time run publishes observations at this fraction of the loop rate.
PUBLISH_FRACTION = 0.9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", action="append", help="only these tasks (repeatable; default all four)")
    add_set(parser, ("task", "robot"))
    parser.add_argument("--iterations", type=int, default=5000, help="in-process inferences per runtime")
    parser.add_argument("--rate", type=float, default=500.0, help="node loop / publishing rate (Hz)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of the real-time node run")
    parser.add_argument("--pings", type=int, default=2000, help="event-driven node round trips")
    parser.add_argument("--priority", type=int, default=0,
                        help="realtime_priority of the node's loop thread (SCHED_FIFO 1..99; 0 = normal)")
    parser.add_argument("--skip-node", action="store_true", help="only the in-process measurements")
    parser.add_argument("--json", action="store_true", help="also print all figures as one JSON object")


def _percentiles(seconds: list[float] | np.ndarray) -> dict[str, float]:
    a = np.asarray(seconds, dtype=np.float64) * 1e3
    if a.size == 0:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"), "n": 0}
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "max_ms": float(a.max()), "n": int(a.size)}


def _fmt(p: dict[str, float]) -> str:
    return f"p50 {p['p50_ms']:.3f} ms  p99 {p['p99_ms']:.3f} ms  (max {p['max_ms']:.3f}, n={p['n']})"


def build_policy(task_name: str, seed: int = 0) -> tuple[Any, Any, Any, bytes, float]:
    """(torch policy, contract, normaliser, ONNX bytes, export seconds) for ``task_name``."""
    import torch

    from morl_robot.envs.mo_env import make_sim_robot
    from morl_robot.learning.config import MPOConfig
    from morl_robot.learning.networks import GaussianPolicy
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy
    from morl_robot.tasks.registry import load_task

    task = load_task(task_name)
    robot = make_sim_robot(task)
    try:
        contract = contract_for_task(task, robot, MPOConfig(), policy_version=1, run_id="bench")
    finally:
        robot.close()
    torch.manual_seed(seed)
    o, d = len(contract.observation_labels), len(contract.action_labels)
    policy = GaussianPolicy(o, d, MPOConfig().networks.policy_hidden)
    with torch.no_grad():
        policy.mean_head.weight.normal_(0.0, 0.3)  # distinct commands for distinct observations
    norm = RunningNormalizer(o)
    norm.update(np.random.default_rng(seed).normal(size=(256, o)))
    export_policy(policy, contract, normalizer=norm)  # the first export pays one-off tracing costs
    t0 = time.perf_counter()
    data = export_policy(policy, contract, normalizer=norm)
    return policy, contract, norm, data, time.perf_counter() - t0


def in_process(task_name: str, iterations: int) -> dict[str, Any]:
    import torch

    from morl_robot.serving.export import ServingGraph
    from morl_robot.serving.runtime import OnnxPolicy

    torch.set_num_threads(1)
    policy, contract, norm, data, export_s = build_policy(task_name)
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(iterations, len(contract.observation_labels)))
    result: dict[str, Any] = {"observation": len(contract.observation_labels), "action": len(contract.action_labels),
                              "export_ms": export_s * 1e3, "model_kB": len(data) / 1e3}

    ort_policy = OnnxPolicy.from_bytes(data)

    def time_loop(fn: Any, warmup: int = 200) -> dict[str, float]:
        for i in range(warmup):
            fn(obs[i % iterations])
        samples = np.empty(iterations)
        for i in range(iterations):
            t0 = time.perf_counter()
            fn(obs[i])
            samples[i] = time.perf_counter() - t0
        return _percentiles(samples)

    result["onnxruntime"] = time_loop(lambda o: ort_policy.act(o, deterministic=True))
    result["onnxruntime_session_run"] = time_loop(lambda o: ort_policy.infer(o[None].astype(np.float32)))
    graph = ServingGraph(policy, contract, norm).eval()

    def torch_fn(module: Any) -> Any:
        def run(o: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                return module(torch.from_numpy(o[None].astype(np.float32)))[0][0].double().numpy()
        return run

    result["torch_eager"] = time_loop(torch_fn(graph))
    with torch.no_grad():
        scripted = torch.jit.freeze(torch.jit.trace(graph, torch.zeros(1, len(contract.observation_labels))).eval())
    result["torchscript"] = time_loop(torch_fn(scripted))
    return result


# --- through the node ----------------------------------------------------------------------------
class _NodeRun:
    """A policy_server process on a private domain plus the probe that drives it."""

    def __init__(self, params: dict[str, Any], log_dir: Path) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from std_msgs.msg import Float64MultiArray

        from morl_robot.nodes import wire
        from morl_robot.nodes.probe import GraphProbe
        from morl_robot.session.processes import (
            NodeSpec,
            ProcessGroup,
            pick_domain_id,
            ros_env,
        )

        self.wire = wire
        domain = pick_domain_id()
        self.group = ProcessGroup(ros_env(domain), log_dir)
        self.probe = GraphProbe(domain, name="bench_serve")
        self.received: list[tuple[float, np.ndarray]] = []
        self.status: dict[str, str] = {}
        self.seq, self.status_time = 0, 0.0  # diagnostics messages seen, arrival of the newest
        self.event = threading.Event()

        def on_command(msg: Any) -> None:
            self.received.append((time.monotonic(), np.asarray(msg.data, dtype=np.float64)))
            self.event.set()

        def on_diag(msg: Any) -> None:
            for st in msg.status:
                if st.name.endswith(": policy"):
                    self.status = {kv.key: kv.value for kv in st.values}
                    self.status_time = time.monotonic()
                    self.seq += 1

        self.probe.node.create_subscription(Float64MultiArray, "/bench/command", on_command, wire.COMMAND_QOS)
        self.probe.node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, wire.EVENT_QOS)
        self.pub = self.probe.publisher("/bench/task_step", Float64MultiArray, wire.SENSOR_QOS)
        self.proc = self.group.start(NodeSpec("policy_server", "policy_server", "/bench", params))
        self.probe.wait_for(lambda: self.pub.get_subscription_count() >= 1 or not self.proc.alive, 60,
                            "policy_server to subscribe")
        if not self.proc.alive:
            raise RuntimeError(f"policy_server exited:\n{self.proc.log_text()[-3000:]}")

    def message(self, labels: tuple[str, ...], step: int, obs: np.ndarray) -> Any:
        values = np.concatenate([[1.0, float(step), 0.0, 0.0, 0.0], np.zeros(len(labels) - 5 - obs.size), obs])
        return self.wire.labelled_array(values, labels)

    def close(self) -> None:
        self.group.stop(timeout=10)
        self.probe.close()


def _labels(contract: Any) -> tuple[str, ...]:
    from morl_robot.nodes.wire import task_step_labels

    return task_step_labels(contract.objective_names, contract.observation_labels)


def node_event_driven(policy_path: Path, contract: Any, pings: int, rate: float, log_dir: Path) -> dict[str, Any]:
    run = _NodeRun({"mode": "deploy", "timing": "lockstep", "policy": str(policy_path)}, log_dir)
    try:
        labels = _labels(contract)
        obs = np.random.default_rng(2).normal(size=(64, len(contract.observation_labels)))
        samples: list[float] = []
        lost = 0
        period = 1.0 / rate
        next_t = time.monotonic()
        for i in range(pings + 50):
            msg = run.message(labels, i, obs[i % len(obs)])
            run.event.clear()
            n = len(run.received)
            t0 = time.monotonic()
            run.pub.publish(msg)
            if not run.event.wait(1.0) or len(run.received) <= n:
                lost += 1
                continue
            if i >= 50:  # warm-up
                samples.append(run.received[n][0] - t0)
            next_t += period
            time.sleep(max(0.0, next_t - time.monotonic()))
        return {"latency": _percentiles(samples), "lost": lost}
    finally:
        run.close()


def node_realtime(policy_path: Path, contract: Any, duration: float, rate: float, log_dir: Path,
                  priority: int = 0) -> dict[str, Any]:
    from morl_robot.serving.runtime import OnnxPolicy

    local = OnnxPolicy.from_file(policy_path)
    k = 256
    obs = np.random.default_rng(3).normal(size=(k, len(contract.observation_labels)))
    expected = np.stack([local.act(o, deterministic=True).command for o in obs])  # (K, D)
    run = _NodeRun({"mode": "deploy", "timing": "realtime", "rate": float(rate), "observation_timeout": 0.05,
                    "realtime_priority": int(priority), "policy": str(policy_path)}, log_dir)
    try:
        labels = _labels(contract)
        messages = [run.message(labels, i, obs[i]) for i in range(k)]
        period = 1.0 / (PUBLISH_FRACTION * rate)  # incommensurate with the loop: the phase sweeps one period
        published: list[tuple[float, int]] = []
        run.probe.wait_for(lambda: bool(run.status), 10, "policy_server diagnostics")
        # phases: warm-up 2 s; the window opens at the next diagnostics message and closes at the first
        # one after `duration` s, so the node's counters cover exactly the published stretch
        phase, t_warm, seq = "warmup", time.monotonic() + 2.0, run.seq
        start_status: dict[str, str] = {}
        end_status: dict[str, str] = {}
        window = (0.0, 0.0)
        first_cmd = 0
        next_t = time.monotonic()
        i = 0
        while True:
            now = time.monotonic()
            if phase == "warmup" and now >= t_warm:
                phase, seq = "opening", run.seq
            elif phase == "opening" and run.seq != seq:
                phase, seq = "measuring", run.seq
                start_status, window = dict(run.status), (run.status_time, 0.0)
                published.clear()
                first_cmd = len(run.received)
            elif phase == "measuring" and now >= window[0] + duration:
                phase, seq = "closing", run.seq
            elif phase == "closing" and run.seq != seq:
                end_status, window = dict(run.status), (window[0], run.status_time)
                break
            t0 = time.monotonic()
            run.pub.publish(messages[i % k])
            published.append((t0, i % k))
            i += 1
            next_t += period
            time.sleep(max(0.0, next_t - time.monotonic()))
        time.sleep(0.05)
        commands = run.received[first_cmd:]
        # match: the first command equal to obs j's expected command after obs j was published
        latencies: list[float] = []
        c = 0
        for idx, (t_pub, j) in enumerate(published):
            t_next = published[idx + 1][0] if idx + 1 < len(published) else float("inf")
            while c < len(commands) and commands[c][0] < t_pub:
                c += 1
            for cc in range(c, len(commands)):
                t_cmd, values = commands[cc]
                if t_cmd > t_next + 2 * period:
                    break
                if np.allclose(values, expected[j], rtol=0, atol=1e-9):
                    latencies.append(t_cmd - t_pub)
                    break

        def delta(key: str) -> int:
            return int(float(end_status.get(key, 0))) - int(float(start_status.get(key, 0)))

        return {"latency": _percentiles(latencies), "published": len(published), "matched": len(latencies),
                "commands": len(commands), "ticks": delta("ticks"), "deadline_misses": delta("deadline_misses"),
                "held": delta("held"), "node_inference_p99_ms": float(end_status.get("inference_p99_ms", "nan")),
                "node_receive_to_publish_p99_ms": float(end_status.get("receive_to_publish_p99_ms", "nan")),
                "window_s": window[1] - window[0]}
    finally:
        run.close()


def run(args: argparse.Namespace) -> int:
    from morl_robot.errors import UsageError
    from morl_robot.tasks.registry import task_names

    tasks = args.task or list(TASKS)  # default: the package's tasks; any registered task (plugins too) on request
    unknown = [t for t in tasks if t not in task_names()]
    if unknown:
        raise UsageError(f"--task: unknown {unknown}; known: {', '.join(task_names())}")
    if args.iterations < 100 or args.duration <= 0 or not 0 < args.rate <= 1000:
        raise UsageError("--iterations must be >= 100, --duration > 0 and --rate in (0, 1000] Hz")
    report: dict[str, Any] = {"in_process": {}}
    print(f"bench serve: in-process inference, {args.iterations} single-observation calls per runtime, 1 thread")
    for name in tasks:
        r = in_process(name, args.iterations)
        report["in_process"][name] = r
        print(f"  {name} (O={r['observation']}, D={r['action']}; export {r['export_ms']:.0f} ms, "
              f"{r['model_kB']:.0f} kB)")
        for key in ("onnxruntime", "onnxruntime_session_run", "torch_eager", "torchscript"):
            print(f"    {key:24s} {_fmt(r[key])}")
    if not args.skip_node:
        work = Path(tempfile.mkdtemp(prefix="bench_serve_"))
        name = tasks[0]
        _, contract, _, data, _ = build_policy(name)
        path = work / "policy.onnx"
        path.write_bytes(data)
        print(f"through the node ({name}; logs in {work}):")
        ev = node_event_driven(path, contract, args.pings, args.rate, work / "logs_event")
        report["node_event_driven"] = ev
        print(f"  event-driven task_step -> command      {_fmt(ev['latency'])}, lost {ev['lost']}")
        rt = node_realtime(path, contract, args.duration, args.rate, work / "logs_realtime", args.priority)
        report["node_realtime"] = rt
        print(f"  realtime {args.rate:g} Hz (loop priority {args.priority or 'normal'}), observation -> command (incl. wait for the tick) {_fmt(rt['latency'])}")
        print(f"    {rt['window_s']:.0f} s window: {rt['ticks']} ticks, {rt['deadline_misses']} deadline misses, "
              f"{rt['held']} holds; {rt['matched']}/{rt['published']} observations matched to a command; "
              f"node inference p99 {rt['node_inference_p99_ms']:.3f} ms, "
              f"receive->publish p99 {rt['node_receive_to_publish_p99_ms']:.3f} ms")
    if args.json:
        print(json.dumps(report))
    return 0
