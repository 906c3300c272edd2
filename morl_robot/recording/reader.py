"""Reading a recording back: ``(topic, log_time_ns, decoded message)`` in log-time order.

Stable API (used by ``morl-robot replay`` and ``train --from-recording``)::

    from morl_robot.recording import read_messages
    for m in read_messages("runs/x/session.mcap", topics=lambda t: t.endswith("/task_step")):
        m.topic, m.log_time, m.publish_time, m.type, m.message   # message: decoded (mcap_ros2)

A file cut short (the recorder SIGKILLed: no summary at its end) is read up to its last complete
chunk (``on_truncated`` is called with the reason, default: ignored).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from morl_robot.errors import MorlRobotError

#: The recording's file name in a run / report directory.
RECORDING_NAME = "session.mcap"


class RecordingError(MorlRobotError):
    """A recording that is missing, empty or not a ROS 2 MCAP file."""


@dataclass(frozen=True)
class RecordedMessage:
    topic: str
    log_time: int  # ns, POSIX: when the recorder received it
    publish_time: int  # ns: the message's header stamp where it has one, else log_time
    type: str  # e.g. "sensor_msgs/msg/JointState"
    message: Any  # decoded by mcap_ros2 (attribute access like the ROS message)


def recording_path(path: str | os.PathLike[str]) -> Path:
    """``path`` itself, or ``path/session.mcap`` for a run directory; :class:`RecordingError` if none."""
    p = Path(path)
    if p.is_dir():
        p = p / RECORDING_NAME
    if not p.is_file():
        raise RecordingError(f"recording {p}: no such file (a session recorded with --record writes "
                             f"<out>/{RECORDING_NAME})")
    if p.stat().st_size == 0:
        raise RecordingError(f"recording {p}: the file is empty (0 bytes)")
    return p


def _wanted(topics: Iterable[str] | Callable[[str], bool] | None) -> Callable[[str], bool]:
    if topics is None:
        return lambda t: True
    if callable(topics):
        return topics
    chosen = set(topics)
    return lambda t: t in chosen


def _type_of(schema: Any) -> str:
    name = schema.name if schema is not None else ""
    parts = name.split("/")
    return f"{parts[0]}/msg/{parts[-1]}" if len(parts) == 2 else name


def read_messages(path: str | os.PathLike[str], topics: Iterable[str] | Callable[[str], bool] | None = None,
                  on_truncated: Callable[[str], None] | None = None) -> Iterator[RecordedMessage]:
    """The messages of a recording (``topics``: names, or a predicate on the name), decoded, in
    log-time order (a finished file) or in file order (a truncated one: chunks are written in
    time order, so nearly sorted)."""
    from mcap.reader import NonSeekingReader, SeekingReader
    from mcap_ros2.decoder import DecoderFactory

    p = recording_path(path)
    wanted = _wanted(topics)
    factory = DecoderFactory()
    decoders: dict[int, Any] = {}
    with open(p, "rb") as f:
        try:
            summary = SeekingReader(f).get_summary()
        except Exception:  # noqa: BLE001 - no summary: an unfinished file, read it through
            summary = None
        f.seek(0)
        if summary is not None and summary.channels:
            names = [c.topic for c in summary.channels.values() if wanted(c.topic)]
            if not names:
                return
            messages = SeekingReader(f).iter_messages(topics=names, log_time_order=True)
        else:
            messages = NonSeekingReader(f).iter_messages(log_time_order=False)
        try:
            for schema, channel, message in messages:
                if not wanted(channel.topic):
                    continue
                decoder = decoders.get(channel.id)
                if decoder is None:
                    decoder = decoders[channel.id] = factory.decoder_for(channel.message_encoding, schema)
                    if decoder is None:
                        raise RecordingError(f"recording {p}: topic {channel.topic} is not ROS 2 CDR with a ros2msg "
                                             f"schema (encoding {channel.message_encoding!r})")
                yield RecordedMessage(channel.topic, message.log_time, message.publish_time, _type_of(schema),
                                      decoder(message.data))
        except RecordingError:
            raise
        except Exception as exc:
            if summary is not None:
                raise RecordingError(f"recording {p}: not a readable MCAP file ({type(exc).__name__}: {exc})") from exc
            if on_truncated is not None:
                on_truncated(f"{type(exc).__name__}: {exc}")


def topics_of(path: str | os.PathLike[str]) -> dict[str, tuple[str, int]]:
    """Topic → (type, message count) from the file's summary (read through if it has none)."""
    from mcap.reader import SeekingReader

    p = recording_path(path)
    with open(p, "rb") as f:
        try:
            summary = SeekingReader(f).get_summary()
        except Exception:  # noqa: BLE001
            summary = None
    if summary is None or summary.statistics is None:
        counts: dict[str, tuple[str, int]] = {}
        for m in read_messages(p):
            counts[m.topic] = (m.type, counts.get(m.topic, ("", 0))[1] + 1)
        return counts
    per = summary.statistics.channel_message_counts
    return {c.topic: (_type_of(summary.schemas.get(c.schema_id)), int(per.get(cid, 0)))
            for cid, c in summary.channels.items()}


def recording_summary(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The recorder's counts of a run (``<out>/session.recording.json``: messages, dropped, bytes,
    per topic), or None when the run was not recorded (or the recorder never finished)."""
    import json

    path = Path(out_dir) / RECORDING_NAME.replace(".mcap", ".recording.json")
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def summary_line(out_dir: str | os.PathLike[str]) -> str | None:
    """One line for a CLI's end of session: where the recording is, its size, messages and drops."""
    s = recording_summary(out_dir)
    if s is None:
        mcap = Path(out_dir) / RECORDING_NAME
        return f"recording: {mcap} (unfinished: the recorder did not close it)" if mcap.is_file() else None
    size = Path(s.get("path", "")).stat().st_size if Path(s.get("path", "")).is_file() else 0
    dropped = s.get("dropped", 0)
    return (f"recording: {s.get('path')} ({size / 1e6:.1f} MB, {s.get('messages', 0)} messages on "
            f"{len(s.get('topics', {}))} topics, {dropped} dropped"
            + (f": {s.get('dropped_by_topic')}" if dropped else "") + ")")
