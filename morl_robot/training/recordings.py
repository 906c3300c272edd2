"""A recording's transitions as the learner stores them (``train --from-recording``).

A recorded session (``--record``: ``<out>/session.mcap``) holds, per robot namespace, the
``task_step`` stream (episode, step, end flags, reward per objective, observation) and the
``command_safe`` stream (the checked command the robot executed, keyed by the step it answers).
A transition is (obs at step t, the executed action answering t, reward and obs at t + 1, the end
flags of t + 1), exactly as an actor's :class:`~morl_robot.acting.experience.ExperienceWriter`
pairs them.  The action is ``command_safe`` (what was executed, not what the policy asked for)
mapped back to the task's normalised action in [-1, 1] (the inverse of the task's action scaling,
:meth:`~morl_robot.envs.task_runner.TaskRunner.normalised_action`).  A recording without rewards
on ``task_step`` has them recomputed by the task's own reward functions
(:func:`recompute_rewards`).  docs/howto/learn_from_recordings.md.

Pure: no rclpy (the messages are decoded by ``mcap_ros2`` through :func:`~.reader.read_messages`).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.acting.experience import (
    TASK_STEP_HEADER,
    read_labelled,
    task_step_layout,
)
from morl_robot.recording.reader import RecordingError, read_messages, recording_path

#: The wire labels this module reads (morl_robot.nodes.wire; repeated here so it needs no rclpy).
STEP_KEY_LABEL = "answers_task_step"
SESSION_LABEL = "session"
#: The topics read (last name component, under any namespace).
TASK_STEP, COMMAND_SAFE = "task_step", "command_safe"


@dataclass
class RecordedTransitions:
    """Transitions of one or more recordings, in the learner's layout: ``N`` rows, ``O``
    observation, ``D`` action (normalised) and ``K`` objective components."""

    observation_labels: tuple[str, ...]
    action_labels: tuple[str, ...]
    objectives: tuple[str, ...]
    obs: np.ndarray  # (N, O)
    action: np.ndarray  # (N, D) in [-1, 1]: the executed command_safe, normalised
    reward: np.ndarray  # (N, K)
    next_obs: np.ndarray  # (N, O)
    terminated: np.ndarray  # (N,) bool
    truncated: np.ndarray  # (N,) bool
    episode: np.ndarray  # (N,) the recording's episode number
    step: np.ndarray  # (N,) the step acted on (0: the episode's first observation)
    stream: np.ndarray  # (N,) which recording / namespace (index into ``streams``)
    streams: list[str] = field(default_factory=list)  # "<file>:<namespace>"
    task_steps: int = 0  # task_step messages read (every stream)
    repeated_steps: int = 0  # task_step messages re-sent for a step already read (lockstep re-sends)
    commands: int = 0  # command_safe messages read
    unanswered_steps: int = 0  # steps not ending an episode with no executed command (no transition)
    episodes: int = 0  # episodes with an end (terminated / truncated) step in the recordings
    rewards_recomputed: bool = False

    def __len__(self) -> int:
        return int(self.obs.shape[0])

    def head(self, n: int) -> RecordedTransitions:
        """The first ``n`` transitions (in recording and stream order)."""
        if n >= len(self):
            return self
        arrays = {k: getattr(self, k)[:n] for k in ("obs", "action", "reward", "next_obs", "terminated", "truncated",
                                                   "episode", "step", "stream")}
        ends = int(np.count_nonzero(arrays["terminated"] | arrays["truncated"]))
        return dataclasses.replace(self, **arrays, episodes=ends)

    def episode_returns(self) -> list[np.ndarray]:
        """Undiscounted return (K,) of every episode whose end is among the transitions, in order."""
        out: list[np.ndarray] = []
        total = np.zeros(len(self.objectives))
        for i in range(len(self)):
            total = total + self.reward[i]
            if self.terminated[i] or self.truncated[i]:
                out.append(total)
                total = np.zeros(len(self.objectives))
            elif i + 1 < len(self) and (self.episode[i + 1], self.stream[i + 1]) != (self.episode[i], self.stream[i]):
                total = np.zeros(len(self.objectives))
        return out


def _namespace(topic: str, name: str) -> str:
    return topic[: -len(name)].rstrip("/") or "/"


@dataclass
class _Step:
    terminated: bool
    truncated: bool
    reward: np.ndarray
    obs: np.ndarray


def read_transitions(paths: Sequence[str | os.PathLike[str]], observation_labels: Sequence[str],
                     action_labels: Sequence[str], objectives: Sequence[str],
                     normalise: Callable[[np.ndarray], np.ndarray],
                     recompute: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
                     what: str = "the learner's task") -> RecordedTransitions:
    """The transitions of the recordings ``paths`` (files or run directories) for a learner of
    ``observation_labels`` / ``action_labels`` / ``objectives``.

    ``normalise``: executed action in robot units (D,) → normalised action (D,).  ``recompute``:
    ``(obs [N, O], action [N, D], next_obs [N, O]) -> reward [N, K]``, used when a recording's
    ``task_step`` carries no rewards (None: such a recording is refused).  A recording of another
    task or robot (other observation, action or objective labels) raises :class:`RecordingError`
    naming the difference."""
    obs_labels, act_labels, objs = tuple(observation_labels), tuple(action_labels), tuple(objectives)
    rows: dict[str, list[Any]] = {k: [] for k in ("obs", "action", "reward", "next_obs", "terminated", "truncated",
                                                    "episode", "step", "stream")}
    out = RecordedTransitions(obs_labels, act_labels, objs, *(np.zeros(0) for _ in range(9)))
    missing_reward: list[int] = []  # row indices whose reward must be recomputed
    for path in paths:
        p = recording_path(path)
        steps: dict[str, dict[tuple[int, int], _Step]] = {}
        actions: dict[str, dict[tuple[int, int], np.ndarray]] = {}
        lacks_rewards = False
        found_any = False
        for m in read_messages(p, topics=lambda t: t.endswith(("/" + TASK_STEP, "/" + COMMAND_SAFE))):
            found_any = True
            try:
                values, labels = read_labelled(m.message)
            except (AttributeError, ValueError) as exc:
                raise RecordingError(f"recording {p}: a malformed {m.topic} message: {exc}") from None
            if m.topic.endswith("/" + TASK_STEP):
                ns = _namespace(m.topic, TASK_STEP)
                try:
                    k, mc = task_step_layout(labels)
                except ValueError as exc:
                    raise RecordingError(f"recording {p}: {m.topic}: {exc}") from None
                h = len(TASK_STEP_HEADER)
                got_obs, got_objs = labels[h + k + mc:], tuple(lab[len("reward/"):] for lab in labels[h:h + k])
                if tuple(got_obs) != obs_labels:
                    raise RecordingError(_mismatch(p, "observation", got_obs, obs_labels, what))
                if k and got_objs != objs:
                    raise RecordingError(_mismatch(p, "objective", got_objs, objs, what))
                lacks_rewards = lacks_rewards or k == 0
                out.task_steps += 1
                reward = values[h:h + k].copy() if k else np.full(len(objs), np.nan)
                out.repeated_steps += int((int(values[0]), int(values[1])) in steps.get(ns, {}))
                steps.setdefault(ns, {})[(int(values[0]), int(values[1]))] = _Step(
                    bool(values[2]), bool(values[3]), reward, values[h + k + mc:].copy())
            else:
                ns = _namespace(m.topic, COMMAND_SAFE)
                if labels and labels[-1] == SESSION_LABEL:
                    values, labels = values[:-1], labels[:-1]
                if not labels or labels[-1] != STEP_KEY_LABEL:
                    continue  # not a lockstep answer to a task step (e.g. a hold without a key)
                key = int(values[-1])
                values, labels = values[:-1], labels[:-1]
                if tuple(labels) != act_labels:
                    continue  # a full control-mode command (a probe or a hold), not a task action
                out.commands += 1
                actions.setdefault(ns, {})[(key // 2**24, key % 2**24)] = np.asarray(values, np.float64)
        if not found_any:
            raise RecordingError(f"recording {p}: no task_step or command_safe messages (was the session "
                                 "recorded with --record while its robot ran a task?)")
        if lacks_rewards and recompute is None:
            raise RecordingError(f"recording {p}: task_step carries no rewards and {what} cannot recompute them")
        for ns in sorted(steps):
            stream = len(out.streams)
            out.streams.append(f"{p}:{ns}")
            by_key = steps[ns]
            acts = actions.get(ns, {})
            for (episode, step), s in sorted(by_key.items()):
                if s.terminated or s.truncated:
                    out.episodes += 1
                    continue
                nxt = by_key.get((episode, step + 1))
                a = acts.get((episode, step))
                if a is None or nxt is None:
                    out.unanswered_steps += int(a is None)
                    continue
                if np.isnan(nxt.reward).any():
                    missing_reward.append(len(rows["obs"]))
                rows["obs"].append(s.obs)
                rows["action"].append(normalise(a))
                rows["reward"].append(nxt.reward)
                rows["next_obs"].append(nxt.obs)
                rows["terminated"].append(nxt.terminated)
                rows["truncated"].append(nxt.truncated)
                rows["episode"].append(episode)
                rows["step"].append(step)
                rows["stream"].append(stream)
    if not rows["obs"]:
        raise RecordingError(f"recordings {', '.join(map(str, paths))}: no transitions (no task step answered by "
                             "an executed command_safe of the task's actions)")
    o, d, k = len(obs_labels), len(act_labels), len(objs)
    out.obs = np.asarray(rows["obs"], np.float64).reshape(-1, o)
    out.action = np.asarray(rows["action"], np.float64).reshape(-1, d)
    out.reward = np.asarray(rows["reward"], np.float64).reshape(-1, k)
    out.next_obs = np.asarray(rows["next_obs"], np.float64).reshape(-1, o)
    out.terminated = np.asarray(rows["terminated"], bool)
    out.truncated = np.asarray(rows["truncated"], bool)
    out.episode = np.asarray(rows["episode"], np.int64)
    out.step = np.asarray(rows["step"], np.int64)
    out.stream = np.asarray(rows["stream"], np.int64)
    if missing_reward:
        assert recompute is not None
        idx = np.asarray(missing_reward)
        out.reward[idx] = np.asarray(recompute(out.obs[idx], out.action[idx], out.next_obs[idx]),
                                     np.float64).reshape(len(idx), k)
        out.rewards_recomputed = True
    return out


def _mismatch(path: Path, kind: str, got: Sequence[str], want: Sequence[str], what: str) -> str:
    missing = [x for x in want if x not in got]
    extra = [x for x in got if x not in want]
    detail = (f"{len(got)} {kind} labels, {what} has {len(want)}"
              + (f"; missing {missing[:4]}{' …' if len(missing) > 4 else ''}" if missing else "")
              + (f"; unexpected {extra[:4]}{' …' if len(extra) > 4 else ''}" if extra else ""))
    return (f"recording {path} is of another task or robot: its {kind} labels differ from {what}'s ({detail}); "
            "train from recordings of the same task (--task)")


# --- the task's side: action scaling and rewards ----------------------------------------------

@dataclass
class TaskFrame:
    """What reading a recording for a task needs from the task itself (built once from the
    simulated task environment): the action bounds and the reward recomputation."""

    task: str
    observation_labels: tuple[str, ...]
    action_labels: tuple[str, ...]
    objectives: tuple[str, ...]
    action_low: np.ndarray
    action_high: np.ndarray
    recompute: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None

    def normalise(self, values: np.ndarray) -> np.ndarray:
        """Robot-unit action (D,) → normalised action (D,) (the task runner's mapping)."""
        span = np.where(self.action_high > self.action_low, self.action_high - self.action_low, 1.0)
        return np.clip(2.0 * (np.asarray(values, np.float64) - self.action_low) / span - 1.0, -1.0, 1.0)

    def read(self, paths: Sequence[str | os.PathLike[str]]) -> RecordedTransitions:
        """:func:`read_transitions` of ``paths`` for this task."""
        return read_transitions(paths, self.observation_labels, self.action_labels, self.objectives,
                                self.normalise, self.recompute, what=f"task '{self.task}'")


def task_frame(task_name: str, task_config: str | None = None, seed: int = 0) -> TaskFrame:
    """The :class:`TaskFrame` of a task (its simulated environment, reset once for the fixtures)."""
    from morl_robot.envs.mo_env import make_sim_robot, open_task_env
    from morl_robot.tasks.registry import load_task

    task = load_task(task_name, task_config or None)
    robot = make_sim_robot(task)
    env = open_task_env(task, robot=robot)
    try:
        env.reset(seed=seed)
        low, high = env.task.action_bounds(robot)
        obs_labels = tuple(env.observation_labels)
        recompute = reward_from_observations(env.task, obs_labels)
        return TaskFrame(task_name, obs_labels, tuple(env.action_labels), tuple(env.objective_names),
                         np.asarray(low, np.float64), np.asarray(high, np.float64), recompute)
    finally:
        env.close()


def reward_from_observations(task: Any, observation_labels: Sequence[str]
                             ) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None:
    """The task's vector reward (``transition_rewards()['objectives']``) of recorded transitions,
    its transition features read from the observations, or None when the observations do not hold
    them.  Sawyer peg-in-hole: peg tip − hole opening from ``t-0/ee_x|y|z`` and the calibrated
    hole (a fixture: the same every episode), the tared force from ``t-0/wrench_fx|fy|fz``."""
    labels = list(observation_labels)
    names = tuple(getattr(task, "transition_feature_labels", lambda: ())())
    hole = getattr(task, "_hole", None)
    if getattr(task, "name", "") != "sawyer_peg_in_hole" or hole is None or len(names) != 7:
        return None
    need = [f"t-0/ee_{a}" for a in "xyz"] + [f"t-0/wrench_{a}" for a in ("fx", "fy", "fz")]
    if not all(n in labels for n in need):
        return None
    idx = [labels.index(n) for n in need]
    hole_xyz, depth = np.asarray(hole[:3], np.float64), float(task._hole_depth)
    objectives = task.transition_rewards()["objectives"]

    def features(obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, np.float64)[:, idx]
        return np.concatenate([x[:, :3] - hole_xyz, x[:, 3:6], np.full((len(x), 1), depth)], axis=1)

    def recompute(obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
        return np.asarray(objectives(features(obs), np.asarray(action), features(next_obs)), np.float64)

    return recompute
