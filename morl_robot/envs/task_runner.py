"""Episode bookkeeping for a robot that is driven by labelled commands (the robot node's core).

The robot node receives commands in robot units whose labels say what they are (see
``morl_robot/nodes/wire.py``): either the task's action components (e.g. ``vx,vy,vz`` in m/s,
Shadow actuator names in rad) or the full command of the robot's control mode.  A
:class:`TaskRunner` maps the first kind back onto the task's normalised action through
``task.action_bounds`` (the inverse of the affine map the ONNX policy applies) and steps the
:class:`~morl_robot.envs.mo_env.MORobotEnv`, so episodes, rewards, terminations and truncations
follow exactly the same code as in-process training; the second kind goes to the robot directly
(scripted probes, a robot node without a task).

A reward-machine task's environment (a :class:`~morl_robot.reward_machines.env.RewardMachineEnv`
around the task's) is stepped the same way; its records also carry the machine columns
(:attr:`TaskRunner.machine_labels`: the environment's own termination and the transition's
propositions), which go into ``task_step`` and the experience.

With an inner safety layer (:class:`~morl_robot.safety.inner.InnerSafety`), every command is
checked on the robot's newest readings before it is actuated: a command that a stopping rule
forbids is not executed; the robot holds for the period instead (:meth:`TaskRunner.hold`) and the
record names the violations (``StepRecord.held``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.envs.mo_env import MORobotEnv
from morl_robot.envs.sparse import (
    released_columns,
    released_objectives,
    released_values,
)
from morl_robot.errors import CommandError
from morl_robot.reward_machines.columns import machine_columns, machine_values
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import RobotState

if TYPE_CHECKING:
    from morl_robot.reward_machines.env import RewardMachineEnv
    from morl_robot.safety.inner import InnerSafety
    from morl_robot.safety.rules import Violation


@dataclass
class StepRecord:
    """What one control period (or a reset) produced."""

    episode: int
    step: int  # 0 right after a reset
    state: RobotState
    observation: np.ndarray | None = None  # (O,) task observation, None without a task
    reward: np.ndarray | None = None  # (K,) zeros at step 0
    terminated: bool = False
    truncated: bool = False
    termination: str | None = None  # reason: force_threshold, success, time_limit, safety, reset…
    returns: np.ndarray | None = None  # (K,) undiscounted episode return so far
    info: dict[str, Any] = field(default_factory=dict)
    held: tuple[Violation, ...] = ()  # the inner safety layer held the command: the rules it violated

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class TaskRunner:
    """A robot and (optionally) its task, stepped by labelled commands.

    Args:
        robot: any :class:`Robot` backend (MuJoCo or hardware).
        env: the task environment on ``robot`` (None: a bare robot), or a reward-machine task's
            product environment around it.
        seed: episode ``i`` resets with seed ``seed + i``; after ``reset(restart_seeds=True)`` the
            episode it starts uses ``seed`` again and the next ones ``seed + 1``, … (episode numbers
            go on counting).
        inner: the inner safety layer checked before every actuation (None: none).
    """

    def __init__(self, robot: Robot, env: MORobotEnv | RewardMachineEnv | None = None, seed: int = 0,
                 inner: InnerSafety | None = None) -> None:
        self.robot, self.env, self.seed, self.inner = robot, env, int(seed), inner
        self._seed_base = 0  # the episode whose seed is ``seed`` (0: episode i ↔ seed + i)
        self.episode = 0
        self.step_count = 0
        self.last: StepRecord | None = None
        self._returns: np.ndarray | None = None
        if env is not None:
            self._lo, self._hi = env.task.action_bounds(robot)
            self._span = np.where(self._hi > self._lo, self._hi - self._lo, 1.0)

    # --- names -------------------------------------------------------------------------------
    @property
    def action_labels(self) -> tuple[str, ...]:
        return tuple(self.env.action_labels) if self.env is not None else ()

    @property
    def command_labels(self) -> tuple[str, ...]:
        return tuple(self.robot.spec.command_labels(self.robot.control_mode))

    @property
    def objective_names(self) -> tuple[str, ...]:
        return tuple(self.env.objective_names) if self.env is not None else ()

    @property
    def observation_labels(self) -> tuple[str, ...]:
        return tuple(self.env.observation_labels) if self.env is not None else ()

    @property
    def propositions(self) -> tuple[str, ...]:
        """The MORM's propositions of a reward-machine task (none otherwise)."""
        product = getattr(self.env, "product", None)
        return tuple(product.propositions) if product is not None else ()

    @property
    def machine_labels(self) -> tuple[str, ...]:
        """The machine columns of a reward-machine task (``reward_machines.columns.machine_columns``),
        then, for a task with contexts, the ``context`` column (issue 37: every episode's context
        travels with its task steps and experience; :data:`~morl_robot.contexts.CONTEXT_COLUMN`)."""
        return (machine_columns(self.propositions) + (("context",) if self._contexts else ())
                + released_columns(released_objectives(self.env)))  # PRISM: a sparse task's released flags

    def machine_values(self, record: StepRecord) -> np.ndarray:
        """The :attr:`machine_labels` values of ``record`` ((0,) without a reward machine or contexts)."""
        props = self.propositions
        values = machine_values(record.info, len(props), record.terminated) if props else np.zeros(0)
        if self._contexts:
            values = np.append(values, getattr(self.env, "unwrapped", self.env).context_code)
        rel = released_objectives(self.env)  # PRISM: ``released/<objective>`` (morl_robot.envs.sparse)
        if rel:
            values = np.concatenate([values, released_values(record.info, self.objective_names, rel)])
        return values

    @property
    def _contexts(self) -> bool:
        return self.env is not None and getattr(getattr(self.env, "unwrapped", self.env), "contexts", None) is not None

    # --- commands ----------------------------------------------------------------------------
    def normalised_action(self, values: np.ndarray) -> np.ndarray:
        """Robot-unit action components (D,) → the task's normalised action in [-1, 1] (D,)."""
        return np.clip(2.0 * (np.asarray(values, np.float64) - self._lo) / self._span - 1.0, -1.0, 1.0)

    def kind_of(self, labels: Sequence[str]) -> str:
        """``'action'`` (task action labels) or ``'command'`` (full control-mode command labels)."""
        labels = tuple(labels)
        if self.env is not None and labels == self.action_labels:
            return "action"
        if labels == self.command_labels:
            return "command"
        expected = f"the task's action labels {list(self.action_labels)} or " if self.env is not None else ""
        raise CommandError(
            f"command labels {list(labels)} are neither {expected}the {self.robot.control_mode.value} "
            f"command labels {list(self.command_labels)}"
        )

    # --- episodes ----------------------------------------------------------------------------
    def episode_seed(self, episode: int) -> int:
        """The reset seed of episode ``episode``."""
        return self.seed + episode - self._seed_base

    def reset(self, restart_seeds: bool = False) -> StepRecord:
        """Start the next episode (the robot goes to the task's randomised start); with
        ``restart_seeds`` it takes ``seed`` and the following episodes ``seed + 1``, …"""
        self.episode += 1
        self.step_count = 0
        if restart_seeds:
            self._seed_base = self.episode
        if self.env is None:
            state = self.robot.reset(seed=self.episode_seed(self.episode))
            self.last = StepRecord(self.episode, 0, state)
            return self.last
        obs, info = self.env.reset(seed=self.episode_seed(self.episode))
        if self.inner is not None:  # the approach boxes where this episode's context put their bodies
            self.inner.place(getattr(self.robot, "context", None))
        k = self.env.reward_dim
        self._returns = np.zeros(k)
        self.last = StepRecord(self.episode, 0, self.env.state, observation=np.asarray(obs, np.float64),
                               reward=np.zeros(k), returns=self._returns.copy(), info=info)
        return self.last

    def step(self, values: np.ndarray, labels: Sequence[str], hold: bool = False) -> StepRecord:
        """Execute one labelled command for one control period (or, when the inner safety layer
        forbids it on the newest readings, hold for the period).

        A full control-mode command moves a task's robot without advancing its episode (a scripted
        probe), except with ``hold`` (the safety monitor's hold under a latched e-stop):
        then it is executed as the task action that commands it
        (:meth:`~morl_robot.tasks.base.Task.action_for_command`), so the held episode runs on to its
        time limit as one whose hold comes in the task's own labels does, instead of stepping the
        same task step forever."""
        values = np.asarray(values, np.float64)
        if values.shape != (len(labels),):
            raise CommandError(f"command has {values.size} values but {len(labels)} labels")
        if self.inner is not None:
            state = self.robot.read_state()
            decision = self.inner.check_state(state, values, labels, self.robot.control_mode)
            if decision.hold:
                self.last = replace(self.hold(), held=decision.violations)
                return self.last
            if np.all(np.isfinite(values)):
                values = self.inner.limit_approach(values, labels, state.position, state.age, state.velocity)
        if not np.all(np.isfinite(values)):
            bad = [lab for lab, v in zip(labels, values) if not np.isfinite(v)]
            raise CommandError(f"non-finite command values for {bad}")
        kind = self.kind_of(labels)
        if self.env is None:
            return self._bare_step(values)
        action = None
        if kind == "command":
            running = self.last is not None and not self.last.done
            if hold and running:
                action = self.env.task.action_for_command(values, self.robot, self.robot.read_state())
            if action is None:
                return self._bare_step(values)
        if self.last is not None and self.last.done:
            raise CommandError("the episode has ended; reset before stepping")
        obs, reward, terminated, truncated, info = self.env.step(
            self.normalised_action(values) if action is None else action)
        return self._record(obs, reward, terminated, truncated, info)

    def _bare_step(self, command: np.ndarray) -> StepRecord:
        state = self.robot.step(command)
        if self.env is None:
            self.step_count += 1
            self.last = StepRecord(self.episode, self.step_count, state)
            return self.last
        if self.last is None:  # no episode yet (its first reset was stopped): the robot holds, no task step
            return StepRecord(self.episode, self.step_count, state)
        # a full-mode command on a task robot (a scripted probe): the robot moves, the task's
        # episode clock does not advance
        self.last = StepRecord(self.episode, self.step_count, state, self.last.observation,
                               np.zeros_like(self.last.reward), returns=self.last.returns, info={})
        return self.last

    def hold(self) -> StepRecord:
        """One control period with the hold command (no fresh command); no task step is counted."""
        return self._bare_step(self.robot.hold_command())

    def _record(self, obs: np.ndarray, reward: np.ndarray, terminated: bool, truncated: bool,
                info: dict[str, Any]) -> StepRecord:
        self.step_count += 1
        r = np.asarray(reward, np.float64)
        assert self._returns is not None
        self._returns += r
        assert self.env is not None
        self.last = StepRecord(self.episode, self.step_count, self.env.state, np.asarray(obs, np.float64), r,
                               bool(terminated), bool(truncated), info.get("termination"),
                               self._returns.copy(), info)
        return self.last

    def end_episode(self, reason: str, terminated: bool = True) -> StepRecord:
        """End the running episode from outside the task (``safety``: a collision-level stop;
        ``reset``: a reset was requested).  The record is a step of its own (step + 1, so an
        actor can tell it from the one it acted on) that repeats the last observation with zero
        reward and the given termination; the robot did not move."""
        if self.last is None:
            raise CommandError("no episode is running")
        last = self.last
        self.step_count += 1
        self.last = StepRecord(last.episode, self.step_count, last.state, last.observation,
                               None if last.reward is None else np.zeros_like(last.reward),
                               terminated, not terminated, reason, last.returns, {"termination": reason})
        return self.last

    def task_step_values(self, record: StepRecord) -> np.ndarray:
        """The ``task_step`` vector (see ``wire.task_step_labels``) of ``record``."""
        assert record.observation is not None and record.reward is not None
        head = [record.episode, record.step, float(record.terminated), float(record.truncated), record.state.stamp]
        return np.concatenate([np.asarray(head, np.float64), record.reward, self.machine_values(record),
                               record.observation])

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
        else:
            self.robot.close()
