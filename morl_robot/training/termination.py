"""``training.worst_case_termination``: a stop is learned as the rest of the episode at the worst reward.

A task that ends an episode early (the Sawyer's force threshold, a collision) also ends its cost
objectives' penalties: a force objective can then prefer an early crash to an insertion that presses
for longer.  With this setting the learner is given, for a terminating step t of an episode limited
to T steps, r_t + (T − t)·r_low, with r_low [K] each objective's worst per-step reward
(``reward_space.low``), so stopping early is never better for any objective than living on at its
worst.  Only what the learner learns changes; the returns reported stay the task's own.

The charge is the undiscounted sum (T − t)·r_low, not Σ γ^i r_low: it is the episode return the
evaluation protocol reports (undiscounted) that a stop must not improve, and with γ = 0.99 over the
Sawyer's T = 160 steps the discounted sum would charge an early stop only about half of it
(−7 179 instead of −14 310 at t = 1), which a policy can still prefer to a long insertion that
presses.  The committed worst-case fronts were trained this way.  Not for reward-machine products or
counterfactual experience (a machine's own ending is not a failure; relabelled steps do not
terminate): both are refused.

One rule for both ways experience arrives: :func:`~morl_robot.training.loop.train` (in-process,
t counted by the loop) and :class:`~morl_robot.training.ingest.ExperienceIngest` (the learner node,
t = the chunk's ``step`` column + 1).
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
