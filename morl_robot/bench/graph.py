"""``morl-robot bench graph``: environment steps per second through the ROS graph in lockstep
versus in-process, and the experience transitions per second the learner node ingests.

* **in-process** — ``MORobotEnv`` stepped in a loop by the ONNX policy (onnxruntime, exploring).
* **graph** — the actor pipeline of a training session, built by
  :func:`~morl_robot.session.graph.train_nodes` from ``config/sessions/train.yaml`` exactly as
  ``morl-robot train`` and ``train.launch.py`` build it (one per-step actor, the learner left
  out): ``robot_node`` (lockstep) → ``task_step`` → ``policy_server`` (the same ONNX policy, mode
  train: it samples and publishes experience) → ``command`` → ``safety_monitor`` →
  ``command_safe`` → ``robot_node``: three DDS hops and three processes per step.  Also measured
  without the monitor (``command`` remapped straight to ``command_safe``) to show its cost.
  The benchmark sets no node parameter of its own, so it cannot drift from the session (it did:
  a hand-built monitor without the task's action labels held every command).
* **ingest** — the session's ``learner_node`` fed experience chunks from the probe as fast as it
  accepts them; transitions/s from its ``env_steps`` diagnostics.

Goal (issue 4): the graph keeps at least 50 % of the in-process rate.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.cli.options import add_set

TASK = "sawyer_peg_in_hole"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default=TASK, help="task the robot node steps")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of graph stepping per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per measurement (medians are printed)")
    parser.add_argument("--steps", type=int, default=4000, help="in-process steps per repeat")
    parser.add_argument("--chunk-size", type=int, default=64, help="ingest: transitions per chunk")
    parser.add_argument("--skip-ingest", action="store_true", help="skip the learner ingest measurement")
    parser.add_argument("--skip-monitor-free", action="store_true", help="skip the graph run without the monitor")
    parser.add_argument("--warmup", type=int, default=200, help="graph: lockstep steps before measuring")
    add_set(parser, ("task", "robot", "safety"))


def _export_policy(task_name: str, path: Path) -> None:
    import torch

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.learning.config import MPOConfig
    from morl_robot.learning.networks import ActionSpec, make_policy
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy

    env = MORobotEnv(task_name)
    try:
        torch.manual_seed(0)
        cfg = MPOConfig()
        net = cfg.networks
        policy = make_policy(env.observation_space.shape[0], ActionSpec.box(env.action_space.shape[0]),
                             net.policy_hidden, net.min_std, net.init_std)
        export_policy(policy, contract_for_task(env.task, env.robot, cfg, policy_version=1, run_id="bench"), path)
    finally:
        env.close()


def in_process_rate(task_name: str, policy_path: Path, steps: int, seed: int = 0) -> float:
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.serving.runtime import OnnxPolicy

    policy = OnnxPolicy.from_file(policy_path)
    rng = np.random.default_rng(seed)
    env = MORobotEnv(task_name)
    try:
        obs, _ = env.reset(seed=seed)
        t0 = time.perf_counter()
        for _ in range(steps):
            out = policy.act(obs, deterministic=False, rng=rng)
            obs, _, term, trunc, _ = env.step(out.action)
            if term or trunc:
                obs, _ = env.reset()
        return steps / (time.perf_counter() - t0)
    finally:
        env.close()


def bench_session(task_name: str, policy_path: Path | None = None) -> Any:
    """The training session this benchmark measures: ``config/sessions/train.yaml`` (what
    ``morl-robot train`` and ``train.launch.py`` start) with one per-step actor in ``/bench``, no
    step budget, its policy server acting the ONNX policy at ``policy_path`` from the start."""
    from morl_robot.session.config import load_session_config

    overrides: dict[str, Any] = {"task": task_name, "actors": 1, "actors_kind": "per-step", "namespace": "bench",
                                 "total_steps": 0}
    if policy_path is not None:
        overrides["policy_server"] = {"policy": str(policy_path)}
    return load_session_config("train", overrides)


def graph_specs(cfg: Any, out_dir: Path, with_monitor: bool) -> tuple[list[Any], str]:
    """(node specs, actor namespace) of the measured graph: the actor pipeline of
    :func:`~morl_robot.session.graph.train_nodes` (robot node, safety monitor, policy server, with
    the parameters the session builder gives them), without the learner; ``with_monitor=False``
    also leaves out the monitor and remaps the policy server's ``command`` to ``command_safe``."""
    from morl_robot.session.graph import train_nodes

    specs = [s for s in train_nodes(cfg, out_dir) if s.executable != "learner_node"]
    if not with_monitor:
        specs = [s for s in specs if s.executable != "safety_monitor"]
        for s in specs:
            if s.executable == "policy_server":
                s.remappings["command"] = "command_safe"
    namespaces = {s.namespace for s in specs}
    if len(namespaces) != 1:
        raise RuntimeError(f"bench graph: expected one actor namespace, the session builder gave {sorted(namespaces)}")
    return specs, namespaces.pop()


