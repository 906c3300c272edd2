"""Demonstrations: a hand-written controller acting as an actor's behaviour policy.

Learning from demonstrations (``training.demonstrations`` of the learner YAML,
:class:`~morl_robot.learning.config.DemonstrationConfig`): the first episodes of a run are acted
by the task's demonstrator with Gaussian noise, kept in the replay like any experience, and the
learner clones them before the policy acts.  The in-process loop
(:func:`morl_robot.training.loop.train`) and the graph's exploring ``policy_server`` act them
with the same :class:`NoisyDemonstrator`; on the wire their experience rows carry
``policy_version`` :data:`~morl_robot.acting.experience.DEMONSTRATION_VERSION` (0: no learned
policy acted), which is how the learner tells them apart.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from morl_robot.errors import ConfigError

#: A hand-written controller: raw observation (O,) -> normalised action (D,) in [-1, 1].
Demonstrator = Callable[[np.ndarray], np.ndarray]


def task_demonstrator(task: str, action_mode: str = "absolute") -> Demonstrator:
    """The scripted controller of ``task`` (:func:`~morl_robot.evaluation.protocol.scripted_policy`)
    as a demonstrator, acting in the task's ``action_mode`` (a Shadow task's delta actions); a
    :class:`ConfigError` naming the setting for a task without one."""
    from morl_robot.evaluation.protocol import SCRIPTED_TASKS, scripted_policy

    if task not in SCRIPTED_TASKS:
        raise ConfigError(f"training.demonstrations: task '{task}' has no scripted demonstrator "
                          f"(tasks with one: {', '.join(SCRIPTED_TASKS)}); set training.demonstrations.episodes: 0")
    return scripted_policy(task, overrides={"action_mode": action_mode} if action_mode != "absolute" else None).act


class NoisyDemonstrator:
    """A demonstrator acting as a behaviour policy: a = clip(d(s) + σ·ξ, −1, 1), ξ ~ N(0, I), with
    log μ(a|s) = Σ_i log N(a_i; d_i(s), σ²) (the clipped sample scored under the unclipped Gaussian,
    as :class:`~morl_robot.learning.learner.PolicyActor` scores its own), so Retrace's truncated
    importance weights min(1, π/μ) are defined on demonstration data too."""

    def __init__(self, demonstrator: Demonstrator, std: float, seed: int):
        if not std > 0:
            raise ConfigError(f"training.demonstrations.action_noise: must be > 0, got {std}")
        self.demonstrator, self.std = demonstrator, float(std)
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, float]:
        """``(a (D,) float32 in [-1, 1], log μ(a|s))`` for the raw observation ``obs`` (O,)."""
        mean = np.asarray(self.demonstrator(obs), np.float64).reshape(-1)  # (D,)
        if not np.all(np.isfinite(mean)):
            raise ValueError(f"the demonstrator returned a non-finite action {mean.tolist()}")
        a = np.clip(mean + self.std * self.rng.standard_normal(mean.shape), -1.0, 1.0)
        z = (a - mean) / self.std
        log_mu = float(np.sum(-0.5 * z * z - math.log(self.std) - 0.5 * math.log(2.0 * math.pi)))
        return a.astype(np.float32), log_mu


def demonstration_shares(episodes: int, actors: int) -> list[int]:
    """The demonstration episodes each of ``actors`` actors acts so that together they act
    ``episodes`` (the first ``episodes mod actors`` actors one more)."""
    return [episodes // actors + int(i < episodes % actors) for i in range(actors)]
