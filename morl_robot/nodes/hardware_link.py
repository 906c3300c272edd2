"""The rclpy side of the hardware backend: driver topics in, driver commands out.

:class:`HardwareLink` connects a pure :class:`~morl_robot.robots.hardware.HardwareRobot` to the
driver topics named in the robot YAML's ``hardware:`` section:

* ``sensor_msgs/JointState`` → ``robot.on_joint_state`` (header stamp in s);
* ``geometry_msgs/WrenchStamped`` → ``robot.on_wrench`` (with ``header.frame_id``);
* ``std_msgs/Float64MultiArray`` tactile → ``robot.on_tactile`` (labels from the layout if it has
  the one-dimension labelled layout of :mod:`morl_robot.nodes.wire`);
* :class:`~morl_robot.robots.driver_codec.DriverCommand` → ``std_msgs/Float64MultiArray`` (forward
  command controller), ``trajectory_msgs/JointTrajectory`` (one point; header stamp zero = start
  now, as joint_trajectory_controller reads it) or ``sensor_msgs/JointState``.

Threading: the driver subscriptions live on a private helper node (``<node>_driver_link``, same
context and namespace as ``node``, global ROS arguments not applied so that ``-r __node:=…``
does not rename it) spun by the link's own executor in a background thread.  Driver state
therefore keeps flowing while the owning node's single-threaded executor is busy — in a timer
callback, in a blocking ``robot.reset()`` that waits for the arm to arrive, or before the node
spins at all (``configure`` calling :meth:`wait_for_state`).  The robot guards its buffers with a
lock; publishing commands from the caller's thread is thread-safe in rclpy.

QoS: ros2_control's ``joint_state_broadcaster`` and ros1_bridge publish RELIABLE, some drivers
publish with the BEST_EFFORT sensor-data profile.  A BEST_EFFORT subscription matches both
(a RELIABLE one would not match a best-effort publisher), so :data:`DRIVER_STATE_QOS` is best
effort, newest 10, volatile; a lost sample only ages the state (the deadline catches a dead link).
Commands go out RELIABLE (:data:`DRIVER_COMMAND_QOS`), which matches the controllers' reliable
(system default) subscriptions and best-effort ones alike.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Any

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from morl_robot.nodes import wire
from morl_robot.robots.driver_codec import DriverCommand
from morl_robot.robots.hardware import (
    HardwareError,
    HardwareRobot,
    StaleStateError,
)
from morl_robot.robots.spec import RobotState

#: Subscriptions to a driver's sensor streams (see the module docstring).
DRIVER_STATE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                              reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
#: Publishing to a controller's command topic.
DRIVER_COMMAND_QOS = wire.COMMAND_QOS


def stamp_seconds(stamp: Any) -> float:
    """``builtin_interfaces/Time`` → s."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def _duration(seconds: float) -> Duration:
    sec = int(seconds)
    return Duration(sec=sec, nanosec=round((seconds - sec) * 1e9) % 1_000_000_000)


def tactile_labels(msg: Float64MultiArray) -> tuple[str, ...]:
    """Element labels of a tactile array with the labelled layout of :mod:`morl_robot.nodes.wire`,
    else () (a plain array in our sensor order)."""
    if len(msg.layout.dim) != 1 or not msg.layout.dim[0].label:
        return ()
    try:
        return wire.read_labelled(msg)[1]
    except wire.WireError:
        return ()


