"""Experience as actors send it to the learner: the table format, the writer, the allowance.

An experience chunk is a table of R consecutive transitions of one actor (one simulated
environment of a vectorized actor is one actor id), columns (:func:`experience_columns`)::

    actor, policy_version, episode, step, obs/<o>…, action/<a>…, log_prob, reward/<k>…,
    next_obs/<o>…, terminated, truncated

``policy_version`` is the version of the learner's policy that acted (:data:`DEMONSTRATION_VERSION`
for a demonstration), ``step`` the step the action was taken at (0 = the episode's first observation), ``action``
the normalised action in [-1, 1] and ``log_prob`` its behaviour log-probability log μ(a|s), which
Retrace's importance weights need (Munos et al. 2016).

A task with environment contexts (issue 37) ends the row with a ``context`` column
(:data:`CONTEXT`: the episode's draw seed, or -1 for the one context the task names), after any
machine columns; a task with sparse objectives (task key ``sparse``, :mod:`morl_robot.envs.sparse`)
ends it with ``released/<objective>`` per sparse objective, after those (1 on the step that paid
the segment accumulated since the last release: PRISM's released segments, carried from the robot
node through the actors to the learner).  A reward-machine task (``reward_machine`` setting) adds its *machine columns* after
``truncated`` (:func:`~morl_robot.reward_machines.columns.machine_columns`): ``env_terminated`` (the environment's own termination,
not the machine's) and ``label/<proposition>`` (1 if the labelling function found it true on the
transition), one per proposition of the MORM in its order.  With the machine state one-hot in
``obs/rm_state/…`` and ``next_obs/rm_state/…`` that is what counterfactual experience (CRM) needs
to relabel a transition from every other machine state (``reward_machines/crm.py``).  On the wire the table is a labelled
``Float64MultiArray`` (``nodes/wire.py``: :func:`labelled_table` / :func:`read_table`); the learner
decodes it with :func:`split_experience` and inserts it (``training/ingest.py``), cutting the
sequence at a chunk's end (a bootstrapped break: ``truncated``, not ``terminated``).

:class:`ExperienceWriter` completes a transition when the step after the acted one arrives (its
reward, next observation and end flags; a :class:`TaskStep` is one step as an actor receives it)
and emits a chunk every ``chunk_size`` rows and at every episode end.  :class:`Allowance` is the
actor's side of the learner's samples-per-insert limit (``experience_allowance``): an actor waits
once what it sent reaches what the learner accepts.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from morl_robot.envs.sparse import RELEASED_PREFIX
from morl_robot.errors import WireError
from morl_robot.reward_machines.columns import ENV_TERMINATED, LABEL_PREFIX

#: Leading columns of an experience chunk; then ``obs/<label>``…, ``action/<label>``…,
#: ``log_prob``, ``reward/<objective>``…, ``next_obs/<label>``…, ``terminated``, ``truncated``.
EXPERIENCE_COLUMNS = ("actor", "policy_version", "episode", "step")
#: ``policy_version`` of a row acted by the task's demonstrator (learning from demonstrations,
#: :mod:`morl_robot.acting.demonstrator`); learned policies are versions 1, 2, …
DEMONSTRATION_VERSION = 0


#: The column after the machine columns of a task with contexts (issue 37; in ``task_step`` and the
#: experience): the episode's draw seed (``train#<seed>``) or -1 (the one context the task names);
#: :data:`morl_robot.contexts.CONTEXT_COLUMN`.
CONTEXT = "context"

#: The first columns of every ``task_step`` (the wire contract: morl_robot.nodes.wire.task_step_labels).
TASK_STEP_HEADER = ("episode", "step", "terminated", "truncated", "stamp")


def task_step_layout(labels: Sequence[str]) -> tuple[int, int]:
    """(K rewards, M machine columns) of a ``task_step`` layout: the header, ``reward/<objective>``
    columns, then (with a reward machine) ``env_terminated`` and ``label/…`` columns, then the observation."""
    h = len(TASK_STEP_HEADER)
    if tuple(labels[:h]) != TASK_STEP_HEADER:
        raise WireError(f"task_step must start with {TASK_STEP_HEADER}, got {tuple(labels[:h])}")
    k = 0
    while h + k < len(labels) and labels[h + k].startswith("reward/"):
        k += 1
    m = 0
    if h + k < len(labels) and labels[h + k] == ENV_TERMINATED:
        m = 1
        while h + k + m < len(labels) and labels[h + k + m].startswith(LABEL_PREFIX):
            m += 1
    if h + k + m < len(labels) and labels[h + k + m] == CONTEXT:  # a task with contexts (issue 37)
        m += 1
    while h + k + m < len(labels) and labels[h + k + m].startswith(RELEASED_PREFIX):  # PRISM: a sparse task
        m += 1
    return k, m


def read_labelled(msg: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    """(values (N,), labels) of a 1-D labelled ``Float64MultiArray`` (live or recorded; the labels
    joined by commas in its one layout dimension); raises :class:`WireError` if malformed."""
    data = np.asarray(msg.data, dtype=np.float64)
    dims = msg.layout.dim
    if len(dims) != 1:
        raise WireError(f"expected a 1-D labelled array, got {len(dims)} dimensions")
    labels = tuple(dims[0].label.split(",")) if dims[0].label else ()
    if len(labels) != data.size or dims[0].size != data.size:
        raise WireError(f"layout names {len(labels)} elements (size {dims[0].size}) but data has {data.size}")
    return data, labels


def experience_columns(observation_labels: Sequence[str], action_labels: Sequence[str],
                       objectives: Sequence[str], machine: Sequence[str] = ()) -> tuple[str, ...]:
    """The chunk columns (module docstring); ``machine``: the task's :func:`~morl_robot.reward_machines.columns.machine_columns`."""
    return (
        EXPERIENCE_COLUMNS
        + tuple(f"obs/{o}" for o in observation_labels)
        + tuple(f"action/{a}" for a in action_labels)
        + ("log_prob",)
        + tuple(f"reward/{o}" for o in objectives)
        + tuple(f"next_obs/{o}" for o in observation_labels)
        + ("terminated", "truncated")
        + tuple(machine)
    )


