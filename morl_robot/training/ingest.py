"""Experience chunks of distributed actors (``acting/experience.py``'s table) → the sequence replay.

What the code cannot say: chunks of different actors interleave in the replay, so a chunk's last
row is stored ``truncated`` (a bootstrapped break: discount γ, not 0) unless it ends its episode,
as is any row not followed by its episode's next step; a chunk that does not fit is rejected
whole, counted, and nothing of it inserted.  Episode returns are summed per actor across chunks;
an episode whose beginning was not seen is reported incomplete.  docs/explanation/mo_mpo.md.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from morl_robot.errors import MorlRobotError
from morl_robot.learning.replay import SequenceReplay

if TYPE_CHECKING:  # pragma: no cover - typing only (the wire module imports rclpy)
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.training.termination import WorstCaseTermination

FLOAT32_MAX = float(np.finfo(np.float32).max)
#: actions may exceed [-1, 1] by this much (float round-off on the wire) before a chunk is rejected.
ACTION_TOLERANCE = 1e-6


class ExperienceError(MorlRobotError, ValueError):
    """An experience chunk does not fit the learner (columns, sizes, non-finite or unnormalised values)."""


class Chunk(Protocol):
    """What :class:`ExperienceIngest` reads from a decoded chunk (``wire.ExperienceChunk`` fits)."""

    actor: int
    policy_version: np.ndarray  # (R,)
    episode: np.ndarray  # (R,)
    step: np.ndarray  # (R,)
    obs: np.ndarray  # (R, O)
    action: np.ndarray  # (R, D) in [-1, 1]
    log_prob: np.ndarray  # (R,)
    reward: np.ndarray  # (R, K)
    next_obs: np.ndarray  # (R, O)
    terminated: np.ndarray  # (R,) bool
    truncated: np.ndarray  # (R,) bool
    env_terminated: np.ndarray | None  # (R,) bool, reward-machine tasks (else None)
    label: np.ndarray | None  # (R,) int64 σ masks, reward-machine tasks (else None)


@dataclass(frozen=True)
class EpisodeRecord:
    """A finished episode of one actor, assembled across its chunks."""

    actor: int
    episode: int  # the actor's episode number (``episode`` column)
    returns: np.ndarray  # (K,) undiscounted return per objective
    length: int  # transitions seen of this episode
    terminated: bool  # False: truncated (time limit / safety stop reported as truncation)
    policy_version: int  # policy version of the episode's last transition
    complete: bool  # False if the episode's beginning was not seen (see module docstring)
    context: float | None = None  # the ``context`` column (issue 37; None: the task has no contexts)


@dataclass
class IngestResult:
    """What one accepted chunk did."""

    actor: int
    transitions: int  # rows inserted into the replay
    breaks: int  # sequence breaks inserted (chunk end and discontinuities; 0 if it ended an episode)
    episodes: list[EpisodeRecord] = field(default_factory=list)


@dataclass
class ActorState:
    """Counters of one actor (and its running episode)."""

    transitions: int = 0
    chunks: int = 0
    episodes: int = 0
    incomplete_episodes: int = 0
    lost_episodes: int = 0  # episodes abandoned without an end row (lost chunks, actor restart)
    last_policy_version: int = 0
    # running episode (not checkpointed: after a restart the next episode is reported incomplete)
    episode: int | None = None
    episode_return: np.ndarray | None = None  # (K,)
    episode_length: int = 0
    episode_complete: bool = False
    after_episode_end: bool = False  # the previous row of this actor finished an episode
    last_next_obs: np.ndarray | None = None  # (O,) next observation of this actor's previous row


def _mismatch(columns: Sequence[str], expected: Sequence[str]) -> str:
    """A short description of how ``columns`` differ from ``expected``."""
    got, want = list(columns), list(expected)
    missing = [c for c in want if c not in got]
    unexpected = [c for c in got if c not in want]
    parts = []
    if len(got) != len(want):
        parts.append(f"{len(got)} columns, the learner expects {len(want)}")
    if missing:
        parts.append(f"missing {missing[:6]}{' …' if len(missing) > 6 else ''}")
    if unexpected:
        parts.append(f"unexpected {unexpected[:6]}{' …' if len(unexpected) > 6 else ''}")
    if not missing and not unexpected:
        i = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        parts.append(f"column {i} is '{got[i]}' where the learner expects '{want[i]}' (order differs)")
    return "; ".join(parts)


class ExperienceIngest:
    """Checks experience chunks against the learner's layout and inserts them into the replay.

    Args:
        replay: the learner's replay (raw observations are stored; normalisation happens at sampling).
        columns: the expected chunk columns, ``wire.experience_columns(observation_labels,
            action_labels, objective_names)`` (the node passes them: the layout lives in ``wire``).
        objective_names: K names, in the order of the ``reward/…`` columns.
        normalizer: updated with every accepted chunk's observations ``(R, O)`` (optional); with
            ε-conditioned experience (``obs/…`` columns = O observations + K preference features) its
            ``dim`` is O and only those columns update it.
        worst_case: learn terminations as the rest of the episode at the worst reward (optional).
    """

    def __init__(self, replay: SequenceReplay, columns: Sequence[str], objective_names: Sequence[str],
                 normalizer: RunningNormalizer | None = None, worst_case: WorstCaseTermination | None = None) -> None:
        self.replay = replay
        self.worst_case = worst_case
        self.columns = tuple(columns)
        self.objective_names = tuple(objective_names)
        self.normalizer = normalizer
        # a discrete action is one column, its index
        self.obs_dim, self.action_dim = replay.obs_dim, 1 if replay.discrete else replay.action_dim
        self.num_objectives = len(self.objective_names)
        if replay.num_objectives != self.num_objectives:
            raise ValueError(f"replay has {replay.num_objectives} objectives but {self.num_objectives} names were given")
        n_obs = sum(c.startswith("obs/") for c in self.columns)
        n_act = sum(c.startswith("action/") for c in self.columns)
        if (n_obs, n_act) != (self.obs_dim, self.action_dim):
            raise ValueError(f"columns name {n_obs} observation and {n_act} action components; "
                             f"the replay holds {self.obs_dim} and {self.action_dim}")
        self.actors: dict[int, ActorState] = {}
        self.transitions = 0
        self.chunks = 0
        self.episodes = 0
        self.rejected = 0
        self.last_rejection = ""

    # -- checks ------------------------------------------------------------------------------------

    def check_columns(self, columns: Sequence[str]) -> None:
        """Raise :class:`ExperienceError` unless ``columns`` are exactly the learner's layout (a
        task with contexts adds the ``context`` column after its machine columns: issue 37)."""
        if tuple(columns) != self.columns and tuple(c for c in columns if c != "context") != self.columns:
            raise ExperienceError(f"experience columns do not match the learner's task: {_mismatch(columns, self.columns)}")

    def _check_values(self, chunk: Chunk) -> int:
        r = int(np.asarray(chunk.obs).shape[0]) if np.ndim(chunk.obs) == 2 else -1
        shapes = {"obs": (r, self.obs_dim), "next_obs": (r, self.obs_dim), "action": (r, self.action_dim),
                  "reward": (r, self.num_objectives), "log_prob": (r,), "episode": (r,), "step": (r,),
                  "policy_version": (r,), "terminated": (r,), "truncated": (r,)}
        for name, shape in shapes.items():
            got = np.shape(getattr(chunk, name))
            if got != shape or r <= 0:
                raise ExperienceError(f"experience field '{name}' has shape {got}, expected {shape} "
                                      f"(O={self.obs_dim}, D={self.action_dim}, K={self.num_objectives}, R ≥ 1)")
        objectives = tuple(getattr(chunk, "objectives", self.objective_names))
        if objectives != self.objective_names:
            raise ExperienceError(f"experience objectives {list(objectives)} differ from the learner's "
                                  f"{list(self.objective_names)}")
        for name in ("obs", "next_obs", "action", "reward", "log_prob", "episode", "step", "policy_version"):
            values = np.asarray(getattr(chunk, name), dtype=np.float64)
            ok = np.isfinite(values) & (np.abs(values) <= FLOAT32_MAX)  # the replay stores float32
            if not np.all(ok):
                bad = np.argwhere(~ok)[0]
                raise ExperienceError(f"experience field '{name}' has a non-finite value at index {bad.tolist()} "
                                      f"({float(values[tuple(bad)])!r}; the replay holds finite float32 values)")
        label = getattr(chunk, "label", None)
        if self.replay.relabeller is not None and label is None:
            raise ExperienceError("the learner relabels counterfactual machine states (replay.crm) and needs each "
                                  "transition's machine columns (env_terminated, label/<proposition>…): is the "
                                  "actor running the task without its reward machine?")
        if label is not None and (np.shape(label) != (r,) or np.shape(chunk.env_terminated) != (r,)):
            raise ExperienceError(f"experience machine columns have shapes {np.shape(label)} (label) and "
                                  f"{np.shape(chunk.env_terminated)} (env_terminated), expected ({r},)")
        a = np.asarray(chunk.action, dtype=np.float64)
        if self.replay.discrete and np.any((a < 0) | (a != np.round(a))):
            raise ExperienceError(f"discrete actions must be indices >= 0, got values in [{a.min():.4g}, {a.max():.4g}]")
        if not self.replay.discrete and np.any(np.abs(a) > 1.0 + ACTION_TOLERANCE):
            raise ExperienceError(f"experience actions must be normalised to [-1, 1] (the learner's action space), "
                                  f"got values in [{a.min():.4g}, {a.max():.4g}]; robot-unit commands belong on 'command'")
        if int(chunk.actor) < 0:
            raise ExperienceError(f"actor id must be >= 0, got {chunk.actor}")
        return r

    def reject(self, reason: str) -> None:
        """Count a chunk rejected elsewhere (e.g. a malformed message the node could not decode)."""
        self.rejected += 1
        self.last_rejection = reason

    # -- insertion ---------------------------------------------------------------------------------

    def add(self, chunk: Chunk, columns: Sequence[str] | None = None, contiguous: bool = False) -> IngestResult:
        """Check ``chunk`` (and its ``columns`` if given) and insert its transitions in order;
        ``contiguous``: the actor's next chunk continues this one (one actor and nothing
        interleaves: no sequence break at its end).

        Raises :class:`ExperienceError` (after counting the rejection) if it does not fit; then
        nothing is inserted and no counter but ``rejected`` changes.
        """
        try:
            if columns is not None:
                self.check_columns(columns)
            rows = self._check_values(chunk)
        except ExperienceError as exc:
            self.reject(str(exc))
            raise
        actor = int(chunk.actor)
        state = self.actors.setdefault(actor, ActorState())
        obs = np.asarray(chunk.obs, np.float64)
        next_obs = np.asarray(chunk.next_obs, np.float64)
        action = np.asarray(chunk.action, np.float64)
        reward = np.asarray(chunk.reward, np.float64)
        log_prob = np.asarray(chunk.log_prob, np.float64)
        episode = np.asarray(chunk.episode, np.float64).astype(np.int64)
        step = np.asarray(chunk.step, np.float64).astype(np.int64)
        version = np.asarray(chunk.policy_version, np.float64).astype(np.int64)
        terminated = np.asarray(chunk.terminated, bool)
        truncated = np.asarray(chunk.truncated, bool)
        label = getattr(chunk, "label", None)
        labels = np.full(rows, -1, np.int64) if label is None else np.asarray(label, np.int64)
        env_terminated = terminated if label is None else np.asarray(chunk.env_terminated, bool)
        done = terminated | truncated
        # a row continues into the next row iff the next is the following step of the same episode
        continues = np.zeros(rows, bool)
        if rows > 1:
            same_episode = episode[1:] == episode[:-1]
            linked = np.all(np.isclose(next_obs[:-1], obs[1:], rtol=1e-9, atol=1e-9), axis=1)
            continues[:-1] = ~done[:-1] & same_episode & linked
        continues[-1] = contiguous and not done[-1]
        result = IngestResult(actor=actor, transitions=rows, breaks=0)
        if (state.episode == int(episode[0]) and state.last_next_obs is not None
                and not np.allclose(state.last_next_obs, obs[0], rtol=1e-9, atol=1e-9)):
            state.episode_complete = False  # a chunk of this episode went missing
        for i in range(rows):
            self._track_episode_start(state, int(episode[i]), int(step[i]))
            cut = not done[i] and not continues[i]  # sequence break with bootstrapping
            learned = reward[i]
            if self.worst_case is not None and terminated[i]:  # step is 0-based: the (step + 1)-th transition
                learned = self.worst_case.terminal_reward(reward[i], int(step[i]) + 1)
            self.replay.add(obs[i], int(action[i, 0]) if self.replay.discrete else action[i], learned, next_obs[i], bool(terminated[i]),
                            bool(truncated[i]) or cut, float(log_prob[i]), label=int(labels[i]),
                            env_terminated=bool(env_terminated[i]))
            result.breaks += int(cut)
            assert state.episode_return is not None
            state.episode_return += reward[i]
            state.episode_length += 1
            state.after_episode_end = False
            if done[i]:
                record = EpisodeRecord(actor=actor, episode=int(episode[i]), returns=state.episode_return.copy(),
                                       length=state.episode_length, terminated=bool(terminated[i]),
                                       policy_version=int(version[i]), complete=state.episode_complete,
                                       context=None if getattr(chunk, "context", None) is None
                                       else float(np.asarray(chunk.context)[i]))
                result.episodes.append(record)
                state.episodes += 1
                state.incomplete_episodes += int(not record.complete)
                state.episode, state.episode_return, state.after_episode_end = None, None, True
            elif cut and i + 1 < rows and int(episode[i + 1]) == int(episode[i]):
                state.episode_complete = False  # steps of this episode were lost between these rows
        state.last_next_obs = next_obs[-1].copy()
        state.transitions += rows
        state.chunks += 1
        state.last_policy_version = int(version[-1])
        self.transitions += rows
        self.chunks += 1
        self.episodes += len(result.episodes)
        if self.normalizer is not None:  # the observation part only (not an ε-conditioned actor's features)
            self.normalizer.update(obs[:, : self.normalizer.dim])
        return result

    def _track_episode_start(self, state: ActorState, episode: int, step: int) -> None:
        if state.episode == episode and state.episode_return is not None:
            return
        # a new episode for this actor: complete if the previous row ended an episode, or if its
        # step counter is at an episode start (an actor counts the first transition as step 0 or 1)
        if state.episode is not None:
            state.lost_episodes += 1
        state.episode = episode
        state.episode_return = np.zeros(self.num_objectives, np.float64)
        state.episode_length = 0
        state.episode_complete = state.after_episode_end or step <= 1

    # -- reporting and checkpoints -----------------------------------------------------------------

    def actor_counts(self) -> dict[int, dict[str, int]]:
        """Per actor: ``transitions``, ``chunks``, ``episodes``, ``incomplete_episodes``,
        ``lost_episodes`` and the newest ``policy_version`` it acted with."""
        return {a: {"transitions": s.transitions, "chunks": s.chunks, "episodes": s.episodes,
                    "incomplete_episodes": s.incomplete_episodes, "lost_episodes": s.lost_episodes,
                    "policy_version": s.last_policy_version}
                for a, s in sorted(self.actors.items())}

    def state_dict(self) -> dict[str, Any]:
        """Counters (running episodes are not kept: after a restart they are reported incomplete)."""
        return {"transitions": self.transitions, "chunks": self.chunks, "episodes": self.episodes,
                "rejected": self.rejected,
                "actors": {str(a): dict(c) for a, c in self.actor_counts().items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.transitions, self.chunks = int(state["transitions"]), int(state["chunks"])
        self.episodes, self.rejected = int(state["episodes"]), int(state["rejected"])
        self.actors = {}
        for key, c in state.get("actors", {}).items():
            self.actors[int(key)] = ActorState(
                transitions=int(c["transitions"]), chunks=int(c["chunks"]), episodes=int(c["episodes"]),
                incomplete_episodes=int(c["incomplete_episodes"]), lost_episodes=int(c.get("lost_episodes", 0)),
                last_policy_version=int(c["policy_version"]))
