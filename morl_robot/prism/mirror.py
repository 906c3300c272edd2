"""Reflection maps ``L_g`` (observations) and ``K_g`` (actions) per task (PRISM §4.2, Tables 4-7).

A map negates the listed indices (the paper's ``L_g(s) = (s_asym, −s_sym)``), so it is an involution
by construction (:func:`is_involution` checks it numerically).  Maps live in
``config/prism/mirror/<name>.yaml``; ``state:`` optionally gives the same reflection on a MuJoCo
environment's ``qpos``/``qvel``, which :func:`symmetry_defect` uses to test whether the environment
*is* symmetric under the map: start one copy in s and one in the reflected state, drive them with
``a_t`` and ``K_g a_t``, and compare the second's observations with the reflected first's.  ``exact:
true`` declares that the defect is zero up to integration round-off (tested); the paper's maps for
mo-hopper/walker2d/halfcheetah are an inductive bias, not a symmetry of the dynamics (``exact: false``;
their measured defect is reported by the tests and docs/explanation/prism.md).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from morl_robot.configuration import fail, load_config
from morl_robot.errors import ConfigError
from morl_robot.resources import resolve_config


@dataclass
class StateReflection:
    """The reflection on a MuJoCo model's state: negated ``qpos`` and ``qvel`` indices."""

    qpos_negate: list[int] = field(default_factory=list)
    qvel_negate: list[int] = field(default_factory=list)


@dataclass
class MirrorMap:
    """One task's reflection (see the module docstring)."""

    env_id: str = ""
    observation_dim: int = 0
    action_dim: int = 0
    observation_negate: list[int] = field(default_factory=list)
    action_negate: list[int] = field(default_factory=list)
    #: true: the environment's dynamics are symmetric under the map (tested by rollouts)
    exact: bool = False
    state: StateReflection | None = None
    source: str = ""  # where the map comes from (a table of the paper, a derivation)

    def validate(self) -> None:
        if self.observation_dim < 1 or self.action_dim < 1:
            fail("", "observation_dim", f"observation_dim and action_dim must be >= 1, got {self.observation_dim}, "
                 f"{self.action_dim}")
        for key, width in (("observation_negate", self.observation_dim), ("action_negate", self.action_dim)):
            idx = getattr(self, key)
            if len(set(idx)) != len(idx) or any(not 0 <= i < width for i in idx):
                fail("", key, f"must be distinct indices in [0, {width}), got {idx}")
        if self.exact and self.state is None:
            fail("", "exact", "an exact map needs its state: reflection (qpos_negate, qvel_negate) to be tested")

    @property
    def observation_sign(self) -> np.ndarray:
        s = np.ones(self.observation_dim, np.float32)
        s[self.observation_negate] = -1.0
        return s

    @property
    def action_sign(self) -> np.ndarray:
        s = np.ones(self.action_dim, np.float32)
        s[self.action_negate] = -1.0
        return s

    def reflect_observation(self, obs: np.ndarray) -> np.ndarray:
        """``L_g``: ``[..., O]`` → ``[..., O]``."""
        return np.asarray(obs) * self.observation_sign

    def reflect_action(self, action: np.ndarray) -> np.ndarray:
        """``K_g``: ``[..., D]`` → ``[..., D]``."""
        return np.asarray(action) * self.action_sign

    def check_spaces(self, observation_space: Any, action_space: Any) -> None:
        """The map fits the environment's spaces (flat Box observations and actions of its widths;
        a symmetric action box, so that ``K_g`` maps it onto itself)."""
        o, a = int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))
        if (o, a) != (self.observation_dim, self.action_dim):
            raise ConfigError(f"mirror map for {self.env_id!r}: declared observation/action widths "
                              f"{self.observation_dim}/{self.action_dim}, the environment has {o}/{a}")
        low, high = np.asarray(action_space.low).reshape(-1), np.asarray(action_space.high).reshape(-1)
        idx = self.action_negate
        if not np.allclose(low[idx], -high[idx]):
            raise ConfigError(f"mirror map for {self.env_id!r}: negated actions {idx} need a symmetric box, "
                              f"got low {low[idx].tolist()} high {high[idx].tolist()}")

    def symreg_section(self, weight: float) -> dict[str, Any]:
        """The learner config's ``symreg:`` mapping for this map."""
        return {"weight": float(weight), "observation_negate": list(self.observation_negate),
                "action_negate": list(self.action_negate)}


def load_mirror_map(name_or_path: str | os.PathLike[str]) -> MirrorMap:
    """``config/prism/mirror/<name>.yaml`` (or a path) into a validated :class:`MirrorMap`."""
    return load_config(MirrorMap, resolve_config("prism/mirror", name_or_path), kind="prism/mirror")


def is_involution(mirror: MirrorMap, samples: int = 64, seed: int = 0) -> bool:
    """``L_g(L_g s) = s`` and ``K_g(K_g a) = a`` on random vectors."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(samples, mirror.observation_dim))
    a = rng.normal(size=(samples, mirror.action_dim))
    return bool(np.allclose(mirror.reflect_observation(mirror.reflect_observation(s)), s)
                and np.allclose(mirror.reflect_action(mirror.reflect_action(a)), a))


def symmetry_defect(mirror: MirrorMap, env_fn: Callable[[], Any], steps: int = 50, seed: int = 0,
                    warmup: int = 10) -> float:
    """Max over the rollout of ``|obs'(L s, K a) − L_g obs'(s, a)|`` (MuJoCo, ``state:`` needed).

    Both copies are reset with ``seed``; ``warmup`` random steps move the first off its
    (often symmetric) initial state; the second is then set to the reflected ``qpos``/``qvel``, and
    both are driven by random ``a_t`` / ``K_g a_t`` until one ends or ``steps`` pass."""
    if mirror.state is None:
        raise ConfigError(f"mirror map for {mirror.env_id!r} has no state: reflection; cannot roll it out")
    rng = np.random.default_rng(seed)
    a_env, b_env = env_fn(), env_fn()
    try:
        a_env.reset(seed=seed)
        b_env.reset(seed=seed)
        dim = mirror.action_dim
        for _ in range(warmup):
            a_env.step(rng.uniform(-1, 1, dim).astype(np.float32))
        ua, ub = a_env.unwrapped, b_env.unwrapped
        qpos, qvel = ua.data.qpos.copy(), ua.data.qvel.copy()
        qpos[mirror.state.qpos_negate] *= -1.0
        qvel[mirror.state.qvel_negate] *= -1.0
        ub.set_state(qpos, qvel)
        worst = 0.0
        for _ in range(steps):
            act = rng.uniform(-1, 1, dim).astype(np.float32)
            oa, _, ta, tra, _ = a_env.step(act)
            ob, _, tb, trb, _ = b_env.step(mirror.reflect_action(act).astype(np.float32))
            worst = max(worst, float(np.abs(ob - mirror.reflect_observation(oa)).max()))
            if ta or tb or tra or trb:
                break
        return worst
    finally:
        a_env.close()
        b_env.close()