@dataclass(frozen=True)
class ExperienceChunk:
    """A decoded experience chunk: R consecutive transitions of one actor."""

    actor: int
    policy_version: np.ndarray  # (R,)
    episode: np.ndarray  # (R,)
    step: np.ndarray  # (R,)
    obs: np.ndarray  # (R, O)
    action: np.ndarray  # (R, D) normalised to [-1, 1]
    log_prob: np.ndarray  # (R,) behaviour log-probability log μ(a|s)
    reward: np.ndarray  # (R, K)
    next_obs: np.ndarray  # (R, O)
    terminated: np.ndarray  # (R,) bool
    truncated: np.ndarray  # (R,) bool
    objectives: tuple[str, ...]
    env_terminated: np.ndarray | None = None  # (R,) bool, reward-machine tasks only
    label: np.ndarray | None = None  # (R,) int64 bit mask σ over the propositions (bit i = label column i)
    context: np.ndarray | None = None  # (R,) the ``context`` column (tasks with contexts; issue 37)
    #: (R, S) bool: the step paid the segment of sparse objective ``released_objectives[j]`` (PRISM)
    released: np.ndarray | None = None
    released_objectives: tuple[str, ...] = ()


@functools.lru_cache(maxsize=32)
def _layout(cols: tuple[str, ...]) -> tuple[Any, ...]:
    """Where :func:`split_experience` finds each field in a table of these columns (checked once
    per column layout: a run sends the same columns with every chunk)."""
    if cols[:4] != EXPERIENCE_COLUMNS:
        raise WireError(f"experience must start with columns {EXPERIENCE_COLUMNS}, got {cols[:4]}")

    def block(prefix: str) -> list[int]:
        return [i for i, c in enumerate(cols) if c.startswith(prefix)]

    try:
        lp, te, tr = cols.index("log_prob"), cols.index("terminated"), cols.index("truncated")
    except ValueError as exc:
        raise WireError(f"experience chunk lacks a column: {exc}") from None
    o, a, r, n = block("obs/"), block("action/"), block("reward/"), block("next_obs/")
    if len(o) != len(n) or not o or not r:
        raise WireError(f"experience chunk has {len(o)} obs, {len(n)} next_obs and {len(r)} reward columns")
    lab = block(LABEL_PREFIX)
    if (ENV_TERMINATED in cols or lab) and (ENV_TERMINATED not in cols or not lab):
        raise WireError(f"experience chunk has {len(lab)} label columns and "
                        f"{'an' if ENV_TERMINATED in cols else 'no'} '{ENV_TERMINATED}' column: a "
                        "reward-machine task sends both")
    machine = cols.index(ENV_TERMINATED) if lab else None
    rel = block(RELEASED_PREFIX)
    objectives = tuple(cols[i][len("reward/"):] for i in r)
    released_names = tuple(cols[i][len(RELEASED_PREFIX):] for i in rel)
    if any(name not in objectives for name in released_names):
        raise WireError(f"experience chunk has released columns for {released_names}, not all objectives of {objectives}")
    context = cols.index(CONTEXT) if CONTEXT in cols else None
    return lp, te, tr, o, a, r, n, lab, machine, rel, objectives, released_names, context


