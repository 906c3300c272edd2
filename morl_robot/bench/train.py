"""``morl-robot bench train``: env steps/s and learner updates/s of a simulated training session,
per-step graph versus vectorized actors, measured in one run.

Three sessions of :func:`morl_robot.session.graph.train_nodes` (the graph ``morl-robot train``
starts), each measured on the learner's own ``/diagnostics`` counters (``env_steps`` it received,
``updates`` it made) over ``--duration`` s after a warm-up:

* **(a) per-step** — one actor pipeline: ``robot_node`` (lockstep) → ``policy_server`` →
  ``safety_monitor`` → ``robot_node``, three processes and three DDS hops per step;
* **(b) vectorized, 1 actor** — one ``vector_actor`` stepping ``--envs`` (8) environments with one
  batched policy forward per step, the safety rules inside its loop;
* **(c) vectorized, 2 actors** — two such processes feeding the one learner.

* **(d) in-process** — :func:`~morl_robot.training.loop.train` on the same task and learner YAML in
  this process (no graph): env steps/s over ``--in-process-steps`` steps after the warm-up (the
  difference of two runs, so start-up and warm-up are not counted).

The learner is the session's (``mo_mpo_cpu_small``) with a low samples-per-insert ratio
(``--samples-per-insert``, default 0.1) and a small ``min_size_to_sample``, so that the actors are
measured rather than the learner's back-pressure (with the session's ratio of 16 every variant
would act exactly as fast as the learner learns); all processes share this machine's cores.  The
last lines are ``vectorized/per-step ratio: X`` ((b) over (a); goal ≥ 3) and
``graph/in-process training ratio: X`` (the variant ``train`` uses by default for this task and learner,
(b) on the sim backend (``actors_kind: auto``) or (a), over (d); goal ≥ 0.5).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from morl_robot.cli.options import add_set, deprecated

TASK = "sawyer_peg_in_hole"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default=TASK, help="task to train")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds measured per session")
    parser.add_argument("--warmup", type=int, default=600,
                        help="env steps the learner must have received before measuring")
    parser.add_argument("--repeats", type=int, default=1, help="sessions per variant (medians are printed)")
    parser.add_argument("--envs", type=int, default=8, help="environments per vectorized actor (B)")
    parser.add_argument("--learner", dest="learner_config", default="mo_mpo_cpu_small", metavar="NAME|PATH",
                        help="learner profile, name under config/learner/ or path")
    parser.add_argument("--samples-per-insert", type=float, default=0.1,
                        help="the learner's samples-per-insert ratio in the bench (low: actors are not held back)")
    parser.add_argument("--min-size-to-sample", type=int, default=256,
                        help="replay items before the first update (low: the learner starts early in the bench)")
    parser.add_argument("--in-process-steps", type=int, default=1500,
                        help="(d): env steps measured after the warm-up (0: skip the in-process variant)")
    add_set(parser, ("task", "learner", "session", "robot", "safety"))
    deprecated(parser, "--learner-config", "--learner")


def bench_learner_config(name: str, samples_per_insert: float, min_size: int, path: Path) -> Path:
    """The learner YAML ``name`` with the bench's replay ratio, no evaluation, checkpoints or TensorBoard."""
    from morl_robot.resources import resolve_config

    data = yaml.safe_load(resolve_config("learner", name).read_text())
    data.setdefault("replay", {}).update(samples_per_insert=float(samples_per_insert), min_size_to_sample=int(min_size))
    data.setdefault("training", {}).update(eval_every=0, checkpoint_every=0, tensorboard=False)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def session_rates(task: str, kind: str, actors: int, envs: int, learner_config: Path, duration: float,
                  warmup: int, work: Path) -> tuple[float, float]:
    """(env steps/s, updates/s) of one training session, from the learner's diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray

    from morl_robot.nodes import wire
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import train_nodes
    from morl_robot.session.runner import SessionRunner

    cfg = load_session_config("train", {
        "task": task, "actors": actors, "actors_kind": kind, "namespace": "bench", "total_steps": 0,
        "vector_actor": {"envs": envs},
        "learner_node": {"config": str(learner_config), "snapshot_every": 200}})
    out = work / "run"
    specs = train_nodes(cfg, out)
    runner = SessionRunner(specs, work / "logs")
    samples: list[tuple[float, float, float]] = []  # (received at, env_steps, updates)
    lock = threading.Lock()

    def on_diag(msg: Any) -> None:
        for s in msg.status:
            if "learner" in s.name:
                values = {kv.key: kv.value for kv in s.values}
                with lock:
                    samples.append((time.monotonic(), float(values.get("env_steps", 0) or 0),
                                    float(values.get("updates", 0) or 0)))

    try:
        runner.start()
        runner.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS, callback=on_diag)
        monitors = sorted({s.namespace for s in specs if s.executable == "safety_monitor"})
        if monitors:
            runner.release_safety(monitors)
        runner.probe.wait_for(lambda: bool(samples) and samples[-1][1] >= warmup, 300,
                              f"the learner to receive {warmup} env steps")
        runner.check_alive()
        with lock:
            start = len(samples) - 1
        time.sleep(duration)
        runner.probe.wait_for(lambda: len(samples) > start + 1, 30, "learner diagnostics")
        runner.check_alive()
        with lock:
            (t0, e0, u0), (t1, e1, u1) = samples[start], samples[-1]
        dt = max(t1 - t0, 1e-9)
        return (e1 - e0) / dt, (u1 - u0) / dt
    finally:
        runner.stop()


def in_process_rate(task: str, learner_config: Path, warmup: int, steps: int) -> float:
    """Env steps/s of in-process :func:`~morl_robot.training.loop.train` over ``steps`` steps after
    ``warmup`` (two seeded runs of ``warmup`` and ``warmup + steps`` steps: their wall-time difference)."""
    import numpy as np

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.training.loop import train

    def env_fn() -> MORobotEnv:
        return MORobotEnv(task)

    probe = env_fn()
    k = int(np.prod(probe.reward_space.shape))
    probe.close()
    walls = []
    for total in (warmup, warmup + steps):
        t0 = time.perf_counter()
        train(env_fn, str(learner_config), total, seed=0, out_dir=None, progress=False,
              eval_fn=lambda _policy: np.zeros(k))
        walls.append(time.perf_counter() - t0)
    return steps / max(walls[1] - walls[0], 1e-9)


def default_actors_kind(task: str, learner_config: Path) -> str:
    """The actors ``morl-robot train --task TASK --learner LEARNER`` runs with config/sessions/train.yaml
    (``actors_kind: auto`` resolved: :func:`~morl_robot.session.graph.resolve_actors_kind`)."""
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import resolve_actors_kind

    cfg = load_session_config("train", {"task": task, "learner_node": {"config": str(learner_config)}})
    resolve_actors_kind(cfg)
    return cfg.actors_kind


def run(args: argparse.Namespace) -> int:
    from morl_robot.errors import UsageError

    if args.envs < 1 or args.repeats < 1 or not args.duration > 0 or args.in_process_steps < 0:
        raise UsageError("--envs and --repeats must be >= 1, --duration > 0 and --in-process-steps >= 0")
    work = Path(tempfile.mkdtemp(prefix="bench_train_"))
    learner = bench_learner_config(args.learner_config, args.samples_per_insert, args.min_size_to_sample,
                                   work / "learner.yaml")
    print(f"bench train: task {args.task}, learner {args.learner_config} (samples per insert "
          f"{args.samples_per_insert:g}, min size {args.min_size_to_sample}), {args.duration:g} s per session after "
          f"{args.warmup} env steps, {args.repeats} repeat(s); logs in {work}")
    variants = [("(a) per-step graph, 1 actor", "per-step", 1),
                (f"(b) vectorized, 1 actor x {args.envs} envs", "vectorized", 1),
                (f"(c) vectorized, 2 actors x {args.envs} envs", "vectorized", 2)]
    medians: list[float] = []
    for i, (label, kind, actors) in enumerate(variants):
        rates = [session_rates(args.task, kind, actors, args.envs, learner, args.duration, args.warmup,
                               work / f"{i}_{r}") for r in range(args.repeats)]
        steps = statistics.median(r[0] for r in rates)
        updates = statistics.median(r[1] for r in rates)
        medians.append(steps)
        print(f"  {label:36s} env steps/s {steps:8.1f}   learner updates/s {updates:7.2f}   "
              f"{[round(r[0]) for r in rates]}", flush=True)
    print(f"vectorized/per-step ratio: {medians[1] / medians[0]:.2f}" if medians[0] > 0 else
          "vectorized/per-step ratio: inf (the per-step graph took no steps)")
    if args.in_process_steps > 0:
        rates = [in_process_rate(args.task, learner, args.warmup, args.in_process_steps) for _ in range(args.repeats)]
        local = statistics.median(rates)
        print(f"  {'(d) in-process train()':36s} env steps/s {local:8.1f}   {[round(r) for r in rates]}", flush=True)
        kind = default_actors_kind(args.task, learner)
        graph = medians[1] if kind == "vectorized" else medians[0]
        print(f"graph/in-process training ratio: {graph / local:.2f} (train's default actors here: {kind}; "
              f"per-step {medians[0] / local:.2f}, vectorized {medians[1] / local:.2f})")
    return 0
