"""The robot node's core: which control period runs when, and what comes of it (no ROS here).

A :class:`RobotSession` owns a :class:`~morl_robot.envs.task_runner.TaskRunner` (a robot, its
task and the inner safety layer) and decides, for every input the ``robot_node`` translates —
a command, a real-time tick, a republish tick, the monitor's e-stop, the mujoco_ros2_control
services ``reset_world`` / ``set_pause`` / ``step_simulation`` — whether the robot steps, holds,
starts an episode or ends one, and what goes out.  Outputs leave through :class:`RobotOutputs`
(callables the node binds to its publishers, its ``safety/reset`` client and its logger).

Timing (``RobotNodeSettings.timing``):

* ``lockstep`` — each command advances exactly one control period and the new step is published.
  A command carrying a step key that does not answer the newest step (e.g. an answer to a re-sent
  step, twice) is dropped and counted (``stale_commands``).
* ``realtime`` — :meth:`RobotSession.tick` applies the newest command at the control rate; with
  none for ``command_timeout`` s it holds (``holds``).

Both timings re-send the newest step (``announce=False``) when neither a command came nor a step
was published for ``republish_period`` s (:meth:`RobotSession.republish`): a late actor's cue.

Inner safety layer: a command the runner held (``StepRecord.held``) is not a step; it is counted
(``inner_holds``), logged once when the hold begins, shown in :meth:`RobotSession.status` while it
lasts, and in lockstep the same step is re-sent so the actor answers it again.

E-stop with ``end_episode_on_estop``: a lockstep command that meets the monitor's engaged e-stop
ends the running episode with termination ``safety`` (``safety_stops``), starts the next one and
asks the monitor to release; at step 0 (nothing moved yet) it only asks for the release.
Without it (deploy), a lockstep command at step 0 that meets the monitor's start-up e-stop (never
released yet) is not executed (``estop_waits``): the robot stays at rest and simulated time stands
still until the release, which re-sends step 0 (before, each hold command stepped the simulation
and re-sent step 0, a busy loop between the three nodes until the release).  After a trip (the
monitor was released before) the monitor's hold commands step on as usual: the robot holds until
the episode's time limit, and a human resets the monitor.  A hold in the control mode's labels
rather than the task's (a relative ``…/delta`` task) is a task step too
(``TaskRunner.step(hold=True)``); before, it moved the robot without advancing the episode, and
the graph stepped the same task step forever.

Errors: a :class:`~morl_robot.errors.CommandError` rejects the command (``rejected_commands``,
logged once per distinct reason); any other :class:`~morl_robot.errors.MorlRobotError` (e.g. a
stale hardware state) is a fault (``faults``): nothing is commanded until a period succeeds.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from morl_robot.envs.task_runner import StepRecord, TaskRunner
from morl_robot.errors import CommandError, ConfigError, MorlRobotError
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import RobotState

if TYPE_CHECKING:
    from morl_robot.node_settings import RobotNodeSettings
    from morl_robot.safety.inner import InnerSafety

COUNTERS = ("steps", "holds", "episodes", "rejected_commands", "stale_commands", "faults", "safety_stops",
            "inner_holds", "estop_waits", "foreign_commands", "release_restarts")


@dataclass
class RobotOutputs:
    """Where a :class:`RobotSession`'s results go (the node binds them to ROS)."""

    publish: Callable[[StepRecord, bool], None]  # (record, announce): state, task_step, episode events
    publish_state: Callable[[RobotState], None]  # the sensor streams only
    request_release: Callable[[], None]  # ask the safety monitor to release its latched e-stop
    log: Callable[[str, str], None]  # (level, message)


