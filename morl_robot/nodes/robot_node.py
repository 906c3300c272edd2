"""``robot_node``: one robot (Sawyer or Shadow Hand) and optionally its task on the ROS graph.

Everything but the messages is the pure :class:`~morl_robot.envs.robot_session.RobotSession`
(stepping, episodes, holds, the inner safety layer, counters, status); this node translates.
Backends, timings, the inner safety layer and e-stops in training: docs/explanation/nodes.md.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from morl_robot.envs.robot_session import RobotOutputs, RobotSession, open_runner
from morl_robot.envs.task_runner import StepRecord
from morl_robot.errors import MorlRobotError
from morl_robot.node_settings import RobotNodeSettings
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    SESSION_SETTLE_MAX,
    DiagnosticsPublisher,
    ManagedNode,
    log_at,
    run_node,
    steady_timer,
)
from morl_robot.nodes.views import RobotViews
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import RobotState, SensorSpec


def _stamp(seconds: float) -> TimeMsg:
    sec = int(seconds)
    return TimeMsg(sec=sec, nanosec=round((seconds - sec) * 1e9) % 1_000_000_000)


class RobotNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("robot_node", **kwargs)
        self.declare_settings(RobotNodeSettings)
        self.core: RobotSession | None = None  # everything but the messages (envs/robot_session.py)
        self._link: Any = None

    # --- lifecycle -----------------------------------------------------------------------------
    def configure(self) -> None:
        runner = open_runner(self.settings, self._attach_hardware)
        out = RobotOutputs(publish=self._publish, publish_state=self._publish_state,
                           request_release=self._request_release, log=lambda lvl, m: log_at(self.get_logger(), lvl, m))
        self.core = RobotSession(runner, self.settings, out, step_key=wire.step_key)
        self._make_interfaces(self.settings.backend, runner.robot)
        self.get_logger().info(
            f"{runner.robot.spec.name} ({self.settings.backend}, {self.settings.timing}) "
            f"task={self.settings.task or '-'} control period {runner.robot.control_period * 1e3:.1f} ms, "
            f"command labels {list(runner.action_labels or runner.command_labels)}"
        )

    def _status(self) -> tuple[str, str, dict[str, Any]]:
        """The session's status, on the hardware backend with the driver link's (``driver/…``: messages
        accepted, out of order, rejected, stream ages, ``reading_age``)."""
        level, message, values = self.core.status()
        if self._link is not None:
            values.update({f"driver/{k}": v for k, v in self._link.status().items()})
        return level, message, values

    def _attach_hardware(self, robot: Robot) -> None:
        """Connect a hardware robot to its driver topics and wait for the first state."""
        from morl_robot.nodes.hardware_link import HardwareLink

        robot.reset_progress = self._reset_progress  # type: ignore[attr-defined]  # sensor streams during a reset
        self._link = HardwareLink(self, robot)
        # the e-stop as the link's thread hears it: this node's executor is blocked during a reset
        self._hw_name = robot.spec.name
        self._reset_estop = [False, False]  # [latched, released at least once (the start-up latch is past)]
        self._link_estop = self._link.node.create_subscription(Bool, "safety/estop", self._on_link_estop,
                                                               wire.LATCHED_QOS)
        self._link.wait_for_state(self.settings.state_timeout)

    def _on_link_estop(self, msg: Bool) -> None:
        self._reset_estop = [bool(msg.data), self._reset_estop[1] or not msg.data]

    def _reset_progress(self, state: RobotState) -> None:
        """Each period of a hardware reset: publish the sensor streams; a latched e-stop (other than
        the start-up one) stops the reset motion (the robot holds and raises)."""
        self._publish_state(state)
        latched, past_start = self._reset_estop
        if latched and past_start:
            from morl_robot.robots.hardware import HardwareError

            raise HardwareError(f"{self._hw_name}: reset stopped: the safety monitor's e-stop is latched; the "
                                "arm holds where it is. Clear the cause (take the peg out by hand / clear the "
                                "obstacle), release the e-stop (safety/reset), then reset")

    def _make_interfaces(self, backend: str, robot: Robot) -> None:
        self._robot, own = robot, self.own
        self._pub_joints = own(self.create_publisher(JointState, "joint_states", wire.SENSOR_QOS))
        self._pub_wrench = (own(self.create_publisher(WrenchStamped, "wrench", wire.SENSOR_QOS))
                            if robot.spec.has_sensor("wrench") else None)
        self._pub_tactile = None
        if robot.spec.has_sensor("tactile"):
            self._pub_tactile = own(self.create_publisher(Float64MultiArray, "tactile", wire.SENSOR_QOS))
            self._tactile_msg = wire.LabelledVector(self._sensor_of_kind("tactile").labels)
        assert self.core is not None
        runner = self.core.runner
        self._pub_task = None
        if runner.env is not None:
            self._pub_task = own(self.create_publisher(Float64MultiArray, "task_step", wire.SENSOR_QOS))
            self._task_step_msg = wire.LabelledVector(
                wire.task_step_labels(runner.objective_names, runner.observation_labels, runner.machine_labels))
            self._pub_episode = own(self.create_publisher(String, "episode", wire.EVENT_QOS))
            # latched: a monitor that joins late still learns where this episode's context put the cell
            self._pub_placement = own(self.create_publisher(String, "placement", wire.LATCHED_QOS))
        self._pub_clock = own(self.create_publisher(Clock, "/clock", wire.CLOCK_QOS)) if backend == "sim" else None
        own(self.create_subscription(Float64MultiArray, "command_safe", self._on_command, wire.COMMAND_QOS))
        self._sub_estop = own(self.create_subscription(Bool, "safety/estop", self._on_estop, wire.LATCHED_QOS))
        self._reset_client = own(self.create_client(Trigger, "safety/reset"))
        if backend == "sim":
            own(self.create_service(Trigger, "~/reset_world", self._srv_reset_world))
            own(self.create_service(SetBool, "~/set_pause", self._srv_set_pause))
            own(self.create_service(Trigger, "~/step_simulation", self._srv_step))
            # a force gauge's push on a body (the safety test's fingertip press)
            own(self.create_subscription(WrenchStamped, "~/external_wrench", self._on_external_wrench,
                                         wire.COMMAND_QOS))
        own(DiagnosticsPublisher(self, f"{self.get_name()}: robot", self._status, hardware_id=robot.spec.name))
        self._views = RobotViews(self, runner, self.settings.scene_rate,  # scene, view/… (only while subscribed)
                                 self.settings.view_rate)
        self._video = None
        if self.settings.video_dir:  # one MP4 per episode (morl_robot.rendering)
            from morl_robot.rendering import RobotNodeVideos, VideoSettings

            self._video = RobotNodeVideos(self.settings.video_dir, runner, VideoSettings(  # lockstep waits for frames
                fps=self.settings.video_fps, wait=self.settings.timing == "lockstep"))
            self.get_logger().info(f"video: {self._video.backend} -> {self.settings.video_dir}")

    def activate(self) -> None:
        assert self.core is not None
        self.core.activate()
        if self.settings.timing == "realtime":
            self.own(steady_timer(self, self.core.runner.robot.control_period, self.core.tick), "deactivate")
        # both timings: re-send the newest task_step while no command comes (a late actor's cue)
        self.own(steady_timer(self, self.settings.republish_period, self.core.republish), "deactivate")

    def deactivate(self) -> None:  # (its loop timers: ManagedNode)
        if self.core is not None:
            self.core.deactivate()

    def cleanup(self) -> None:  # (its entities: ManagedNode)
        if getattr(self, "_views", None) is not None:
            self._views.close()
        if getattr(self, "_video", None) is not None:
            self._video.close()
            self._video = None
        if self._link is not None:
            self._link.close()
            self._link = None
        if self.core is not None:
            self.core.close()
            self.core = None

    # --- messages in ---------------------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        if self.core is None:
            return
        try:
            cmd = wire.split_command(*wire.read_labelled(msg))
        except wire.WireError as exc:
            self.core.reject(f"malformed command: {exc}")
            return
        theirs = wire.foreign_sender(cmd, self.session_token)
        if theirs:  # another session's monitor (or none): never executed
            self.core.foreign(f"command_safe of {theirs} on {self.get_namespace()}: this robot executes only "
                              f"session {self.settings.session}'s")
            return
        self.core.on_command(cmd.values, cmd.labels, cmd.key)
        self._views.on_command(cmd.values, cmd.labels)

    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        """Sim only: push body ``header.frame_id`` with the message's wrench (world frame, N and
        N·m, at its centre of mass) until the next message or a reset; zeros release it."""
        f, t = msg.wrench.force, msg.wrench.torque
        try:
            self._robot.apply_external_force(msg.header.frame_id, [f.x, f.y, f.z], [t.x, t.y, t.z])
        except MorlRobotError as exc:
            self.get_logger().error(f"~/external_wrench ignored: {exc}", throttle_duration_sec=1.0)

    def on_intruder(self) -> None:
        """Another session started on these names and gives way (``SessionGuard``); before it heard
        this one, its monitor may have published its start-up e-stop on the same latched topic.
        Once it is gone, a fresh subscription hears the latched state of this session's monitor
        alone (twice: its nodes may take a while to exit)."""
        for delay in (SESSION_SETTLE_MAX + 2.0, 2 * SESSION_SETTLE_MAX + 4.0):
            self._resubscribe_estop_after(delay)

    def _resubscribe_estop_after(self, delay: float) -> None:
        """A fresh ``safety/estop`` subscription in ``delay`` s (a one-shot timer)."""
        timer: list[Any] = []

        def resubscribe() -> None:  # (no argument: rclpy would pass its TimerInfo)
            self.destroy_timer(timer[0])
            if self.disown(getattr(self, "_sub_estop", None)):  # (not after cleanup)
                self._sub_estop = self.own(self.create_subscription(Bool, "safety/estop", self._on_estop,
                                                                    wire.LATCHED_QOS))

        timer.append(steady_timer(self, delay, resubscribe))

    def _on_estop(self, msg: Bool) -> None:
        if self.core is None:
            return
        self.core.set_estop(msg.data)

    def _request_release(self) -> None:
        """Ask the safety monitor to release its e-stop (it refuses while a violation persists)."""
        if self._reset_client.service_is_ready():
            future = self._reset_client.call_async(Trigger.Request())
            future.add_done_callback(self._on_released)
        else:
            self.get_logger().warning("safety/reset is not available; the e-stop stays latched")

    def _on_released(self, future: Any) -> None:
        reply = future.result()
        if self.core is not None:
            self.core.released(reply is not None and reply.success)

    # --- messages out --------------------------------------------------------------------------
    def _publish(self, rec: StepRecord, announce: bool = True) -> None:
        self._publish_state(rec.state)
        if getattr(self, "_video", None) is not None and self.core is not None:
            self._video.on_record(rec, self.core.estop)
        if self._pub_task is not None and rec.observation is not None and self.core is not None:
            before, after = self.core.episode_events(rec, announce)
            if before is not None:  # the placement first: the monitor moves its approach boxes before step 0
                self._pub_placement.publish(String(data=wire.placement_json(*self.core.placement(rec))))
                self._pub_episode.publish(String(data=json.dumps(before)))
            self._pub_task.publish(self._task_step_msg(self.core.runner.task_step_values(rec)))
            self._views.on_task_step(rec)
            if after is not None:
                self._pub_episode.publish(String(data=json.dumps(after)))

    def _publish_state(self, state: RobotState) -> None:
        if not hasattr(self, "_pub_joints"):
            return
        now = self.get_clock().now().to_msg()
        js = JointState()
        js.header.stamp = now
        js.name = list(self._robot.spec.joint_names)
        js.position, js.velocity, js.effort = state.position.tolist(), state.velocity.tolist(), state.effort.tolist()
        self._pub_joints.publish(js)
        if hasattr(self, "_views"):  # (a hardware reset's progress may come before the views exist)
            self._views.on_state(state)
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
        return next(s for s in self._robot.spec.sensors if s.kind == kind)

    # --- services (mujoco_ros2_control's vocabulary) -------------------------------------------
    def _srv_reset_world(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.core is None:
            response.success, response.message = False, "robot node is not active"
        else:
            response.success, response.message = self.core.reset_world()
        return response

    def _srv_set_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        if self.core is None:
            response.success, response.message = False, "robot node is not configured"
        else:
            response.success, response.message = True, self.core.set_pause(request.data)
        return response

    def _srv_step(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self.core is None:
            response.success, response.message = False, "robot node is not active"
        else:
            response.success, response.message = self.core.step_simulation()
        return response


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: RobotNode(), args)


if __name__ == "__main__":
    sys.exit(main())
