"""``recorder``: writes a session's topics to an MCAP file (``--record``, ``record:=true``).

Subscribes, as serialized CDR (rclpy ``raw=True``: nothing decoded or re-encoded), to every topic
of the session (:mod:`morl_robot.recording.selection`): the topic contract's topics in each of
``namespaces`` at once, and every other topic under them (actors' and phases' sub-namespaces, the
scene and ``view/…`` topics) and ``/diagnostics`` as discovery shows their publishers (checked every
``discovery_period`` s), each with a QoS its publishers match (latched topics transient local; best
effort ones best effort).  Each message goes into a bounded queue (``queue_size``) that a writer
thread drains into ``path`` (:class:`morl_robot.recording.writer.RecordingWriter`); a full queue
drops (counted per topic), never blocks.  ``log_time`` is the receive time (POSIX ns),
``publish_time`` the header stamp where the type has one.

Parameters: ``path`` (the .mcap file), ``namespaces`` (list), ``exclude`` (last path parts or
absolute names; default experience, policy_snapshot, experience_allowance, /clock), ``queue_size``,
``flush_period`` (s: what survives a SIGKILL), ``compression`` (lz4 | zstd | none),
``discovery_period`` (s), ``nice`` (added to the process's niceness, default 10: on a busy host
the control loop gets the CPU first).  Diagnostics ``<name>: recorder`` on ``/diagnostics``: messages, dropped,
queued, topics, matched (the topics whose publishers the recorder has discovered: a CLI waits for
its session's main streams there before the session starts, :func:`morl_robot.recording.live.wait_recording`).  On SIGINT the file is finished (summary, a ``morl_robot.recording`` metadata
record) and ``<path without .mcap>.recording.json`` holds the counts.  An earlier recording at
``path`` (a resumed run) is kept as ``<stem>.<n>.mcap``.  docs/howto/record.md.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from morl_robot.errors import ConfigError
from morl_robot.nodes.base import (
    DiagnosticsPublisher,
    declare_settings,
    run_node,
    steady_timer,
)
from morl_robot.recording.selection import DEFAULT_EXCLUDE, selected

#: Depth of the recorder's reliable subscriptions (it must never be the reason a sample is lost).
DEPTH = 1000


@dataclass
class RecorderSettings:
    path: str = "session.mcap"  # the MCAP file written
    namespaces: list[str] = field(default_factory=lambda: ["/"])  # recorded namespaces (and /diagnostics)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))  # topics not recorded
    queue_size: int = 10000  # messages between the subscriptions and the writer thread
    flush_period: float = 1.0  # s between chunk flushes (what a SIGKILL loses at most)
    compression: str = "lz4"  # lz4 | zstd | none
    discovery_period: float = 0.5  # s between looks for new topics
    nice: int = 10  # added to the process's niceness: the control loop gets the CPU first (0: none)

    def validate(self) -> None:
        if not self.path.endswith(".mcap"):
            raise ConfigError(f"recorder path {self.path!r}: must end in .mcap")
        if self.queue_size < 1:
            raise ConfigError(f"recorder queue_size {self.queue_size}: must be >= 1")
        if self.compression not in ("lz4", "zstd", "none"):
            raise ConfigError(f"recorder compression {self.compression!r}: allowed lz4, zstd, none")
        if not (self.flush_period > 0 and self.discovery_period > 0):
            raise ConfigError("recorder flush_period and discovery_period must be > 0 s")


def _profile(name: str) -> QoSProfile:
    from morl_robot.nodes import wire

    base: QoSProfile = getattr(wire, name)
    if base.durability == DurabilityPolicy.TRANSIENT_LOCAL:
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(base.depth, 10),
                          reliability=base.reliability, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=DEPTH if base.reliability == ReliabilityPolicy.RELIABLE
                      else 10, reliability=base.reliability, durability=DurabilityPolicy.VOLATILE)


def _matching(infos: list[Any]) -> QoSProfile:
    """A QoS every publisher in ``infos`` matches: reliable, and transient local (latched values
    reach the recorder however late it subscribes), only where all of them are."""
    reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
    latched = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=DEPTH if reliable and not latched else 10,
                      reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


def contract_topics(namespace: str, exclude: list[str]) -> list[tuple[str, str, str]]:
    """(full name, type, QoS profile name) of the topic contract's topics in ``namespace`` (not the
    templated or private ones): subscribed at once, before discovery shows their publishers."""
    from morl_robot.nodes.wire import TOPICS

    ns = "/" + namespace.strip("/")
    out = []
    for t in TOPICS:
        if "<" in t.name or t.name.startswith("~"):
            continue
        name = t.name if t.name.startswith("/") else f"{ns.rstrip('/')}/{t.name}"
        if selected(name, [ns], exclude):
            out.append((name, t.type, t.qos))
    return out


class RecorderNode(Node):
    def __init__(self) -> None:
        super().__init__("recorder")
        from morl_robot.recording.writer import RecordingWriter, keep_previous

        self.settings = s = declare_settings(self, RecorderSettings)
        if s.nice > 0:  # the queue absorbs the recorder's delays; the robot's loop must not wait for it
            os.nice(s.nice)
        kept = keep_previous(s.path)
        if kept is not None:
            self.get_logger().info(f"the earlier recording at {s.path} is kept as {kept}")
        self.writer = RecordingWriter(s.path, s.queue_size, s.flush_period, s.compression)
        self._subs: dict[str, Any] = {}
        self._started = time.monotonic()
        for ns in s.namespaces:
            for name, type_name, qos in contract_topics(ns, s.exclude):
                self._subscribe(name, type_name, _profile(qos))
        self._discover()
        self._timer = steady_timer(self, s.discovery_period, self._discover)
        self._diagnostics = DiagnosticsPublisher(self, f"{self.get_name()}: recorder", self._status)
        self.get_logger().info(f"recording {len(self._subs)} topic(s) to {s.path}")

    def _subscribe(self, name: str, type_name: str, qos: QoSProfile) -> None:
        try:
            pkg, _, name_ = type_name.split("/")
            cls = getattr(importlib.import_module(f"{pkg}.msg"), name_)
        except (AttributeError, ModuleNotFoundError, ValueError):
            self.get_logger().warning(f"not recording {name}: message type {type_name} is not installed")
            self._subs[name] = None
            return
        put, t = self.writer.put, type_name
        self._subs[name] = self.create_subscription(cls, name, lambda data, n=name: put(n, t, data), qos, raw=True)

    def _discover(self) -> None:
        s = self.settings
        for name, types in self.get_topic_names_and_types():
            if name in self._subs or len(types) != 1 or not selected(name, s.namespaces, s.exclude):
                continue
            infos = self.get_publishers_info_by_topic(name)
            if infos:
                self._subscribe(name, types[0], _matching(infos))

    def _status(self) -> tuple[str, str, dict[str, Any]]:
        d = self.writer.stats.to_dict()
        level = "warn" if d["dropped"] else "ok"
        return level, f"{d['messages']} message(s) written, {d['dropped']} dropped", {
            "messages": d["messages"], "dropped": d["dropped"], "queued": self.writer.queued,
            "topics": sum(1 for v in self._subs.values() if v is not None), "bytes": d["bytes"], "path": self.settings.path,
            "matched": ",".join(sorted(n for n, sub in self._subs.items() if sub is not None and self.count_publishers(n)))}

    def close(self) -> None:
        self.destroy_timer(self._timer)
        for sub in self._subs.values():
            if sub is not None:
                self.destroy_subscription(sub)
        stats = self.writer.close().to_dict()
        stats["path"] = self.settings.path
        stats["seconds"] = round(time.monotonic() - self._started, 3)
        summary = Path(self.settings.path).with_suffix(".recording.json")
        summary.write_text(json.dumps(stats, indent=1) + "\n")
        for topic, why in stats["errors"].items():
            self.get_logger().warning(f"{topic} not recorded: {why}")
        self.get_logger().info(f"recording finished: {stats['messages']} message(s) on {len(stats['topics'])} "
                               f"topic(s), {stats['dropped']} dropped {stats['dropped_by_topic'] or ''}, "
                               f"{Path(self.settings.path).stat().st_size} bytes in {self.settings.path}")


def main(args: list[str] | None = None) -> int:
    return run_node(lambda: RecorderNode(), args)


if __name__ == "__main__":
    sys.exit(main())
