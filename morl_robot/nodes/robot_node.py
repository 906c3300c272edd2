"""``robot_node``: one robot (Sawyer or Shadow Hand) and optionally its task on the ROS graph.

Backends (parameter ``backend``):

* ``sim`` — a :class:`~morl_robot.robots.mujoco_robot.MujocoRobot`; publishes ``/clock``
  (simulation time) and offers mujoco_ros2_control's services ``~/reset_world``,
  ``~/set_pause`` and ``~/step_simulation``.
* ``hardware`` — :class:`~morl_robot.robots.hardware.HardwareRobot` reached through the driver
  topics of ``config/robots/<robot>.yaml`` (``hardware:`` section); a stale driver state is a fault
  that stops commanding until fresh state arrives.

Timing (parameter ``timing``):

* ``lockstep`` (sim only) — each ``command_safe`` message advances the simulation by exactly one
  control period, then the node publishes the new state and ``task_step``: deterministic, and as
  fast as the policy and the learner go.  Until the first command arrives (the actor may join
  late) the newest ``task_step`` is re-sent every ``republish_period`` seconds.
* ``realtime`` — a wall-clock timer at the control rate applies the newest command; with no
  command for ``command_timeout`` seconds (e.g. the safety monitor died) the robot holds.

Safety in two layers: the ``safety_monitor`` node supervises (latched e-stop, watchdogs, clamping,
reset); inside this node's own loop the inner layer (:class:`~morl_robot.safety.inner.InnerSafety`,
the stopping rules of the same safety YAML, ``config/safety/<robot>.yaml``) checks every command on the
newest readings before it is actuated.  A command it forbids is not executed: the robot holds for
that period, the violation is logged once when it begins, counted (``inner_holds``) and shown in
``/diagnostics`` while it lasts; in lockstep the newest ``task_step`` is re-sent so the actor goes on.

With ``end_episode_on_estop`` (simulated training), a command that arrives while the safety
monitor's latched ``safety/estop`` is engaged ends the episode with termination ``safety``; the
node then resets the world and asks the monitor to release (``safety/reset``).
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from morl_robot.envs.mo_env import MORobotEnv, make_sim_robot
from morl_robot.envs.task_runner import StepRecord, TaskRunner
from morl_robot.errors import CommandError, ConfigError, MorlRobotError
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    ManagedNode,
    run_node,
    steady_timer,
)
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import RobotState, SensorSpec
from morl_robot.session.config import RobotNodeSettings


def _stamp(seconds: float) -> TimeMsg:
    sec = int(seconds)
    return TimeMsg(sec=sec, nanosec=round((seconds - sec) * 1e9) % 1_000_000_000)


class RobotNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("robot_node", **kwargs)
        self.declare_settings(RobotNodeSettings)
        self.runner: TaskRunner | None = None
        self.robot: Robot | None = None
        self._link: Any = None
        self._loop_timers: list[Any] = []
        self._active = False
        self._paused = False
        self._estop = False
        self._reset_client: Any = None
        self._last_command: tuple[np.ndarray, tuple[str, ...]] | None = None
        self._last_command_time = 0.0
        self._last_publish_time = 0.0
        self._counters = {"steps": 0, "holds": 0, "episodes": 0, "rejected_commands": 0, "stale_commands": 0,
                          "faults": 0, "safety_stops": 0, "inner_holds": 0}
        self._fault = ""
        self._inner_hold = ""  # what the inner safety layer is holding for ("" = not holding)
        self._last_error = ""

    # --- parameters ----------------------------------------------------------------------------
    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        from morl_robot.tasks.registry import load_task

        backend, timing = self.settings.backend, self.settings.timing  # values checked by RobotNodeSettings
        task_name = self.settings.task
        task = load_task(task_name, self.settings.task_config or None) if task_name else None
        robot_name = self.settings.robot or (task.robot_name if task is not None else "")
        if not robot_name:
            raise ConfigError("parameter robot: needed when no task is given (sawyer, shadow_hand or a YAML path)")
        if task is not None and self.settings.robot:
            from morl_robot.robots.config import load_robot_config

            if load_robot_config(robot_name).name != task.robot_name:
                raise ConfigError(f"parameter robot: task '{task.name}' runs on '{task.robot_name}', not '{robot_name}'")
        period = task.config.control_period if task is not None else self.settings.control_period
        robot = self._make_robot(backend, robot_name, task, period)
        if task is None:
            mode = self.settings.control_mode
            if mode:
                robot.set_control_mode(mode)
        env = MORobotEnv(task, robot=robot) if task is not None else None
        self.robot = robot
        self.runner = TaskRunner(robot, env, seed=self.settings.seed, inner=self._inner_layer(robot))
        self._make_interfaces(backend, robot)
        self.get_logger().info(
            f"{robot.spec.name} ({backend}, {timing}) task={task_name or '-'} control period {period * 1e3:.1f} ms, "
            f"command labels {list(self.runner.action_labels or self.runner.command_labels)}"
        )

    def _inner_layer(self, robot: Robot) -> Any:
        from morl_robot.safety.inner import InnerSafety

        inner = InnerSafety.load(robot.spec.name)  # config/safety/<robot>.yaml, the monitor's rules
        spec = inner.rules.spec
        if spec.joint_names != robot.spec.joint_names or inner.rules.tactile_labels != (
                robot.spec.sensor("tactile").labels if robot.spec.has_sensor("tactile") else ()):
            raise ConfigError(f"inner safety layer: the rules of '{inner.rules.source}' are for robot '{spec.name}' "
                              f"(joints {list(spec.joint_names)}), not for this robot's joints "
                              f"{list(robot.spec.joint_names)} and sensors")
        return inner

    def _make_robot(self, backend: str, robot_name: str, task: Any, period: float) -> Robot:
        if backend == "sim":
            if task is not None:
                return make_sim_robot(task, self.settings.model)
            from morl_robot.robots.config import load_robot_config
            from morl_robot.robots.mujoco_robot import MujocoRobot

            return MujocoRobot(load_robot_config(robot_name), scene=self.settings.scene or None,
                               control_period=period, model_source=self.settings.model)
        from morl_robot.nodes.hardware_link import HardwareLink
        from morl_robot.robots.hardware import load_hardware_robot

        robot = load_hardware_robot(robot_name, control_period=period)
        robot.reset_progress = self._publish_state  # keep the sensor streams alive during a reset
        if task is not None:
            robot.set_control_mode(task.control_mode)
        self._link = HardwareLink(self, robot)
        self._link.wait_for_state(self.settings.state_timeout)
        return robot

    def _make_interfaces(self, backend: str, robot: Robot) -> None:
        self._pub_joints = self.create_publisher(JointState, "joint_states", wire.SENSOR_QOS)
        self._pub_wrench = (self.create_publisher(WrenchStamped, "wrench", wire.SENSOR_QOS)
                            if robot.spec.has_sensor("wrench") else None)
        self._pub_tactile = None
        if robot.spec.has_sensor("tactile"):
            self._pub_tactile = self.create_publisher(Float64MultiArray, "tactile", wire.SENSOR_QOS)
            self._tactile_msg = wire.LabelledVector(self._sensor_of_kind("tactile").labels)
        assert self.runner is not None
        self._pub_task = None
        if self.runner.env is not None:
            self._pub_task = self.create_publisher(Float64MultiArray, "task_step", wire.SENSOR_QOS)
            self._task_step_msg = wire.LabelledVector(
                wire.task_step_labels(self.runner.objective_names, self.runner.observation_labels))
            self._pub_episode = self.create_publisher(String, "episode", wire.EVENT_QOS)
        self._pub_clock = self.create_publisher(Clock, "/clock", wire.CLOCK_QOS) if backend == "sim" else None
        self._sub_command = self.create_subscription(Float64MultiArray, "command_safe", self._on_command,
                                                     wire.COMMAND_QOS)
        self._sub_estop = self.create_subscription(Bool, "safety/estop", self._on_estop, wire.LATCHED_QOS)
        self._reset_client = self.create_client(Trigger, "safety/reset")
        if backend == "sim":
            self._sim_services = [
                self.create_service(Trigger, "~/reset_world", self._srv_reset_world),
                self.create_service(SetBool, "~/set_pause", self._srv_set_pause),
                self.create_service(Trigger, "~/step_simulation", self._srv_step),
            ]
        self._diagnostics = DiagnosticsPublisher(self, f"{self.get_name()}: robot", self._status,
                                                 hardware_id=robot.spec.name)

    def activate(self) -> None:
        assert self.runner is not None
        self._active = True
        self._start_episode()
        if self.settings.timing == "realtime":
            self._loop_timers.append(steady_timer(self, self.runner.robot.control_period, self._on_tick))
        # both timings: re-send the newest task_step while no command comes (a late actor's cue)
        self._loop_timers.append(steady_timer(self, self.settings.republish_period, self._on_republish))

    def deactivate(self) -> None:
        self._active = False
        for t in self._loop_timers:
            self.destroy_timer(t)
        self._loop_timers = []
        if self.runner is not None and self._fault == "":
            try:  # leave the robot holding
                self.runner.robot.send_command(self.runner.robot.hold_command())
            except MorlRobotError as exc:
                self.get_logger().warning(f"could not command hold: {exc}")

    def cleanup(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def close(self) -> None:
        if self._active:
            self.deactivate()
        self.cleanup()

    # --- the loop ------------------------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        try:
            values, labels = wire.read_labelled(msg)
            values, labels, key = wire.split_step_key(values, labels)
        except wire.WireError as exc:
            self._reject(f"malformed command: {exc}")
            return
        if key is not None and self.settings.timing == "lockstep" and self.runner is not None \
                and self.runner.last is not None \
                and key != wire.step_key(self.runner.last.episode, self.runner.last.step):
            self._counters["stale_commands"] += 1  # answers an older step (e.g. a re-sent one, twice)
            return
        self._last_command = (values, labels)
        self._last_command_time = time.monotonic()
        if not self._active or self.settings.timing != "lockstep" or self._paused:
            return
        if self._estop and self.settings.end_episode_on_estop and self.runner is not None \
                and self.runner.env is not None and self.runner.last is not None:
            if self.runner.last.step == 0:  # nothing has moved yet (session start): just release
                self._request_release()
            else:
                self._safety_stop()
            return
        self._step(values, labels)

    def _on_tick(self) -> None:
        """Real-time loop: newest command, or hold after ``command_timeout``."""
        if self._paused or self.runner is None:
            return
        fresh = (self._last_command is not None
                 and time.monotonic() - self._last_command_time <= self.settings.command_timeout)
        if fresh:
            assert self._last_command is not None
            self._step(*self._last_command)
        else:
            self._hold()

    def _on_republish(self) -> None:
        """Re-send the newest task_step while no command has come for a while."""
        if self._paused or self.runner is None or self.runner.last is None:
            return
        now = time.monotonic()
        period = self.settings.republish_period
        if now - max(self._last_command_time, self._last_publish_time) >= period:
            self._publish(self.runner.last, announce=False)

    def _guarded(self, fn: Any, *args: Any) -> StepRecord | None:
        try:
            rec = fn(*args)
        except CommandError as exc:
            self._reject(str(exc))
            return None
        except MorlRobotError as exc:  # e.g. a stale hardware state: a fault, stop commanding
            self._counters["faults"] += 1
            if self._fault != str(exc):
                self.get_logger().error(f"fault, not commanding: {exc}")
            self._fault = str(exc)
            return None
        if self._fault:
            self.get_logger().info(f"fault cleared: {self._fault}")
            self._fault = ""
        return rec

    def _step(self, values: np.ndarray, labels: tuple[str, ...]) -> None:
        assert self.runner is not None
        rec = self._guarded(self.runner.step, values, labels)
        if rec is None:
            return
        if rec.held:
            self._on_inner_hold(rec)
            return
        if self._inner_hold:
            self.get_logger().info(f"inner safety layer: commands forwarded again (was: {self._inner_hold})")
            self._inner_hold = ""
        self._counters["steps"] += 1
        self._publish(rec)
        if rec.done and self.runner.env is not None:
            self._start_episode()

    def _on_inner_hold(self, rec: StepRecord) -> None:
        """The inner safety layer held the command: the robot held for the period instead."""
        self._counters["inner_holds"] += 1
        why = "; ".join(v.describe() for v in rec.held)
        if why != self._inner_hold:
            self.get_logger().error(f"inner safety layer: command not actuated, holding: {why}")
        self._inner_hold = why
        if self.settings.timing == "lockstep":
            self._publish(rec, announce=False)  # the same step again: the actor answers it
        else:
            self._publish_sensors(rec)

    def _hold(self) -> None:
        assert self.runner is not None
        rec = self._guarded(self.runner.hold)
        if rec is not None:
            self._counters["holds"] += 1
            self._publish_sensors(rec)

    def _start_episode(self, restart_seeds: bool = False) -> None:
        assert self.runner is not None
        rec = self._guarded(lambda: self.runner.reset(restart_seeds=restart_seeds))
        if rec is None:
            return
        self._counters["episodes"] += 1
        self._publish(rec)

    def _safety_stop(self) -> None:
        """End the episode with termination ``safety``, reset the world, release the monitor."""
        assert self.runner is not None
        self._counters["safety_stops"] += 1
        self._publish(self.runner.end_episode("safety"))
        self._start_episode()
        self._request_release()

    def _request_release(self) -> None:
        """Ask the safety monitor to release its e-stop (it refuses while a violation persists)."""
        if self._reset_client.service_is_ready():
            future = self._reset_client.call_async(Trigger.Request())
            future.add_done_callback(self._on_released)
        else:
            self.get_logger().warning("safety/reset is not available; the e-stop stays latched")

    def _on_released(self, future: Any) -> None:
        """Released: re-send the newest task_step at once (the actor's command at step 0 was
        answered with a hold while the e-stop was engaged), instead of waiting for the
        republish timer."""
        reply = future.result()
        if reply is not None and reply.success and self.runner is not None and self.runner.last is not None \
                and self.runner.last.step == 0:
            self._publish(self.runner.last, announce=False)

    def _reject(self, why: str) -> None:
        self._counters["rejected_commands"] += 1
        if why != self._last_error:
            self.get_logger().error(f"command rejected: {why}")
        self._last_error = why

    # --- publishing ----------------------------------------------------------------------------
    def _publish(self, rec: StepRecord, announce: bool = True) -> None:
        self._publish_sensors(rec)
        assert self.runner is not None
        if self._pub_task is not None and rec.observation is not None:
            start = announce and rec.step == 0 and not rec.done
            if start:  # before step 0's task_step: the monitor forgets the last episode's command first
                self._publish_episode(rec)
            self._pub_task.publish(self._task_step_msg(self.runner.task_step_values(rec)))
            if announce and rec.done:
                self._publish_episode(rec)
        self._last_publish_time = time.monotonic()

    def _publish_sensors(self, rec: StepRecord) -> None:
        self._publish_state(rec.state)

    def _publish_state(self, state: RobotState) -> None:
        if self.robot is None or not hasattr(self, "_pub_joints"):
            return
        now = self.get_clock().now().to_msg()
        js = JointState()
        js.header.stamp = now
        js.name = list(self.robot.spec.joint_names)
        js.position, js.velocity, js.effort = state.position.tolist(), state.velocity.tolist(), state.effort.tolist()
        self._pub_joints.publish(js)
        if self._pub_wrench is not None and state.wrench is not None:
            w = WrenchStamped()
            w.header.stamp = now
            w.header.frame_id = self._sensor_of_kind("wrench").frame
            f, t = state.wrench[:3], state.wrench[3:]
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = map(float, f)
            w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = map(float, t)
            self._pub_wrench.publish(w)
        if self._pub_tactile is not None and state.tactile is not None:
            self._pub_tactile.publish(self._tactile_msg(state.tactile))
        if self._pub_clock is not None:
            self._pub_clock.publish(Clock(clock=_stamp(state.stamp)))

    def _sensor_of_kind(self, kind: str) -> SensorSpec:
        assert self.robot is not None
        return next(s for s in self.robot.spec.sensors if s.kind == kind)

    def _publish_episode(self, rec: StepRecord) -> None:
        assert self.runner is not None
        event: dict[str, Any] = {"event": "end" if rec.done else "start", "episode": rec.episode, "steps": rec.step,
                                 "stamp": rec.state.stamp}
        if rec.done:
            event["termination"] = rec.termination
            event["success"] = bool(rec.info.get("success", False))  # the task's own flag at the last step
            event["returns"] = {n: float(v) for n, v in zip(self.runner.objective_names, rec.returns)}  # type: ignore[arg-type]
        self._pub_episode.publish(String(data=json.dumps(event)))

    # --- estop ---------------------------------------------------------------------------------
    def _on_estop(self, msg: Bool) -> None:
        self._estop = bool(msg.data)

    # --- services (mujoco_ros2_control's vocabulary) -------------------------------------------
    def _srv_reset_world(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.runner is None or not self._active:
            response.success, response.message = False, "robot node is not active"
            return response
        if self.runner.env is not None and self.runner.last is not None and self.runner.last.step > 0 \
                and not self.runner.last.done:
            self._publish(self.runner.end_episode("reset", terminated=False))
        self.runner.seed = self.settings.seed  # the parameter may have been set while running
        self._start_episode(restart_seeds=True)  # the episode it starts takes the node's ``seed``
        response.success = self.runner.last is not None and self.runner.last.step == 0
        response.message = f"episode {self.runner.episode} started"
        return response

    def _srv_set_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self._paused = bool(request.data)
        response.success = True
        response.message = "paused" if self._paused else "running"
        return response

    def _srv_step(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if not self._paused:
            response.success = False
            response.message = "the simulation is running; pause it with ~/set_pause first, then step"
            return response
        if self.runner is None or not self._active:
            response.success, response.message = False, "robot node is not active"
            return response
        before = self._counters["steps"] + self._counters["holds"]
        if self._last_command is not None:
            self._step(*self._last_command)
            self._last_command = None
        else:
            self._hold()
        stepped = self._counters["steps"] + self._counters["holds"] > before
        response.success = stepped
        last = self.runner.last
        response.message = (f"stepped to t={last.state.stamp:.4f} s (episode {last.episode}, step {last.step})"
                            if stepped and last is not None else f"not stepped: {self._last_error or self._fault}")
        return response

    # --- diagnostics ---------------------------------------------------------------------------
    def _status(self) -> tuple[str, str, dict[str, Any]]:
        values: dict[str, Any] = dict(self._counters)
        values.update({"paused": self._paused, "estop": self._estop, "active": self._active})
        if self.runner is not None and self.runner.last is not None:
            values.update({"episode": self.runner.episode, "step": self.runner.last.step,
                           "robot_time": self.runner.last.state.stamp})
        if self._fault:
            return "error", f"fault: {self._fault}", values
        if self._inner_hold:
            values["inner_hold"] = self._inner_hold
            return "warn", f"inner safety layer holding: {self._inner_hold}", values
        if self._estop:
            return "warn", "e-stop engaged", values
        return "ok", "paused" if self._paused else ("running" if self._active else "inactive"), values


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: RobotNode(), args)


if __name__ == "__main__":
    sys.exit(main())
