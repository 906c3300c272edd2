"""The multi-objective task interface (MO-MPO paper, section 6).

A task turns a robot's timestamped state into an observation vector and a reward vector with one
entry per objective, decides when an episode ends and why, and maps the policy's normalised
action in [-1, 1]^D to a robot command in its control mode.  A task sees only the
:class:`~morl_robot.robots.base.Robot` interface and its :class:`RobotState`, never the simulator,
so the same task runs on the MuJoCo backend and on hardware.
"""
from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from morl_robot.configuration import fail
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import ControlMode, RobotState
from morl_robot.tasks.recipe_schema import TaskRecipe


@dataclass
class TaskConfig:
    """Fields every task has (``config/tasks/<task>.yaml``)."""

    robot: str  # robot YAML name (config/robots/<robot>.yaml)
    scene: str  # MJCF scene relative to sim/
    control_period: float  # s between policy actions
    episode_duration: float  # s; the episode is truncated after this ('time_limit')
    timestep: float | None = None  # physics timestep override (s); None = the MJCF's
    #: the learner profile and session that learn the task (``morl-robot train --task T``; see
    #: :mod:`morl_robot.tasks.recipes`); None: none named
    recipe: TaskRecipe | None = None
    #: sparse objectives: ``{objective: p_rel}``, paid only on release (probability p_rel per step,
    #: always at episode end; 0 = once, at the end); {} = every objective dense (PRISM, issue 38:
    #: :mod:`morl_robot.envs.sparse`, docs/explanation/prism.md)
    sparse: dict[str, float] = field(default_factory=dict)
    #: environment contexts (issue 37; config/contexts/<task>.yaml): 'train' randomises every episode
    #: over the file's training distribution (domain randomisation), a held-out name fixes one context,
    #: 'PATH.yaml' / 'PATH.yaml:NAME' another file's; '' = the nominal robot (docs/howto/generalization.md)
    contexts: str = ""
    #: append the episode's context (its parameters normalised to the training ranges,
    #: ``context/<parameter>``) to the observation: a privileged input a deployed robot cannot
    #: give, so off by default (docs/howto/generalization.md)
    contexts_observed: bool = False

    def validate(self) -> None:
        if self.control_period <= 0:
            fail("", "control_period", f"must be positive, got {self.control_period}")
        if self.episode_duration < self.control_period:
            fail("", "episode_duration", f"must be at least one control period ({self.control_period} s)")


#: A reward as a pure function of a batch of transitions in a task's features:
#: (s [N, F], a [N, D], s' [N, F]) -> [N] or [N, K].
TransitionReward = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def next_state_reward(fn: TransitionReward) -> TransitionReward:
    """Declare that ``fn`` reads only s' (not s or a): EPIC then canonicalises it exactly in
    O(N_V + N_M) instead of O(N_V N_M), since E[R(s', A, S')] is then one constant
    (:func:`morl_robot.evaluation.epic.canonicalize_samples`).  Tests check the declaration."""
    fn.next_state_only = True  # type: ignore[attr-defined]
    return fn


@dataclass(frozen=True)
class Transition:
    """What one task step produced: reward (K,), termination reason or None, extra info."""

    reward: np.ndarray
    termination: str | None
    info: dict[str, Any]


@dataclass(frozen=True)
class Quantity:
    """One named part of a task's observation, action or reward, as the docs state it: ``size``
    components, in ``unit`` ("" unitless), within ``range`` (text, e.g. "[0, 1]")."""

    name: str
    unit: str
    range: str
    meaning: str
    size: int = 1


@dataclass(frozen=True)
class TaskDescription:
    """A task's reference card (:meth:`Task.describe`), rendered into ``docs/reference/tasks.md``.

    The observation is ``frames`` copies of ``observations`` (newest first); ``actions`` are
    normalised to [-1, 1] (``range`` gives what ±1 commands); ``rewards`` has one entry per
    objective, in order; ``terminations`` lists (reason, when) of the early ends."""

    name: str
    robot: str
    summary: str
    control_mode: str
    control_rate_hz: float
    episode_s: float
    observations: tuple[Quantity, ...]
    actions: tuple[Quantity, ...]
    rewards: tuple[Quantity, ...]
    terminations: tuple[tuple[str, str], ...] = ()
    success: str = ""  # what info['success'] means ("": the task reports none)
    scripted: str | None = None  # what the task's hand-written controller does (None: none)
    frames: int = 1

    @property
    def observation_size(self) -> int:
        return self.frames * sum(q.size for q in self.observations)

    @property
    def action_size(self) -> int:
        return sum(q.size for q in self.actions)

    @property
    def objective_names(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.rewards)


