"""Atomic, verified training checkpoints.

A checkpoint is one file ``ckpt-<step:012d>.pt`` in a run folder:

    b"MORLCKPT" | format u32 | payload length u64 | sha256(payload) 32 bytes | payload

where the payload is a ``torch.save`` of a dict (networks, target networks, optimisers, duals,
counters, RNG states, the config, optionally the replay).  Saving writes a temporary file in the
same folder, ``fsync``\\ s it, ``os.replace``\\ s it into place and ``fsync``\\ s the folder, so a kill at
any moment leaves either the old set of checkpoints or the new one, never a partial file under a
checkpoint name.  Loading checks the header, the length and the checksum, and raises
:class:`CheckpointError` naming the file (and the previous checkpoint, which is never deleted by
a failed load) on any mismatch.  The newest ``keep`` checkpoints (default 2) are kept.

Payloads are loaded with ``torch.load(weights_only=True)``: numpy arrays are converted to tensors
on save (:func:`to_safe`) so no arbitrary pickles are needed.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import struct
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from morl_robot.errors import MorlRobotError

MAGIC = b"MORLCKPT"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sIQ32s")
_NAME = re.compile(r"^ckpt-(\d{12})\.pt$")


class CheckpointError(MorlRobotError):
    """A checkpoint file is missing, truncated, corrupt or of an unknown format."""


def checkpoint_path(directory: str | os.PathLike[str], step: int) -> Path:
    return Path(directory) / f"ckpt-{int(step):012d}.pt"


def checkpoint_step(path: str | os.PathLike[str]) -> int:
    """The environment step a checkpoint file was written at, read off its name."""
    m = _NAME.match(Path(path).name)
    if m is None:
        raise ValueError(f"{path}: not a checkpoint name (ckpt-<step:012d>.pt)")
    return int(m.group(1))


def list_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """Checkpoint files in ``directory``, oldest first (by step in the name)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), d / name) for name in os.listdir(d) if (m := _NAME.match(name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: str | os.PathLike[str]) -> Path | None:
    """The newest checkpoint file in ``directory`` (not verified), or None."""
    found = list_checkpoints(directory)
    return found[-1] if found else None


def to_safe(obj: Any) -> Any:
    """Convert numpy arrays/scalars (recursively) to tensors/Python numbers for ``weights_only`` loads."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: to_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_safe(v) for v in obj)
    return obj


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def save_checkpoint(directory: str | os.PathLike[str], step: int, payload: dict[str, Any], keep: int = 2) -> Path:
    """Atomically write ``payload`` as the checkpoint for ``step``; keep the newest ``keep`` files."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(to_safe(payload), buf)
    data = buf.getvalue()
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(data), hashlib.sha256(data).digest())
    final = checkpoint_path(d, step)
    tmp = d / f".{final.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    _fsync_dir(d)
    for old in list_checkpoints(d)[:-keep] if keep > 0 else []:
        try:
            old.unlink()
        except FileNotFoundError:
            pass
    for name in os.listdir(d):  # temporary files of saves that were killed
        if name.startswith(".ckpt-") and name.endswith(".tmp") and not name.endswith(f".{os.getpid()}.tmp"):
            try:
                (d / name).unlink()
            except FileNotFoundError:
                pass
    return final


def _previous(path: Path) -> Path | None:
    found = list_checkpoints(path.parent)
    older = [p for p in found if p.name < path.name]
    return older[-1] if older else None


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and verify a checkpoint; :class:`CheckpointError` names the file on any problem."""
    path = Path(path)

    def bad(reason: str) -> CheckpointError:
        prev = _previous(path)
        hint = (f"; the previous checkpoint {prev} is kept — move {path.name} aside to resume from it"
                if prev else "; there is no earlier checkpoint in that folder")
        return CheckpointError(f"{path}: {reason}{hint}")

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: checkpoint file not found") from None
    if len(raw) < _HEADER.size:
        raise bad(f"truncated checkpoint ({len(raw)} bytes, shorter than the {_HEADER.size}-byte header)")
    magic, version, length, digest = _HEADER.unpack_from(raw)
    if magic != MAGIC:
        raise bad("not a morl_robot checkpoint (bad magic bytes)")
    if version != FORMAT_VERSION:
        raise bad(f"checkpoint format {version} is not supported (expected {FORMAT_VERSION})")
    data = raw[_HEADER.size:]
    if len(data) != length:
        raise bad(f"truncated or corrupt checkpoint (payload {len(data)} bytes, header says {length})")
    if hashlib.sha256(data).digest() != digest:
        raise bad("corrupt checkpoint (sha256 checksum mismatch)")
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a corrupt file
        raise bad(f"cannot decode checkpoint payload ({type(exc).__name__}: {exc})") from None


def run_checkpoint_dir(run_dir: str | os.PathLike[str]) -> Path:
    """Where a run directory keeps its checkpoints: ``<run_dir>/checkpoints`` (every driver of the
    learner, :class:`~morl_robot.training.session.LearnerSession`, writes there)."""
    return Path(run_dir) / "checkpoints"


def quarantine(path: Path) -> str:
    """Move an unreadable checkpoint aside to ``<name>.corrupt`` (so it can no longer shadow the
    checkpoints written after it, and stays for inspection); returns what happened, for the log."""
    aside = path.with_name(path.name + ".corrupt")
    try:
        os.replace(path, aside)
    except OSError as exc:
        return f"could not move it aside ({exc})"
    return f"moved aside to {aside.name}"


def load_latest(directory: str | os.PathLike[str], fallback: bool = True, *, move_aside: bool = False,
                log: Callable[[str], None] | None = None,
                on_skip: Callable[[Path, CheckpointError], None] | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The newest readable checkpoint in ``directory`` as ``(path, payload)``, or None if there is none.

    With ``fallback`` a corrupt newest file is reported (``log``, default a ``RuntimeWarning``)
    naming it, and the previous one is tried; with ``move_aside`` each corrupt file is also renamed
    ``*.corrupt`` (:func:`quarantine`); ``on_skip(path, error)`` instead of the report leaves the
    decision to the caller (nothing is written: e.g. only once the resume is known to be accepted).
    Without ``fallback`` the :class:`CheckpointError` is raised.
    If there are checkpoints but none is readable, :class:`CheckpointError` names them all (never
    a silent fresh start over a run's history).
    """
    def warn(message: str) -> None:
        warnings.warn(message, RuntimeWarning, stacklevel=3)

    report = log or warn
    errors: list[str] = []
    for path in reversed(list_checkpoints(directory)):
        try:
            return path, load_checkpoint(path)
        except CheckpointError as exc:
            if not fallback:
                raise
            errors.append(str(exc))
            if on_skip is not None:
                on_skip(path, exc)
                continue
            moved = f"; {quarantine(path)}" if move_aside else ""
            report(f"skipping unreadable checkpoint: {exc}{moved}")
    if errors:
        aside = " (moved aside to *.corrupt: the next start begins a new run)" if move_aside else ""
        raise CheckpointError(f"{directory}: no readable checkpoint{aside}: " + " | ".join(errors))
    return None
