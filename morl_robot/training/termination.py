"""``training.worst_case_termination``: a stop at step t of a T-step episode is learned as
r_t + (T − t)·r_low (r_low: ``reward_space.low``), so ending early never pays for a cost objective.

The charge is undiscounted on purpose: it is the undiscounted episode return the evaluation
protocol reports that a stop must not improve (Σ γ^i r_low would charge the Sawyer's early stop only
about half).  Refused with reward machines and counterfactual experience.  The returns reported stay
the task's own.  docs/explanation/mo_mpo.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from morl_robot.errors import ConfigError

__all__ = ["WorstCaseTermination", "worst_case_termination"]


@dataclass(frozen=True)
class WorstCaseTermination:
    """``training.worst_case_termination``: a termination at episode step t (1-based) is learned as
    r_t + (T − t)·r_low, with T the episode's step limit and r_low [K] each objective's worst
    per-step reward, so ending early is never better for any objective than living on at its worst."""

    low: np.ndarray  # [K] worst per-step reward per objective
    max_steps: int  # T

    def terminal_reward(self, reward: np.ndarray, step: int) -> np.ndarray:
        """``reward`` [K] of the terminating step ``step`` plus the rest of the episode at ``low``."""
        return (np.asarray(reward, np.float64) + self.low * max(0, self.max_steps - step)).astype(np.float32)


def worst_case_termination(env: Any, k: int) -> WorstCaseTermination:
    """The worst per-step rewards (``env.reward_space.low``) and step limit (a robot task's
    ``max_steps``, else the Gymnasium spec's ``max_episode_steps``) of ``env``; a
    :class:`ConfigError` naming what is missing."""
    from morl_robot.reward_machines.env import RewardMachineEnv

    layer = env
    while layer is not None:  # the product environment ends episodes when a machine finishes, too
        if isinstance(layer, RewardMachineEnv):
            raise ConfigError("training.worst_case_termination: not for a reward-machine product environment "
                              "(an episode it ends because a machine reached its terminal state is not a "
                              "failure; charging it the worst reward would punish success)")
        layer = getattr(layer, "env", None)
    space = getattr(env, "reward_space", None) or getattr(getattr(env, "unwrapped", None), "reward_space", None)
    low = None if space is None else np.asarray(space.low, np.float64).reshape(-1)
    if low is None or low.shape != (k,) or not np.all(np.isfinite(low)):
        raise ConfigError("training.worst_case_termination: the environment declares no finite worst reward per "
                          f"objective (reward_space.low: {None if low is None else low.tolist()})")
    task = getattr(env, "task", None) or getattr(getattr(env, "unwrapped", None), "task", None)
    max_steps = getattr(task, "max_steps", None) or getattr(getattr(env, "spec", None), "max_episode_steps", None)
    if not max_steps:
        raise ConfigError("training.worst_case_termination: the environment has no step limit (a task's max_steps "
                          "or a Gymnasium max_episode_steps)")
    return WorstCaseTermination(low, int(max_steps))
