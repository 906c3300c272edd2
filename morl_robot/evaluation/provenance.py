"""Provenance of a result: the exact command, the code commit, the date and the machine.

Every ``results.json`` and ``*_report.json`` is written through :func:`write_results_json`,
which adds a ``"provenance"`` block made by :func:`provenance`.  See docs/results/index.md.
"""
from __future__ import annotations

import os
import platform
import shlex
import socket
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from morl_robot.records import write_json_atomic

__all__ = ["PROGRAM", "code_version", "machine", "provenance", "record_command", "write_results_json"]

PROGRAM = "morl-robot"
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the morl_robot package

_command: list[str] | None = None


def record_command(argv: Sequence[str] | None) -> None:
    """Remember the arguments ``morl-robot`` was run with (``None``: ``sys.argv[1:]``).

    Called once by :func:`morl_robot.cli.main`; :func:`provenance` reports them.
    """
    global _command
    _command = list(sys.argv[1:] if argv is None else argv)


def _command_line(argv: Sequence[str] | None) -> str:
    if argv is not None:
        return shlex.join([PROGRAM, *argv])
    if _command is not None:
        return shlex.join([PROGRAM, *_command])
    # Not run through the CLI: name the Python entry point as it was started.
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is not None and script.suffix == ".py" and SOURCE_ROOT in script.parents:
        module = ".".join(script.relative_to(SOURCE_ROOT).with_suffix("").parts)
        return shlex.join(["python", "-m", module, *sys.argv[1:]])
    return shlex.join([Path(sys.executable).name, *sys.argv])


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(SOURCE_ROOT), *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _installed_version() -> str:
    try:
        return metadata.version("morl_robot")
    except metadata.PackageNotFoundError:
        return "unknown"


def code_version() -> dict[str, Any]:
    """``{"commit": sha, "dirty": bool}`` for a git checkout of the source (dirty: the code,
    ``morl_robot/``, ``config/``, ``sim/`` or the setup files, differs from the commit), else
    ``{"version": installed version, "commit": None, "dirty": None}``."""
    sha = _git("rev-parse", "HEAD") if (SOURCE_ROOT / ".git").exists() else None
    if not sha:
        return {"commit": None, "dirty": None, "version": _installed_version()}
    status = _git("status", "--porcelain", "--untracked-files=no", "--", "morl_robot", "config", "sim", "setup.py", "setup.cfg")
    return {"commit": sha, "dirty": bool(status) if status is not None else None,
            "version": _installed_version()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version_of(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """Host name, CPU model and count, OS, Python and the torch / mujoco versions (read from the
    installed metadata: nothing heavy is imported)."""
    return {
        "hostname": socket.gethostname(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": _version_of("torch"),
        "mujoco": _version_of("mujoco"),
    }


def provenance(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The command (``morl-robot ...`` shell-quoted, as run), the code commit (+ dirty flag, or
    the installed version), the date (UTC, ISO 8601) and the machine."""
    return {
        "command": _command_line(argv),
        **code_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
    }


def write_results_json(path: str | os.PathLike[str], data: dict[str, Any],
                       argv: Sequence[str] | None = None) -> Path:
    """Write ``data`` plus a ``"provenance"`` block (:func:`provenance`) atomically to ``path``.

    ``data`` itself is not changed; returns the path written.
    """
    if not isinstance(data, dict):
        raise TypeError(f"write_results_json: {path}: a results file is a JSON object, got {type(data).__name__}")
    return write_json_atomic(path, {**data, "provenance": provenance(argv)})
