"""One writer per run directory: an advisory lock held for as long as a run writes there.

Two trainings writing into one ``--out`` interleave ``episodes.csv`` and delete each other's
checkpoints, so every writer of a run directory (``morl-robot train``, the ``learner_node``,
in-process :func:`morl_robot.training.loop.train`) takes :class:`RunLock` first.

The lock is ``RUN_DIR/.lock``, held with ``flock`` (released by the kernel when the holder exits,
however it exits) and describing its holder in JSON (owner, pid, host, start time).  A second
writer is refused with that description.  A lock file left by a holder that is gone is *stale*:
it is taken over and :attr:`RunLock.stale` names whose it was, for the caller to log.  A child
started by the holder (the learner node of a ``morl-robot train`` session) may share its
parent's lock (``allow_parent``).

A file of a run (or an export's output) that cannot be written is a :class:`WriteError` naming
the file and the OS error (:func:`write_error`): one line, never a traceback or a silent success.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

from morl_robot.errors import MorlRobotError

LOCK_NAME = ".lock"


class RunDirectoryBusy(MorlRobotError):
    """Another live process is writing into the run directory."""


class WriteError(MorlRobotError):
    """A file could not be written (disk full, read-only folder, name too long…); the message names
    the file and the OS error."""


def write_error(path: str | os.PathLike[str], exc: OSError) -> WriteError:
    """``cannot write PATH: [Errno N] reason`` for an ``OSError`` met while writing ``path`` (the
    folder or file the OS refused is added when it is not ``path`` or its temporary sibling)."""
    reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno is not None and exc.strerror else str(exc)
    where = ""
    if exc.filename is not None:
        failed = Path(os.fsdecode(exc.filename))
        if failed != Path(path) and failed.parent != Path(path).parent:
            try:
                kind = " is not a folder" if failed.exists() and not failed.is_dir() else ""
            except OSError:  # e.g. a name too long to look up
                kind = ""
            where = f" ({failed}{kind})"
    return WriteError(f"cannot write {path}: {reason}{where}")


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """An ``OSError`` met in the body (writing ``path``, or even looking it up: a name too long) as
    :func:`write_error`, one line naming it (the CLI's exit status 2), not a traceback."""
    try:
        yield
    except OSError as exc:
        raise write_error(path, exc) from None


def _describe(info: dict[str, Any]) -> str:
    started = info.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return f"{info.get('owner', '?')} (pid {info.get('pid', '?')} on {info.get('host', '?')}, since {when})"


class RunLock:
    """The lock of one run directory; use as a context manager or call :meth:`release`."""

    def __init__(self, path: Path, fd: int | None, stale: str = "") -> None:
        self.path, self._fd, self.stale = path, fd, stale

    @classmethod
    def acquire(cls, run_dir: str | os.PathLike[str], owner: str, allow_parent: bool = False) -> RunLock:
        """Lock ``run_dir`` (created if missing) for ``owner`` or raise :class:`RunDirectoryBusy`
        (:class:`WriteError` if the lock file cannot be made there)."""
        folder = Path(run_dir)
        path = folder / LOCK_NAME
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # read-only, a file in the way, a name too long: one line naming it
            raise write_error(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = cls._read(fd)
            os.close(fd)
            if allow_parent and info.get("pid") == os.getppid() and info.get("host") == socket.gethostname():
                return cls(path, None)  # the session that started us holds it for us
            raise RunDirectoryBusy(f"{folder} is in use by {_describe(info)}; wait for it to finish, stop it, "
                                   "or choose another --out") from None
        previous = cls._read(fd)
        stale = _describe(previous) if previous and previous.get("pid") != os.getpid() else ""
        info = {"owner": owner, "pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        os.fsync(fd)
        return cls(path, fd, stale)

    @staticmethod
    def _read(fd: int) -> dict[str, Any]:
        try:
            data = os.pread(fd, 4096, 0)
            value = json.loads(data.decode() or "{}")
            return value if isinstance(value, dict) else {}
        except (OSError, ValueError):
            return {}

    def release(self) -> None:
        """Give the directory up (the file stays; an unlocked file is free to take)."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
