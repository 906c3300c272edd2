"""Learning from demonstrations in a run (``training.demonstrations``): the demonstrator's
observations kept aside, then behaviour cloning on its noise-free actions and a critic warm-up
before the policy acts (docs/explanation/mo_mpo.md)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from morl_robot.learning.config import MPOConfig

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.learning.replay import SequenceReplay
    from morl_robot.training.run_directory import Log


class Demonstrations:
    """The demonstration phase of a :class:`LearnerSession` and its end (cloning, critic warm-up)."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    config: MPOConfig
    learner: MOMPOLearner
    replay: SequenceReplay
    normalizer: RunningNormalizer | None
    demonstrator: Callable[[np.ndarray], np.ndarray] | None
    counters: dict[str, int]
    seed: int
    log: Log
    _demonstrations: list[np.ndarray]  # raw observations [R, O] acted by the demonstrator
    _learned_rows: bool  # an actor acted a learned policy during the demonstration phase

    @property
    def demonstrating(self) -> bool:
        """Learning from demonstrations is configured and its demonstrations are not cloned yet."""
        return bool(self.config.training.demonstrations.episodes) and not self.counters["demonstrations_done"]

    @property
    def demonstrations_complete(self) -> bool:
        """The configured demonstration episodes are in, or an actor already acts a learned policy."""
        return (self.counters["demonstration_episodes"] >= self.config.training.demonstrations.episodes
                or self._learned_rows)

    def end_demonstrations(self) -> bool:
        """End the demonstration phase (once): behaviour cloning of the policy on the demonstrator's
        noise-free actions at the demonstrations received in this process
        (``pretrain_updates`` minibatches, :meth:`MOMPOLearner.behaviour_clone`, on observations
        normalised with the current statistics), then the critic warm-up
        (``critic_warmup_updates``, :meth:`warm_up_critic`).  Returns whether anything was learned
        (nothing after a resume past the demonstrations: they were not kept)."""
        dcfg = self.config.training.demonstrations
        self.counters["demonstrations_done"] = 1
        parts, self._demonstrations = self._demonstrations, []
        if not parts or not (dcfg.pretrain_updates or dcfg.critic_warmup_updates):
            return False
        if dcfg.pretrain_updates:
            assert self.demonstrator is not None
            obs = np.concatenate(parts)  # [N, O] raw
            actions = np.stack([np.clip(np.asarray(self.demonstrator(o), np.float64).reshape(-1), -1.0, 1.0)
                                for o in obs]).astype(np.float32)  # [N, D] noise-free
            x = self.normalizer.normalize(obs) if self.normalizer is not None else obs
            loss = self.learner.behaviour_clone(x, actions, dcfg.pretrain_updates, self.config.batch_size, self.seed,
                                                dcfg.pretrain_lr)
            self.log("info", f"behaviour cloning: {dcfg.pretrain_updates} updates on {len(obs)} demonstration steps "
                     f"({self.counters['demonstration_episodes']} episodes); last loss {loss:.4g}")
        if dcfg.critic_warmup_updates:
            self.warm_up_critic(dcfg.critic_warmup_updates)
        return True

    def warm_up_critic(self, updates: int) -> dict[str, float]:
        """``updates`` policy-evaluation-only learner steps on the replay (the critics learn the
        current policy's values; the policy and the duals do not move: ``update(…,
        improve_policy=False)``), outside the samples-per-insert ratio, then a copy of the
        critics into the targets.  Returns the last step's statistics (logged as one line)."""
        stats: dict[str, float] = {}
        for _ in range(updates):
            stats = self.learner.update(self._sample(), improve_policy=False)
        self.learner.update_targets()
        self.counters["updates"] = self.learner.num_updates
        if stats:
            q = ", ".join(f"{n} q {stats[f'q_mean/{n}']:.3g} (target {stats[f'target_mean/{n}']:.3g})"
                          for n in self.objective_names)
            self.log("info", f"critic warm-up: {updates} policy-evaluation updates on {len(self.replay)} "
                     f"transitions; {q}")
        return stats
