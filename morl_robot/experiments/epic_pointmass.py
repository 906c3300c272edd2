"""The EPIC paper's PointMass comparison (Gleave et al. 2021, Figure 2), with the sample estimator.

A point on a line: state (x, ẋ), action ẍ ∈ [−1, 1], Euler steps of ``DT`` s; episodes start at
x, ẋ ~ U(−1, 1) (stochastic initial states, as in the paper) and last ``EPISODE_STEPS`` steps.
The coverage distribution is the transitions of a uniformly random policy (the paper's π_uni).

Rewards (the paper's Figure 2 key; "‡" variants add the quadratic control penalty −ẍ²):

* Sparse S(x) = 1[|x| < 0.05]
* Dense D(x, x') = S(x) + γ|x'| − |x|: S shaped with Φ = |x| (the paper writes |x'| − |x|; with
  our γ = 0.99 the γ keeps D exactly a potential shaping of S)
* Magnitude M(x) = −|x|

The equivalent pairs (S, D) and (S‡, D‡) must come out below 1e-3.  All six rewards are evaluated
as one vector reward [N, 6], so the N_V × N_M evaluations are shared (C is linear).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from morl_robot.evaluation.epic import (
    DEFAULT_SAMPLES,
    PRECISE_SAMPLES,
    Transitions,
    epic_samples,
    markdown_table,
)
from morl_robot.evaluation.plots import plot_distance_heatmap
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.records import write_bytes_atomic

GAMMA = 0.99
DT = 0.05
EPISODE_STEPS = 100
NAMES = ("S", "D", "M", "S‡", "D‡", "M‡")
EQUIVALENT = (("S", "D"), ("S‡", "D‡"))


def random_rollouts(transitions: int, seed: int = 0) -> Transitions:
    """Transitions [N] of a uniformly random policy: states (x, ẋ) [N, 2], actions ẍ [N, 1]."""
    rng = np.random.default_rng(seed)
    episodes = -(-transitions // EPISODE_STEPS)
    x = rng.uniform(-1, 1, episodes)
    v = rng.uniform(-1, 1, episodes)
    acc = rng.uniform(-1, 1, (EPISODE_STEPS, episodes))
    states, nexts = [], []
    for t in range(EPISODE_STEPS):
        s = np.stack([x, v], axis=1)
        v = v + acc[t] * DT
        x = x + v * DT
        states.append(s)
        nexts.append(np.stack([x, v], axis=1))
    s = np.concatenate(states)[:transitions]
    s2 = np.concatenate(nexts)[:transitions]
    a = acc.reshape(-1, 1)[:transitions]
    return Transitions(s, a, s2)


def rewards(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """The six PointMass rewards as one vector reward [N, 6] (order: ``NAMES``)."""
    x, x2 = np.abs(s[:, 0]), np.abs(s2[:, 0])
    sparse = (x < 0.05).astype(np.float64)
    dense = sparse + GAMMA * x2 - x
    magnitude = -x
    penalty = -np.square(a[:, 0])
    return np.stack([sparse, dense, magnitude, sparse + penalty, dense + penalty, magnitude + penalty], axis=1)


def run(out: Path, precise: bool = False, seed: int = 0, coverage_size: int = 100_000,
        resamples: int = 1000) -> dict:
    n_v, n_m = PRECISE_SAMPLES if precise else DEFAULT_SAMPLES
    coverage = random_rollouts(coverage_size, seed)
    start = time.perf_counter()
    result, _ = epic_samples({"pm": rewards}, coverage, GAMMA, n_v, n_m, resamples=resamples, seed=seed)
    seconds = time.perf_counter() - start
    result.names = list(NAMES)
    d = result.distance
    equivalent = {f"{a}-{b}": float(d[NAMES.index(a), NAMES.index(b)]) for a, b in EQUIVALENT}
    summary = {**result.to_dict(), "seconds": seconds, "precise": precise, "equivalent_pairs": equivalent,
               "coverage_transitions": coverage_size}
    out.mkdir(parents=True, exist_ok=True)
    write_results_json(out / "results.json", summary)
    write_bytes_atomic(out / "results.md", markdown_table(list(NAMES), d, result.lower, result.upper).encode())
    plot_distance_heatmap(list(NAMES), d, out / "epic_pointmass.png",
                          f"EPIC, PointMass (N_V={n_v}, N_M={n_m}; paper Fig. 2)", result.lower, result.upper)
    return summary
