"""``morl-robot bench epic``: run time of the EPIC sample estimator (Gleave et al. 2021, §A.1.1).

For a K-objective vector reward at N_V × N_M (default the paper's 4096 × 4096), the median over
``--repeats`` of:

* canonicalisation through the general path: every reward treated as a black box of (s, a, s'),
  2 N_V N_M evaluations in vectorised chunks (the shortcut below switched off);
* canonicalisation with the next-state-only shortcut where the task declares it;
* the K × K distance matrix with ``--bootstrap`` resamples (95 % CI).

Rewards: ``--task`` (a robot task's ``objectives`` on random-rollout coverage, default
``shadow_orient``, K = 3) or ``pointmass`` (the paper's PointMass rewards, K = 6).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from morl_robot.cli.options import add_set
from morl_robot.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default="shadow_orient",
                        help="robot task whose objectives to canonicalise, or 'pointmass' (default shadow_orient)")
    parser.add_argument("--n-v", type=int, default=4096, help="N_V (default 4096)")
    parser.add_argument("--n-m", type=int, default=4096, help="N_M (default 4096)")
    parser.add_argument("--precise", action="store_true", help="N_V = N_M = 32768 (the paper's precise setting)")
    parser.add_argument("--coverage-steps", type=int, default=5000, help="random-rollout transitions (default 5000)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats; medians are printed (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the rollouts and the samples")
    add_set(parser, ("task",))


def run(args: argparse.Namespace) -> int:
    from morl_robot.evaluation import epic

    n_v, n_m = epic.PRECISE_SAMPLES if args.precise else (args.n_v, args.n_m)
    if n_v < 3 or n_m < 1 or args.repeats < 1 or args.coverage_steps < 1:
        raise UsageError("--n-v >= 3, --n-m >= 1, --repeats >= 1 and --coverage-steps >= 1 are required")
    t0 = time.perf_counter()
    if args.task == "pointmass":
        from morl_robot.experiments import epic_pointmass

        coverage = epic_pointmass.random_rollouts(args.coverage_steps, args.seed)
        reward = epic_pointmass.rewards
    else:
        from morl_robot.envs.coverage import collect_transitions
        from morl_robot.tasks.registry import load_task

        log = collect_transitions(args.task, "random", args.coverage_steps, args.seed)
        coverage = epic.Transitions(log.states, log.actions, log.next_states)
        task = load_task(args.task)
        task._num_tactile = log.states.shape[1] - len(getattr(task, "task_features", ()))
        reward = task.transition_rewards()["objectives"]
    collect_s = time.perf_counter() - t0

    def black_box(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
        return reward(s, a, s2)  # no next_state_only attribute: the general O(N_V N_M) path

    rng = np.random.default_rng(args.seed)
    general, shortcut, boot = [], [], []
    k = 0
    for _ in range(args.repeats):
        batch, ms, ma = epic.sample_batches(coverage, n_v, n_m, rng)
        t = time.perf_counter()
        canon = epic.canonicalize_samples(black_box, batch, ms, ma, 0.99)
        general.append(time.perf_counter() - t)
        t = time.perf_counter()
        fast = epic.canonicalize_samples(reward, batch, ms, ma, 0.99)
        shortcut.append(time.perf_counter() - t)
        k = canon.shape[1]
        keep = ~epic.constant_columns(canon)
        t = time.perf_counter()
        if keep.sum() >= 2:
            epic.bootstrap_distances(canon[:, keep], args.bootstrap, rng=rng)
        boot.append(time.perf_counter() - t)
        if keep.sum() >= 2:  # both paths give the same distances
            gap = np.abs(epic.distance_matrix(canon[:, keep]) - epic.distance_matrix(fast[:, keep])).max()
            if gap > 1e-2:
                raise RuntimeError(f"shortcut and general canonicalisation disagree by {gap:.3g}")
    declared = getattr(reward, "next_state_only", False)
    print(f"EPIC sample estimator, {args.task}: K = {k} objectives, N_V = {n_v}, N_M = {n_m} "
          f"({2 * n_v * n_m / 1e6:.1f} M reward evaluations), {args.repeats} repeats, medians")
    print(f"  coverage: {args.coverage_steps} random-rollout transitions in {collect_s:.1f} s")
    print(f"  canonicalise, general (black-box) path: {statistics.median(general):.2f} s "
          f"({2 * n_v * n_m / statistics.median(general) / 1e6:.1f} M evaluations/s)")
    print(f"  canonicalise, {'next-state-only shortcut' if declared else 'as declared (general)'}: "
          f"{statistics.median(shortcut):.3f} s")
    print(f"  K x K distances + {args.bootstrap} bootstrap resamples: {statistics.median(boot):.2f} s")
    print(f"  total (general path + bootstrap): {statistics.median(general) + statistics.median(boot):.2f} s")
    return 0
