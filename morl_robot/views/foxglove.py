"""The live view's core: a session's messages as Foxglove channels (``--foxglove [PORT]``).

:class:`LiveView` owns a Foxglove WebSocket server (foxglove-sdk) and one channel per stream in
:data:`CHANNELS`: the ``scene`` MarkerArray as a ``foxglove.SceneUpdate`` (3D panel), the other
streams as JSON with NAMED fields (``/objectives.reward.task``, ``/joint_states.position.right_j0``)
so a Plot panel needs no decoder.  Fast streams are thinned to ``rate`` Hz (episode ends and
safety events always go out).  No rclpy here: the methods take the ROS messages duck-typed;
``nodes/live_view.py`` subscribes.  docs/howto/rviz_foxglove.md.
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from morl_robot.errors import ConfigError

#: Foxglove channel → what it carries (the source topic is relative to the viewed robot namespace).
CHANNELS: dict[str, str] = {
    "/scene": "foxglove.SceneUpdate of scene (visualization_msgs/MarkerArray), frame 'world'",
    "/joint_states": "JSON {name, position{joint: rad}, velocity{joint: rad/s}, effort{joint: N·m}} of joint_states",
    "/wrench": "JSON {force{x,y,z,norm} N, torque{x,y,z} N·m, frame} of wrench",
    "/tactile": "JSON {force{sensor: N}, total N} of tactile",
    "/objectives": "JSON {episode, step, reward{objective}, return{objective}, terminated, truncated} of task_step",
    "/episode": "JSON episode events (start / end with returns) of episode",
    "/preference": "JSON {preference{objective: ε}} of preference",
    "/safety/violations": "JSON {rule, level, message, values{key: value}} of safety/violations",
    "/safety/estop": "JSON {engaged: bool} of safety/estop",
}

# marker types (visualization_msgs/Marker)
_CUBE, _SPHERE, _CYLINDER, _TRIANGLE_LIST = 1, 2, 3, 11


def _named(names: Sequence[str], values: Sequence[float]) -> dict[str, float]:
    return {str(n): float(v) for n, v in zip(names, values) if math.isfinite(float(v))}


def joint_states_json(msg: Any) -> dict[str, Any]:
    """``sensor_msgs/JointState`` as named maps (empty fields left out)."""
    names = list(msg.name)
    out: dict[str, Any] = {"name": names}
    for field in ("position", "velocity", "effort"):
        values = list(getattr(msg, field))
        if values:
            out[field] = _named(names, values)
    return out


def wrench_json(msg: Any) -> dict[str, Any]:
    """``geometry_msgs/WrenchStamped`` with the force's norm (the safety rules' quantity)."""
    f, t = msg.wrench.force, msg.wrench.torque
    return {"frame": msg.header.frame_id,
            "force": {"x": f.x, "y": f.y, "z": f.z, "norm": math.sqrt(f.x * f.x + f.y * f.y + f.z * f.z)},
            "torque": {"x": t.x, "y": t.y, "z": t.z}}


def labelled_json(msg: Any, fallback: str) -> dict[str, float]:
    """A 1-D labelled ``Float64MultiArray`` as {label: value} (``<fallback><i>`` without labels)."""
    values = list(msg.data)
    dims = msg.layout.dim
    labels = dims[0].label.split(",") if len(dims) == 1 and dims[0].label else []
    if len(labels) != len(values):
        labels = [f"{fallback}{i}" for i in range(len(values))]
    return _named(labels, values)


def violation_json(msg: Any) -> dict[str, Any]:
    """``diagnostic_msgs/DiagnosticStatus`` of ``safety/violations``: rule, level and its values."""
    return {"rule": msg.name, "level": int.from_bytes(msg.level, "little") if isinstance(msg.level, bytes)
            else int(msg.level), "message": msg.message, "values": {kv.key: kv.value for kv in msg.values}}


class Objectives:
    """The running undiscounted return per objective of the viewed robot's episode (every
    task_step counts once, published or not)."""

    def __init__(self) -> None:
        self.episode = self.step = -1
        self.returns: np.ndarray | None = None

    def update(self, step: Any) -> dict[str, Any]:
        """The JSON of one decoded ``TaskStep`` (``morl_robot.acting.experience.TaskStep``)."""
        reward = np.asarray(step.reward, dtype=float)
        if step.episode != self.episode or self.returns is None or self.returns.shape != reward.shape or step.step == 0:
            self.episode, self.step, self.returns = step.episode, -1, np.zeros_like(reward)
        if step.step != self.step:  # lockstep re-sends an unanswered step: counted once
            self.step, self.returns = step.step, self.returns + reward
        return {"episode": int(step.episode), "step": int(step.step), "stamp": float(step.stamp),
                "reward": _named(step.objectives, reward), "return": _named(step.objectives, self.returns),
                "terminated": bool(step.terminated), "truncated": bool(step.truncated)}


def _pose(fg: Any, p: Any) -> Any:
    return fg.Pose(position=fg.Vector3(x=p.position.x, y=p.position.y, z=p.position.z),
                   orientation=fg.Quaternion(x=p.orientation.x, y=p.orientation.y, z=p.orientation.z,
                                             w=p.orientation.w))


class SceneConverter:
    """``visualization_msgs/MarkerArray`` → ``foxglove.SceneUpdate``: one entity per body (marker
    ``ns``), a primitive per marker (CUBE, SPHERE, CYLINDER, TRIANGLE_LIST; others skipped).  A
    mesh's points are converted once per (ns, id) and reused (only poses change per frame)."""

    def __init__(self) -> None:
        import foxglove.messages as fg

        self.fg = fg
        self._points: dict[tuple[str, int, int], list[Any]] = {}

    def __call__(self, msg: Any, stamp_ns: int | None = None) -> Any:
        fg = self.fg
        bodies: dict[str, dict[str, list[Any]]] = {}
        frame = "world"
        for m in msg.markers:
            if m.type not in (_CUBE, _SPHERE, _CYLINDER, _TRIANGLE_LIST):
                continue
            frame = m.header.frame_id or frame
            c, s = m.color, m.scale
            color = fg.Color(r=c.r, g=c.g, b=c.b, a=c.a if c.a > 0 else 1.0)
            size = fg.Vector3(x=s.x, y=s.y, z=s.z)
            kinds = bodies.setdefault(m.ns, {"cubes": [], "spheres": [], "cylinders": [], "triangles": []})
            if m.type == _CUBE:
                kinds["cubes"].append(fg.CubePrimitive(pose=_pose(fg, m.pose), size=size, color=color))
            elif m.type == _SPHERE:
                kinds["spheres"].append(fg.SpherePrimitive(pose=_pose(fg, m.pose), size=size, color=color))
            elif m.type == _CYLINDER:
                kinds["cylinders"].append(fg.CylinderPrimitive(pose=_pose(fg, m.pose), size=size, bottom_scale=1.0,
                                                               top_scale=1.0, color=color))
            elif m.type == _TRIANGLE_LIST:
                key = (m.ns, m.id, len(m.points))
                pts = self._points.get(key)
                if pts is None:
                    pts = self._points[key] = [fg.Point3(x=p.x * s.x, y=p.y * s.y, z=p.z * s.z) for p in m.points]
                kinds["triangles"].append(fg.TriangleListPrimitive(pose=_pose(fg, m.pose), points=pts, color=color))
        ts = fg.Timestamp.from_epoch_secs((stamp_ns if stamp_ns is not None else time.time_ns()) / 1e9) \
            if hasattr(fg, "Timestamp") else None
        entities = [fg.SceneEntity(timestamp=ts, frame_id=frame, id=ns, **kinds) for ns, kinds in bodies.items()]
        return fg.SceneUpdate(entities=entities)


