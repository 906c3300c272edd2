"""Gymnasium environments for the robot tasks, following MO-Gymnasium's conventions.

``step`` returns a numpy reward vector of shape (K,); the env has a ``reward_space``
(Box of shape (K,)) and ``objective_names``; ``info`` carries the sensor readings (wrench,
tactile, scene sensors), the task's diagnostics, and ``termination`` — the reason the episode
ended (``force_threshold``, ``success``, ``time_limit``) or None.

:func:`open_task_env` is the one way the graph's actors (robot node, vectorized actor) and the
learner open a task by its settings: a task, optionally in the product of a reward-machine task.
:func:`open_policy_env` opens the environment an exported policy acts in, from its contract (the
evaluation protocol and the deploy check's in-process reference).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from morl_robot.envs.sparse import ReleaseSchedule, release_probabilities
from morl_robot.robots.base import Robot
from morl_robot.robots.config import load_robot_config
from morl_robot.robots.mujoco_robot import MujocoRobot
from morl_robot.robots.spec import ControlMode
from morl_robot.tasks.base import Task
from morl_robot.tasks.registry import load_task

if TYPE_CHECKING:
    from morl_robot.reward_machines.env import RewardMachineEnv
    from morl_robot.serving.contract import PolicyContract


def make_sim_robot(task: Task, model_source: str = "builtin") -> MujocoRobot:
    """The MuJoCo robot a task runs on, with the task's scene, timestep and control period."""
    robot = MujocoRobot(
        load_robot_config(task.robot_name),
        scene=task.config.scene,
        control_period=task.config.control_period,
        timestep=task.config.timestep,
        model_source=model_source,
    )
    robot.set_control_mode(task.control_mode)
    return robot


def open_task_env(task: str | Task, task_config: str | None = None, reward_machine: str = "",
                  robot: Robot | None = None, overrides: dict[str, Any] | None = None) -> MORobotEnv | RewardMachineEnv:
    """Task ``task`` (with its YAML ``task_config``; on ``robot``, default its MuJoCo robot) and,
    with ``reward_machine`` (a reward-machine task spec: a name under ``config/reward_machines/``
    or a path), in the product of that MORM
    (:func:`~morl_robot.reward_machines.env.wrap_task_env`: a :class:`ConfigError` if the spec is
    for another task).  ``overrides``: task-config keys set over the YAML (e.g. a policy's
    ``action_mode``, :meth:`~morl_robot.serving.contract.PolicyContract.task_overrides`)."""
    task = task if isinstance(task, Task) else load_task(task, task_config or None, overrides or None)
    if task.config.sparse:  # PRISM: objectives paid on release (morl_robot.envs.sparse)
        env: MORobotEnv = SparseTaskEnv(task, robot=robot)
    else:
        env = MORobotEnv(task, robot=robot)
    if not reward_machine:
        return env
    from morl_robot.reward_machines.env import wrap_task_env

    try:
        return wrap_task_env(env, reward_machine)
    except Exception:
        env.close()
        raise


def open_policy_env(contract: PolicyContract, task_config: str | os.PathLike[str] | None = None,
                    robot: Robot | None = None) -> MORobotEnv | RewardMachineEnv:
    """The environment a policy with ``contract`` acts in: its task (in the contract's action mode) and, if the contract records a
    reward machine (field ``reward_machine``), the product with that machine, checked against this
    installation's files (:func:`~morl_robot.reward_machines.env.check_machine`).  A
    :class:`~morl_robot.serving.contract.ContractError` naming the field if the machine differs, if
    the policy's observation has a machine one-hot but its contract does not say which machine
    (exported before contracts carried it), or if the environment's observation labels or
    objectives are not the contract's (instead of a shape error in the first step)."""
    from morl_robot.serving.contract import ContractError

    machine = contract.reward_machine
    if machine is None and contract.machine_state_labels:
        raise ContractError(f"contract field 'reward_machine' is missing but the policy's observation includes a "
                            f"reward-machine one-hot ({len(contract.machine_state_labels)} labels "
                            f"'{contract.machine_state_labels[0]}'…): the model was exported before contracts "
                            "recorded the machine; train (or resume) its run with this version and export again")
    if machine is not None:
        from morl_robot.reward_machines.env import check_machine

        check_machine(machine, contract.task)
    env = open_task_env(contract.task, str(task_config) if task_config else None,
                        machine.spec if machine is not None else "", robot, contract.task_overrides())
    try:
        for name, have in (("observation_labels", list(env.observation_labels)),
                           ("objective_names", list(env.objective_names))):
            want = list(getattr(contract, name))
            if have != want:
                i = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
                raise ContractError(f"contract field '{name}': the policy has {len(want)} entries, task "
                                    f"'{contract.task}' here gives {len(have)}; first difference at index {i}: "
                                    f"{want[i] if i < len(want) else '(none)'!r} vs "
                                    f"{have[i] if i < len(have) else '(none)'!r}")
    except ContractError:
        env.close()
        raise
    return env


