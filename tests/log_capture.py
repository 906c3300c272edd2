"""Reading a morl_robot logger's records in a test without relying on propagation to the root
logger (issue 41): ROS's ``launch``, which its pytest plugin imports under ``colcon test``, makes
every logger created afterwards non-propagating, so pytest's ``caplog`` (a root handler) sees
nothing.  :func:`captured` attaches its handler to the logger it reads."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def captured(name: str, level: int = logging.INFO) -> Iterator[list[logging.LogRecord]]:
    """The records of logger ``name`` (at ``level`` and above) while the block runs, whether or
    not that logger propagates."""
    logger = logging.getLogger(name)
    handler, before = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


def messages(records: list[logging.LogRecord]) -> str:
    """The records' messages, one a line (for ``in`` checks and failure output)."""
    return "\n".join(r.getMessage() for r in records)
