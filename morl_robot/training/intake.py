"""Experience into a learner run: one in-process transition or one decoded chunk of a distributed
actor into the replay, counted in the samples-per-insert ratio (with CRM scaling), finished
episodes and evaluations into the logs; the allowance actors wait on (docs/explanation/mo_mpo.md)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.acting.experience import DEMONSTRATION_VERSION
from morl_robot.learning.config import MPOConfig
from morl_robot.training.ingest import ExperienceIngest, IngestResult

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.learning.replay import SampleToInsertRatio, SequenceReplay
    from morl_robot.training.metrics import MetricsLogger


class Intake:
    """Experience, episodes and evaluations into a :class:`LearnerSession`; the ratio's bookkeeping."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    config: MPOConfig
    replay: SequenceReplay
    limiter: SampleToInsertRatio
    normalizer: RunningNormalizer | None
    ingest: ExperienceIngest | None
    obs_dim: int
    crm_inserts: int
    total_steps: int
    counters: dict[str, int]
    evaluations: list[tuple[int, np.ndarray]]
    acknowledged: dict[int, int]
    incomplete_episodes: int
    last_returns: np.ndarray | None
    logger: MetricsLogger | None
    #: the run's one environment context (the task key ``contexts``: a held-out name), the name
    #: ``episodes.csv`` gives an episode whose ``context`` column is -1 (issue 37)
    context_spec: str = ""

    def inserts_for(self, transitions: int) -> int:
        """What ``transitions`` real steps, received now, count in the samples-per-insert ratio:
        one each, and with CRM scaling the updates |U \\ F| each (one per counterfactual
        experience) once ``min_size_to_sample`` real steps are in (learning starts after the same
        real steps with or without CRM)."""
        start = self.counters["env_steps"]
        scaled = max(0, start + transitions - max(start, self.config.replay.min_size_to_sample))
        return transitions + (self.crm_inserts - 1) * scaled

    def add_transition(self, obs: np.ndarray, action: Any, reward: np.ndarray, next_obs: np.ndarray,
                       terminated: bool, truncated: bool, behaviour_log_prob: float, *, label: int = -1,
                       env_terminated: Any = None, demonstration: bool = False) -> None:
        """One environment step of an in-process actor.  ``obs``/``next_obs`` ``[O (+K)]`` as the
        networks take them (ε-conditioned: the preference features after the O observations);
        the first O update the observation statistics.  ``label``/``env_terminated``: a
        reward-machine step's σ mask and the environment's own termination (CRM needs them);
        ``demonstration``: acted by the demonstrator (kept for :meth:`end_demonstrations`)."""
        if demonstration and self.demonstrating:
            self._demonstrations.append(np.asarray(obs, np.float32)[None, : self.obs_dim])
        if self.normalizer is not None:
            self.normalizer.update(obs[: self.obs_dim])
        self.replay.add(obs, action, reward, next_obs, terminated, truncated, behaviour_log_prob,
                        label=label, env_terminated=env_terminated)
        self.limiter.insert(self.inserts_for(1))
        self.counters["env_steps"] += 1

    def record_episode(self, returns: np.ndarray, termination: str | None,
                       extra: dict[str, Any] | None = None, demonstration: bool = False) -> None:
        """A finished training episode ``returns [K]`` (``episodes.csv``); ``demonstration``: acted
        by the demonstrator."""
        self.counters["episodes"] += 1
        self.counters["demonstration_episodes"] += int(demonstration)
        self.last_returns = np.asarray(returns)
        if self.logger is not None:
            with self._writing("episodes.csv"):
                self.logger.log_episode(self.counters["env_steps"],
                                        {f"return/{n}": float(v) for n, v in zip(self.objective_names, returns)},
                                        termination, extra)

    def add_chunk(self, chunk: Any, contiguous: bool = False, termination: str | None = None) -> IngestResult:
        """A decoded experience chunk of an actor (:meth:`accept_experience` first); raises
        :class:`~morl_robot.training.ingest.ExperienceError` (counted as rejected) if it does not
        fit.  Episodes whose beginning was not seen are counted, not logged.  ``contiguous``: the
        actor's next chunk continues this one (the in-process loop: one actor, no sequence break at
        the chunk's end); ``termination``: the task's reason for an episode the chunk ends."""
        if self.ingest is None:
            raise RuntimeError("add_chunk before accept_experience")
        actor = int(chunk.actor)
        self.acknowledged[actor] = self.acknowledged.get(actor, 0) + len(chunk.episode)
        result = self.ingest.add(chunk, contiguous=contiguous)
        if self.demonstrating:
            demo = np.asarray(chunk.policy_version) == DEMONSTRATION_VERSION  # (R,) acted by the demonstrator
            if demo.any():
                self._demonstrations.append(np.asarray(chunk.obs, np.float32)[demo, : self.obs_dim])
            self._learned_rows = self._learned_rows or not demo.all()
        self.limiter.insert(self.inserts_for(result.transitions))
        self.counters["env_steps"] += result.transitions
        self.counters["chunks"] += 1
        for rec in result.episodes:
            if not rec.complete:
                self.counters["episodes"] += 1
                self.counters["demonstration_episodes"] += int(rec.policy_version == DEMONSTRATION_VERSION)
                self.incomplete_episodes += 1
                continue  # its beginning was not seen: its return would be wrong
            extra: dict[str, Any] = {"length": rec.length, "actor": rec.actor, "policy_version": rec.policy_version}
            if getattr(rec, "context", None) is not None:  # issue 37: train#<seed> (a draw) or the run's context
                from morl_robot.contexts import context_label

                extra["context"] = context_label(rec.context, self.context_spec or "nominal")
            self.record_episode(rec.returns, termination or ("terminated" if rec.terminated else "truncated"),
                                extra,
                                demonstration=rec.policy_version == DEMONSTRATION_VERSION)
        return result

    def record_evaluation(self, returns: np.ndarray) -> None:
        """A deterministic evaluation's mean returns ``[K]`` at the current env steps (``eval.csv``)."""
        self.evaluations.append((self.counters["env_steps"], returns))
        if self.logger is not None:
            with self._writing("eval.csv"):
                self.logger.log_eval(self.counters["env_steps"],
                                     {f"return/{n}": float(v) for n, v in zip(self.objective_names, returns)})

    def updates_owed(self) -> int:
        """Learner updates the samples-per-insert ratio allows now (the learner's backlog)."""
        return int(self.limiter.samples_allowed() // self.config.batch_size)

    @property
    def max_updates_owed(self) -> int:
        """The bound on :meth:`updates_owed` while actors stop at :meth:`allowance` (an actor that
        sends chunks of R transitions may overshoot it by R - 1: add ``R·spi / batch``)."""
        return math.ceil(self.limiter.max_backlog() / self.config.batch_size)

    def allowance(self) -> tuple[int, int]:
        """``(env steps received, env steps the ratio accepts now)``: actors in lockstep wait once
        the first reaches the second (capped at ``total_steps`` if > 0), so acting keeps pace with
        learning (Reverb's rate limiter blocks inserts the same way)."""
        received = self.counters["env_steps"]  # the limiter counts only this process's inserts (resumes)
        room = self.limiter.max_inserts() - self.limiter.inserts  # inserts the ratio accepts (may be < 0)
        if room > 0 and self.crm_inserts > 1:  # CRM: a real step past min_size_to_sample counts |U \ F|
            unscaled = min(room, max(0, self.config.replay.min_size_to_sample - received))
            room = unscaled + (room - unscaled) // self.crm_inserts
        allowed = received + room
        return received, min(allowed, self.total_steps) if self.total_steps else allowed

    @property
    def draining(self) -> bool:
        """``total_steps`` reached: no more experience; the owed updates are still learned."""
        return bool(self.total_steps) and self.counters["env_steps"] >= self.total_steps
