"""``driver_emulator``: a real robot's ros2_control driver topics, played from MuJoCo.

It speaks what the robot YAML's ``hardware:`` section says the real driver speaks (topics, joint
order incl. extra joints, units): publishes ``sensor_msgs/JointState`` (and the wrist
``geometry_msgs/WrenchStamped`` / tactile ``std_msgs/Float64MultiArray``) at ``rate`` Hz and
executes the controller's commands (forward ``Float64MultiArray``, ``JointTrajectory`` or
``JointState``) on a :class:`~morl_robot.robots.emulation.DriverEmulatorCore`.  Outgoing sensor
messages pass a :class:`~morl_robot.robots.emulation.FaultyLink` that can add ``latency`` and
``jitter``, ``drop`` messages and ``reorder`` them (each stream its own seeded link).  Header
stamps are the node clock at the time the state was produced, so a late message is recognisable.

Parameters: ``robot`` (name or YAML), ``config`` (YAML overriding the robot's; e.g. a driver that
speaks degrees), ``scene`` (MJCF relative to sim/, default the robot's task scene), ``rate`` (Hz, 0
= ``hardware.state.rate``), ``latency``, ``jitter``, ``reorder_delay`` (s), ``drop``, ``reorder``
(probabilities), ``seed``.  A plain node, not a lifecycle one: it plays the robot's driver.
QoS as ros2_control's defaults: publishers and command subscription RELIABLE, depth 10.
"""
from __future__ import annotations

import sys
import time
from typing import Any

from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from morl_robot.node_settings import DriverEmulatorSettings
from morl_robot.nodes import wire
from morl_robot.nodes.base import declare_settings, run_node, steady_timer
from morl_robot.nodes.hardware_link import stamp_seconds
from morl_robot.robots.config import load_robot_config
from morl_robot.robots.emulation import DriverEmulatorCore, FaultyLink, LinkFaults


class DriverEmulator(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("driver_emulator", **kwargs)
        s = self.settings = declare_settings(self, DriverEmulatorSettings)
        source = s.config or s.robot
        config = load_robot_config(source)
        context = None
        if s.context:
            from morl_robot.contexts.schema import context_by_reference

            context = context_by_reference(s.context).robot_context(s.seed)
        self.core = DriverEmulatorCore(config, scene=s.scene or None, period=1.0 / s.rate if s.rate > 0 else None,
                                       source=source, context=context)
        hw = self.core.hardware
        faults = LinkFaults(latency=s.latency, jitter=s.jitter, drop=s.drop, reorder=s.reorder,
                            reorder_delay=s.reorder_delay).with_context(context)
        seed = s.seed
        # publishers as the real driver's (reliable, newest 10) and their faulty links
        self._streams: list[tuple[Any, FaultyLink[Any]]] = []
        self._pub_js = self.create_publisher(JointState, hw.state.topic, wire.SENSOR_QOS)
        self._link_js: FaultyLink[Any] = FaultyLink(faults, seed)
        self._streams.append((self._pub_js, self._link_js))
        self._pub_wrench = self._link_wrench = None
        if hw.wrench is not None:
            self._pub_wrench = self.create_publisher(WrenchStamped, hw.wrench.topic, wire.SENSOR_QOS)
            self._link_wrench = FaultyLink(faults, seed + 1)
            self._streams.append((self._pub_wrench, self._link_wrench))
        self._pub_tactile = self._link_tactile = None
        if hw.tactile is not None:
            self._pub_tactile = self.create_publisher(Float64MultiArray, hw.tactile.topic, wire.SENSOR_QOS)
            self._link_tactile = FaultyLink(faults, seed + 2)
            self._streams.append((self._pub_tactile, self._link_tactile))
        c = hw.command
        if c.interface == "forward":
            self._sub = self.create_subscription(Float64MultiArray, c.topic, lambda m: self.core.on_forward(m.data),
                                                 wire.COMMAND_QOS)
        elif c.interface == "trajectory":
            self._sub = self.create_subscription(JointTrajectory, c.topic, self._on_trajectory, wire.COMMAND_QOS)
        else:
            self._sub = self.create_subscription(
                JointState, c.topic, lambda m: self.core.on_joint_state_command(m.name, m.position, m.velocity, m.effort),
                wire.COMMAND_QOS)
        self._faulty = faults.active
        self._timer = steady_timer(self, self.core.period, self._tick)
        self._release = steady_timer(self, min(0.002, self.core.period), self._deliver) if self._faulty else None
        self._last_rejected = 0
        self.get_logger().info(
            f"emulating the {config.name} driver: state {self._pub_js.topic_name} at {1.0 / self.core.period:.0f} Hz "
            f"({len(self.core.codec.state_names)} joints, {hw.units.position}), commands {c.interface} on "
            f"{self._sub.topic_name} ({c.mode}); faults {faults}; context {s.context or 'nominal'}")

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        if not msg.points:
            return
        last = msg.points[-1]
        self.core.on_trajectory(msg.joint_names, last.positions, stamp_seconds(last.time_from_start))

    def _tick(self) -> None:
        core = self.core
        core.step()
        stamp = self.get_clock().now().to_msg()
        js = core.joint_state()
        msg = JointState()
        msg.header.stamp = stamp
        msg.name = list(js.names)
        msg.position, msg.velocity, msg.effort = js.position.tolist(), js.velocity.tolist(), js.effort.tolist()
        self._emit(self._pub_js, self._link_js, msg)
        w = core.wrench()
        if w is not None and self._pub_wrench is not None:
            wm = WrenchStamped()
            wm.header.stamp, wm.header.frame_id = stamp, w.frame
            wm.wrench.force.x, wm.wrench.force.y, wm.wrench.force.z = map(float, w.force)
            wm.wrench.torque.x, wm.wrench.torque.y, wm.wrench.torque.z = map(float, w.torque)
            self._emit(self._pub_wrench, self._link_wrench, wm)
        t = core.tactile()
        if t is not None and self._pub_tactile is not None:
            self._emit(self._pub_tactile, self._link_tactile, wire.labelled_array(t.values, t.labels))
        if core.stats.rejected != self._last_rejected:
            self._last_rejected = core.stats.rejected
            self.get_logger().warning(f"command rejected: {core.stats.last_error}")

    def _emit(self, pub: Any, link: FaultyLink[Any] | None, msg: Any) -> None:
        if not self._faulty or link is None:
            pub.publish(msg)
            return
        link.send(msg, time.monotonic())

    def _deliver(self) -> None:
        now = time.monotonic()
        for pub, link in self._streams:
            for msg in link.due(now):
                pub.publish(msg)

    def close(self) -> None:
        s = self.core.stats
        links = {pub.topic_name: vars(link.stats) for pub, link in self._streams}
        summary = f"commands {s.commands} ({s.by_kind}), rejected {s.rejected}; links {links}"
        if self.context.ok():
            self.get_logger().info(summary)
        else:  # after Ctrl-C the context is gone, and with it /rosout
            print(f"[driver_emulator] {summary}", file=sys.stderr)
        self.core.close()


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: DriverEmulator(), args)


if __name__ == "__main__":
    sys.exit(main())
