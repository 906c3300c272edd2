"""The learner node's turns, without ROS: the first policy for the actors, one experience message
at a time (a bad one is rejected, counted and logged, never fatal), learning for a time budget,
the allowance handed back to the actors, the end at ``total_steps``."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from morl_robot.errors import MorlRobotError, WireError
from morl_robot.learning.run_lock import WriteError
from morl_robot.training.ingest import ExperienceError, ExperienceIngest

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.learning.replay import SequenceReplay
    from morl_robot.training.run_directory import Log
    from morl_robot.training.termination import WorstCaseTermination

#: seconds between two logged experience rejections (the others are counted only).
REJECTION_LOG_INTERVAL = 5.0


class Distributed:
    """Serving distributed actors from a :class:`LearnerSession` (driven by ``nodes/learner_node.py``)."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    learner: MOMPOLearner
    replay: SequenceReplay
    normalizer: RunningNormalizer | None
    ingest: ExperienceIngest | None
    worst_case: WorstCaseTermination | None
    counters: dict[str, int]
    acknowledged: dict[int, int]
    total_steps: int
    on_allowance: Callable[[tuple[int, int, dict[int, int]]], None] | None
    clock: Callable[[], float]
    log: Log

    #: a sparse task's ``released/<objective>`` columns (PRISM; set by ``session_for_task``), which
    #: end every chunk of its actors: :meth:`accept_experience` appends them to the columns it is given
    released_columns: tuple[str, ...] = ()

    def accept_experience(self, columns: Sequence[str]) -> ExperienceIngest:
        """Take distributed actors' experience chunks with these ``columns`` (:meth:`add_chunk`),
        then :attr:`released_columns`; before :meth:`start`, so the ingest's per-actor counters are
        restored too."""
        columns = tuple(columns)
        if self.released_columns and columns[-len(self.released_columns):] != self.released_columns:
            columns += self.released_columns
        self.ingest = ExperienceIngest(self.replay, columns, self.objective_names, self.normalizer,
                                       worst_case=self.worst_case)
        return self.ingest

    def begin_serving(self) -> None:
        """Start taking actors' experience: the policy they start from (:meth:`publish_policy`);
        the diagnostics rates count from now.  The allowance goes out first: an actor acts once it
        has a policy, and one without an allowance acts freely (a learner slow to its first
        :meth:`tick` would be overrun)."""
        self._offer_allowance()
        self.publish_policy()
        self._rate_mark = (self.clock(), self.counters["env_steps"], self.learner.num_updates)
        if self.draining:  # a finished run started again
            self.log("info", f"the run already has {self.counters['env_steps']} of total_steps={self.total_steps} "
                     "env steps: finishing")

    def receive(self, read: Callable[[], tuple[Any, Sequence[str]]], split: Callable[[Any, Sequence[str]], Any]) -> bool:
        """One experience message of a distributed actor; returns whether its chunk was inserted.

        ``read()`` decodes the message into ``(table, columns)`` and ``split(table, columns)`` the
        table into a chunk (the wire format is the driver's).  A message that cannot be decoded or
        does not fit (:class:`~morl_robot.errors.WireError`, :class:`ExperienceError`, anything
        else raised while decoding or inserting) is rejected: counted in the ingest, logged (at
        most every :data:`REJECTION_LOG_INTERVAL` s; unexpected errors always) and shown by
        :meth:`diagnostics` for :data:`REJECTION_WARN_FOR` s; the session goes on.  Past
        ``total_steps`` messages are ignored.  A due checkpoint is written after an insert."""
        if self.ingest is None:
            raise RuntimeError("receive before accept_experience")
        if self.draining:
            return False
        ingest = self.ingest
        try:
            try:
                table, columns = read()
                ingest.check_columns(columns)
                chunk = split(table, columns)
            except (WireError, ExperienceError) as exc:
                ingest.reject(f"malformed experience chunk: {exc}")
                raise
            self.add_chunk(chunk)  # the ingest counts its own rejections
        except WriteError:
            raise  # the run directory cannot be written: not the chunk's fault, and fatal
        except MorlRobotError as exc:
            self._last_rejection_time = now = self.clock()
            if now - self._last_rejection_log >= REJECTION_LOG_INTERVAL:
                self._last_rejection_log = now
                self.log("warning", f"rejected experience chunk #{ingest.rejected}: {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - a bad chunk must never stop the learner
            ingest.reject(f"{type(exc).__name__}: {exc}")
            self._last_rejection_time = self.clock()
            self.log("error", f"experience chunk failed ({type(exc).__name__}: {exc}); chunk dropped")
            return False
        if self.checkpoint_due():
            self.checkpoint()
        if self.draining:
            self.log("info", f"reached total_steps={self.total_steps} ({self.counters['env_steps']} env steps): "
                     f"finishing the {self.updates_owed()} updates the samples-per-insert ratio still allows, "
                     "then writing the final artefacts")
        return True

    def tick(self, deadline: float) -> bool:
        """One learner turn: :meth:`learn` until ``deadline`` (``time.monotonic()`` s), a changed
        :meth:`allowance` to ``on_allowance``, and once ``total_steps`` is reached and nothing
        more may be learned, :meth:`finish`; returns whether the run is finished.  At the end of
        the demonstration phase (:attr:`demonstrations_complete`, or ``total_steps`` reached
        during it) the policy is cloned (:meth:`end_demonstrations`) and published as the next
        version first."""
        if self.demonstrating and (self.demonstrations_complete or self.draining):
            self.end_demonstrations()
            self.snapshot(bump=True)  # the cloned policy: what actors that demonstrated wait for
        self.learn(deadline=deadline)
        self._offer_allowance()
        if self.draining and not self.can_learn():
            self.finish("total_steps reached", publish=True)
            return True
        return False

    def _offer_allowance(self) -> None:
        """Hand :meth:`allowance` (with the per-actor acknowledgements) to ``on_allowance`` if it changed."""
        allowance = (*self.allowance(), dict(self.acknowledged))
        if allowance != self._allowance_sent and self.on_allowance is not None:
            self.on_allowance(allowance)
            self._allowance_sent = allowance
