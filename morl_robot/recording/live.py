"""A session's CLI and its recorder: wait until the recorder has matched the session's streams.

DDS discovery between two processes takes from a few ms to over a second on a loaded host; a
recorder started with the session would miss what the robot publishes before its publishers are
discovered.  :func:`wait_recording` holds the session (before the safety monitor is released)
until the recorder's ``/diagnostics`` status lists the given topics as matched.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from morl_robot.errors import MorlRobotError


def wait_recording(probe: Any, topics: Sequence[str], timeout: float = 30.0,
                   check: Callable[[], None] | None = None) -> float:
    """Until the recorder's status lists every one of ``topics`` (full names) as matched; returns
    the seconds waited.  :class:`MorlRobotError` naming the missing ones after ``timeout`` s."""
    start = time.monotonic()
    missing = list(topics)
    while time.monotonic() - start < timeout:
        if check is not None:
            check()
        status = probe.diagnostics("recorder")
        matched = set(status.get("matched", "").split(","))
        missing = [t for t in topics if t not in matched]
        if status and not missing:
            return time.monotonic() - start
        time.sleep(0.1)
    raise MorlRobotError(f"--record: the recorder did not discover {', '.join(missing)} within {timeout:.0f} s "
                         "(see its log in <out>/logs/recorder.log)")
