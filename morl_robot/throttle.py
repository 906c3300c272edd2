"""Rate-limited logging of repeated bad input (no ROS here: the nodes and their cores share it)."""
from __future__ import annotations

import time
from collections.abc import Callable


class RateLimitedLog:
    """Log lines about repeated bad input at most once per ``interval`` s per kind: the first one
    goes out at once, the ones after it within the interval are counted, and the next line that
    goes out says how many were suppressed (``… (+N like it in the last 1.0 s)``).  A flood of
    invalid messages then costs one line a second, not one per message.  ``log(level, message)``."""

    def __init__(self, log: Callable[[str, str], None], interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log, self.interval, self._clock = log, interval, clock
        self._last: dict[str, float] = {}
        self.suppressed: dict[str, int] = {}

    def __call__(self, kind: str, level: str, message: str) -> bool:
        """Log ``message`` (of ``kind``) unless one of that kind went out less than ``interval`` s
        ago; returns whether it went out."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval:
            self.suppressed[kind] = self.suppressed.get(kind, 0) + 1
            return False
        n = self.suppressed.pop(kind, 0)
        self._last[kind] = now
        self._log(level, message + (f" (+{n} like it in the last {now - last:.1f} s)" if n and last is not None else ""))
        return True
