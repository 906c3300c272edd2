"""Shadow Dexterous Hand tasks (MO-MPO paper, section 6 "Shadow Hand"): touch, turn, orient.

Shared by all three:

* Observation (63 with the 15 touch sensors, as in the paper): joint angles (24, rad), joint
  velocities (24, rad/s), touch sensors (15, N).
* Action (20), one per motor, in one of two modes (``action_mode`` in the task YAML; the policy
  contract carries it, and the labels say it, so deployment reads the action as training did):

  - ``absolute``: position targets of the 20 motors, normalised to [-1, 1] of each motor's range
    (a coupled J0 motor targets J1 + J2); labels are the actuator names;
  - ``delta``: the change of each motor's target from its measured position, normalised to
    [-1, 1] of ±``max_delta`` rad: target = clip(q_motor + max_delta · a, motor range); labels are
    ``<actuator>/delta`` (:data:`morl_robot.robots.spec.DELTA_SUFFIX`).  Holding still is a = 0 and
    a slow approach a small constant, so the map a policy (or a clone of a position-target
    controller) must learn is not a near-identity of the observed positions.
* ``pain`` ∈ [−pain_clip, 0] (N), our definition of the penalty for colliding at high speed
  (after Huang et al. 2019, who define non-gentleness as excessive impact force): an impact shows
  on a touch sensor as a fast rise of its normal force, whose size grows with the approach speed
  (impulse ≈ m·Δv over the control period).  Per step, over the 15 touch sensors i,

      pain = −min(pain_clip, Σ_i max(0, F_i(t) − F_i(t−1) − impact_threshold))

  so pressing slowly is free and slapping costs in proportion to the impact force.  It needs only
  the tactile array, so it is computed identically on the real hand.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from morl_robot.configuration import fail
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import ControlMode, RobotState, delta_label
from morl_robot.tasks.base import (
    CameraView,
    Quantity,
    ScriptedController,
    Task,
    TaskConfig,
    TaskDescription,
    Transition,
    TransitionReward,
    next_state_reward,
    scale_action,
)

#: How a hand task's action is read (module docstring)
ACTION_MODES = ("absolute", "delta")


@dataclass
class ShadowHandConfig(TaskConfig):
    impact_threshold: float = 1.0  # N of force rise per control step that is not yet pain
    pain_clip: float = 20.0  # N, lower clip of the pain reward
    init_joint_noise: float = 0.05  # rad, uniform noise on the finger joints at reset
    action_mode: str = "absolute"  # "absolute" motor targets or "delta" changes from the measured positions
    #: rad: |change| of a motor target per control step in delta mode (action ±1), 0.6 rad/s at 20 Hz.
    #: Uniform random changes random-walk the hand: at 0.1 rad they press the touch block in 12 of 20
    #: episodes (seeds 10000-10019), at 0.05 in 9, at 0.03 in 3 (turn: 3, 0, 0 of 20); the scripted
    #: press leads by 0.01 rad and the turn sweep by 0.03 rad, so 0.03 keeps the tasks honest.
    max_delta: float = 0.03

    def validate(self) -> None:
        super().validate()
        if self.action_mode not in ACTION_MODES:
            fail("", "action_mode", f"must be one of {', '.join(ACTION_MODES)}, got {self.action_mode!r}")
        if not (self.max_delta > 0 and np.isfinite(self.max_delta)):
            fail("", "max_delta", f"must be a positive number of rad, got {self.max_delta}")
        if self.impact_threshold < 0:
            fail("", "impact_threshold", f"must be >= 0 N, got {self.impact_threshold}")
        if self.pain_clip <= 0:
            fail("", "pain_clip", f"must be positive, got {self.pain_clip}")


def pain_penalty(tactile: np.ndarray, previous: np.ndarray, impact_threshold: float, clip: float) -> np.ndarray:
    """Impact-force pain (N, ≤ 0) from consecutive tactile readings: (T,) → scalar array, or
    batches [N, T] → [N]."""
    rise = np.maximum(np.asarray(tactile) - previous - impact_threshold, 0.0)
    return -np.minimum(rise.sum(axis=-1), clip)


@dataclass(frozen=True)
class ShadowPhase:
    """One phase of a scripted Shadow Hand motion: move toward ``posture`` (rad per motor).  It is
    done once every motor of it is within the tolerance of its posture, or, for a grasp
    (``felt_by`` tactile pads), once those pads all read at least ``felt_force`` N (fingers that
    close on an object stop short of their posture)."""

    posture: dict[str, float]
    felt_by: tuple[str, ...] = ()
    felt_force: float = 1.0


#: shadow_touch's pressing posture (rad; J0 = J1 + J2): the wrist flexed, the first finger bent at
#: J3 and slightly at J1/J2 (``tests/test_shadow_hand_model.py::test_touch_press_block``)
SHADOW_PRESS_POSTURE = {"rh_WRJ1": 0.49, "rh_FFJ3": 0.9, "rh_FFJ0": 0.3}
#: shadow_turn's turning posture (rad): the wrist flexed, the four fingers bent at J3 with J1/J2
#: straight, which sweeps the paddle past the target (``test_shadow_hand_model.py::test_turn_dial``)
SHADOW_TURN_POSTURE = {"rh_WRJ1": 0.49, **{f"rh_{f}J3": 1.2 for f in ("FF", "MF", "RF", "LF")},
                       **{f"rh_{f}J0": 0.0 for f in ("FF", "MF", "RF", "LF")}}
#: shadow_orient's grasp and lift (``test_shadow_hand_model.py::test_orient_touch_and_lift_peg``): the
#: thumb to opposition; a pinch of the peg between thumb, first and middle finger, done once the
#: first-finger and thumb tips feel it; the wrist extended, which lifts the pinched peg, held near one
#: end, and it swings toward upright.  Each phase keeps the earlier ones' targets.
SHADOW_ORIENT_PHASES = (
    ShadowPhase({"rh_THJ5": 0.72, "rh_THJ2": -0.31, "rh_THJ1": -0.08, "rh_THJ4": 1.2}),
    ShadowPhase({"rh_FFJ3": 1.57, "rh_FFJ0": 1.03, "rh_MFJ3": 1.57, "rh_MFJ0": 1.03, "rh_FFJ4": 0.06,
                 "rh_MFJ4": -0.2}, felt_by=("rh_ffdistal_touch", "rh_thdistal_touch")),
    ShadowPhase({"rh_WRJ1": -0.6}),
)


def shadow_phase(phases: Sequence[ShadowPhase], pos: np.ndarray, motor: dict[str, int],
                 pads: dict[str, float], tolerance: float = 0.05) -> int:
    """Which of ``phases`` the hand is in, read off the observation alone (so a clone can learn it):
    the first phase not yet done (:class:`ShadowPhase`); ``pos`` (20,) motor positions, rad;
    ``pads`` the tactile readings (N) by pad name; ``tolerance`` rad."""
    for k, phase in enumerate(phases[:-1]):
        if phase.felt_by:
            done = all(pads[name] >= phase.felt_force for name in phase.felt_by)
        else:
            done = all(abs(pos[motor[m]] - v) <= tolerance for m, v in phase.posture.items())
        if not done:
            return k
    return len(phases) - 1


class ShadowHandTask(Task):
    """Common observation/action/pain of the three hand tasks."""

    #: A scripted task's motion (:meth:`scripted_policy`): postures in phases, and the default lead
    #: (rad per step, the approach speed).
    script_phases: ClassVar[tuple[ShadowPhase, ...]] = ()
    script_lead: ClassVar[float] = 0.03
    scripted_options: ClassVar[tuple[str, ...]] = ("lead",)
    #: videos: the whole hand (fingers along +x) and the block below its fingertips, from the front right
    camera: ClassVar[CameraView | None] = CameraView((0.3, 0.0, 0.1), 0.5, -120.0, -20.0)

    def scripted_policy(self, env: Any, lead: float | None = None) -> ScriptedController:
        """Move the hand slowly into a posture, or through postures in phases (:attr:`script_phases`).
        Each motor's position target is its current position (from the observation; a coupled J0
        motor: J1 + J2) moved toward the posture of the current phase and the earlier ones by at most
        ``lead`` rad (default :attr:`script_lead`), the other motors held where they are.  The lead
        sets the approach speed.  The phase is read off the observation (:func:`shadow_phase`), so
        the controller is a function of the observation, as a clone is.

        ``shadow_touch`` presses the block; the lead trades the (discounted) task reward against pain:
        on seeds 0–4, 0.01 rad presses in 30–36 steps with pain −3.4 … −4.4; 0.02 in 17–20 steps with
        −6 … −10; 0.05 in 7–8 steps with −6 … −20.  ``shadow_turn`` sweeps the dial's paddle toward
        +angle; the observation has no dial angle, so the sweep is open loop and succeeds when it
        passes the target window (the episode ends there).  ``shadow_orient`` pinches the peg and
        lifts it with the wrist.

        The targets are written in the task's action mode (:meth:`action_for_targets`): absolute, the
        targets themselves; delta, at most ±lead on the posture's motors and 0 on the others."""
        lead = self.script_lead if lead is None else float(lead)
        phases = self.script_phases
        spec = env.robot.spec
        self.bind(env.robot)
        nj = len(spec.joints)  # observation: joint positions (J,), velocities (J,), tactile pads (T,)
        motor = {m: i for i, m in enumerate(spec.actuator_names)}
        pad_at = {name: 2 * nj + i for i, name in enumerate(spec.sensor("tactile").labels)}
        mode = "" if self.action_mode == "absolute" else f", {self.action_mode} actions"

        def act(obs: np.ndarray) -> np.ndarray:
            o = np.asarray(obs, dtype=np.float64)
            pos = spec.actuator_positions(o[:nj])  # (20,) motor positions
            goal = pos.copy()
            pads = {name: float(o[i]) for name, i in pad_at.items()}
            for phase in phases[:shadow_phase(phases, pos, motor, pads) + 1]:
                for m, v in phase.posture.items():
                    goal[motor[m]] = v
            return self.action_for_targets(pos + np.clip(goal - pos, -lead, lead), pos)

        return act, f"scripted {self.scripted} (lead {lead:g} rad per step{mode})"

    def _hand_description(self, summary: str, rewards: list[Quantity], **more: Any) -> TaskDescription:
        c = self.config
        obs = [Quantity("joint_position", "rad", "joint limits", "hand joint angles (rh_WRJ2 … rh_THJ1)", 24),
               Quantity("joint_velocity", "rad/s", "joint velocity limits", "hand joint velocities", 24),
               Quantity("tactile", "N", "≥ 0", "normal force on each touch pad (fingertips first)", 15)]
        if c.action_mode == "delta":
            act = Quantity("motor_delta", "rad", f"[-1, 1] → ±{c.max_delta:g}",
                           "change of each motor's position target from its measured position", 20)
        else:
            act = Quantity("motor_target", "rad", "[-1, 1] → each motor's range",
                           "position target of each motor (a coupled J0 motor drives J1 + J2)", 20)
        return self._description(summary, obs, [act], rewards, **more)

    def _pain_quantity(self) -> Quantity:
        c = self.config
        return Quantity("pain", "N", f"[-{c.pain_clip:g}, 0]",
                        f"−min({c.pain_clip:g}, Σ over the 15 pads of max(0, force rise in the step − "
                        f"{c.impact_threshold:g} N)): slapping costs, slow pressing is free")

    robot_name: ClassVar[str] = "shadow_hand"
    control_mode: ClassVar[ControlMode] = ControlMode.POSITION
    config: ShadowHandConfig

    def __init__(self, config: ShadowHandConfig) -> None:
        super().__init__(config)
        self._prev_tactile: np.ndarray | None = None
        self._actuators: tuple[str, ...] = ()
        self._num_tactile = 15  # set from the robot's tactile array by transition_features

    @property
    def action_mode(self) -> str:
        return self.config.action_mode

    @property
    def action_labels(self) -> tuple[str, ...]:
        names = self._actuators or tuple(f"a{i}" for i in range(20))
        return tuple(delta_label(n) for n in names) if self.action_mode == "delta" else names

    def bind(self, robot: Robot) -> None:
        self._actuators = robot.spec.actuator_names
        self._spec = robot.spec
        self._lo, self._hi = robot.spec.command_bounds(ControlMode.POSITION)

    def action_bounds(self, robot: Robot) -> tuple[np.ndarray, np.ndarray]:
        """Robot units of action −1 / +1: the motor ranges (absolute) or ∓``max_delta`` rad (delta)."""
        self.bind(robot)
        if self.action_mode == "delta":
            d = np.full(len(self._actuators), self.config.max_delta)
            return -d, d
        return super().action_bounds(robot)

    def observation_labels(self, robot: Robot) -> tuple[str, ...]:
        self.bind(robot)
        j = robot.spec.joint_names
        return tuple([f"{n}/position" for n in j] + [f"{n}/velocity" for n in j] + list(robot.spec.sensor("tactile").labels))

    def initial_configuration(self, robot: Robot, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, Any]]:
        home = robot.read_state().position
        lo = np.array([j.lower for j in robot.spec.joints])
        hi = np.array([j.upper for j in robot.spec.joints])
        q = home + rng.uniform(-self.config.init_joint_noise, self.config.init_joint_noise, size=home.shape)
        q = np.clip(q, lo, hi)
        # coupled J1/J2 pairs start equal, as the coupling holds them
        names = robot.spec.joint_names
        for f in ("FF", "MF", "RF", "LF"):
            i1, i2 = names.index(f"rh_{f}J1"), names.index(f"rh_{f}J2")
            q[i1] = q[i2] = 0.5 * (q[i1] + q[i2])
        return {n: float(v) for n, v in zip(names, q)}, self.scene_configuration(robot, rng)

    def scene_configuration(self, robot: Robot, rng: np.random.Generator) -> dict[str, Any]:
        return {}

    def begin_episode(self, robot: Robot, state: RobotState) -> None:
        self.bind(robot)
        assert state.tactile is not None
        self._prev_tactile = state.tactile.copy()
        self._num_tactile = len(state.tactile)

    def command(self, action: np.ndarray, robot: Robot, state: RobotState) -> np.ndarray:
        """Motor position targets (20,) rad for the normalised ``action``: scaled onto the motor
        ranges (absolute) or the measured motor positions moved by ``max_delta · action`` and
        clipped into the ranges (delta)."""
        a = np.asarray(action, dtype=np.float64)
        if self.action_mode == "absolute":
            return scale_action(a, self._lo, self._hi)
        d = self.config.max_delta
        target = self._spec.actuator_positions(state.position) + scale_action(a, -d, d)
        return np.minimum(np.maximum(target, self._lo), self._hi)

    def action_for_targets(self, targets: np.ndarray, motor_positions: np.ndarray) -> np.ndarray:
        """The normalised action (20,) whose :meth:`command` is ``targets`` (20,) rad, given the
        measured motor positions (20,) rad (a coupled J0: J1 + J2); clipped to [-1, 1] (a delta
        beyond ``max_delta`` saturates).  What a scripted position-target controller acts with."""
        t = np.asarray(targets, np.float64)
        if self.action_mode == "absolute":
            return np.clip(2.0 * (t - self._lo) / (self._hi - self._lo) - 1.0, -1.0, 1.0)
        return np.clip((t - np.asarray(motor_positions, np.float64)) / self.config.max_delta, -1.0, 1.0)

    def action_for_command(self, command: np.ndarray, robot: Robot, state: RobotState) -> np.ndarray:
        """Motor targets (20,) rad → the action that commands them from ``state``'s measured motor
        positions (:meth:`action_for_targets`; in delta mode a target more than ``max_delta`` away
        is approached at the largest change per step)."""
        self.bind(robot)
        return self.action_for_targets(command, self._spec.actuator_positions(state.position))

    def observe(self, state: RobotState) -> np.ndarray:
        assert state.tactile is not None
        return np.concatenate([state.position, state.velocity, state.tactile])

    def contact_force(self, info: dict[str, Any]) -> float | None:
        """The largest fingertip tactile reading (N) of the step."""
        tactile = info.get("tactile")
        return float(np.max(tactile)) if tactile is not None and len(tactile) else None

    def pain(self, state: RobotState) -> float:
        assert state.tactile is not None and self._prev_tactile is not None
        p = float(pain_penalty(state.tactile, self._prev_tactile, self.config.impact_threshold, self.config.pain_clip))
        self._prev_tactile = state.tactile.copy()
        return p

    # --- rewards as pure functions of transitions (EPIC, morl_robot.evaluation.epic) -----------
    #: names and units of the task-specific features after the tactile array
    task_features: ClassVar[tuple[str, ...]] = ()

    def transition_feature_labels(self) -> tuple[str, ...]:
        return tuple(f"tactile_{i}" for i in range(self._num_tactile)) + self.task_features

    def transition_features(self, state: RobotState) -> np.ndarray:
        """Touch sensors (N, T), then ``task_features``."""
        assert state.tactile is not None
        self._num_tactile = len(state.tactile)
        return np.concatenate([state.tactile, self.task_feature_values(state)])

    def task_feature_values(self, state: RobotState) -> np.ndarray:
        return np.zeros(0)

    def contact_rewards(self) -> dict[str, TransitionReward]:
        """Alternatives to ``pain`` over the tactile array (first T features), all ≤ 0:

        * ``pain``: impact, −min(clip, Σ_i max(0, F_i(s') − F_i(s) − impact_threshold)) (N);
        * ``force_level``: −min(clip, Σ_i F_i(s')), any contact force costs (N);
        * ``impulse``: −Σ_i ½ (F_i(s) + F_i(s')) · control_period, contact impulse over the step (N·s).
        """
        c, t = self.config, self._num_tactile

        def pain(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return pain_penalty(s2[:, :t], s[:, :t], c.impact_threshold, c.pain_clip)

        @next_state_reward
        def force_level(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return -np.minimum(s2[:, :t].sum(axis=1), c.pain_clip)

        def impulse(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return -0.5 * (s[:, :t] + s2[:, :t]).sum(axis=1) * c.control_period

        return {"pain": pain, "force_level": force_level, "impulse": impulse}


class SparseTaskWithPain(ShadowHandTask):
    """``task`` = 1 (sparse) on the step the goal is reached, which ends the episode
    ('success'); ``pain`` as in the module docstring."""

    objective_names: ClassVar[tuple[str, ...]] = ("task", "pain")
    tradeoff: ClassVar[tuple[str, str] | None] = ("task", "pain")

    @property
    def reward_lower(self) -> tuple[float, ...]:
        return (0.0, -self.config.pain_clip)

    @property
    def reward_upper(self) -> tuple[float, ...]:
        return (1.0, 0.0)

    def goal_reached(self, state: RobotState) -> tuple[bool, dict[str, Any]]:
        """Whether ``state`` achieves the task, and diagnostics for ``info``."""
        raise NotImplementedError

    def success_from_features(self, features: np.ndarray) -> np.ndarray:
        """The goal test on feature batches [N, F] → bool [N] (the same test as :meth:`goal_reached`)."""
        raise NotImplementedError

    def transition_rewards(self) -> dict[str, TransitionReward]:
        contact = self.contact_rewards()

        @next_state_reward
        def task(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return self.success_from_features(s2).astype(np.float64)

        def objectives(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return np.stack([task(s, a, s2), contact["pain"](s, a, s2)], axis=1)

        return {"objectives": objectives, "task": task, **contact}

    def evaluate(self, state: RobotState, action: np.ndarray) -> Transition:
        success, info = self.goal_reached(state)
        reward = np.array([1.0 if success else 0.0, self.pain(state)])
        return Transition(reward, "success" if success else None, {**info, "success": success})


# --- touch ---------------------------------------------------------------------------------
@dataclass
class ShadowTouchConfig(ShadowHandConfig):
    press_force: float = 5.0  # N on the block that counts as success (paper: > 5 N)
    block_sensor: str = "block_touch"


class ShadowTouch(SparseTaskWithPain):
    """Success when the block is pressed with more than ``press_force`` N; 5 s episodes."""

    name: ClassVar[str] = "shadow_touch"
    config: ShadowTouchConfig
    scripted: ClassVar[str | None] = "slow press"
    script_phases: ClassVar[tuple[ShadowPhase, ...]] = (ShadowPhase(SHADOW_PRESS_POSTURE),)
    script_lead: ClassVar[float] = 0.01

    def describe(self) -> TaskDescription:
        c = self.config
        return self._hand_description(
            "Press a block with a fingertip, gently (MO-MPO paper §6, Shadow Hand touch).",
            [Quantity("task", "", "{0, 1}", f"1 on the step the block is pressed with more than {c.press_force:g} N "
                                            "(ends the episode)"), self._pain_quantity()],
            terminations=(("success", f"the block is pressed with more than {c.press_force:g} N"),
                          ("time_limit", f"after {c.episode_duration:g} s (truncation)")),
            success=f"the block was pressed with more than {c.press_force:g} N")

    task_features: ClassVar[tuple[str, ...]] = ("block_force",)  # N

    def task_feature_values(self, state: RobotState) -> np.ndarray:
        return np.array([float(state.sensors[self.config.block_sensor][0])])

    def goal_reached(self, state: RobotState) -> tuple[bool, dict[str, Any]]:
        force = float(state.sensors[self.config.block_sensor][0])
        return force > self.config.press_force, {"block_force": force}

    def success_from_features(self, features: np.ndarray) -> np.ndarray:
        return features[:, -1] > self.config.press_force


# --- turn ----------------------------------------------------------------------------------
@dataclass
class ShadowTurnConfig(ShadowHandConfig):
    dial_joint: str = "dial_hinge"
    dial_sensor: str = "dial_angle"
    target_angle: float = 0.0  # rad
    tolerance: float = 0.15  # rad: |wrap(angle − target)| within this is success
    min_start_offset: float = 0.6  # rad: random starts are at least this far from the target
    #: rad, [lo, hi]: the dial angles where the paddle is clear of the open hand; starts are drawn
    #: uniformly from the part of it at least ``min_start_offset`` from the target.  None = the
    #: whole circle (a scene whose paddle can never meet the hand at rest).
    start_range: list[float] | None = None

    def validate(self) -> None:
        super().validate()
        if self.tolerance <= 0:
            fail("", "tolerance", f"must be positive (rad), got {self.tolerance}")
        if self.start_range is not None:
            r = self.start_range
            if len(r) != 2 or not -np.pi <= r[0] < r[1] <= np.pi:
                fail("", "start_range", f"must be [lo, hi] with -pi <= lo < hi <= pi (rad), got {r}")
            if not self.start_intervals():
                fail("", "start_range", f"{r} has no angle at least min_start_offset={self.min_start_offset} rad "
                                        f"from target_angle={self.target_angle} rad")

    def start_intervals(self) -> list[tuple[float, float]]:
        """The sub-intervals of ``start_range`` at least ``min_start_offset`` from the target (rad)."""
        assert self.start_range is not None
        lo, hi = self.start_range
        t, d = self.target_angle, self.min_start_offset
        out = [(lo, min(hi, t - d)), (max(lo, t + d), hi)]
        return [(a, b) for a, b in out if b > a]


def wrap_angle(x: float) -> float:
    return float((x + np.pi) % (2 * np.pi) - np.pi)


class ShadowTurn(SparseTaskWithPain):
    """Success when the dial, started at a random angle, is within ``tolerance`` of the target
    angle; 5 s episodes."""

    name: ClassVar[str] = "shadow_turn"
    #: videos: the hanging hand (palm down) and the dial under it
    camera: ClassVar[CameraView | None] = CameraView((0.03, 0.0, 0.17), 0.55, -150.0, -10.0)
    config: ShadowTurnConfig
    scripted: ClassVar[str | None] = "slow sweep"
    script_phases: ClassVar[tuple[ShadowPhase, ...]] = (ShadowPhase(SHADOW_TURN_POSTURE),)
    script_lead: ClassVar[float] = 0.03

    def describe(self) -> TaskDescription:
        c = self.config
        start = f"in {c.start_range} rad" if c.start_range is not None else "anywhere on the circle"
        goal = f"the dial is within {c.tolerance:g} rad of {c.target_angle:g} rad"
        return self._hand_description(
            f"Turn a dial, started at a random angle {start} at least {c.min_start_offset:g} rad from the "
            "target, to the target angle, gently (MO-MPO paper §6, Shadow Hand turn).",
            [Quantity("task", "", "{0, 1}", f"1 on the step {goal} (ends the episode)"), self._pain_quantity()],
            terminations=(("success", goal), ("time_limit", f"after {c.episode_duration:g} s (truncation)")),
            success=goal)

    def scene_configuration(self, robot: Robot, rng: np.random.Generator) -> dict[str, Any]:
        c = self.config
        if c.start_range is None:
            offset = rng.uniform(c.min_start_offset, np.pi) * rng.choice([-1.0, 1.0])
            return {c.dial_joint: wrap_angle(c.target_angle + offset)}
        intervals = c.start_intervals()
        widths = np.array([b - a for a, b in intervals])
        a, b = intervals[int(rng.choice(len(intervals), p=widths / widths.sum()))]
        return {c.dial_joint: float(rng.uniform(a, b))}

    def goal_reached(self, state: RobotState) -> tuple[bool, dict[str, Any]]:
        angle = float(state.sensors[self.config.dial_sensor][0])
        error = abs(wrap_angle(angle - self.config.target_angle))
        return error < self.config.tolerance, {"dial_angle": angle, "dial_error": error}

    task_features: ClassVar[tuple[str, ...]] = ("dial_error",)  # rad, |wrap(angle − target)|

    def task_feature_values(self, state: RobotState) -> np.ndarray:
        angle = float(state.sensors[self.config.dial_sensor][0])
        return np.array([abs(wrap_angle(angle - self.config.target_angle))])

    def success_from_features(self, features: np.ndarray) -> np.ndarray:
        return features[:, -1] < self.config.tolerance


# --- orient --------------------------------------------------------------------------------
@dataclass
class ShadowOrientConfig(ShadowHandConfig):
    peg_touch_sensor: str = "peg_touch"
    peg_pos_sensor: str = "peg_pos"
    peg_quat_sensor: str = "peg_quat"
    peg_axis: list[float] | None = None  # long axis in the peg frame; default z
    lift_height: float = 0.05  # m above the resting height for a full ``lift`` reward
    touch_force: float = 0.05  # N on the peg that counts as touching


def rotate(quat_wxyz: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vector v (3,) by unit quaternion (w, x, y, z)."""
    w, x, y, z = quat_wxyz
    u = np.array([x, y, z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


class ShadowOrient(ShadowHandTask):
    """Three aligned objectives, each in [0, 1] per step; 10 s episodes, no early end.

    * ``touch`` = 1 while the peg's touch sensor reads more than ``touch_force`` N, else 0;
    * ``lift`` = clip((z − z₀) / lift_height, 0, 1), z₀ the peg's height at the episode start;
    * ``orient`` = |â · ẑ|, â the peg's long axis in the world: 1 when it stands perpendicular to
      the ground, 0 when it lies flat.
    """

    name: ClassVar[str] = "shadow_orient"
    #: videos: the whole hand and the peg in it, over the table
    camera: ClassVar[CameraView | None] = CameraView((0.3, 0.0, 0.15), 0.55, -120.0, -20.0)
    objective_names: ClassVar[tuple[str, ...]] = ("touch", "lift", "orient")
    config: ShadowOrientConfig
    tradeoff: ClassVar[tuple[str, str] | None] = None  # three aligned objectives
    scripted: ClassVar[str | None] = "grasp and lift"
    script_phases: ClassVar[tuple[ShadowPhase, ...]] = SHADOW_ORIENT_PHASES
    script_lead: ClassVar[float] = 0.03

    def describe(self) -> TaskDescription:
        c = self.config
        return self._hand_description(
            "Pick up a peg and stand it upright: three aligned objectives, no early end (MO-MPO paper §6, "
            "Shadow Hand orient).",
            [Quantity("touch", "", "{0, 1}", f"1 while the hand presses the peg with more than {c.touch_force:g} N"),
             Quantity("lift", "", "[0, 1]", f"the peg's height above its start / {c.lift_height * 1e2:g} cm, clipped"),
             Quantity("orient", "", "[0, 1]", "|â · ẑ| for the peg's long axis â: 1 upright, 0 lying flat")],
            terminations=(("time_limit", f"after {c.episode_duration:g} s (truncation)"),))

    @property
    def reward_lower(self) -> tuple[float, ...]:
        return (0.0, 0.0, 0.0)

    @property
    def reward_upper(self) -> tuple[float, ...]:
        return (1.0, 1.0, 1.0)

    def begin_episode(self, robot: Robot, state: RobotState) -> None:
        super().begin_episode(robot, state)
        self._z0 = float(state.sensors[self.config.peg_pos_sensor][2])

    task_features: ClassVar[tuple[str, ...]] = ("peg_touch", "peg_height", "peg_verticality")  # N, m, [0, 1]

    def task_feature_values(self, state: RobotState) -> np.ndarray:
        """Peg touch force (N), height above its start (m), |â · ẑ| of its long axis."""
        c = self.config
        axis = np.asarray(c.peg_axis if c.peg_axis is not None else [0.0, 0.0, 1.0])
        world_axis = rotate(state.sensors[c.peg_quat_sensor], axis / np.linalg.norm(axis))
        return np.array([float(state.sensors[c.peg_touch_sensor][0]),
                         float(state.sensors[c.peg_pos_sensor][2]) - self._z0,
                         float(min(abs(world_axis[2]), 1.0))])

    def transition_rewards(self) -> dict[str, TransitionReward]:
        c = self.config

        @next_state_reward
        def touch(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return (s2[:, -3] > c.touch_force).astype(np.float64)

        @next_state_reward
        def lift(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return np.clip(s2[:, -2] / c.lift_height, 0.0, 1.0)

        @next_state_reward
        def orient(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return s2[:, -1].astype(np.float64)

        @next_state_reward
        def objectives(s: np.ndarray, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
            return np.stack([touch(s, a, s2), lift(s, a, s2), orient(s, a, s2)], axis=1)

        return {"objectives": objectives, "touch": touch, "lift": lift, "orient": orient, **self.contact_rewards()}

    def evaluate(self, state: RobotState, action: np.ndarray) -> Transition:
        self.pain(state)  # keeps the tactile history current; orient has no pain objective
        f = self.transition_features(state)[None, :]
        reward = self.transition_rewards()["objectives"](f, np.asarray(action, np.float64)[None, :], f)[0]
        height, orient = float(f[0, -2]), float(f[0, -1])
        return Transition(reward, None, {"peg_height": height, "peg_verticality": orient, "touching": bool(reward[0])})
