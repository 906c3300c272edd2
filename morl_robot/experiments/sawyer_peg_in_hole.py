"""A short MO-MPO training run on ``morl_robot/SawyerPegInHole-v0`` (MO-MPO paper, section 6.4).

Trains one MO-MPO policy (ε_k per objective; preferences as KL bounds) with the learner's
``train`` and reports learning curves of both objectives: the exploring policy's episode returns
(``episodes.csv``) and periodic deterministic evaluations (``eval.csv``).  ``results.json`` holds
the budget (environment steps, updates, wall time), the mean per-objective return of the first
and last 10 % of training episodes, and the evaluations.
"""
from __future__ import annotations

import csv
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.evaluation.plots import plot_learning_curves
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.resources import resolve_config

TASK = "sawyer_peg_in_hole"


def _episode_returns(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    names = [c for c in (rows[0] if rows else {}) if c.startswith("return/")]
    steps = np.array([float(r["env_steps"]) for r in rows])
    returns = np.array([[float(r[c]) for c in names] for r in rows]).reshape(len(rows), len(names))
    return steps, returns, [n.split("/", 1)[1] for n in names]


def run(
    out_dir: str | os.PathLike[str],
    steps: int = 40_000,
    learner_config: str | os.PathLike[str] | None = None,
    epsilons: list[float] | None = None,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Train, then summarise and plot; returns the ``results.json`` content."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.learning import load_learner_config
    from morl_robot.training import train

    out = Path(out_dir)
    cfg_path = resolve_config("learner", learner_config or "mo_mpo_cpu_small")
    overrides = {"epsilons": list(epsilons)} if epsilons else None
    config = load_learner_config(cfg_path, overrides)
    start = time.monotonic()
    result = train(lambda: MORobotEnv(TASK), config, total_steps=steps, seed=seed, out_dir=out, progress=progress)
    wall = time.monotonic() - start
    _ep_steps, ep_returns, names = _episode_returns(out / "episodes.csv")
    tenth = max(1, len(ep_returns) // 10)
    first = ep_returns[:tenth].mean(axis=0) if len(ep_returns) else np.zeros(len(names))
    last = ep_returns[-tenth:].mean(axis=0) if len(ep_returns) else np.zeros(len(names))
    summary: dict[str, Any] = {
        "task": TASK,
        "learner_config": str(cfg_path),
        "epsilons": list(config.epsilons) or [config.default_epsilon] * len(names),
        "budget": {"env_steps": int(result.env_steps), "updates": int(result.updates), "episodes": int(result.episodes), "wall_time_s": round(wall, 1)},
        "objectives": names,
        "episode_return_first_10pct": dict(zip(names, map(float, first))),
        "episode_return_last_10pct": dict(zip(names, map(float, last))),
        "improved": {n: bool(end > begin) for n, begin, end in zip(names, first, last)},
        "evaluations": [{"env_steps": int(s), **dict(zip(names, map(float, r)))} for s, r in result.evaluations],
    }
    write_results_json(out / "results.json", summary)
    _smoothed_csv(out / "episodes.csv", out / "episodes_smoothed.csv", window=max(1, tenth // 2))
    plot_learning_curves(out / "episodes_smoothed.csv", out / "learning_curves.png", title=f"{TASK}: exploring-policy episode returns (moving mean)")
    plot_learning_curves(out / "eval.csv", out / "eval_curves.png", title=f"{TASK}: deterministic evaluation returns")
    return summary


def _smoothed_csv(src: Path, dst: Path, window: int) -> None:
    steps, returns, names = _episode_returns(src)
    kernel = np.ones(window) / window
    with open(dst, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["env_steps"] + [f"return/{n}" for n in names])
        for i in range(window - 1, len(steps)):
            w.writerow([steps[i]] + [float(np.dot(kernel, returns[i - window + 1 : i + 1, k])) for k in range(len(names))])