class LiveView:
    """A Foxglove WebSocket server on ``host:port`` with the channels of :data:`CHANNELS`.

    Args:
        port: TCP port (0: any free one; :attr:`port` says which).
        rate: Hz at most of the fast streams (scene, joint_states, wrench, tactile, objectives);
            an episode's last step, episode events, preference and safety messages always go out.
        source: the namespace viewed (channel metadata ``source``).
    """

    def __init__(self, port: int = 8765, host: str = "127.0.0.1", rate: float = 20.0, source: str = "",
                 name: str = "morl_robot live view") -> None:
        import foxglove
        from foxglove.channels import SceneUpdateChannel

        self._ctx = foxglove.Context()
        try:
            self.server = foxglove.start_server(name=name, host=host, port=port, context=self._ctx)
        except RuntimeError as exc:  # FoxgloveError: e.g. the port is taken
            raise ConfigError(f"live view: cannot serve Foxglove on {host}:{port} ({exc}); choose another "
                              "port: --foxglove PORT (launch: foxglove_port:=PORT)") from None
        self.port = int(self.server.port)
        meta = {"source": source}
        self.channels: dict[str, Any] = {"/scene": SceneUpdateChannel("/scene", metadata=meta, context=self._ctx)}
        for topic in CHANNELS:
            if topic != "/scene":
                self.channels[topic] = foxglove.Channel(topic, schema={"type": "object"}, message_encoding="json",
                                                        context=self._ctx, metadata=meta)
        self._period = 1.0 / rate if rate > 0 else 0.0
        self._last: dict[str, float] = {}
        self._scene = SceneConverter()
        self._objectives = Objectives()
        self.sent: dict[str, int] = dict.fromkeys(CHANNELS, 0)

    def _due(self, topic: str, always: bool = False) -> bool:
        if not self.channels[topic].has_sinks():
            return False
        now = time.monotonic()
        if not always and now - self._last.get(topic, -1e9) < self._period:
            return False
        self._last[topic] = now
        return True

    def _log(self, topic: str, payload: Any) -> None:
        self.channels[topic].log(payload, log_time=time.time_ns())
        self.sent[topic] += 1

    def scene(self, msg: Any) -> None:
        if self._due("/scene"):
            self._log("/scene", self._scene(msg))

    def joint_states(self, msg: Any) -> None:
        if self._due("/joint_states"):
            self._log("/joint_states", joint_states_json(msg))

    def wrench(self, msg: Any) -> None:
        if self._due("/wrench"):
            self._log("/wrench", wrench_json(msg))

    def tactile(self, msg: Any) -> None:
        if self._due("/tactile"):
            forces = labelled_json(msg, "sensor")
            self._log("/tactile", {"force": forces, "total": float(sum(forces.values()))})

    def task_step(self, step: Any) -> None:
        """A decoded ``TaskStep``: returns accumulate every step; published thinned."""
        data = self._objectives.update(step)
        if self._due("/objectives", always=step.terminated or step.truncated):
            self._log("/objectives", data)

    def episode(self, text: str) -> None:
        if self._due("/episode", always=True):
            try:
                payload = json.loads(text)
            except ValueError:
                payload = {"text": text}
            self._log("/episode", payload if isinstance(payload, dict) else {"event": payload})

    def preference(self, msg: Any) -> None:
        if self._due("/preference", always=True):
            self._log("/preference", {"preference": labelled_json(msg, "objective")})

    def violation(self, msg: Any) -> None:
        if self._due("/safety/violations", always=True):
            self._log("/safety/violations", violation_json(msg))

    def estop(self, engaged: bool) -> None:
        if self._due("/safety/estop", always=True):
            self._log("/safety/estop", {"engaged": bool(engaged)})

    def clients(self) -> int:
        return sum(1 for c in self.channels.values() if c.has_sinks())

    def close(self) -> None:
        self.server.stop()