@dataclass(frozen=True)
class CameraView:
    """A free camera that frames a task's work in its videos (:mod:`morl_robot.rendering`):
    the point looked at (m, world frame), distance (m), azimuth and elevation (degrees), and the
    materials drawn translucent (drawing only) so what happens inside shows."""

    lookat: tuple[float, float, float]
    distance: float
    azimuth: float
    elevation: float
    translucent: tuple[str, ...] = ()


#: A hand-written controller (:meth:`Task.scripted_policy`): what it acts with, and what it does.
ScriptedController = tuple[Callable[[np.ndarray], np.ndarray], str]


class Task(abc.ABC):
    """One multi-objective task on one robot; holds per-episode state (frame stacks, latches)."""

    name: ClassVar[str]
    robot_name: ClassVar[str]
    objective_names: ClassVar[tuple[str, ...]]
    control_mode: ClassVar[ControlMode]
    #: the camera of the task's videos (None: one framing the whole model)
    camera: ClassVar[CameraView | None] = None

    def __init__(self, config: TaskConfig) -> None:
        self.config = config

    # --- sizes and names ------------------------------------------------------------------
    @property
    def num_objectives(self) -> int:
        return len(self.objective_names)

    @property
    def max_steps(self) -> int:
        return round(self.config.episode_duration / self.config.control_period)

    @property
    def control_rate(self) -> float:
        return 1.0 / self.config.control_period

    @property
    @abc.abstractmethod
    def reward_lower(self) -> tuple[float, ...]:
        """Per-step lower bound of each objective's reward (K,), documented in the README."""

    @property
    @abc.abstractmethod
    def reward_upper(self) -> tuple[float, ...]:
        """Per-step upper bound of each objective's reward (K,)."""

    @property
    @abc.abstractmethod
    def action_labels(self) -> tuple[str, ...]:
        """Names of the policy action components (normalised to [-1, 1])."""

    @property
    def action_mode(self) -> str:
        """``absolute`` (the action is the control mode's command) or ``delta`` (its change from the
        measured state; labels ``<actuator>/delta``): how a policy contract declares the action."""
        return "absolute"

    def action_bounds(self, robot: Robot) -> tuple[np.ndarray, np.ndarray]:
        """Robot-unit bounds (D,), (D,) of each action component: normalised -1 and +1 map to
        these in :meth:`command` (affinely).  Action labels name components of the control
        mode's command (Cartesian axes, actuator names), so the bounds are the robot's command
        bounds for those components.  This is the mapping the ONNX policy applies in its graph
        and the robot node inverts."""
        names = robot.spec.command_labels(self.control_mode)
        lo, hi = robot.spec.command_bounds(self.control_mode)
        idx = [names.index(a) for a in self.action_labels]
        return lo[idx].copy(), hi[idx].copy()

    def action_units(self) -> str:
        """Unit of the action components in robot units (the control mode's unit)."""
        return CONTROL_MODE_UNITS[self.control_mode]

    @abc.abstractmethod
    def observation_labels(self, robot: Robot) -> tuple[str, ...]:
        """Names of the observation vector's components, in order."""

    # --- episode --------------------------------------------------------------------------
    @abc.abstractmethod
    def initial_configuration(self, robot: Robot, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, Any]]:
        """Randomised start: (joint positions by name, scene joint values by name)."""

    def begin_episode(self, robot: Robot, state: RobotState) -> None:
        """Reset per-episode state after the robot has been reset to ``state``."""

    @abc.abstractmethod
    def command(self, action: np.ndarray, robot: Robot, state: RobotState) -> np.ndarray:
        """Robot command (in ``control_mode``) for normalised ``action`` (D,) in [-1, 1]."""

    def action_for_command(self, command: np.ndarray, robot: Robot, state: RobotState) -> np.ndarray | None:
        """The normalised action (D,) whose :meth:`command` in ``state`` is the full control-mode
        ``command`` (robot units, in the order of ``robot.spec.command_labels(control_mode)``), as
        near as the action's bounds allow; None when this task's actions cannot express it.  The
        robot node executes the safety monitor's hold this way when it comes in the control mode's
        labels rather than the task's (a relative-action task), so a held episode's clock runs on to
        its time limit.  The default: None (a task whose hold is in its own action labels)."""
        return None

    @abc.abstractmethod
    def observe(self, state: RobotState) -> np.ndarray:
        """Observation (O,) float64 for ``state``."""

    @abc.abstractmethod
    def evaluate(self, state: RobotState, action: np.ndarray) -> Transition:
        """Reward vector (K,), termination reason and info after the step that led to ``state``."""

    # --- rewards as pure functions of transitions -------------------------------------------------
    @abc.abstractmethod
    def transition_feature_labels(self) -> tuple[str, ...]:
        """Names of :meth:`transition_features` (task-frame quantities with units in the task's
        module docstring)."""

    @abc.abstractmethod
    def transition_features(self, state: RobotState) -> np.ndarray:
        """The reading of ``state`` (F,) that the task's rewards need, in the task's frame (tared,
        relative to the episode's fixtures), so that a reward is a pure function of a stored
        transition (features s, normalised action a, features s') and can be evaluated on
        transitions it did not generate (EPIC, :mod:`morl_robot.evaluation.epic`)."""

    @abc.abstractmethod
    def transition_rewards(self) -> dict[str, TransitionReward]:
        """Named rewards as pure vectorised functions of feature batches (s [N, F], a [N, D],
        s' [N, F]) → [N] (or [N, K]): every objective under its own name, ``objectives`` for the
        task's vector reward [N, K] (what :meth:`evaluate` returns) and variants worth comparing."""

    def contact_force(self, info: dict[str, Any]) -> float | None:
        """The contact force (N) a step's ``info`` reports, as the evaluation protocol measures it
        (peak and mean per episode); None for a task without a force sensor."""
        return None

    #: How far an episode got, read from the last step's ``info`` by :meth:`progress`: (name, unit),
    #: e.g. ("insertion depth", "mm").  None: the task has no such measure.  It shows near misses
    #: that a success rate (a threshold on it) hides.
    progress_measure: ClassVar[tuple[str, str] | None] = None

    def progress(self, info: dict[str, Any]) -> float | None:
        """The value of :attr:`progress_measure` in a step's ``info`` (None: not reported)."""
        return None

    # --- per-task behaviour the rest of the stack asks the task for (docs/howto/add_task.md) --------
    #: A plugin task's default YAML, relative to its module (an entry-point task ships it as package
    #: data); None: ``config/tasks/<name>.yaml`` or the YAML that names the class.
    config_file: ClassVar[str | None] = None

    #: Units of the task's own observation labels (those that are not the robot's joints, sensors or
    #: end-effector pose, e.g. {"target_dx": "m"}); the policy contract records them.
    observation_units: ClassVar[dict[str, str]] = {}

    #: The objectives a preference front trades off, (goal, cost), e.g. ("task", "pain"); None: the
    #: objectives are aligned (a front sweep puts one ε on every objective and has no cost axis).
    tradeoff: ClassVar[tuple[str, str] | None] = None

    #: What the task's hand-written controller does (:meth:`scripted_policy`: ``morl-robot evaluate
    #: scripted``, demonstrations); None: the task has none.
    scripted: ClassVar[str | None] = None
    #: The keyword options :meth:`scripted_policy` takes (e.g. ``("gain", "clearance")``).
    scripted_options: ClassVar[tuple[str, ...]] = ()

    def scripted_policy(self, env: Any, **options: float) -> ScriptedController:
        """A hand-written controller acting in ``env`` (a :class:`~morl_robot.envs.mo_env.MORobotEnv`
        of this task, reset by the caller only if the controller needs it): (observation → normalised
        action, description).  Only for a task whose :attr:`scripted` is set."""
        raise NotImplementedError(f"task '{self.name}' has no scripted controller")

    def describe(self) -> TaskDescription:
        """The task's observations, actions and rewards with units and ranges (for the docs; a test
        checks it against the built environment).  Optional for a plugin task."""
        raise NotImplementedError(f"task '{self.name}' ({type(self).__qualname__}) has no describe()")

    def _description(self, summary: str, observations: list[Quantity], actions: list[Quantity],
                     rewards: list[Quantity], **more: Any) -> TaskDescription:
        """A :class:`TaskDescription` with the fields every task shares filled in."""
        return TaskDescription(self.name, self.robot_name, summary, self.control_mode.value, self.control_rate,
                               self.config.episode_duration, tuple(observations), tuple(actions), tuple(rewards),
                               scripted=self.scripted, **more)


#: Units of a command component in each control mode (Cartesian: linear m/s, angular rad/s).
CONTROL_MODE_UNITS: dict[ControlMode, str] = {
    ControlMode.POSITION: "rad",
    ControlMode.VELOCITY: "rad/s",
    ControlMode.EFFORT: "N·m",
    ControlMode.CARTESIAN_VELOCITY: "m/s|rad/s",
}


def scale_action(action: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Map a normalised action in [-1, 1] (clipped) affinely onto [lower, upper]."""
    a = np.minimum(np.maximum(action, -1.0), 1.0)  # np.clip's result; np.clip costs ~3x the call overhead
    return lower + (a + 1.0) * 0.5 * (upper - lower)
