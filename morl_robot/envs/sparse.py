"""Sparse reward channels of a robot task (PRISM, issue 38; docs/explanation/prism.md).

A task config's ``sparse`` key (``{objective: p_rel}``) makes those objectives pay only on
*release*: at every step with probability ``p_rel`` (and always when the episode ends) the sum
accumulated since the last release is paid, otherwise 0 (``p_rel = 0``: once, at the end).
:func:`~morl_robot.envs.mo_env.open_task_env` then opens a :class:`~morl_robot.envs.mo_env.SparseTaskEnv`
(:class:`ReleaseSchedule` per step), which writes
the true per-step rewards and the release flags into ``info`` (``prism_true_reward`` [K],
``prism_released`` [K] bool).  The released flags travel with the episode: as ``released/<objective>``
columns after the machine columns of ``task_step`` and of the experience
(:func:`released_columns`, :mod:`morl_robot.acting.experience`), so the graph's actors carry the
released segments to the learner and to recordings.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from morl_robot.errors import ConfigError

#: Prefix of the released-segment columns: ``released/<objective>`` = 1 on the step a segment is paid.
RELEASED_PREFIX = "released/"


class ReleaseSchedule:
    """Per objective a release probability ``p_rel`` ([K], 1 = dense): :meth:`pay` turns true
    per-step rewards into released ones.  ``rng`` draws the releases (reseed it per episode)."""

    def __init__(self, p_rel: Sequence[float], rng: np.random.Generator | None = None) -> None:
        self.p_rel = np.asarray(list(p_rel), np.float64)
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.pending = np.zeros(self.p_rel.shape, np.float64)

    def reset(self, rng: np.random.Generator | None = None) -> None:
        if rng is not None:
            self.rng = rng
        self.pending[:] = 0.0

    def pay(self, reward: np.ndarray, done: bool) -> tuple[np.ndarray, np.ndarray]:
        """(released rewards [K], released flags [K] bool) of a step with true ``reward`` [K]."""
        r = np.asarray(reward, np.float64).reshape(-1)
        self.pending += r
        released = (self.rng.random(r.shape[0]) < self.p_rel) | bool(done)
        paid = np.where(released, self.pending, 0.0)
        self.pending = np.where(released, 0.0, self.pending)
        return paid, released


def release_probabilities(objectives: Sequence[str], sparse: Mapping[str, float]) -> list[float]:
    """``[K]`` p_rel from a task config's ``sparse`` map (errors name the key and the objectives)."""
    unknown = [name for name in sparse if name not in objectives]
    if unknown:
        raise ConfigError(f"task key 'sparse': {unknown[0]!r} is not an objective of the task "
                          f"(objectives: {', '.join(objectives)})")
    for name, p in sparse.items():
        if not 0.0 <= float(p) <= 1.0:
            raise ConfigError(f"task key 'sparse.{name}': a release probability must be in [0, 1], got {p}")
    return [float(sparse.get(name, 1.0)) for name in objectives]


def released_objectives(env: Any) -> tuple[str, ...]:
    """The sparse objectives of a task environment (a :class:`SparseTaskEnv`, possibly inside a
    reward-machine product); () for a dense one or None."""
    if env is None:
        return ()
    inner = getattr(env, "unwrapped", env)
    return tuple(getattr(inner, "released_objectives", getattr(env, "released_objectives", ())))


def released_columns(objectives: Sequence[str]) -> tuple[str, ...]:
    """``released/<objective>`` per sparse objective (none for a dense task)."""
    return tuple(f"{RELEASED_PREFIX}{o}" for o in objectives)


def released_values(info: Mapping[str, Any], objective_names: Sequence[str], released: Sequence[str]) -> np.ndarray:
    """The released columns' values (len(released),) of a step from its ``info``; a step the env did
    not write (an episode ended from outside the task: safety stop, reset) released nothing (its
    open segment was never paid, and is not a segment)."""
    flags = info.get("prism_released")
    if flags is None:
        return np.zeros(len(released))
    index = {n: i for i, n in enumerate(objective_names)}
    return np.asarray([float(bool(flags[index[o]])) for o in released], np.float64)
