"""YAML configuration loaded into typed dataclasses, with errors that name the file and the key.

Every config in ``config/`` (robots, tasks, learner, sessions, safety, reward machines) is found
by :func:`morl_robot.resources.resolve_config` (a name or a path, one contract for every kind) and
read through :func:`load_config` or :func:`from_mapping`; the nodes' ROS parameters are checked by
the same machinery (:func:`morl_robot.nodes.base.declare_settings`).  Type checking follows the
dataclass annotations:

* ``int``, ``float`` (ints accepted), ``str``, ``bool`` (strictly ``true``/``false``),
* ``list[T]`` / ``tuple[T, ...]`` / ``dict[str, T]``, nested dataclasses,
* ``Optional[T]`` / ``T | None``, ``Literal[...]`` (the message lists the allowed values).

Unknown keys are errors that list the allowed keys; missing keys without a default are errors.
Extra checks live in a dataclass's ``validate()`` method, which raises :class:`ConfigError` via
:func:`fail` so that the message carries the file and key path (a nested dataclass's key is put
under the key path it was read at, unless its message already names it).
"""
from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

from morl_robot.errors import ConfigError

T = TypeVar("T")


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a YAML file whose top level is a mapping; errors name the file and the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a YAML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}): a YAML config must be UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" (line {mark.line + 1}, column {mark.column + 1})"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: malformed YAML{where}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys, got {type(data).__name__}")
    return data


def load_config(cls: type[T], path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> T:
    """Load ``path`` into dataclass ``cls``; ``overrides`` (nested mapping) win over the file."""
    data = load_yaml(path)
    if overrides:
        data = merge(data, overrides)
    return from_mapping(cls, data, source=str(path))


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; values in ``override`` replace those in ``base``."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def fail(source: str, key: str, message: str) -> typing.NoReturn:
    """Raise a :class:`ConfigError` naming the file (``source``) and the dotted ``key``."""
    where = f"{source}: " if source else ""
    raise ConfigError(f"{where}key '{key}': {message}")


def from_mapping(cls: type[T], data: Any, source: str = "", prefix: str = "") -> T:
    """Build dataclass ``cls`` from a mapping, checking keys and types recursively."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    where = prefix or "<top level>"
    if not isinstance(data, dict):
        fail(source, where, f"expected a mapping, got {_describe(data)}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        fail(source, _join(prefix, str(unknown[0])), f"unknown key; allowed keys: {', '.join(sorted(fields))}")
    kwargs: dict[str, Any] = {}
    for name, field in fields.items():
        key = _join(prefix, name)
        if name not in data:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                fail(source, key, "missing required key")
            continue
        kwargs[name] = _convert(hints[name], data[name], source, key)
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        try:
            validate()
        except ConfigError as exc:
            msg = opening = str(exc)
            head = "key '"
            if prefix and msg.startswith(head) and not msg.startswith(f"{head}{prefix}"):
                # a nested dataclass's validate() names its own keys: put them under its key path
                msg = f"{head}{prefix}.{msg[len(head):]}"
            if source and not msg.startswith(source):
                msg = f"{source}: {msg}"
            if msg != opening:
                raise ConfigError(msg) from None
            raise
    return obj


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _convert(tp: Any, value: Any, source: str, key: str) -> Any:
    origin = get_origin(tp)
    args = get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        candidates = [a for a in args if a is not type(None)]
        errors = []
        for candidate in candidates:
            try:
                return _convert(candidate, value, source, key)
            except ConfigError as exc:
                errors.append(str(exc))
        if len(errors) == 1:
            raise ConfigError(errors[0])
        fail(source, key, f"expected one of {[_type_name(c) for c in candidates]}, got {_describe(value)}")
    if origin is Literal:
        if value not in args:
            fail(source, key, f"got {value!r}; allowed values: {', '.join(repr(a) for a in args)}")
        return value
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value, source, key)
    if origin in (list, list) or tp is list:
        if not isinstance(value, list):
            fail(source, key, f"expected a list, got {_describe(value)}")
        item = args[0] if args else Any
        return [_convert(item, v, source, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin in (tuple, tuple):
        if not isinstance(value, (list, tuple)):
            fail(source, key, f"expected a list, got {_describe(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, source, f"{key}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            fail(source, key, f"expected {len(args)} values, got {len(value)}")
        return tuple(_convert(a, v, source, f"{key}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin in (dict, dict) or tp is dict:
        if not isinstance(value, dict):
            fail(source, key, f"expected a mapping, got {_describe(value)}")
        vt = args[1] if args else Any
        return {str(k): _convert(vt, v, source, f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            fail(source, key, f"expected true or false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            fail(source, key, f"expected an integer, got {_describe(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(source, key, f"expected a number, got {_describe(value)}")
        if not math.isfinite(float(value)):
            fail(source, key, f"expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            fail(source, key, f"expected a string, got {_describe(value)}")
        return value
    return value


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def to_mapping(obj: Any) -> Any:
    """Dataclass (nested) to plain YAML/JSON-able data."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_mapping(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_mapping(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_mapping(v) for k, v in obj.items()}
    return obj
