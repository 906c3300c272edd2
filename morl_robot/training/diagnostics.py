"""What a learner run reports about itself: one describing line, a status, its counters as named
values and the ingest and update rates (the learner node's diagnostics)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from morl_robot.learning.config import MPOConfig

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np

    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
    from morl_robot.serving.contract import PolicyContract
    from morl_robot.training.ingest import ExperienceIngest

#: seconds the diagnostics warn after an experience rejection.
REJECTION_WARN_FOR = 10.0
#: seconds the ingest and update rates of :meth:`Diagnostics.diagnostics` average over (at least).
RATE_WINDOW = 0.5


class Diagnostics:
    """Status, statistics and rates of a :class:`LearnerSession`."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    config: MPOConfig
    learner: MOMPOLearner
    replay: SequenceReplay
    limiter: SampleToInsertRatio
    ingest: ExperienceIngest | None
    contract: PolicyContract | None
    run_dir: Path | None
    obs_dim: int
    counters: dict[str, int]
    diverged: str
    incomplete_episodes: int
    last_returns: np.ndarray | None
    clock: Callable[[], float]

    def diagnostics(self) -> tuple[str, str, dict[str, Any]]:
        """``(level, message, values)``: :meth:`status`, :meth:`statistics` and the ingest and
        update rates (``transitions_per_s``, ``updates_per_s``, over at least
        :data:`RATE_WINDOW` s); a warning naming the rejection while one is recent."""
        now = self.clock()
        t0, s0, u0 = self._rate_mark
        if now - t0 >= RATE_WINDOW:
            steps, updates = self.counters["env_steps"], self.learner.num_updates
            self._rates = ((steps - s0) / (now - t0), (updates - u0) / (now - t0))
            self._rate_mark = (now, steps, updates)
        values = {**self.statistics(), "transitions_per_s": self._rates[0], "updates_per_s": self._rates[1]}
        level, message = self.status()
        if level == "ok" and not self.draining and now - self._last_rejection_time < REJECTION_WARN_FOR:
            assert self.ingest is not None
            return "warn", f"rejected experience: {self.ingest.last_rejection[:200]}", values
        return level, message, values

    def describe(self, config_source: str | Path = "") -> str:
        """One line saying what this session learns, how, and where it writes (``config_source``:
        where the learner configuration came from)."""
        cfg, r = self.config, self.config.replay
        source = f" ({config_source})" if config_source else ""
        what = (f"{self.contract.task} on {self.contract.robot}: {len(self.contract.observation_labels)} observations, "
                f"{len(self.contract.action_labels)} actions" if self.contract is not None
                else f"{self.obs_dim} observations, {self.learner.spec.dim} actions")
        return (f"{what}, objectives {self.objective_names}; {cfg.algorithm}{source}, batch "
                f"{cfg.batch_size}×{cfg.sequence_length}, updates after {r.min_size_to_sample} transitions at "
                f"{r.samples_per_insert:g} samples/insert; run directory {self.run_dir or '-'}")

    def status(self) -> tuple[str, str]:
        """``(level, message)`` of the session: ``error`` once diverged, else what it is doing."""
        min_size = self.config.replay.min_size_to_sample
        if self.diverged:
            return "error", self.diverged
        if self._finished:
            return "ok", "finished"
        if self.draining:
            return "ok", f"total_steps reached: finishing {self.updates_owed()} owed updates"
        if self.limiter.inserts < min_size:
            return "ok", f"waiting for experience ({self.limiter.inserts}/{min_size} transitions)"
        return "ok", "learning"

    def statistics(self) -> dict[str, Any]:
        """The session's counters as named values (diagnostics)."""
        values: dict[str, Any] = {
            "env_steps": self.counters["env_steps"], "updates": self.learner.num_updates,
            "policy_version": self.counters["policy_version"], "episodes": self.counters["episodes"],
            "chunks": self.counters["chunks"], "replay_size": len(self.replay),
            "incomplete_episodes": self.incomplete_episodes, "updates_owed": self.updates_owed(),
            "max_updates_owed": self.max_updates_owed,
        }
        values.update(self._crm_statistics())
        if self.ingest is not None:
            values["rejected_chunks"] = self.ingest.rejected
            values["actors"] = len(self.ingest.actors)
            for actor, counts in self.ingest.actor_counts().items():
                for key in ("transitions", "episodes", "policy_version"):
                    values[f"actor/{actor}/{key}"] = counts[key]
            if self.ingest.last_rejection:
                values["last_rejection"] = self.ingest.last_rejection[:300]
        if self.last_returns is not None:
            for name, v in zip(self.objective_names, self.last_returns):
                values[f"return/{name}"] = float(v)
        return values

    def _crm_statistics(self) -> dict[str, float]:
        """With CRM: ``replay_inserts`` (what the samples-per-insert ratio counted: the real steps
        and, scaled, their counterfactual experiences) and the sampled sequences the replay
        relabelled from a machine state other than the real one (``counterfactual_sequences``,
        this process)."""
        relabeller = self.replay.relabeller
        if relabeller is None:
            return {}
        return {"replay_inserts": float(self.limiter.inserts),
                "counterfactual_sequences": float(relabeller.counterfactual_sequences)}