#: How contact is controlled: ``compliant`` (the default: force-limited admittance in the robot
#: backend, the safety rules' approach-speed limit, the peg held along the hole's axis) or ``stiff``
#: (the stack before them: resolved rate only, no approach limit, the peg held at its start
#: orientation, the peg scene's pyramidal friction cone), kept so the figures measured before can be
#: re-checked as a baseline.
CONTACT_CONTROLS = ("compliant", "stiff")


def set_contact_control(env: Any, control: str) -> None:
    """Put ``env`` (a :class:`MORobotEnv` or a wrapper of one) under contact ``control``
    (:data:`CONTACT_CONTROLS`); the safety side is :class:`~morl_robot.safety.shield.SafetyShield`'s
    ``approach`` argument."""
    from morl_robot.errors import UsageError

    if control not in CONTACT_CONTROLS:
        raise UsageError(f"contact control {control!r}: allowed values: {', '.join(CONTACT_CONTROLS)}")
    if control == "compliant":
        return
    base = env
    while not isinstance(base, MORobotEnv) and hasattr(base, "env"):
        base = base.env
    if not isinstance(base, MORobotEnv):
        raise UsageError(f"contact control 'stiff' needs a MuJoCo task environment, got {type(env).__name__}")
    robot = base.robot
    base.approach_at_arrival = False  # no approach limit in 'stiff' (SafetyShield(approach=False))
    if isinstance(robot, MujocoRobot):
        import mujoco

        robot.set_compliant(False)
        robot.model.opt.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL  # MuJoCo's default, every scene's until issue 32
    if hasattr(base.task.config, "orientation_goal"):
        base.task.config.orientation_goal = "start"


def task_contexts(task: Task) -> Any:
    """What the task YAML's ``contexts`` key names: ``train`` → the context file's
    :class:`~morl_robot.contexts.ContextSet` (one draw per episode), a held-out name or
    ``PATH.yaml[:NAME]`` → that :class:`~morl_robot.contexts.Context`; errors name the key."""
    from morl_robot.contexts import load_contexts
    from morl_robot.errors import ConfigError, UnknownNameError

    ref = task.config.contexts
    file, sep, name = ref.rpartition(":") if ref.rpartition(":")[0].endswith((".yaml", ".yml")) else (ref, "", "")
    try:
        if file.endswith((".yaml", ".yml")):
            cs = load_contexts(file)
            return cs.named(name) if sep and name != "train" else cs
        cs = load_contexts(task.name)
        return cs if ref == "train" else cs.named(ref)
    except (ConfigError, UnknownNameError) as exc:
        raise ConfigError(f"task key 'contexts' ({ref!r}): {str(exc).strip(chr(34) + chr(39))}") from None


def observed_contexts(task: Task) -> Any:
    """The :class:`~morl_robot.contexts.ContextSet` whose parameters ``contexts_observed`` appends:
    the file the task key ``contexts`` names (``PATH.yaml[:NAME]``), else the task's shipped one."""
    from morl_robot.contexts import load_contexts
    from morl_robot.errors import ConfigError, UnknownNameError

    ref = task.config.contexts
    file = ref.rpartition(":")[0] if ref.rpartition(":")[0].endswith((".yaml", ".yml")) else ref
    try:
        return load_contexts(file if file.endswith((".yaml", ".yml")) else task.name)
    except (ConfigError, UnknownNameError) as exc:
        raise ConfigError(f"task key 'contexts_observed': {str(exc).strip(chr(34) + chr(39))}") from None


