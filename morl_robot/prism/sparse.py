"""Sparse reward channels (PRISM §6, Algorithm 1 lines 7-10).

Per objective k a release probability ``p_rel[k]``: at every step, with probability p_rel[k] (and
always when the episode ends) the sum accumulated since the last release is paid; otherwise 0.
``p_rel = 1`` is the dense channel, ``p_rel = 0`` pays once, at the end.  The true per-step rewards
and the release flags go into ``info`` (``prism_true_reward`` [K], ``prism_released`` [K] bool), so
whoever records the experience carries the released segments with it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np

from morl_robot.errors import ConfigError


def check_release_probabilities(p_rel: Sequence[float], num_objectives: int) -> np.ndarray:
    """``p_rel`` as ``[K]`` float64, each in [0, 1] (errors name the entry)."""
    p = np.asarray(list(p_rel), np.float64)
    if p.shape != (num_objectives,):
        raise ConfigError(f"p_rel: expected {num_objectives} release probabilities (one per objective), got {list(p_rel)}")
    bad = [i for i, x in enumerate(p) if not 0.0 <= x <= 1.0]
    if bad:
        raise ConfigError(f"p_rel[{bad[0]}]: a release probability must be in [0, 1], got {p[bad[0]]}")
    return p


class SparseRewardWrapper(gymnasium.Wrapper):
    """Pays objective k only on release (see the module docstring).

    Args:
        env: an MO-Gymnasium-style environment (vector reward ``[K]``).
        p_rel: ``[K]`` release probabilities.
        seed: the release draws' generator (reseeded by ``reset(seed=...)``).
    """

    def __init__(self, env: Any, p_rel: Sequence[float], seed: int = 0):
        super().__init__(env)
        k = int(np.prod(getattr(env.unwrapped, "reward_space", env.get_wrapper_attr("reward_space")).shape))
        self.p_rel = check_release_probabilities(p_rel, k)
        self._rng = np.random.default_rng(seed)
        self._pending = np.zeros(k, np.float64)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self._rng = np.random.default_rng([seed, 0x5EED])
        self._pending[:] = 0.0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        r = np.asarray(reward, np.float64).reshape(-1)
        self._pending += r
        released = (self._rng.random(r.shape[0]) < self.p_rel) | bool(terminated or truncated)
        paid = np.where(released, self._pending, 0.0)
        self._pending = np.where(released, 0.0, self._pending)
        info = dict(info)
        info["prism_true_reward"] = r.astype(np.float32)
        info["prism_released"] = released
        return obs, paid.astype(np.float32), terminated, truncated, info


@dataclass
class Episode:
    """One recorded episode (``T`` steps): observations ``[T, O]`` (s_t), actions ``[T, D]`` (as the
    learner sees them, normalised), released rewards ``[T, K]``, release flags ``[T, K]``, true
    per-step rewards ``[T, K]``, next observations ``[T, O]``."""

    observations: np.ndarray
    actions: np.ndarray
    released_rewards: np.ndarray
    released: np.ndarray
    true_rewards: np.ndarray
    next_observations: np.ndarray

    def __len__(self) -> int:
        return int(self.observations.shape[0])

    def segments(self, objective: int) -> list[tuple[int, int, float]]:
        """Released segments of ``objective``: ``(start, stop, R)`` with ``R`` paid at step stop − 1
        and equal to the sum of the true rewards over ``[start, stop)`` (Algorithm 1 line 11)."""
        out, start = [], 0
        for t in np.flatnonzero(self.released[:, objective]):
            out.append((start, int(t) + 1, float(self.released_rewards[t, objective])))
            start = int(t) + 1
        return out


def collect_episodes(env: Any, policy: Any, episodes: int, seed: int, decode: Any = None) -> list[Episode]:
    """Roll ``policy`` (``obs -> normalised action``; None: uniform random in [-1, 1]^D) for
    ``episodes`` episodes of a :class:`SparseRewardWrapper` env; ``decode`` maps a normalised action
    to the env's units (None: identity)."""
    rng = np.random.default_rng(seed)
    dim = int(np.prod(env.action_space.shape))
    out: list[Episode] = []
    for e in range(episodes):
        obs, _ = env.reset(seed=seed + e)
        rows: dict[str, list[np.ndarray]] = {k: [] for k in ("o", "a", "r", "f", "t", "n")}
        done = False
        while not done:
            a = rng.uniform(-1.0, 1.0, dim).astype(np.float32) if policy is None else np.asarray(policy(obs), np.float32)
            nxt, r, term, trunc, info = env.step(a if decode is None else decode(a))
            for key, v in (("o", obs), ("a", a), ("r", r), ("f", info["prism_released"]),
                           ("t", info["prism_true_reward"]), ("n", nxt)):
                rows[key].append(np.asarray(v))
            obs, done = nxt, bool(term or trunc)
        out.append(Episode(*(np.asarray(rows[k], np.float32 if k != "f" else bool) for k in "oarftn")))
    return out


def episodes_from_chunks(chunks: Sequence[Any], obs_dim: int | None = None) -> list[Episode]:
    """The episodes in experience chunks (:class:`~morl_robot.acting.experience.ExperienceChunk`, as
    the graph's actors send them: a sparse task's carry ``released``), for retraining ReSymNet on the
    graph's experience.  Rows are grouped by (actor, episode) in step order; the release flags of a
    dense objective are all true, and the true per-step rewards are unknown on this side (NaN).  An
    episode whose rows do not run from step 0 without a gap is skipped (a dropped transition would
    break its segments).  ``obs_dim``: keep the first ``obs_dim`` observation columns (an
    ε-conditioned actor's rows end with its preference features, which the reward model never sees)."""
    rows: dict[tuple[int, int], list[tuple[int, int, Any]]] = {}
    for c in chunks:
        for i in range(len(c.step)):
            rows.setdefault((int(c.actor), int(c.episode[i])), []).append((int(c.step[i]), i, c))
    out: list[Episode] = []
    for key in sorted(rows):
        steps = sorted(rows[key], key=lambda r: r[0])
        if [s for s, _, _ in steps] != list(range(len(steps))):
            continue
        k = steps[0][2].reward.shape[1]
        flags = np.ones((len(steps), k), bool)
        for t, (_, i, c) in enumerate(steps):
            if c.released is not None:
                for j, name in enumerate(c.released_objectives):
                    flags[t, c.objectives.index(name)] = bool(c.released[i, j])
        obs = np.stack([c.obs[i, :obs_dim] for _, i, c in steps]).astype(np.float32)
        out.append(Episode(obs, np.stack([c.action[i] for _, i, c in steps]).astype(np.float32),
                           np.stack([c.reward[i] for _, i, c in steps]).astype(np.float32), flags,
                           np.full((len(steps), k), np.nan, np.float32),
                           np.stack([c.next_obs[i, :obs_dim] for _, i, c in steps]).astype(np.float32)))
    return out
