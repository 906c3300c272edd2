"""Result files: JSON written atomically, numpy values made JSON-safe.

A results file is either the old complete version or the new complete version, never a torn
write: the text goes to a temporary file in the same folder, is flushed and fsync'ed, and then
``os.replace`` swaps it in (atomic on POSIX and Windows within one file system).
"""
from __future__ import annotations

import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["read_json", "save_figure", "to_jsonable", "write_bytes_atomic", "write_json_atomic"]


def _file_mode() -> int:
    """Permissions a plain ``open(path, "w")`` would give (0o666 minus the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _file_mode()


def to_jsonable(value: Any) -> Any:
    """Recursively convert numpy arrays/scalars, tuples, Paths and dataclass-like objects into
    plain JSON types.  Non-finite floats become ``None`` (JSON has no NaN/Infinity)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    return value


def write_json_atomic(path: str | os.PathLike[str], data: Any, indent: int = 2) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (temp file + fsync + ``os.replace``).

    Creates the parent folder.  Returns the final path.
    """
    text = json.dumps(to_jsonable(data), indent=indent, sort_keys=False, allow_nan=False)
    return write_bytes_atomic(path, (text + "\n").encode())


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsync, then
    ``os.replace`` — a reader (a policy server reloading a model, a report viewer) sees the old
    file or the new one, never a partial one.  Creates the parent folder; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)  # mkstemp creates 0o600
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def save_figure(fig: Any, path: str | os.PathLike[str], **savefig: Any) -> Path:
    """Write the matplotlib figure ``fig`` to ``path`` atomically (:func:`write_bytes_atomic`; the
    format from the suffix) and close it, written or not.  ``savefig``: ``Figure.savefig`` options."""
    import matplotlib.pyplot as plt

    try:
        buf = io.BytesIO()
        fig.savefig(buf, format=Path(path).suffix.lstrip(".") or None, **savefig)
        return write_bytes_atomic(path, buf.getvalue())
    finally:
        plt.close(fig)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON results file."""
    with open(path) as handle:
        return json.load(handle)