def _log_tails(runner: Any, lines: int = 8) -> str:
    return "".join(f"\n----- {p.spec.name} ({p.log_path}) -----\n" + "\n".join(p.log_text().splitlines()[-lines:])
                   for p in runner.group.processes)


def graph_rate(task_name: str, policy_path: Path, duration: float, with_monitor: bool, log_dir: Path,
               warmup: int = 200, timeout: float = 120.0) -> float:
    """Lockstep env steps/s counted on ``task_step`` over ``duration`` s, after ``warmup`` steps.
    A loop that does not reach ``warmup`` steps within ``timeout`` s is a :class:`GraphStalled`
    with the end of every node's log (a monitor holding every command says so there)."""
    from std_msgs.msg import Float64MultiArray

    from morl_robot.errors import GraphStalled
    from morl_robot.nodes import wire
    from morl_robot.session.runner import SessionRunner

    specs, ns = graph_specs(bench_session(task_name, policy_path), log_dir / "run", with_monitor)
    runner = SessionRunner(specs, log_dir)
    try:
        runner.start()
        count = [0]
        runner.probe.subscribe(f"{ns}/task_step", Float64MultiArray, wire.SENSOR_QOS,
                               callback=lambda m: count.__setitem__(0, count[0] + 1))
        if with_monitor:
            runner.release_safety([ns])

        def running() -> bool:
            runner.check_alive()
            return count[0] > warmup

        try:
            runner.probe.wait_for(running, timeout, "the lockstep loop to run")
        except TimeoutError as exc:
            raise GraphStalled(f"bench graph: {exc} ({count[0]} of {warmup} warm-up steps); "
                               f"node logs:{_log_tails(runner)}") from None
        runner.probe.received.get(f"{ns}/task_step", []).clear()
        c0, t0 = count[0], time.monotonic()
        time.sleep(duration)
        c1, t1 = count[0], time.monotonic()
        runner.check_alive()
        return (c1 - c0) / (t1 - t0)
    finally:
        runner.stop()