class HardwareLink:
    """Driver topics of ``robot.hardware`` on ``node``'s context (see the module docstring)."""

    def __init__(self, node: Node, robot: HardwareRobot) -> None:
        self.robot = robot
        hw = robot.hardware
        self.node = Node(f"{node.get_name()}_driver_link", context=node.context, namespace=node.get_namespace(),
                         use_global_arguments=False, start_parameter_services=False)
        n = self.node
        self._subs = [n.create_subscription(JointState, hw.state.topic, self._on_joint_state, DRIVER_STATE_QOS)]
        if hw.wrench is not None:
            self._subs.append(n.create_subscription(WrenchStamped, hw.wrench.topic, self._on_wrench, DRIVER_STATE_QOS))
        if hw.tactile is not None:
            self._subs.append(n.create_subscription(Float64MultiArray, hw.tactile.topic, self._on_tactile,
                                                    DRIVER_STATE_QOS))
        kind = {"forward": Float64MultiArray, "trajectory": JointTrajectory, "joint_state": JointState}
        self._pub = n.create_publisher(kind[hw.command.interface], hw.command.topic, DRIVER_COMMAND_QOS)
        self.state_topic = n.resolve_topic_name(hw.state.topic)
        self.command_topic = self._pub.topic_name
        self._executor = SingleThreadedExecutor(context=node.context)
        self._executor.add_node(n)
        self._running = True
        self.callback_errors = 0  # callbacks that raised (the thread logs each distinct one and goes on)
        self._reported: set[str] = set()
        self._thread = threading.Thread(target=self._spin, name="hardware_link", daemon=True)
        self._thread.start()
        robot.connect(self.send)
        # a reading's age (RobotState.age, the approach limit's reaction time) from the driver's stamps
        ros_clock = node.get_clock()  # the robot node's (use_sim_time follows the session)
        robot.stamp_clock = lambda: ros_clock.now().nanoseconds * 1e-9

    # --- driver -> robot ------------------------------------------------------------------
    def _spin(self) -> None:
        while self._running and self.node.context.ok():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except (ExternalShutdownException, KeyboardInterrupt):
                return
            except Exception as exc:  # noqa: BLE001 - a callback bug must not end the driver thread
                if not (self._running and self.node.context.ok()):
                    return  # the context was torn down under us while closing
                # a failing callback must not end the driver thread (the robot would go stale for
                # good): report it (once per distinct error) and keep listening
                self.callback_errors += 1
                what = f"{type(exc).__name__}: {exc}"
                if what not in self._reported:
                    self._reported.add(what)
                    self.node.get_logger().error(
                        f"driver callback failed (still listening): {what}\n{traceback.format_exc()}")

    def _on_joint_state(self, msg: JointState) -> None:
        self.robot.on_joint_state(msg.name, msg.position, msg.velocity, msg.effort, stamp_seconds(msg.header.stamp))

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        self.robot.on_wrench((f.x, f.y, f.z), (t.x, t.y, t.z), stamp_seconds(msg.header.stamp), msg.header.frame_id)

    def _on_tactile(self, msg: Float64MultiArray) -> None:
        self.robot.on_tactile(msg.data, tactile_labels(msg))

    # --- robot -> driver ------------------------------------------------------------------
    def send(self, cmd: DriverCommand) -> None:
        """Publish one :class:`DriverCommand` on the controller's topic; raises
        :class:`~morl_robot.robots.hardware.HardwareError` once the link or its context is closed."""
        if not self._running or not self.node.context.ok():
            raise HardwareError(f"the driver link to {self.command_topic} is closed; command not sent")
        values = [float(v) for v in cmd.values]
        if cmd.kind == "forward":
            self._pub.publish(Float64MultiArray(data=values))
        elif cmd.kind == "trajectory":
            msg = JointTrajectory()  # header stamp 0: start now
            msg.joint_names = list(cmd.joint_names)
            point = JointTrajectoryPoint(time_from_start=_duration(cmd.time_from_start))
            setattr(point, {"position": "positions", "velocity": "velocities", "effort": "effort"}[cmd.mode], values)
            msg.points = [point]
            self._pub.publish(msg)
        else:
            msg = JointState()
            msg.header.stamp = self.node.get_clock().now().to_msg()
            msg.name = list(cmd.joint_names)
            setattr(msg, cmd.mode, values)
            self._pub.publish(msg)

    # --- waiting --------------------------------------------------------------------------
    def publisher_count(self) -> int:
        """Publishers on the driver's joint-state topic (0: the driver is not running)."""
        return self.node.count_publishers(self.state_topic)

    def wait_for_state(self, timeout: float) -> RobotState:
        """Block until the robot has a fresh state on every stream; raise :class:`StaleStateError`
        naming the topics after ``timeout`` s.  Safe to call before the owning node spins and from
        its callbacks (the link spins itself)."""
        give_up = time.monotonic() + timeout
        while True:
            try:
                return self.robot.read_state()
            except StaleStateError as exc:
                if time.monotonic() >= give_up:
                    raise StaleStateError(f"no usable driver state after {timeout:.1f} s ({self.publisher_count()} "
                                          f"publisher(s) on {self.state_topic}): {exc}") from None
            time.sleep(0.01)

    def status(self) -> dict[str, Any]:
        """The robot's stream counters plus the driver's publisher count (for diagnostics)."""
        return {**self.robot.status(), "driver_publishers": self.publisher_count(),
                "driver_callback_errors": self.callback_errors}

    def close(self) -> None:
        """Stop the thread, disconnect the robot, destroy the helper node (idempotent)."""
        if not self._running:
            return
        self._running = False
        self.robot.connect(None)
        self._thread.join(timeout=2.0)
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
