"""The recording's writer: a bounded queue in front of an MCAP file, drained by one thread.

:meth:`RecordingWriter.put` never blocks (the ROS callback that calls it returns at once): when the
queue is full the message is dropped and counted per topic.  The thread writes messages to an MCAP
file (profile ``ros2``, message encoding ``cdr``, schema encoding ``ros2msg``, lz4 chunks) and
flushes the open chunk every ``flush_period`` s, so a recorder killed with SIGKILL leaves a file
whose every message up to the last flush can be read (no summary: readers read it through;
``mcap recover`` rewrites it with one).  :meth:`close` writes the rest and the summary, and a
``morl_robot.recording`` metadata record with the counts and drops.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from morl_robot.recording.schema import has_leading_stamp, schema_text, stamp_ns

PROFILE = "ros2"
MESSAGE_ENCODING = "cdr"
SCHEMA_ENCODING = "ros2msg"


@dataclass
class RecordingStats:
    """What a recording wrote and dropped, per topic (``to_dict`` for JSON / diagnostics)."""
    written: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    bytes: int = 0
    queue_peak: int = 0
    errors: dict = field(default_factory=dict)  # topic → why its messages could not be written


    def to_dict(self) -> dict[str, Any]:
        return {"messages": sum(self.written.values()), "dropped": sum(self.dropped.values()), "bytes": self.bytes,
                "queue_peak": self.queue_peak, "topics": dict(sorted(self.written.items())),
                "dropped_by_topic": dict(sorted(self.dropped.items())), "errors": dict(self.errors)}


def keep_previous(path: str | os.PathLike[str]) -> Path | None:
    """An earlier recording at ``path`` (a resumed run, a second deploy into one ``--out``) is
    kept as ``<stem>.<n>.mcap`` (and its ``.recording.json``), n the next free number; returns
    where it went (None: nothing there)."""
    p = Path(path)
    if not p.is_file() or p.stat().st_size == 0:
        return None
    n = 1
    while p.with_suffix(f".{n}.mcap").exists():
        n += 1
    target = p.with_suffix(f".{n}.mcap")
    p.rename(target)
    counts = p.with_suffix(".recording.json")
    if counts.is_file():
        counts.rename(p.with_suffix(f".{n}.recording.json"))
    return target


class RecordingWriter:
    """``put(topic, type, cdr_bytes, log_time_ns)`` from any thread; ``close()`` once at the end."""

    def __init__(self, path: str | os.PathLike[str], queue_size: int = 10000, flush_period: float = 1.0,
                 compression: str = "lz4", chunk_size: int = 1024 * 1024) -> None:
        from mcap.writer import CompressionType, Writer

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        kinds = {"lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD, "none": CompressionType.NONE}
        self._writer = Writer(self._file, chunk_size=chunk_size, compression=kinds[compression])
        self._writer.start(profile=PROFILE, library="morl_robot recorder")
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, int(queue_size)))
        self.flush_period = flush_period
        self.stats = RecordingStats()
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, tuple[int, bool]] = {}  # topic → (channel id, leading stamp)
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="recording-writer", daemon=True)
        self._thread.start()

    def put(self, topic: str, type_name: str, data: bytes, log_time: int | None = None) -> bool:
        """Queue one serialized message; False (and counted) if the queue is full or closed."""
        if self._closed:
            self.stats.dropped[topic] += 1
            return False
        try:
            self._queue.put_nowait((topic, type_name, data, time.time_ns() if log_time is None else log_time))
        except queue.Full:
            self.stats.dropped[topic] += 1
            return False
        return True

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def _channel(self, topic: str, type_name: str) -> tuple[int, bool]:
        known = self._channels.get(topic)
        if known is not None:
            return known
        schema = self._schemas.get(type_name)
        if schema is None:
            pkg, _, name = type_name.split("/")
            schema = self._schemas[type_name] = self._writer.register_schema(
                f"{pkg}/msg/{name}", SCHEMA_ENCODING, schema_text(type_name).encode())
        cid = self._writer.register_channel(topic, MESSAGE_ENCODING, schema)
        known = self._channels[topic] = (cid, has_leading_stamp(type_name))
        return known

    def _write(self, item: tuple[str, str, bytes, int]) -> None:
        topic, type_name, data, log_time = item
        cid, stamped = self._channel(topic, type_name)
        publish = stamp_ns(data) if stamped else 0
        seq = self.stats.written[topic]
        self._writer.add_message(cid, log_time, data, publish or log_time, seq)
        self.stats.written[topic] += 1
        self.stats.bytes += len(data)

    def _write_or_count(self, item: tuple[str, str, bytes, int]) -> None:
        """:meth:`_write`; a message that cannot be written (its type's definition is not installed)
        is counted as dropped and the reason kept, the thread goes on."""
        try:
            self._write(item)
        except Exception as exc:  # noqa: BLE001 - one bad topic must not end the recording
            self.stats.dropped[item[0]] += 1
            self.stats.errors.setdefault(item[0], f"{type(exc).__name__}: {exc}")

    def _run(self) -> None:
        last_flush = time.monotonic()
        while True:
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                item = None
            if item is not None:
                if item is _STOP:
                    break
                self.stats.queue_peak = max(self.stats.queue_peak, self._queue.qsize() + 1)
                with self._lock:
                    self._write_or_count(item)
            if time.monotonic() - last_flush >= self.flush_period:
                with self._lock:
                    self._writer.flush()
                last_flush = time.monotonic()

    def close(self, timeout: float = 30.0) -> RecordingStats:
        """Write what is queued, the metadata record and the summary; close the file."""
        if self._closed:
            return self.stats
        self._closed = True
        deadline = time.monotonic() + timeout
        while True:  # the sentinel must get in even when the queue is full
            try:
                self._queue.put(_STOP, timeout=0.1)
                break
            except queue.Full:
                if time.monotonic() > deadline:
                    break
        self._thread.join(max(0.1, deadline - time.monotonic()))
        with self._lock:
            while True:  # whatever is left if the thread gave up
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    self._write_or_count(item)
            d = self.stats.to_dict()
            self._writer.add_metadata("morl_robot.recording", {
                "messages": str(d["messages"]), "dropped": str(d["dropped"]),
                "dropped_by_topic": ",".join(f"{k}={v}" for k, v in d["dropped_by_topic"].items())})
            self._writer.finish()
            self._file.close()
        return self.stats


_STOP: Any = object()
