"""ROS 2 message definitions for MCAP schemas (encoding ``ros2msg``).

A schema is the type's ``.msg`` text followed, for every nested type it uses (depth first, each
once), by a line of 80 ``=``, ``MSG: pkg/Name`` and that type's text: the convention rosbag2 writes
and ``mcap_ros2``, ``rosbags``, Foxglove and ``ros2 bag`` read.  The ``.msg`` files are the ones
installed with the message packages (``<prefix>/share/<pkg>/msg/<Name>.msg``, found through the
ament index).
"""
from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

from morl_robot.errors import MorlRobotError

PRIMITIVES = frozenset({"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                        "uint32", "int64", "uint64", "string", "wstring"})
SEPARATOR = "=" * 80
#: Types whose first field is a ``builtin_interfaces/Time`` (directly or as ``std_msgs/Header``'s
#: stamp) start their CDR body with it: 4 bytes of encapsulation header, then sec, nanosec.
STAMP_TYPES = ("std_msgs/Header", "builtin_interfaces/Time")


class SchemaError(MorlRobotError):
    """A message type whose definition is not installed (or cannot be parsed)."""


def _split(type_name: str) -> tuple[str, str]:
    """``pkg/msg/Name`` or ``pkg/Name`` → ``(pkg, Name)``."""
    parts = type_name.strip("/").split("/")
    if len(parts) == 3 and parts[1] == "msg":
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise SchemaError(f"message type {type_name!r}: expected pkg/msg/Name")


def _share_dirs(package: str) -> list[Path]:
    dirs = []
    try:
        from ament_index_python.packages import get_package_share_directory

        dirs.append(Path(get_package_share_directory(package)))
    except (ImportError, LookupError, ValueError, OSError):
        pass
    dirs.append(Path(sys.prefix) / "share" / package)
    dirs += [Path(p) / "share" / package for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return dirs


@functools.cache
def msg_text(type_name: str) -> str:
    """The installed ``.msg`` text of ``type_name`` (``pkg/msg/Name``), or :class:`SchemaError`."""
    package, name = _split(type_name)
    for share in _share_dirs(package):
        path = share / "msg" / f"{name}.msg"
        if path.is_file():
            return path.read_text()
    raise SchemaError(f"message type {package}/msg/{name}: no {name}.msg installed under share/{package}/msg "
                      "(is the ros-<package> wheel installed?)")


def field_types(text: str, package: str) -> list[str]:
    """The nested (non-primitive) field types of a ``.msg`` text, as ``pkg/Name``, in order."""
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) < 2 or "=" in words[1] or (len(words) > 2 and words[2].startswith("=")):
            continue  # a constant (NAME=value)
        base = re.sub(r"\[.*\]$", "", words[0])
        base = re.sub(r"<=\d+$", "", base)
        if base in PRIMITIVES:
            continue
        if base == "Header":
            out.append("std_msgs/Header")
        elif "/" in base:
            pkg, name = _split(base)
            out.append(f"{pkg}/{name}")
        else:
            out.append(f"{package}/{base}")
    return out


@functools.cache
def schema_text(type_name: str) -> str:
    """The ``ros2msg`` schema of ``type_name``: its text and every nested type's, concatenated."""
    package, name = _split(type_name)
    main = msg_text(f"{package}/msg/{name}")
    seen: list[str] = []

    def visit(text: str, pkg: str) -> None:
        for nested in field_types(text, pkg):
            if nested not in seen:
                seen.append(nested)
                npkg, nname = nested.split("/")
                visit(msg_text(f"{npkg}/msg/{nname}"), npkg)

    visit(main, package)
    parts = [main.rstrip("\n")]
    for nested in seen:
        npkg, nname = nested.split("/")
        parts.append(f"{SEPARATOR}\nMSG: {nested}\n" + msg_text(f"{npkg}/msg/{nname}").rstrip("\n"))
    return "\n".join(parts) + "\n"


@functools.cache
def has_leading_stamp(type_name: str) -> bool:
    """Whether the CDR bytes of ``type_name`` begin with a time stamp (its first field is a
    ``std_msgs/Header`` or a ``builtin_interfaces/Time``): :func:`stamp_ns` then reads it."""
    package, name = _split(type_name)
    if f"{package}/{name}" in STAMP_TYPES:
        return True
    text = msg_text(f"{package}/msg/{name}")
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            first = field_types(line, package)
            return bool(first) and first[0] in STAMP_TYPES and not line.split()[0].endswith("]")
    return False


def stamp_ns(data: bytes) -> int:
    """The leading stamp of a CDR message (see :func:`has_leading_stamp`) in ns; 0 if too short."""
    if len(data) < 12:
        return 0
    order = "little" if data[1] & 1 else "big"
    sec = int.from_bytes(data[4:8], order, signed=True)
    nsec = int.from_bytes(data[8:12], order)
    return sec * 1_000_000_000 + nsec