def ingest_rate(task_name: str, chunk_size: int, duration: float, log_dir: Path) -> tuple[float, float]:
    """Transitions/s the learner node accepts (its ``env_steps`` diagnostic), and its updates/s."""
    from diagnostic_msgs.msg import DiagnosticArray
    from std_msgs.msg import Float64MultiArray

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.errors import GraphStalled
    from morl_robot.nodes import wire
    from morl_robot.session.graph import train_nodes
    from morl_robot.session.runner import SessionRunner

    env = MORobotEnv(task_name)
    obs_labels, act_labels, objectives = env.observation_labels, env.action_labels, env.objective_names
    env.close()
    columns = wire.experience_columns(obs_labels, act_labels, objectives)
    rng = np.random.default_rng(0)
    o, d, k = len(obs_labels), len(act_labels), len(objectives)
    out = Path(tempfile.mkdtemp(prefix="bench_ingest_"))
    # the session's learner node, as train_nodes gives it (its experience topic is <ns>/experience)
    learner = [s for s in train_nodes(bench_session(task_name), out) if s.executable == "learner_node"]
    ns = learner[0].namespace
    runner = SessionRunner(learner, log_dir)
    try:
        runner.start()
        samples: list[tuple[float, float, float]] = []  # (arrival, env_steps, updates) per learner diagnostic

        def on_diag(msg: Any) -> None:
            for s in msg.status:
                if "learner" in s.name:
                    values = {kv.key: kv.value for kv in s.values}
                    samples.append((time.monotonic(), float(values.get("env_steps", 0) or 0),
                                    float(values.get("updates", 0) or 0)))

        runner.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS, callback=on_diag)
        pub = runner.probe.publisher(f"{ns}/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
        runner.probe.wait_for_subscribers(pub, timeout=120)
        rows = np.zeros((chunk_size, len(columns)))
        step = 0

        def chunk() -> Any:
            nonlocal step
            rows[:, 1] = 1
            rows[:, 2] = 1
            rows[:, 3] = np.arange(step, step + chunk_size)
            rows[:, 4:4 + o] = rng.normal(size=(chunk_size, o))
            rows[:, 4 + o:4 + o + d] = rng.uniform(-1, 1, (chunk_size, d))
            rows[:, 4 + o + d] = -1.0
            rows[:, 5 + o + d:5 + o + d + k] = rng.normal(size=(chunk_size, k))
            rows[:, 5 + o + d + k:5 + 2 * o + d + k] = rng.normal(size=(chunk_size, o))
            step += chunk_size
            return wire.labelled_table(rows, columns)

        def ingesting() -> list[tuple[float, float, float]]:
            return [x for x in samples if x[1] > 0]

        runner.probe.wait_for(lambda: bool(samples), 60, "learner diagnostics")
        # measured between the first and the last diagnostics that arrive while chunks are sent
        # (at least two: on a short --duration, publishing goes on until the learner reported twice)
        t_end = time.monotonic() + duration
        t_cap = t_end + 60.0
        while time.monotonic() < t_end or (len(ingesting()) < 2 and time.monotonic() < t_cap):
            pub.publish(chunk())
            time.sleep(0.001)
        runner.check_alive()
        seen = ingesting()
        if len(seen) < 2:
            raise GraphStalled(f"bench graph: the learner node did not report ingested experience twice in "
                               f"{duration + 60:.0f} s of chunks; log in {log_dir}")
        (t0, e0, u0), (t1, e1, u1) = seen[0], seen[-1]
        return (e1 - e0) / (t1 - t0), (u1 - u0) / (t1 - t0)
    finally:
        runner.stop()


def run(args: argparse.Namespace) -> int:
    from morl_robot.errors import UsageError

    if args.repeats < 1 or args.steps < 1 or args.chunk_size < 1 or args.warmup < 0 or not args.duration > 0:
        raise UsageError("--repeats, --steps and --chunk-size must be >= 1, --warmup >= 0 and --duration > 0")
    work = Path(tempfile.mkdtemp(prefix="bench_graph_"))
    policy_path = work / "policy.onnx"
    _export_policy(args.task, policy_path)
    print(f"bench graph: task {args.task}, {args.repeats} repeats, graph runs of {args.duration:g} s; "
          f"logs in {work}", flush=True)
    inproc = [in_process_rate(args.task, policy_path, args.steps, seed=i) for i in range(args.repeats)]
    print(f"  in-process (env + onnxruntime policy):     median {statistics.median(inproc):8.1f} steps/s  "
          f"{[round(x) for x in inproc]}", flush=True)
    results: dict[str, float] = {}
    variants = [("graph (robot → policy → monitor → robot)", True)]
    if not args.skip_monitor_free:
        variants.append(("graph without the safety monitor", False))
    for label, monitor in variants:
        rates = [graph_rate(args.task, policy_path, args.duration, monitor, work / f"logs_{int(monitor)}_{i}",
                            args.warmup) for i in range(args.repeats)]
        results[label] = statistics.median(rates)
        ratio = results[label] / statistics.median(inproc)
        print(f"  {label:42s} median {results[label]:8.1f} steps/s  {[round(x) for x in rates]}  "
              f"= {ratio:.0%} of in-process (goal ≥ 50 %)", flush=True)
    if not args.skip_ingest:
        ingest, updates = ingest_rate(args.task, args.chunk_size, args.duration, work / "logs_ingest")
        print(f"  learner_node ingest: {ingest:8.1f} transitions/s in chunks of {args.chunk_size} "
              f"(while updating at {updates:.2f} updates/s)")
    return 0
