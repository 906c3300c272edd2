"""How good is the learned channel? (PRISM Fig. 5; issue 38 diagnostics)

* :func:`prediction_quality` — per-step prediction r̂_t against the true per-step reward r_t of the
  sparse objective (known in simulation: the wrapper records it), Pearson correlation and the
  segment-sum error, on held-out episodes;
* :func:`plot_prediction` — one episode's r̂_t and r_t over time beside a scatter of all steps;
* :func:`epic_learned_vs_true` — the EPIC distance (Gleave et al. 2021,
  :mod:`morl_robot.evaluation.epic`) between the learned channel and the true one, where the true
  channel and the dense inputs are closed forms of (s, a, s') (:data:`CHANNELS`).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from morl_robot.prism.sparse import Episode

#: per environment: (true sparse channel, dense channels) as functions of (s [N, O], a [N, D], s' [N, O]).
#: mo-hopper-v5: forward reward x_velocity + 1 (the healthy reward) taken as s'[5] + 1 (the torso's
#: x velocity after the step, an approximation of the environment's finite-difference velocity);
#: jump 10 (z' − 1.25) + 1; control −Σ a² + 1.
RewardFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
CHANNELS: dict[str, tuple[RewardFn, RewardFn]] = {
    "mo-hopper-v5": (
        lambda s, a, s2: s2[:, 5] + 1.0,
        lambda s, a, s2: np.stack([10.0 * (s2[:, 0] - 1.25) + 1.0, 1.0 - np.sum(a * a, axis=1)], axis=1),
    ),
    "mo-halfcheetah-v5": (
        lambda s, a, s2: s2[:, 8],
        lambda s, a, s2: -np.sum(a * a, axis=1, keepdims=True),
    ),
}


@dataclass
class PredictionQuality:
    correlation: float  # Pearson r between r̂_t and r_t over all steps
    steps: int
    segment_rmse: float  # RMS of Σ_seg r̂ − R_seg
    predicted: np.ndarray  # [N]
    true: np.ndarray  # [N]

    def summary(self) -> dict[str, Any]:
        return {"correlation": self.correlation, "steps": self.steps, "segment_rmse": self.segment_rmse}


def predict(densifier: Any, episode: Episode) -> np.ndarray:
    """``[T, S]`` per-step predictions for one episode (the learner's view: released rewards in)."""
    with torch.no_grad():
        return densifier(torch.as_tensor(episode.observations), torch.as_tensor(episode.actions.reshape(len(episode), -1)),
                         torch.as_tensor(episode.released_rewards)).numpy()


def prediction_quality(densifier: Any, episodes: Sequence[Episode], column: int, objective: int) -> PredictionQuality:
    """Column ``column`` of the densifier (sparse objective ``objective``) on ``episodes``."""
    preds, trues, errs = [], [], []
    for ep in episodes:
        p = predict(densifier, ep)[:, column]
        preds.append(p)
        trues.append(ep.true_rewards[:, objective])
        errs += [float(p[a:b].sum()) - r for a, b, r in ep.segments(objective)]
    pred, true = np.concatenate(preds), np.concatenate(trues)
    corr = float(np.corrcoef(pred, true)[0, 1]) if pred.std() > 0 and true.std() > 0 else float("nan")
    return PredictionQuality(corr, int(pred.size), float(np.sqrt(np.mean(np.square(errs)))), pred, true)


def plot_prediction(quality: PredictionQuality, episode_pred: np.ndarray, episode_true: np.ndarray,
                    path: str | os.PathLike[str], title: str) -> Path:
    """Fig. 5-style: one episode's r̂_t and r_t over t (left), all steps r̂ against r (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from morl_robot.evaluation.plots import _save

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax1.plot(episode_true, label="true r_t", linewidth=1.0)
    ax1.plot(episode_pred, label="ReSymNet r̂_t", linewidth=1.0)
    ax1.set_xlabel("step t")
    ax1.set_ylabel("per-step reward")
    ax1.legend(fontsize=7)
    ax1.grid(alpha=0.3)
    ax2.scatter(quality.true, quality.predicted, s=3, alpha=0.3)
    lo, hi = float(min(quality.true.min(), quality.predicted.min())), float(max(quality.true.max(), quality.predicted.max()))
    ax2.plot([lo, hi], [lo, hi], "k--", linewidth=0.8)
    ax2.set_xlabel("true r_t")
    ax2.set_ylabel("predicted r̂_t")
    ax2.set_title(f"Pearson r = {quality.correlation:.3f} ({quality.steps} steps)", fontsize=8)
    ax2.grid(alpha=0.3)
    fig.suptitle(title, fontsize=9)
    return _save(fig, path)


def epic_learned_vs_true(densifier: Any, env_id: str, episodes: Sequence[Episode], column: int = 0,
                         gamma: float = 0.99, n_v: int = 512, n_m: int = 64, seed: int = 0) -> dict[str, Any] | None:
    """EPIC distance (with a 95 % bootstrap CI) between the learned channel and the true one on the
    transitions of ``episodes``; None when ``env_id`` has no closed-form channels in :data:`CHANNELS`."""
    if env_id not in CHANNELS:
        return None
    from morl_robot.evaluation.epic import Transitions, epic_samples

    true_fn, dense_fn = CHANNELS[env_id]
    coverage = Transitions(np.concatenate([e.observations for e in episodes]).astype(np.float64),
                           np.concatenate([e.actions.reshape(len(e), -1) for e in episodes]).astype(np.float64),
                           np.concatenate([e.next_observations for e in episodes]).astype(np.float64))
    dense_idx = densifier.dense.tolist()
    k = max(dense_idx, default=-1) + 1  # only the dense columns are read

    def learned(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
        rewards = np.zeros((len(s), k), np.float32)
        rewards[:, dense_idx] = dense_fn(s, a, s2)
        with torch.no_grad():
            return densifier(torch.as_tensor(s, dtype=torch.float32), torch.as_tensor(a, dtype=torch.float32),
                             torch.as_tensor(rewards))[:, column].double().numpy()

    result, _ = epic_samples({"true": true_fn, "learned": learned}, coverage, gamma, n_v=n_v, n_m=n_m,
                             resamples=200, seed=seed)
    i, j = result.names.index("true"), result.names.index("learned")
    out = {"distance": float(result.distance[i, j]), "n_v": n_v, "n_m": n_m, "gamma": gamma,
           "true_channel": "closed form of (s, a, s'): see morl_robot.prism.diagnostics.CHANNELS"}
    if result.lower is not None and result.upper is not None:
        out["ci95"] = [float(result.lower[i, j]), float(result.upper[i, j])]
    return out