class MORobotEnv(gym.Env[np.ndarray, np.ndarray]):
    """A multi-objective task on a robot (MuJoCo by default, or any :class:`Robot`)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(
        self,
        task: str | Task,
        robot: Robot | None = None,
        config_file: str | os.PathLike[str] | None = None,
        overrides: dict[str, Any] | None = None,
        render_mode: str | None = None,
        model_source: str = "builtin",
    ) -> None:
        self.task = task if isinstance(task, Task) else load_task(task, config_file, overrides)
        self.robot = robot if robot is not None else make_sim_robot(self.task, model_source)
        self.robot.reset()
        self.objective_names = self.task.objective_names
        self.reward_dim = self.task.num_objectives
        self.metadata = {**self.metadata, "render_fps": round(self.task.control_rate)}
        d = len(self.task.action_labels)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(d,), dtype=np.float32)
        self.observation_labels = self.task.observation_labels(self.robot)
        self._observed: Any = None  # contexts_observed: the ContextSet whose ranges normalise the context
        if getattr(self.task.config, "contexts_observed", False):
            self._observed = observed_contexts(self.task)
            self.observation_labels = tuple(self.observation_labels) + self._observed.observation_labels
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(len(self.observation_labels),), dtype=np.float64)
        self.reward_space = spaces.Box(
            np.asarray(self.task.reward_lower, dtype=np.float64),
            np.asarray(self.task.reward_upper, dtype=np.float64),
            dtype=np.float64,
        )
        self.render_mode = render_mode
        self._renderer = None
        self._state = None
        self._steps = 0
        self.contexts: Any = None  # a Context (fixed) or ContextSet (one draw per episode): set_contexts
        self.context: Any = None  # this episode's Context (None: the robot as built)
        self._link: Any = None  # the context's command delay (FaultyLink on the simulated clock)
        self._held: np.ndarray | None = None
        # the robot's own approach-speed limit on a command that arrives late (issue 37; _arrival_limit)
        self.approach_at_arrival = True
        self._arrival: Any = None
        self._draw: int | None = None  # a domain-randomised episode's draw seed (its context: train#<seed>)
        if self.task.config.contexts:
            self.set_contexts(task_contexts(self.task))

    def set_contexts(self, contexts: Any) -> None:
        """Episodes from now on run in ``contexts``: a :class:`~morl_robot.contexts.Context`
        (every episode), a :class:`~morl_robot.contexts.ContextSet` (domain randomisation: one draw
        of its training distribution per episode, from the episode's seed) or None (as built).
        Applied at reset only (docs/howto/generalization.md)."""
        self.contexts = contexts

    def _begin_context(self, seed: int | None) -> None:
        from morl_robot.contexts import Context, draw_name

        src = self.contexts
        if src is None:
            if self.context is not None:  # back to the robot as built
                self.robot.apply_context(None)
                if self._arrival is not None:
                    self._arrival[0].place(None)
            self.context = self._link = None
            return
        self._draw = None
        if isinstance(src, Context):
            ctx = src
        elif seed is not None:  # np_random was just seeded with it: the draw is ContextSet.named('train#<seed>')
            self._draw = int(seed)
            ctx = src.sample(self.np_random, draw_name(self._draw))
        else:
            self._draw = int(self.np_random.integers(2**31))
            ctx = src.sample(np.random.default_rng(self._draw), draw_name(self._draw))
        noise_seed = int(seed) if seed is not None else int(self.np_random.integers(2**31))
        rc = ctx.robot_context(noise_seed)
        self.robot.apply_context(rc)
        if self._arrival is not None:  # the approach boxes move with the fixtures the context moves
            self._arrival[0].place(rc)
        self.context = ctx
        self._link = None
        if rc.link_faults:
            from morl_robot.robots.emulation import FaultyLink, LinkFaults

            self._link = FaultyLink(LinkFaults(latency=rc.latency, jitter=rc.jitter), noise_seed + 1)

    @property
    def context_code(self) -> float:
        """This episode's ``context`` column value (:data:`~morl_robot.contexts.CONTEXT_COLUMN`):
        the draw seed of a domain-randomised episode, else -1 (the one context ``contexts`` names)."""
        return float(self._draw) if self._draw is not None else -1.0

    def _observe(self, state: Any) -> np.ndarray:
        obs = self.task.observe(state)
        if self._observed is None:
            return obs
        ctx = self.context if self.context is not None else self._observed.nominal
        return np.concatenate([obs, self._observed.normalised(ctx)])

    @property
    def action_labels(self) -> tuple[str, ...]:
        return self.task.action_labels

    @property
    def state(self) -> Any:
        """The robot's newest :class:`~morl_robot.robots.spec.RobotState` (None before reset)."""
        return self._state

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._begin_context(seed)
        if isinstance(self.robot, MujocoRobot):
            self.robot.reset(settle=False)  # the home keyframe, which the task perturbs
        else:
            self.robot.reset()
        joints, scene = self.task.initial_configuration(self.robot, self.np_random)
        state = self.robot.reset(joint_positions=joints, scene=scene)
        self.task.begin_episode(self.robot, state)
        self._state = state
        self._steps = 0
        self._held = None
        info = self._info(state, None, {})
        if self.context is not None:
            info["context"] = self.context.name
        return self._observe(state), info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool, bool, dict[str, Any]]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape} [{', '.join(self.action_labels)}], got {action.shape}")
        if not np.isfinite(action).all():
            raise ValueError(f"action has non-finite values: {action}")
        command = self.task.command(action, self.robot, self._state)
        if self._link is not None:  # the context's latency: the newest command that has arrived by now
            now = float(self._state.stamp)
            self._link.send(command, now)
            arrived = self._link.due(now + 1e-9)
            if arrived:
                self._held = arrived[-1]
            command = self._held if self._held is not None else self.robot.hold_command()
            command = self._arrival_limit(command)
        state = self.robot.step(command)
        self._steps += 1
        outcome = self.task.evaluate(state, action)
        self._state = state
        terminated = outcome.termination is not None
        truncated = not terminated and self._steps >= self.task.max_steps
        reason = outcome.termination or ("time_limit" if truncated else None)
        return self._observe(state), outcome.reward, terminated, truncated, self._info(state, reason, outcome.info)

    def _arrival_limit(self, command: np.ndarray) -> np.ndarray:
        """A command that arrived through the context's link, limited by the safety YAML's approach
        rule at the robot's newest reading, as the robot node's inner layer limits what it receives
        (:meth:`~morl_robot.safety.inner.InnerSafety.limit_approach`): the link sits between the
        monitor and the robot, so the monitor's limit was decided on a reading up to 3 periods old and
        a late command hit the fixture at 0.07-0.15 m/s (docs/explanation/contact_control.md)."""
        if not self.approach_at_arrival or self.robot.control_mode != ControlMode.CARTESIAN_VELOCITY:
            return command
        if self._arrival is None:
            from morl_robot.safety.inner import InnerSafety

            robot_yaml = getattr(self.robot, "config", None)
            rules = InnerSafety.load(getattr(robot_yaml, "safety", "") or self.robot.spec.name)
            rules.place(getattr(self.robot, "context", None))  # this episode's placement (_begin_context after)
            self._arrival = (rules, tuple(self.robot.spec.command_labels(ControlMode.CARTESIAN_VELOCITY)))
        inner, labels = self._arrival
        return inner.limit_approach(command, labels, self._state.position)

    def _info(self, state: Any, reason: str | None, extra: dict[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {"stamp": state.stamp, "termination": reason, **extra}
        if state.wrench is not None:
            info["wrench"] = state.wrench
        if state.tactile is not None:
            info["tactile"] = state.tactile
        for k, v in state.sensors.items():
            info[k] = v
        return info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or not isinstance(self.robot, MujocoRobot):
            return None
        import mujoco

        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.robot.model, 480, 640)
        self._renderer.update_scene(self.robot.data)
        return self._renderer.render()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self.robot.close()


class SparseTaskEnv(MORobotEnv):
    """A :class:`MORobotEnv` whose objectives named in the task config's ``sparse`` pay on release
    (PRISM, :mod:`morl_robot.envs.sparse`): true per-step rewards and release flags in ``info``
    (``prism_true_reward``, ``prism_released``); ``released_objectives``: those with p_rel < 1."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        p = release_probabilities(list(self.objective_names), getattr(self.task.config, "sparse", {}) or {})
        self.release = ReleaseSchedule(p)
        self.released_objectives = tuple(n for n, x in zip(self.objective_names, p) if x < 1.0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        out = super().reset(seed=seed, options=options)
        self.release.reset(np.random.default_rng([int(self.np_random.integers(2**31)), 0x5EED]))
        return out

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        paid, released = self.release.pay(reward, bool(terminated or truncated))
        info = {**info, "prism_true_reward": np.asarray(reward, np.float64), "prism_released": released}
        return obs, paid.astype(np.asarray(reward).dtype), terminated, truncated, info