# --- construction --------------------------------------------------------------------------------
def inner_layer_for(robot: Robot) -> InnerSafety:
    """The inner safety layer of ``robot``: the stopping rules of its safety YAML (the robot YAML's
    ``safety``, default ``config/safety/<robot>.yaml``: the monitor's rules); an error if they were
    written for other joints or sensors."""
    from morl_robot.safety.inner import InnerSafety

    inner = InnerSafety.load(getattr(getattr(robot, "config", None), "safety", "") or robot.spec.name)
    spec = inner.rules.spec
    if spec.joint_names != robot.spec.joint_names or inner.rules.tactile_labels != (
            robot.spec.sensor("tactile").labels if robot.spec.has_sensor("tactile") else ()):
        raise ConfigError(f"inner safety layer: the rules of '{inner.rules.source}' are for robot '{spec.name}' "
                          f"(joints {list(spec.joint_names)}), not for this robot's joints "
                          f"{list(robot.spec.joint_names)} and sensors")
    return inner


def open_runner(settings: RobotNodeSettings, attach_hardware: Callable[[Robot], None] | None = None) -> TaskRunner:
    """The robot (``settings.backend``), its task (if ``settings.task``; in the product of its
    reward machine if ``settings.reward_machine``) and the inner safety layer.

    ``attach_hardware`` is called with a hardware robot before it is used (the node connects the
    driver topics there and waits for the first state)."""
    from morl_robot.envs.mo_env import make_sim_robot, open_task_env
    from morl_robot.robots.config import load_robot_config
    from morl_robot.tasks.registry import load_task

    task = load_task(settings.task, settings.task_config or None) if settings.task else None
    robot_name = settings.robot or (task.robot_name if task is not None else "")
    if not robot_name:
        raise ConfigError("parameter robot: needed when no task is given (sawyer, shadow_hand or a YAML path)")
    if task is not None and settings.robot and load_robot_config(robot_name).name != task.robot_name:
        raise ConfigError(f"parameter robot: task '{task.name}' runs on '{task.robot_name}', not '{robot_name}'")
    period = task.config.control_period if task is not None else settings.control_period
    robot: Robot
    if settings.backend == "sim" and task is not None:
        robot = make_sim_robot(task, settings.model)
    elif settings.backend == "sim":
        from morl_robot.robots.mujoco_robot import MujocoRobot

        robot = MujocoRobot(load_robot_config(robot_name), scene=settings.scene or None, control_period=period,
                            model_source=settings.model)
    else:
        from morl_robot.robots.hardware import load_hardware_robot

        robot = load_hardware_robot(robot_name, control_period=period)
        if task is not None:
            robot.set_control_mode(task.control_mode)
        if attach_hardware is not None:
            attach_hardware(robot)
    if task is None and settings.control_mode:
        robot.set_control_mode(settings.control_mode)
    env = open_task_env(task, reward_machine=settings.reward_machine, robot=robot) if task is not None else None
    return TaskRunner(robot, env, seed=settings.seed, inner=inner_layer_for(robot))


