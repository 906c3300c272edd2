"""``morl-robot bench learning-speed``: wall time per environment step of the full in-process
training loop — ε-conditioned MO-MPO (:func:`~morl_robot.training.loop.train` at a
``config/learner`` profile) next to CAPQL (morl-baselines, ``make capql-deps``) — on the same
environment, steps and machine, in one run.

Both start learning after ``--learning-starts`` environment steps (CAPQL's ``learning_starts``,
MO-MPO's ``replay.min_size_to_sample``); otherwise each method runs its own defaults (CAPQL: one
update of batch 128 per step; MO-MPO: the profile's samples-per-insert).  Evaluation (also
MO-MPO's final episode) and checkpoints are off; both run with ``--threads`` torch threads (default
1, the in-process loop's ``training.threads`` default); the one-time import of ``torch._dynamo`` by the
first optimizer is paid before timing.  Prints per method the env steps/s and learner updates/s (medians over
``--repeats``) and the process CPU time, then ``MO-MPO/CAPQL CPU time per env step: Y`` (what each method
computes; less moved by other processes on a shared host than wall time) and
``MO-MPO/CAPQL wall time per env step: X``.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

#: morl-baselines CAPQL's default batch size: its replay must hold that many before learning starts
CAPQL_BATCH = 128


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", default="mo-halfcheetah-v5", help="MO-Gymnasium environment id")
    parser.add_argument("--steps", type=int, default=3000, help="environment steps per method and repeat")
    parser.add_argument("--learning-starts", type=int, default=1000,
                        help="env steps before the first update (both methods)")
    parser.add_argument("--learner", default="conditioned",
                        help="MO-MPO config/learner profile (ε-conditioned; default: conditioned.yaml)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per method (medians are printed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first repeat")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads of both methods (MO-MPO's training.threads; 0: torch default)")
    parser.add_argument("--skip-capql", action="store_true", help="MO-MPO only (no ratio)")


Run = tuple[float, int, float]  # (wall s, learner updates, process CPU s)


def _run_mompo(args: argparse.Namespace, seed: int) -> Run:
    import dataclasses

    import numpy as np

    from morl_robot.experiments.conditioned import _env_fn
    from morl_robot.learning.config import load_learner_config
    from morl_robot.training.loop import train

    config = load_learner_config(args.learner)
    config = config.replace(
        replay=dataclasses.replace(config.replay, min_size_to_sample=args.learning_starts),
        training=dataclasses.replace(config.training, eval_every=0, checkpoint_every=0, tensorboard=False,
                                     threads=args.threads))
    env_fn = _env_fn(args.env)
    probe = env_fn()
    k = int(np.asarray(probe.unwrapped.reward_space.shape).prod())
    probe.close()
    t0, c0 = time.perf_counter(), time.process_time()
    # eval_fn: no final evaluation episode (CAPQL's timed train() has none either)
    result = train(env_fn, config, args.steps, seed=seed, out_dir=None, progress=False,
                   eval_fn=lambda _policy: np.zeros(k))
    return time.perf_counter() - t0, int(result.updates), time.process_time() - c0


def _run_capql(args: argparse.Namespace, seed: int) -> Run:
    import numpy as np
    import torch
    from morl_baselines.multi_policy.capql.capql import CAPQL

    from morl_robot.experiments.conditioned import _env_fn

    env_fn = _env_fn(args.env)
    env = env_fn()
    torch.manual_seed(seed)
    agent = CAPQL(env, log=False, seed=seed, device="cpu", learning_starts=args.learning_starts)
    k = int(np.asarray(env.unwrapped.reward_space.shape).prod())
    t0, c0 = time.perf_counter(), time.process_time()
    agent.train(total_timesteps=args.steps, eval_env=env_fn(), ref_point=np.full(k, -100.0),
                eval_freq=args.steps + 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    env.close()
    return wall, max(0, int(agent.global_step - agent.learning_starts + 1)), cpu


def _line(name: str, runs: list[Run], steps: int) -> tuple[float, float, str]:
    wall = statistics.median(w for w, _, _ in runs)
    updates = statistics.median(u for _, u, _ in runs)
    cpu = statistics.median(c for _, _, c in runs)
    return wall, cpu, (f"{name:<8s} {steps / wall:8.1f} env steps/s  {updates / wall:7.2f} updates/s  "
                       f"({wall:.1f} s for {steps} steps, {updates:.0f} updates; {cpu:.1f} s CPU; median of {len(runs)})")


def run(args: argparse.Namespace) -> int:
    import os

    import torch

    from morl_robot.errors import UsageError

    if args.steps < 1 or args.repeats < 1 or args.learning_starts < 1:
        raise UsageError("--steps, --repeats and --learning-starts must be >= 1")
    if not args.skip_capql and args.learning_starts < CAPQL_BATCH:
        raise UsageError(f"--learning-starts must be >= {CAPQL_BATCH} (CAPQL samples batches of {CAPQL_BATCH}), "
                         f"got {args.learning_starts}")
    if not args.skip_capql:
        try:
            import morl_baselines  # noqa: F401
        except ImportError as e:
            raise UsageError(f"bench learning-speed needs morl-baselines for CAPQL: `make capql-deps` "
                             f"(or --skip-capql) ({e})") from e
    if args.threads < 0:
        raise UsageError(f"--threads must be >= 0 (0: torch's default), got {args.threads}")
    if args.threads:  # CAPQL's; MO-MPO's train() sets the same from training.threads
        torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"learning speed on {args.env}: {args.steps} env steps per run, learning from step {args.learning_starts}, "
          f"MO-MPO profile {args.learner!r}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs, load average {load:.2f} at start")
    # one-time costs outside the timing: the first torch optimizer imports torch._dynamo (seconds)
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    results: dict[str, list[Run]] = {"MO-MPO": [], "CAPQL": []}
    runners: dict[str, Any] = {"MO-MPO": _run_mompo, "CAPQL": _run_capql}
    for r in range(args.repeats):  # interleaved: both methods see the same machine load
        for name in ("MO-MPO",) if args.skip_capql else ("MO-MPO", "CAPQL"):
            results[name].append(runners[name](args, args.seed + r))
    walls, cpus = {}, {}
    for name, runs in results.items():
        if runs:
            walls[name], cpus[name], text = _line(name, runs, args.steps)
            print(text)
    if "CAPQL" in walls:
        print(f"MO-MPO/CAPQL CPU time per env step: {cpus['MO-MPO'] / cpus['CAPQL']:.2f}")
        print(f"MO-MPO/CAPQL wall time per env step: {walls['MO-MPO'] / walls['CAPQL']:.2f}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
