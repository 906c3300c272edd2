"""Learner updates of a run: as many as the samples-per-insert ratio allows, on observations
normalised with the current statistics; statistics logged; a non-finite one rolls the learner
back to the newest policy version's state and stops learning."""
from __future__ import annotations

import copy
import dataclasses
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.learning.config import MPOConfig

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
    from morl_robot.training.ingest import ExperienceIngest
    from morl_robot.training.metrics import MetricsLogger
    from morl_robot.training.run_directory import Log


class Updates:
    """:meth:`learn` and the roll-back of a :class:`LearnerSession`."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    config: MPOConfig
    learner: MOMPOLearner
    replay: SequenceReplay
    limiter: SampleToInsertRatio
    normalizer: RunningNormalizer | None
    ingest: ExperienceIngest | None
    obs_dim: int
    counters: dict[str, int]
    metrics: list[dict[str, float]]
    keep_metrics: bool
    snapshot_every: int
    diverged: str
    logger: MetricsLogger | None
    log: Log

    def can_learn(self) -> bool:
        return not self.diverged and self.limiter.can_sample(self.config.batch_size)

    def learn(self, deadline: float | None = None, max_updates: int | None = None, offline: bool = False) -> int:
        """Learner updates while the ratio allows (and ``time.monotonic() < deadline`` and fewer
        than ``max_updates``, if given); returns how many.  Statistics are logged every ``training.log_every`` updates, a new
        policy version is made every ``snapshot_every`` updates.  ``offline`` (a fixed replay, e.g.
        ``train --from-recording``): no ratio, ``max_updates`` updates once a batch fits."""
        cfg = self.config
        done = 0
        if self._good_state is None:
            self._good_state = copy.deepcopy(self.learner.state_dict())
        while ((self.can_learn() if not offline else not self.diverged and len(self.replay) >= cfg.batch_size)
               and (deadline is None or time.monotonic() < deadline) and (max_updates is None or done < max_updates)):
            batch = self._sample()
            if not offline:
                self.limiter.sample(cfg.batch_size)
            stats = self.learner.update(batch)
            done += 1
            self.counters["updates"] = self.learner.num_updates
            bad = [key for key, v in stats.items() if not np.isfinite(v)]
            if bad:
                self._roll_back(f"non-finite learner statistics at update {self.learner.num_updates}: {bad[:4]}")
                break
            if self.learner.num_updates % cfg.training.log_every == 0:
                self._log_update(stats)
            if self.snapshot_every and self.learner.num_updates - self._snapshot_updates >= self.snapshot_every:
                self.snapshot(bump=True, publish=not self.demonstrating)
        return done

    def _sample(self) -> Any:
        """A replay batch, its observations normalised with the current running statistics.  With
        PRISM's sections (``densify``, ``symreg``) also, as a dict, the raw observations the reward
        model reads and the reflection L_g applied to the raw observation, then normalised
        (``raw_observations``, ``reflected_observations``): the map acts on the physical state."""
        batch = self.replay.sample(self.config.batch_size, self.config.sequence_length)
        if self.normalizer is not None:  # raw [T+1, B, O(+K)] → the observation part normalised
            raw = batch.observations
            o = raw.copy()
            o[..., : self.obs_dim] = self.normalizer.normalize(o[..., : self.obs_dim])
            batch = dataclasses.replace(batch, observations=o.astype(np.float32))
            signs = self.learner.symreg_signs
            if self.config.densify is not None or signs is not None:
                extra: dict[str, Any] = {"raw_observations": raw}
                if signs is not None:
                    sign = signs[0][: self.obs_dim].numpy()
                    extra["reflected_observations"] = self.normalizer.normalize(
                        raw[..., : self.obs_dim] * sign).astype(np.float32)
                return {**batch.as_dict(), **extra}
        return batch

    def _log_update(self, stats: dict[str, float]) -> None:
        steps = self.counters["env_steps"]
        if self.keep_metrics:
            self.metrics.append({"update": float(self.learner.num_updates), "env_steps": float(steps), **stats})
        if self.logger is not None:
            extra = {"policy_version": float(self.counters["policy_version"]), "replay_size": float(len(self.replay)),
                     **self._crm_statistics()}
            if self.ingest is not None:
                extra.update({f"actor/{a}/transitions": float(n["transitions"])
                              for a, n in self.ingest.actor_counts().items()})
            with self._writing("metrics.csv"):
                self.logger.log_update(self.learner.num_updates, steps, {**stats, **extra})

    def _roll_back(self, reason: str) -> None:
        self.diverged = reason
        assert self._good_state is not None
        self.learner.load_state_dict(self._good_state)
        self.counters["updates"] = self._snapshot_updates = self.learner.num_updates
        self.log("error", f"{reason}; rolled back to the state of policy version {self.counters['policy_version']} "
                 f"(update {self.learner.num_updates}) and stopped updating")
