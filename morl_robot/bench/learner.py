"""``morl-robot bench learner``: MO-MPO learner updates/s on CPU for the Sawyer peg-in-hole shapes,
and the share of update time spent inside torch kernels (vs. Python overhead).

Shapes (paper section 6 / NOTES.md): observation 102, action 6, K = 2 objectives, batch 512,
N = 20 sampled actions, policy (300, 200), critic (400, 300), Retrace on sequences of 8.
Kernel share = Σ self-CPU time of ``aten::`` ops (torch.profiler) / wall time of the profiled
updates; the rest is Python, autograd bookkeeping and the allocator.
"""
from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from morl_robot.learning.replay import SequenceBatch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--obs-dim", type=int, default=102, help="observation size of the synthetic task")
    parser.add_argument("--action-dim", type=int, default=6, help="action size of the synthetic task")
    parser.add_argument("--objectives", type=int, default=2, help="number of objectives (critic heads)")
    parser.add_argument("--batch-size", type=int, default=512, help="sequences per update")
    parser.add_argument("--num-samples", type=int, default=20, help="actions sampled per state in the E-step")
    parser.add_argument("--sequence-length", type=int, default=8, help="steps per replayed sequence")
    parser.add_argument("--critic-target", choices=("retrace", "n_step"), default="retrace",
                        help="critic target: Retrace or n-step returns")
    parser.add_argument("--critic-architecture", choices=("separate", "shared"), default="separate",
                        help="one critic network per objective, or one shared torso with a head each")
    parser.add_argument("--updates", type=int, default=5, help="timed updates")
    parser.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    parser.add_argument("--no-profile", action="store_true", help="skip the kernel-share profile")
    parser.add_argument("--conditioned", action="store_true",
                        help="the ε-conditioned learner (preference box [0.01, 0.5] per objective: one exact "
                             "temperature per objective and sequence, relabelled preferences)")


def random_batch(obs_dim: int, action_dim: int, k: int, batch: int, seq: int, seed: int = 0) -> SequenceBatch:
    from morl_robot.learning.replay import (
        SequenceBatch,  # torch: imported when the bench runs, not by the CLI
    )

    rng = np.random.default_rng(seed)
    return SequenceBatch(
        observations=rng.normal(size=(seq + 1, batch, obs_dim)).astype(np.float32),
        actions=rng.uniform(-1, 1, size=(seq, batch, action_dim)).astype(np.float32),
        rewards=rng.normal(size=(seq, batch, k)).astype(np.float32),
        terminated=(rng.random((seq, batch)) < 0.01).astype(np.float32),
        truncated=np.zeros((seq, batch), np.float32),
        behaviour_log_prob=rng.normal(size=(seq, batch)).astype(np.float32),
        mask=np.ones((seq, batch), np.float32),
    )


def run(args: argparse.Namespace) -> int:
    import torch

    from morl_robot.learning.config import MPOConfig
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.networks import ActionSpec

    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = MPOConfig(batch_size=args.batch_size, num_samples=args.num_samples, sequence_length=args.sequence_length,
                    critic_target=args.critic_target)
    cfg.networks.critic_architecture = args.critic_architecture
    if args.conditioned:
        from morl_robot.learning.preferences import PreferenceConfig

        cfg.preferences = PreferenceConfig()
    learner = MOMPOLearner(args.obs_dim, ActionSpec.box(args.action_dim), args.objectives, cfg)
    batch = random_batch(learner.input_dim, args.action_dim, args.objectives, args.batch_size, args.sequence_length)
    print(f"MO-MPO learner bench{' (ε-conditioned)' if args.conditioned else ''}: obs {args.obs_dim}, action {args.action_dim}, K={args.objectives}, "
          f"batch {args.batch_size}, N={args.num_samples}, T={args.sequence_length} ({args.critic_target}), "
          f"policy {cfg.networks.policy_hidden}, critic {cfg.networks.critic_hidden} x{args.objectives} "
          f"({args.critic_architecture}), torch {torch.__version__}, {torch.get_num_threads()} threads")
    for _ in range(args.warmup):
        learner.update(batch)
    t0 = time.perf_counter()
    for _ in range(args.updates):
        learner.update(batch)
    wall = time.perf_counter() - t0
    per = wall / args.updates
    print(f"updates/s: {1.0 / per:.2f}  ({per * 1e3:.1f} ms per update, {args.updates} updates)")
    if not args.no_profile:
        from torch.profiler import ProfilerActivity, profile

        n = max(1, min(args.updates, 3))
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            t0 = time.perf_counter()
            for _ in range(n):
                learner.update(batch)
            prof_wall = time.perf_counter() - t0
        events = prof.key_averages()
        kernel_us = sum(e.self_cpu_time_total for e in events if e.key.startswith("aten::"))
        share = kernel_us * 1e-6 / prof_wall
        print(f"time in torch kernels (aten self CPU): {100 * share:.1f}% of {prof_wall / n * 1e3:.1f} ms/update "
              f"(profiled; Python/autograd overhead {100 * (1 - share):.1f}%)")
        top = sorted((e for e in events if e.key.startswith("aten::")), key=lambda e: -e.self_cpu_time_total)[:8]
        for e in top:
            print(f"  {e.key:<32s} {e.self_cpu_time_total * 1e-3 / n:9.1f} ms/update  ({e.count // n} calls)")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