def split_experience(table: np.ndarray, columns: Sequence[str]) -> ExperienceChunk:
    """Decode an experience table (see :func:`experience_columns`)."""
    lp, te, tr, o, a, r, n, lab, machine, rel, objectives, released_names, context = _layout(tuple(columns))
    if not table.size:
        raise WireError("empty experience chunk")
    actors = np.unique(table[:, 0])
    if actors.size != 1:
        raise WireError(f"one chunk must come from one actor, got actors {actors.tolist()}")
    env_terminated = label = None
    if machine is not None:
        env_terminated = table[:, machine] > 0.5
        label = ((table[:, lab] > 0.5).astype(np.int64) << np.arange(len(lab), dtype=np.int64)).sum(axis=1)
    return ExperienceChunk(
        actor=int(actors[0]), policy_version=table[:, 1], episode=table[:, 2], step=table[:, 3],
        obs=table[:, o], action=table[:, a], log_prob=table[:, lp], reward=table[:, r], next_obs=table[:, n],
        terminated=table[:, te] > 0.5, truncated=table[:, tr] > 0.5,
        objectives=objectives, env_terminated=env_terminated, label=label,
        context=table[:, context] if context is not None else None,
        released=table[:, rel] > 0.5 if rel else None, released_objectives=released_names,
    )


@dataclass(frozen=True)
class TaskStep:
    """One step of a task as an actor receives it (the ``task_step`` message, decoded by
    ``nodes/wire.py``): the reward for reaching it and its observation."""

    episode: int
    step: int  # 0 = the first observation of an episode (reward is zero then)
    terminated: bool
    truncated: bool
    stamp: float  # robot time of the state (s)
    reward: np.ndarray  # (K,)
    observation: np.ndarray  # (O,)
    objectives: tuple[str, ...]
    observation_labels: tuple[str, ...]
    machine: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (1 + P,) machine column values
    machine_labels: tuple[str, ...] = ()  # :func:`~morl_robot.reward_machines.columns.machine_columns` (reward-machine tasks)


@dataclass
class Pending:
    """The half of a transition known after acting: (s, a, log μ(a|s)) at (episode, step)."""

    obs: np.ndarray  # (O,)
    action: np.ndarray  # (D,) normalised
    log_prob: float
    version: int
    episode: int
    step: int
    features: np.ndarray  # (K,) preference features of an ε-conditioned actor, else (0,)


#: ``emit(table (R, C), columns)``: send one chunk.
Emit = Callable[[np.ndarray, tuple[str, ...]], None]


