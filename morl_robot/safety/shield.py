"""The safety monitor's rules inside an in-process episode, as they act on the ROS graph.

On the graph every command passes the ``safety_monitor`` node (``policy_server → command →
safety_monitor → command_safe → robot_node``): a command may be clamped (rate-of-change limits,
the contact level slows the robot, workspace and joint-limit clamps) or replaced by the hold
command (hold-level faults, a latched e-stop).  A policy that chatters from one step to the next is
therefore executed differently on the graph than in a bare in-process rollout.  :class:`SafetyShield`
runs the same pure :class:`~morl_robot.safety.monitor.SafetyMonitor` (same robot YAML under
``config/safety/``, watchdogs off as in lockstep simulation) between the policy and
:class:`~morl_robot.envs.mo_env.MORobotEnv`, fed with the same readings the robot node publishes
(joint states, wrench, tactile) after every step, so an in-process evaluation measures the policy
as it is deployed.

One shield serves one episode: :meth:`begin` builds a fresh monitor and releases it (as the deploy
session does with ``safety/reset``), so episode i's outcome does not depend on the episodes before.
"""
from __future__ import annotations

import dataclasses
from collections import Counter, deque
from typing import Any

import numpy as np

from morl_robot.safety.compiled import load_rules
from morl_robot.safety.monitor import SafetyMonitor
from morl_robot.tasks.base import scale_action


class SafetyShield:
    """Commands of a task's policy (normalised actions) through the robot's safety rules.

    Args:
        env: the :class:`~morl_robot.envs.mo_env.MORobotEnv` the policy acts on.
        config: robot name or safety YAML path (default: the task's robot).
        approach: apply the YAML's approach-speed limit (False: contact control ``stiff``).
    """

    def __init__(self, env: Any, config: str | None = None, approach: bool = True) -> None:
        self.env = env
        self.source = config or env.task.robot_name
        self.rules = load_rules(self.source)  # compiled once; every episode's monitor reads them
        if not approach:  # contact control 'stiff': the rules as they were before the approach limit
            self.rules = dataclasses.replace(self.rules, approach=None)
        self.labels = tuple(env.action_labels)
        self.lower, self.upper = env.task.action_bounds(env.robot)
        self._span = np.where(self.upper > self.lower, self.upper - self.lower, 1.0)
        self.monitor: SafetyMonitor | None = None
        self.events: Counter[str] = Counter()  # violations that began, "rule/level"
        self.counters: Counter[str] = Counter()  # commands, clamped, held, forwarded (all episodes)
        self._tactile_labels: tuple[str, ...] = ()
        # violations that began, newest last, for a caller that reports them as events (it clears them)
        self.recent: deque[Any] = deque(maxlen=256)
        self.held = False  # whether the newest command was replaced by the hold command (or nothing)

    def begin(self, state: Any) -> None:
        """A new episode from ``state``: a fresh monitor, fed the start readings, then released."""
        self._fold_counters()
        # the approach boxes where this episode's context put their bodies (a moved fixture: hole_offset)
        rules = self.rules.placed(getattr(self.env.robot, "context", None))
        self.monitor = SafetyMonitor(rules, None, watchdogs=False, now=state.stamp, action_labels=self.labels)
        spec = self.env.robot.spec
        self._tactile_labels = tuple(spec.sensor("tactile").labels) if spec.has_sensor("tactile") else ()
        self.observe(state)
        ok, why = self.monitor.reset(state.stamp)
        if not ok:
            raise RuntimeError(f"the safety monitor refused to release at the episode start: {why}")

    def observe(self, state: Any) -> None:
        """The readings the robot node publishes after a step (stamped with simulated time)."""
        assert self.monitor is not None, "call begin() first"
        m, t = self.monitor, float(state.stamp)
        self._record(m.on_joint_state(self.env.robot.spec.joint_names, state.position, state.velocity,
                                      state.effort, t, t))
        if state.wrench is not None:
            self._record(m.on_wrench(state.wrench, t, t))
        if state.tactile is not None and self._tactile_labels:
            self._record(m.on_tactile(state.tactile, self._tactile_labels, t, t))

    def command(self, action: np.ndarray, now: float) -> Any:
        """What the monitor forwards to the robot for the policy's ``action`` (D,) in [-1, 1]: a
        :class:`~morl_robot.safety.monitor.Command` in robot units — the task's action components
        (possibly clamped), or the hold command of the control mode (its own labels) while a
        hold- or e-stop-level rule holds (then :attr:`held` is true) — or None (nothing forwarded:
        the robot holds)."""
        assert self.monitor is not None, "call begin() first"
        values = scale_action(np.asarray(action, np.float64), self.lower, self.upper)  # (clips to [-1, 1])
        held = self.monitor.counters["held"]
        command = self._record(self.monitor.on_command(values, self.labels, now, self.monitor.command_period)).command
        self.held = self.monitor.counters["held"] > held
        return command

    def filter(self, action: np.ndarray, now: float) -> np.ndarray:
        """The normalised action the robot executes for the policy's ``action`` (D,) in [-1, 1]: a
        hold in the control mode's labels (a relative-action task's) is the task action that commands
        it, as the robot node executes it (``TaskRunner.step(hold=True)``)."""
        command = self.command(action, now)
        if command is not None and tuple(command.labels) == self.labels:
            return np.clip(2.0 * (command.values - self.lower) / self._span - 1.0, -1.0, 1.0)
        robot = self.env.robot
        if command is not None and tuple(command.labels) == tuple(robot.spec.command_labels(robot.control_mode)):
            held = self.env.task.action_for_command(np.asarray(command.values, np.float64), robot, robot.read_state())
            if held is not None:
                return held
        return np.zeros_like(self.lower)  # nothing forwarded: the robot node holds

    @property
    def estopped(self) -> bool:
        return self.monitor is not None and self.monitor.estopped

    def summary(self) -> dict[str, Any]:
        """Counters over every episode so far: commands, clamped, held; violations by rule."""
        self._fold_counters()
        return {"commands": int(self.counters["commands"]), "clamped": int(self.counters["clamped"]),
                "held": int(self.counters["held"]), "violations": dict(sorted(self.events.items()))}

    def _record(self, outcome: Any) -> Any:
        for v in outcome.violations:
            self.events[f"{v.rule}/{v.level}"] += 1
        self.recent.extend(outcome.violations)
        return outcome

    def _fold_counters(self) -> None:
        if self.monitor is not None:
            for key in ("commands", "clamped", "held"):
                self.counters[key] += int(self.monitor.counters.get(key, 0))
            self.monitor.counters.clear()
