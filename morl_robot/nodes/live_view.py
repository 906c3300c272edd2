"""``live_view``: a Foxglove WebSocket server showing one robot of a session (``--foxglove [PORT]``,
``foxglove:=true``).

Subscribes to the viewed robot's topics (scene, joint_states, wrench, tactile, task_step, episode,
preference, safety/violations, safety/estop) and hands them to
:class:`morl_robot.views.foxglove.LiveView`, which serves them as Foxglove channels.  The robot is
the node's namespace itself, or its sub-namespace ``robot`` (``actor1``); by default (``robot:=''``)
the namespace itself when it has a ``task_step`` or ``joint_states`` publisher, else the first
sub-namespace that has (``actor0`` of a training session); a robot whose publishers are gone (a
safety test's next phase) is replaced by the next one found.  The scene is subscribed only while a
client shows ``/scene`` (the robot node builds it only for subscribers).  Parameters: ``port`` (0: any free
one), ``host``, ``robot``, ``rate`` (Hz of the fast channels), ``discovery_period`` (s), ``nice``.
docs/howto/rviz_foxglove.md.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from visualization_msgs.msg import MarkerArray

from morl_robot.errors import ConfigError
from morl_robot.nodes import wire
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    declare_settings,
    run_node,
    steady_timer,
)

#: Streams shown only as their newest sample: best effort, so the viewer never holds a publisher.
NEWEST = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
#: The topics a robot namespace is recognised by.
MARKS = ("task_step", "joint_states")


@dataclass
class LiveViewSettings:
    port: int = 8765  # the Foxglove WebSocket server's TCP port (0: any free one)
    host: str = "127.0.0.1"  # interface the server listens on (0.0.0.0: every one)
    robot: str = ""  # sub-namespace viewed (e.g. actor1); '' = the namespace itself, else the first robot found
    rate: float = 20.0  # Hz at most of scene, joint_states, wrench, tactile, objectives
    discovery_period: float = 0.5  # s between looks for the viewed robot's topics
    nice: int = 10  # added to the process's niceness (the control loop gets the CPU first)

    def validate(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"live_view port {self.port}: a TCP port is 0-65535")
        if self.rate <= 0 or self.discovery_period <= 0:
            raise ConfigError("live_view rate and discovery_period must be > 0")


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def robot_namespaces(topics: list[str], ns: str) -> list[str]:
    """The namespaces under ``ns`` (itself first, then naturally sorted: actor2 before actor10)
    that have a ``task_step`` or ``joint_states`` topic."""
    found = {t.rsplit("/", 1)[0] or "/" for t in topics if t.rsplit("/", 1)[-1] in MARKS
             and (t.startswith(ns.rstrip("/") + "/"))}
    return sorted(found, key=lambda n: (n != ns, _natural(n)))


class LiveViewNode(Node):
    def __init__(self) -> None:
        super().__init__("live_view")
        from morl_robot.views.foxglove import LiveView

        self.settings = s = declare_settings(self, LiveViewSettings)
        if s.nice > 0:
            os.nice(s.nice)
        self.ns = self.get_namespace()
        self.view = LiveView(port=s.port, host=s.host, rate=s.rate, source=self.ns)
        self.robot = ""
        self._subs: list[Any] = []
        self._scene_sub: Any = None  # only while a client shows /scene: the robot builds it only then
        self._decode = wire.TaskStepDecoder()
        self._estop: bool | None = None
        self._discover()
        self._timer = steady_timer(self, s.discovery_period, self._discover)
        self._estop_timer = steady_timer(self, 1.0, self._repeat_estop)
        self._diagnostics = DiagnosticsPublisher(self, f"{self.get_name()}: live view", self._status)
        self.get_logger().info(f"Foxglove live view on ws://{s.host}:{self.view.port} (open it in Foxglove: "
                               f"Open connection → Foxglove WebSocket)")

    def _discover(self) -> None:
        self._find_robot()
        showing = self.robot and self.view.channels["/scene"].has_sinks()
        if showing and self._scene_sub is None:
            self._scene_sub = self.create_subscription(MarkerArray, f"{self.robot.rstrip('/')}/scene", self.view.scene,
                                                       wire.VIEW_QOS)
        elif not showing and self._scene_sub is not None:
            self.destroy_subscription(self._scene_sub)
            self._scene_sub = None

    def _find_robot(self) -> None:
        names = [n for n, _ in self.get_topic_names_and_types()]
        if self.settings.robot:
            want = f"{self.ns.rstrip('/')}/{self.settings.robot.strip('/')}"
        else:
            live = [r for r in robot_namespaces(names, self.ns)
                    if any(self.count_publishers(f"{r.rstrip('/')}/{m}") for m in MARKS)]
            want = live[0] if live else ""  # the first in order (actor0 even if actor1 was seen first)
        if want and want != self.robot:
            self._view(want)

    def _view(self, robot: str) -> None:
        for sub in self._subs + ([self._scene_sub] if self._scene_sub is not None else []):
            self.destroy_subscription(sub)
        self._subs, self._scene_sub = [], None
        v, base = self.view, robot.rstrip("/")
        self.robot = robot

        def sub(cls: Any, topic: str, callback: Any, qos: QoSProfile) -> None:
            self._subs.append(self.create_subscription(cls, f"{base}/{topic}", callback, qos))

        sub(JointState, "joint_states", v.joint_states, NEWEST)
        sub(WrenchStamped, "wrench", v.wrench, NEWEST)
        sub(Float64MultiArray, "tactile", v.tactile, NEWEST)
        sub(Float64MultiArray, "task_step", self._on_task_step, wire.SENSOR_QOS)
        sub(String, "episode", lambda m: v.episode(m.data), wire.EVENT_QOS)
        sub(Float64MultiArray, "preference", v.preference, wire.COMMAND_QOS)
        sub(DiagnosticStatus, "safety/violations", v.violation, wire.EVENT_QOS)
        sub(Bool, "safety/estop", self._on_estop, wire.LATCHED_QOS)
        self.get_logger().info(f"viewing {robot}")

    def _on_task_step(self, msg: Float64MultiArray) -> None:
        try:
            step = self._decode(msg)
        except (ValueError, IndexError) as exc:  # WireError is a ValueError
            self.get_logger().warning(f"task_step not shown: {exc}", throttle_duration_sec=5.0)
            return
        self.view.task_step(step)

    def _on_estop(self, msg: Bool) -> None:
        self._estop = bool(msg.data)
        self.view.estop(self._estop)

    def _repeat_estop(self) -> None:  # a client connecting later sees the latched state within 1 s
        if self._estop is not None:
            self.view.estop(self._estop)

    def _status(self) -> tuple[str, str, dict[str, Any]]:
        return "ok", f"viewing {self.robot or '(no robot yet)'} on port {self.view.port}", {
            "port": self.view.port, "robot": self.robot, **{f"sent{k}": n for k, n in self.view.sent.items()}}

    def close(self) -> None:
        self.destroy_timer(self._timer)
        self.destroy_timer(self._estop_timer)
        self.view.close()


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: LiveViewNode(), args)


if __name__ == "__main__":
    sys.exit(main())