@dataclass
class ExperienceWriter:
    """Transitions of one actor id, completed step by step and emitted in chunks.

    Call :meth:`acted` after choosing an action on a step and :meth:`observe` with the step that
    follows; a step that does not follow the acted one (another episode, a skipped step) drops the
    pending transition (counted).  Rows go out through ``emit`` every ``chunk_size`` rows and at
    every episode end (:meth:`flush`).
    """

    actor_id: int
    chunk_size: int
    emit: Emit
    columns: tuple[str, ...] = ()
    pending: Pending | None = None
    rows: list[np.ndarray] = field(default_factory=list)
    transitions: int = 0
    dropped_transitions: int = 0
    chunks: int = 0
    sent: int = 0  # rows emitted

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size}")

    def set_columns(self, columns: tuple[str, ...]) -> None:
        """The table columns from now on (a new policy contract); the rows so far keep theirs."""
        if columns != self.columns:
            self.flush()
            self.columns = columns

    def acted(self, pending: Pending) -> None:
        self.pending = pending

    def observe(self, episode: int, step: int, reward: np.ndarray, next_obs: np.ndarray, terminated: bool,
                truncated: bool, machine: np.ndarray | Sequence[float] = ()) -> bool:
        """Close the pending transition with this step's reward and observation (if it follows it)
        and, for a reward-machine task, its machine column values (:func:`~morl_robot.reward_machines.columns.machine_values`);
        returns whether a row was added.  An episode end flushes."""
        p, self.pending = self.pending, None
        added = False
        if p is not None and step != 0 and (episode, step) == (p.episode, p.step + 1) and self.columns:
            row = np.concatenate([[float(self.actor_id), p.version, p.episode, p.step], p.obs, p.features,
                                  p.action, [p.log_prob], reward, next_obs, p.features,
                                  [float(terminated), float(truncated)], machine])
            if row.size == len(self.columns):
                self.rows.append(row)
                self.transitions += 1
                added = True
        if p is not None and not added:
            self.dropped_transitions += 1
        if len(self.rows) >= self.chunk_size or terminated or truncated:
            self.flush()
        return added

    def flush(self) -> None:
        """Emit the rows held (one chunk), if any."""
        if self.rows:
            self.emit(np.stack(self.rows), self.columns)
            self.chunks += 1
            self.sent += len(self.rows)
        self.rows = []


class Allowance:
    """The learner's ``experience_allowance`` (transitions it received, and accepted before acting
    must wait for learning) as one actor sees it.  Without an allowance yet (no learner heard
    from) acting is free.

    The rows this actor has in flight (emitted, not yet counted by the learner) come from the
    learner's acknowledgement of this actor's rows when the allowance carries one, so a learner
    whose subscription lags behind (a queue of chunks it has not read yet) cannot be overrun: the
    actor counts every row the learner has not acknowledged.  An allowance without acknowledgements
    falls back to the rows emitted since it arrived.  A learner that restarts (its acknowledgement
    goes down) and the first acknowledgement heard re-base the count: rows emitted before it were
    either counted or lost."""

    def __init__(self, slack: int) -> None:
        self.slack = int(slack)  # rows an actor may run ahead (a chunk it holds)
        self.value: tuple[float, float] | None = None
        self._sent_at_update = 0
        self._acknowledged: int | None = None  # the learner's count of this actor's rows
        self._ack_offset = 0  # rows emitted before the acknowledging learner was heard

    def update(self, received: float, allowed: float, sent: int, acknowledged: int | None = None) -> None:
        """A new allowance; ``sent`` = the rows this actor had emitted so far; ``acknowledged`` =
        the rows of this actor the learner has received (None: the allowance does not say)."""
        self.value = (float(received), float(allowed))
        self._sent_at_update = int(sent)
        if acknowledged is None:
            self._acknowledged = None
            return
        acknowledged = int(acknowledged)
        if self._acknowledged is None or acknowledged < self._acknowledged:
            self._ack_offset = int(sent) - acknowledged
        self._acknowledged = acknowledged

    def in_flight(self, sent: int) -> int:
        """Rows emitted (``sent`` in all) that the learner's count does not include yet."""
        if self._acknowledged is None:
            return int(sent) - self._sent_at_update
        return max(0, int(sent) - self._ack_offset - self._acknowledged)

    def must_wait(self, sent: int, held: int) -> bool:
        """Whether the learner's count, plus what this actor emitted that it has not counted yet
        and what the actor still holds (``held``), reaches the allowed count (+ ``slack``)."""
        if self.value is None:
            return False
        received, allowed = self.value
        return received + self.in_flight(sent) + held >= allowed + self.slack