# --- the session ---------------------------------------------------------------------------------
class RobotSession:
    """Stepping decisions, episode bookkeeping and counters of one robot node.

    Args:
        runner: the robot, its task and inner safety layer.
        settings: the node's settings, read live (``seed``, ``command_timeout``, … may change).
        out: where records, states, release requests and log lines go.
        step_key: the wire key of ``(episode, step)`` that a lockstep command answers.
        clock: monotonic seconds (command freshness, republish).
    """

    def __init__(self, runner: TaskRunner, settings: RobotNodeSettings, out: RobotOutputs,
                 step_key: Callable[[int, int], float], clock: Callable[[], float] = time.monotonic) -> None:
        self.runner, self.settings, self.out, self._step_key, self._clock = runner, settings, out, step_key, clock
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.active = self.paused = self.estop = False
        self._released_once = False  # the monitor's start-up e-stop has been released at least once
        self.fault = ""  # the fault that stops commanding ("" = none)
        self.inner_hold = ""  # what the inner safety layer is holding for ("" = not holding)
        self.last_error = ""
        self.last_command: tuple[np.ndarray, tuple[str, ...]] | None = None
        self._retry_start = False  # the newest episode start failed on a stale driver state: tick retries it
        self._last_command_time = self._last_publish_time = 0.0

    @property
    def lockstep(self) -> bool:
        return self.settings.timing == "lockstep"

    # --- lifecycle -----------------------------------------------------------------------------
    def activate(self) -> None:
        self.active = True
        self._start_episode()

    def deactivate(self) -> None:
        """Stop stepping; leave the robot holding (unless it is in a fault)."""
        self.active = False
        if self.fault == "":
            try:
                self.runner.robot.send_command(self.runner.robot.hold_command())
            except MorlRobotError as exc:
                self.out.log("warning", f"could not command hold: {exc}")

    def close(self) -> None:
        self.runner.close()

    # --- inputs --------------------------------------------------------------------------------
    def on_command(self, values: np.ndarray, labels: tuple[str, ...], key: float | None = None) -> None:
        """A command (``key``: the step it answers, if it says); in lockstep it is executed now."""
        last = self.runner.last
        if key is not None and self.lockstep and last is not None and key != self._step_key(last.episode, last.step):
            self.counters["stale_commands"] += 1
            return
        self.last_command = (values, labels)
        self._last_command_time = self._clock()
        if not self.active or not self.lockstep or self.paused:
            return
        if self.estop and self.runner.env is not None and last is not None:
            if self.settings.end_episode_on_estop:
                if last.step == 0:  # nothing has moved yet (session start): just release
                    self.out.request_release()
                else:
                    self._safety_stop()
                return
            if last.step == 0 and not self._released_once:  # the start-up latch: stay at rest until released
                self.counters["estop_waits"] += 1
                return
            self._step(values, labels, hold=True)  # the monitor's hold: the episode runs on held
            return
        self._step(values, labels)

    def foreign(self, why: str) -> None:
        """A ``command_safe`` of another session (or of none): never executed; counted, logged once."""
        self._refuse("foreign_commands", "warning", f"ignored {why}")

    def reject(self, why: str) -> None:
        """A command that cannot be executed (malformed, wrong labels…): counted, logged once."""
        self._refuse("rejected_commands", "error", f"command rejected: {why}")

    def _refuse(self, counter: str, level: str, message: str) -> None:
        self.counters[counter] += 1
        if message != self.last_error:
            self.out.log(level, message)
        self.last_error = message

    def tick(self) -> None:
        """Real-time loop: the newest command, or hold after ``command_timeout``.  A task robot
        whose start reset failed (a fault, e.g. a stale driver state) tries it again, except under
        an e-stop latched after the start-up one (the operator releases, then resets)."""
        if self.paused:
            return
        if self._retry_start and self.runner.last is None and (not self.estop or not self._released_once):
            self._start_episode()
            return
        if self.last_command is not None and \
                self._clock() - self._last_command_time <= self.settings.command_timeout:
            self._step(*self.last_command, hold=self.estop)  # under an e-stop, the monitor's hold
        else:
            self._hold()

    def republish(self) -> None:
        """Re-send the newest step when no command came and nothing was published for a while."""
        if self.paused or self.runner.last is None:
            return
        if self._clock() - max(self._last_command_time, self._last_publish_time) >= self.settings.republish_period:
            self._publish(self.runner.last, announce=False)

    def set_estop(self, engaged: bool) -> None:
        """The monitor's latched e-stop.  Its release re-sends a lockstep step 0 at once: the
        commands answering it met the e-stop and were not executed (:meth:`on_command`).  The first
        release of the start-up e-stop starts the policy on a fresh episode (sim backend): a
        (real-time) episode that ran on held while latched is ended (termination ``reset``) and the
        next one starts, so no policy acts on a history of held-still frames in the middle of an
        episode (``release_restarts``).  On hardware a reset is a motion to the start
        configuration, which a release must not start: there the arm has been held at its start
        since activation, and the operator releases it."""
        released = self.estop and not engaged
        first_release = released and not self._released_once
        self.estop = bool(engaged)
        self._released_once = self._released_once or not engaged
        last = self.runner.last
        if (first_release and self.active and self.settings.backend == "sim" and self.runner.env is not None
                and last is not None and last.step > 0):
            self.counters["release_restarts"] += 1
            if not last.done:
                self._publish(self.runner.end_episode("reset", terminated=False))
            self._start_episode()
            return
        if released and self.active and self.lockstep and not self.paused and last is not None and last.step == 0:
            self._publish(last, announce=False)

    def released(self, success: bool) -> None:
        """The monitor answered a release request: on success re-send step 0 at once (the actor's
        command at step 0 was answered with a hold while the e-stop was engaged)."""
        if success and self.runner.last is not None and self.runner.last.step == 0:
            self._publish(self.runner.last, announce=False)

    # --- services (mujoco_ros2_control's vocabulary) -------------------------------------------
    def reset_world(self) -> tuple[bool, str]:
        """End the running episode (termination ``reset``) and start one with the seed ``seed``."""
        if not self.active:
            return False, "robot node is not active"
        last = self.runner.last
        if self.runner.env is not None and last is not None and last.step > 0 and not last.done:
            self._publish(self.runner.end_episode("reset", terminated=False))
        self.runner.seed = self.settings.seed  # the parameter may have been set while running
        self._start_episode(restart_seeds=True)
        return (self.runner.last is not None and self.runner.last.step == 0,
                f"episode {self.runner.episode} started")

    def set_pause(self, paused: bool) -> str:
        self.paused = bool(paused)
        return "paused" if self.paused else "running"

    def step_simulation(self) -> tuple[bool, str]:
        """While paused: one control period with the newest unexecuted command (else a hold)."""
        if not self.paused:
            return False, "the simulation is running; pause it with ~/set_pause first, then step"
        if not self.active:
            return False, "robot node is not active"
        before = self.counters["steps"] + self.counters["holds"]
        if self.last_command is not None:
            self._step(*self.last_command)
            self.last_command = None
        else:
            self._hold()
        stepped = self.counters["steps"] + self.counters["holds"] > before
        last = self.runner.last
        if stepped and last is not None:
            return True, f"stepped to t={last.state.stamp:.4f} s (episode {last.episode}, step {last.step})"
        return stepped, f"not stepped: {self.last_error or self.fault}"

    # --- outputs -------------------------------------------------------------------------------
    def episode_events(self, rec: StepRecord, announce: bool) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The ``episode`` events to send (before, after) ``rec``'s task_step: ``start`` before
        step 0 (the monitor forgets the last episode's command first), ``end`` after the last."""
        if not announce:
            return None, None
        env = getattr(self.runner.env, "unwrapped", self.runner.env)
        context = getattr(getattr(env, "context", None), "name", None)  # issue 37: every episode names its context
        if rec.step == 0 and not rec.done:
            start: dict[str, Any] = {"event": "start", "episode": rec.episode, "steps": rec.step,
                                     "stamp": rec.state.stamp, **({"context": context} if context else {})}
            if rec.state.wrench is not None:  # the reset state's force, as just published on `wrench`: the tare
                start["force"] = [float(x) for x in rec.state.wrench[:3]]
            return start, None
        if not rec.done:
            return None, None
        assert rec.returns is not None
        return None, {"event": "end", "episode": rec.episode, "steps": rec.step, "stamp": rec.state.stamp,
                      "termination": rec.termination,
                      "success": bool(rec.info.get("success", False)),  # the task's own flag at the last step
                      "returns": {n: float(v) for n, v in zip(self.runner.objective_names, rec.returns)},
                      **({"context": context} if context else {})}

    def placement(self, rec: StepRecord) -> tuple[int, str | None, dict[str, tuple[float, ...]],
                                                  dict[str, list[list[float]]] | None]:
        """(episode, context name, body offsets, boxes) of ``rec``'s episode, for the ``placement``
        topic: the static bodies its context moved, m from the scene's nominal — the offsets
        :meth:`TaskRunner.reset` moved the inner layer's approach boxes by, which the safety
        monitor's boxes follow ({}: the nominal cell; issue 37) — and the inner layer's boxes on a
        body as placed ({box: [[lower xyz], [upper xyz]]} m; None: no inner approach rule), which
        the monitor checks its own against."""
        env = getattr(self.runner.env, "unwrapped", self.runner.env)
        context = getattr(getattr(env, "context", None), "name", None)
        offsets = getattr(getattr(self.runner.robot, "context", None), "body_offset", None) or {}
        inner = getattr(self.runner, "inner", None)
        approach = inner.rules.approach if inner is not None else None
        boxes = None if approach is None else {n: [lo.tolist(), hi.tolist()] for n, (lo, hi) in approach.bodied_boxes().items()}
        return rec.episode, context, dict(offsets), boxes

    def status(self) -> tuple[str, str, dict[str, Any]]:
        """(level, message, values) for ``/diagnostics``."""
        values: dict[str, Any] = dict(self.counters)
        values.update({"paused": self.paused, "estop": self.estop, "active": self.active})
        if self.runner.last is not None:
            values.update({"episode": self.runner.episode, "step": self.runner.last.step,
                           "robot_time": self.runner.last.state.stamp})
        if self.fault:
            return "error", f"fault: {self.fault}", values
        if self.inner_hold:
            values["inner_hold"] = self.inner_hold
            return "warn", f"inner safety layer holding: {self.inner_hold}", values
        if self.estop:
            return "warn", "e-stop engaged", values
        return "ok", "paused" if self.paused else ("running" if self.active else "inactive"), values

    # --- the periods ---------------------------------------------------------------------------
    def _guarded(self, fn: Callable[..., StepRecord], *args: Any) -> StepRecord | None:
        try:
            rec = fn(*args)
        except CommandError as exc:
            self.reject(str(exc))
            return None
        except MorlRobotError as exc:  # e.g. a stale hardware state: a fault, stop commanding
            self.counters["faults"] += 1
            if self.fault != str(exc):
                self.out.log("error", f"fault, not commanding: {exc}")
            self.fault = str(exc)
            return None
        if self.fault:
            self.out.log("info", f"fault cleared: {self.fault}")
            self.fault = ""
        return rec

    def _step(self, values: np.ndarray, labels: tuple[str, ...], hold: bool = False) -> None:
        rec = self._guarded(self.runner.step, values, labels, hold)
        if rec is None:
            return
        if rec.held:
            self._on_inner_hold(rec)
            return
        if self.inner_hold:
            self.out.log("info", f"inner safety layer: commands forwarded again (was: {self.inner_hold})")
            self.inner_hold = ""
        self.counters["steps"] += 1
        self._publish(rec)
        if rec.done and self.runner.env is not None:
            self._start_episode()

    def _on_inner_hold(self, rec: StepRecord) -> None:
        """The inner safety layer held the command: the robot held for the period instead."""
        self.counters["inner_holds"] += 1
        why = "; ".join(v.describe() for v in rec.held)
        if why != self.inner_hold:
            self.out.log("error", f"inner safety layer: command not actuated, holding: {why}")
        self.inner_hold = why
        if self.lockstep:
            self._publish(rec, announce=False)  # the same step again: the actor answers it
        else:
            self.out.publish_state(rec.state)

    def _hold(self) -> None:
        rec = self._guarded(self.runner.hold)
        if rec is not None:
            self.counters["holds"] += 1
            self.out.publish_state(rec.state)

    def _start_episode(self, restart_seeds: bool = False) -> None:
        from morl_robot.robots.hardware import StaleStateError

        stale: list[bool] = []

        def reset() -> StepRecord:
            try:
                return self.runner.reset(restart_seeds=restart_seeds)
            except StaleStateError:
                stale.append(True)
                raise

        rec = self._guarded(reset)
        self._retry_start = rec is None and bool(stale) and self.runner.env is not None
        if rec is not None:
            self.counters["episodes"] += 1
            self._publish(rec)

    def _safety_stop(self) -> None:
        """End the episode with termination ``safety``, start the next, release the monitor."""
        self.counters["safety_stops"] += 1
        self._publish(self.runner.end_episode("safety"))
        self._start_episode()
        self.out.request_release()

    def _publish(self, rec: StepRecord, announce: bool = True) -> None:
        self.out.publish(rec, announce)
        self._last_publish_time = self._clock()
