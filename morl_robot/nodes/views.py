"""The robot node's views as messages: the ``scene`` MarkerArray and the named ``view/…`` topics
(the contract: ``wire.TOPICS``; the pure parts: :mod:`morl_robot.views`).

Nothing here is on the control path unless someone listens: which view topics have subscribers is
checked every :data:`LISTENER_CHECK` s (not per step), the scene is built on its own steady timer
at ``scene_rate`` Hz, views are thinned to ``view_rate`` Hz (a lockstep session steps faster than
anyone looks; ``task_step`` keeps every step), and every publisher is best effort, depth 1
(``VIEW_QOS``).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from geometry_msgs.msg import Point
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, Float64
from visualization_msgs.msg import Marker, MarkerArray

from morl_robot.envs.task_runner import StepRecord, TaskRunner
from morl_robot.nodes import wire
from morl_robot.nodes.base import steady_timer
from morl_robot.robots.spec import RobotState
from morl_robot.views.named import command_field, objective_topic, task_step_view
from morl_robot.views.scene import SceneModel, SceneSource

#: s between checks of which view topics have subscribers.
LISTENER_CHECK = 0.5
#: The scene's fixed frame.
FRAME = "world"


def scene_markers(scene: SceneModel, frame: str = FRAME) -> MarkerArray:
    """The MarkerArray of ``scene`` with identity poses (sizes, colours, mesh points set once)."""
    out = MarkerArray()
    for s in scene.shapes:
        m = Marker()
        m.header.frame_id = frame
        m.ns, m.id, m.type, m.action = s.ns, s.id, s.kind, Marker.ADD
        m.text = s.name
        m.scale.x, m.scale.y, m.scale.z = (float(v) for v in s.scale)
        m.color = ColorRGBA(r=s.rgba[0], g=s.rgba[1], b=s.rgba[2], a=s.rgba[3])
        m.pose.orientation.w = 1.0
        if s.triangles is not None:
            m.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in s.triangles]
        out.markers.append(m)
    return out


def pose_markers(msg: MarkerArray, positions: np.ndarray, quats: np.ndarray, stamp: Any) -> MarkerArray:
    """``msg`` with every marker at its new pose (positions (N, 3), quaternions (N, 4) x, y, z, w)."""
    for m, p, q in zip(msg.markers, positions.tolist(), quats.tolist()):
        m.header.stamp = stamp
        pos, ori = m.pose.position, m.pose.orientation
        pos.x, pos.y, pos.z = p
        ori.x, ori.y, ori.z, ori.w = q
    return msg


class SerializedScene:
    """The scene's MarkerArray serialized once (CDR); each frame only its poses and stamps are
    written into the bytes, so a frame costs the same whatever the meshes' size (building the
    message instead costs ~4 µs per mesh triangle: a ``Point`` object per vertex).

    The byte offsets are found by serializing the markers with unique sentinel poses and stamps;
    if any sentinel is not found exactly once (or the CDR is not little-endian), :attr:`ok` is
    False and :meth:`frame` is not used (the node falls back to :func:`pose_markers`)."""

    def __init__(self, msg: MarkerArray) -> None:
        n = len(msg.markers)
        pose = 1.0e6 + np.arange(n * 7, dtype=np.float64).reshape(n, 7) * 0.125
        for m, p, i in zip(msg.markers, pose.tolist(), range(n)):
            m.header.stamp.sec, m.header.stamp.nanosec = 0x3A000000 + i, 0x3B000000 + i
            m.pose.position.x, m.pose.position.y, m.pose.position.z = p[:3]
            m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = p[3:]
        raw = serialize_message(msg)
        self._buf = bytearray(raw)
        self.ok = len(raw) > 1 and raw[1] == 1  # CDR little-endian
        pose_at, stamp_at = [], []
        for i in range(n):
            stamp = np.array([0x3A000000 + i, 0x3B000000 + i], "<u4").tobytes()
            for pattern, out in ((pose[i].astype("<f8").tobytes(), pose_at), (stamp, stamp_at)):
                at = raw.find(pattern)
                self.ok = self.ok and at >= 0 and raw.find(pattern, at + 1) < 0
                out.append(at)
        self._pose_idx = np.asarray(pose_at)[:, None] + np.arange(56)
        self._stamp_idx = np.asarray(stamp_at)[:, None] + np.arange(8)

    def __len__(self) -> int:
        return len(self._buf)

    def frame(self, positions: np.ndarray, quats: np.ndarray, sec: int, nanosec: int) -> bytes:
        """The serialized MarkerArray with these poses (N, 3), (N, 4) x, y, z, w and this stamp."""
        buf = np.frombuffer(self._buf, np.uint8)
        buf[self._pose_idx] = np.frombuffer(np.ascontiguousarray(np.hstack([positions, quats]), "<f8").tobytes(),
                                            np.uint8).reshape(-1, 56)
        stamp = np.array([sec, nanosec], "<u4").view(np.uint8)
        buf[self._stamp_idx] = stamp
        return bytes(self._buf)


class RobotViews:
    """The scene and named views of one robot node (created with its other interfaces).

    Args:
        node: the robot node.
        runner: its task runner (robot, task names, control mode).
        scene_rate: Hz of the scene (0 = no scene).
        view_rate: at most this many messages per second on each view/… topic (0 = every step);
            the step that ends an episode is always published.
    """

    def __init__(self, node: Any, runner: TaskRunner, scene_rate: float, view_rate: float = 0.0) -> None:
        self.node, self.runner = node, runner
        self._view_period = 1.0 / view_rate if view_rate > 0 else 0.0
        self._next_step = self._next_command = -np.inf  # monotonic s: the next view not thinned out
        self._state: RobotState | None = None
        self._timers: list[Any] = []
        self._source: SceneSource | None = None
        self.pub_scene = None
        if scene_rate > 0:
            task = getattr(runner.env, "task", None)
            scene_mjcf = task.config.scene if task is not None else ""
            self._source = SceneSource.for_robot(runner.robot, scene_mjcf)
            self._scene_msg = scene_markers(self._source.scene)
            self._scene_bytes = SerializedScene(scene_markers(self._source.scene))
            self.pub_scene = node.create_publisher(MarkerArray, "scene", wire.VIEW_QOS)
            self._timers.append(steady_timer(node, 1.0 / scene_rate, self.publish_scene))
        self.pub_command = node.create_publisher(JointState, "view/command", wire.VIEW_QOS)
        self._command_field = command_field(runner.robot.control_mode.value)
        self.pub_observation = self.pub_rewards = self.pub_returns = None
        if runner.env is not None:
            self._objectives = runner.objective_names
            self._observation_labels = list(runner.observation_labels)
            self.pub_observation = node.create_publisher(JointState, "view/observation", wire.VIEW_QOS)
            self.pub_rewards = [node.create_publisher(Float64, objective_topic("reward", o), wire.VIEW_QOS)
                                for o in self._objectives]
            self.pub_returns = [node.create_publisher(Float64, objective_topic("return", o), wire.VIEW_QOS)
                                for o in self._objectives]
            self._observation_msg = JointState(name=self._observation_labels)  # reused: names set once
        self._listened: dict[int, bool] = {}
        self._checked = -np.inf
        self.scene_published = 0

    # --- who listens ---------------------------------------------------------------------------
    def _listens(self, pub: Any) -> bool:
        """Whether ``pub`` had a subscriber at the newest check (every LISTENER_CHECK s)."""
        now = time.monotonic()
        if now - self._checked > LISTENER_CHECK:
            self._checked = now
            self._listened = {}
        key = id(pub)
        seen = self._listened.get(key)
        if seen is None:
            seen = self._listened[key] = pub.get_subscription_count() > 0
        return seen

    # --- inputs from the node ------------------------------------------------------------------
    def on_state(self, state: RobotState) -> None:
        """The newest robot state (hardware: the joints the scene is posed by)."""
        self._state = state

    def on_task_step(self, rec: StepRecord) -> None:
        """A published task step: its observation, rewards and returns by name."""
        if self.pub_observation is None or rec.observation is None or rec.reward is None:
            return
        now = time.monotonic()
        if now < self._next_step and not rec.done:
            return
        obs_live = self._listens(self.pub_observation)
        rewards_live = [self._listens(p) for p in self.pub_rewards or ()]
        returns_live = [self._listens(p) for p in self.pub_returns or ()]
        if not (obs_live or any(rewards_live) or any(returns_live)):
            return
        self._next_step = now + self._view_period
        view = task_step_view(self._objectives, self._observation_labels, rec.reward, rec.returns,
                              rec.observation, rec.state.stamp)
        if obs_live:
            js = self._observation_msg
            js.header.stamp = self.node.get_clock().now().to_msg()
            js.position = wire._doubles(view.observation[1])
            self.pub_observation.publish(js)
        for live, pub, value in zip(rewards_live + returns_live, (*(self.pub_rewards or ()), *(self.pub_returns or ())),
                                    (*view.rewards.values(), *view.returns.values())):
            if live:
                pub.publish(Float64(data=value))

    def on_command(self, values: np.ndarray, labels: Sequence[str]) -> None:
        """A received command, by component."""
        now = time.monotonic()
        if self.pub_command is None or now < self._next_command or not self._listens(self.pub_command):
            return
        self._next_command = now + self._view_period
        js = JointState()
        js.header.stamp = self.node.get_clock().now().to_msg()
        js.name = list(labels)
        setattr(js, self._command_field, wire._doubles(np.asarray(values, np.float64)))
        self.pub_command.publish(js)

    # --- the scene -----------------------------------------------------------------------------
    def publish_scene(self) -> None:
        """One scene frame, if anyone subscribes (hardware: once a state has been measured)."""
        if self.pub_scene is None or self._source is None or not self._listens(self.pub_scene):
            return
        state = self._state
        poses = self._source.poses(None if state is None else state.position)
        if poses is None:
            return
        stamp = self.node.get_clock().now().to_msg()
        if self._scene_bytes.ok:
            self.pub_scene.publish(self._scene_bytes.frame(*poses, stamp.sec, stamp.nanosec))
        else:
            self.pub_scene.publish(pose_markers(self._scene_msg, *poses, stamp))
        self.scene_published += 1

    def close(self) -> None:
        """Destroy the views' timers and publishers (the robot node's cleanup)."""
        for t in self._timers:
            self.node.destroy_timer(t)
        self._timers = []
        for pub in (self.pub_scene, self.pub_command, self.pub_observation, *(self.pub_rewards or ()),
                    *(self.pub_returns or ())):
            if pub is not None:
                self.node.destroy_publisher(pub)
        self.pub_scene = self.pub_command = self.pub_observation = self.pub_rewards = self.pub_returns = None
