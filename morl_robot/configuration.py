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
A file may start from another with ``extends: PARENT`` (a name of the same kind or a path; chains
allowed): it states only what it changes, deep-merged over its parent at load time
(:func:`load_layers`; mappings merge, lists and scalars replace).
Extra checks live in a dataclass's ``validate()`` method, which raises :class:`ConfigError` via
:func:`fail` so that the message carries the file and key path (a nested dataclass's key is put
under the key path it was read at, unless its message already names it).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import types
import typing
from collections.abc import Iterator
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


def load_config(cls: type[T], path: str | os.PathLike[str], overrides: dict[str, Any] | None = None,
                kind: str | None = None, metadata: tuple[str, ...] = ()) -> T:
    """Load ``path`` into dataclass ``cls``; ``overrides`` (nested mapping) win over the file.
    ``extends:`` chains are followed (:func:`load_layers`; ``kind`` and ``metadata`` as there)."""
    data = load_layers(cls, path, kind, metadata)
    if overrides:
        data = merge(data, overrides)
    return from_mapping(cls, data, source=str(path))


#: The key by which a YAML config names the config it starts from.
EXTENDS = "extends"


def load_layers(cls: type, path: str | os.PathLike[str], kind: str | None = None,
                metadata: tuple[str, ...] = ()) -> dict[str, Any]:
    """The mapping of YAML ``path`` with its ``extends:`` chain merged in (parent first, each child
    deep-merged over it).  ``PARENT`` is a name of ``kind`` (a key of
    :data:`morl_robot.resources.CONFIG_KINDS`; None: the kind whose ``config/`` folder holds the
    file) or a path (relative to the child's folder); a name is first looked for beside the child.
    Each file's keys are checked against ``cls`` before merging, so an unknown key names the file
    that has it; a missing parent and a cycle are errors naming the child and its ``extends`` key.
    ``metadata`` keys (e.g. ``about``) are allowed in every file, dropped, and not inherited.
    A file without ``extends`` is returned as :func:`load_yaml` reads it (minus ``metadata``)."""
    current = Path(path)
    chain: list[Path] = []
    layers: list[dict[str, Any]] = []
    while True:
        chain.append(current)
        data = load_yaml(current)
        for key in metadata:
            data.pop(key, None)
        if EXTENDS not in data and len(chain) == 1:
            return data
        parent = data.pop(EXTENDS, None)
        check_keys(cls, data, str(current))
        layers.append(data)
        if parent is None:
            break
        if not isinstance(parent, str) or not parent.strip():
            fail(str(current), EXTENDS, f"expected the name or path of the config this one extends, got {_describe(parent)}")
        nxt = _parent_path(current, parent, kind)
        if any(nxt.resolve() == p.resolve() for p in chain):
            cycle = " -> ".join(str(p) for p in [*chain, nxt])
            fail(str(current), EXTENDS, f"'{parent}' makes a cycle: {cycle}")
        current = nxt
    out: dict[str, Any] = {}
    for layer in reversed(layers):
        out = merge(out, layer)
    return out


def _parent_path(child: Path, parent: str, kind: str | None) -> Path:
    """The file ``extends: parent`` in ``child`` names (see :func:`load_layers`)."""
    from morl_robot.errors import UnknownNameError
    from morl_robot.resources import (
        CONFIG_KINDS,
        config_path,
        is_config_path,
        resolve_config,
    )

    if is_config_path(parent):
        candidate = Path(parent).expanduser()
        if not candidate.is_absolute():
            candidate = child.parent / candidate
        if candidate.is_file():
            return candidate
        fail(str(child), EXTENDS, f"parent file '{parent}' not found (looked in: {candidate})")
    beside = child.parent / f"{parent}.yaml"
    if beside.is_file():
        return beside
    if kind is None:  # the deepest kind folder that holds the child
        holders = [k for k in CONFIG_KINDS if config_path(k).resolve() in child.resolve().parents]
        kind = max(holders, key=len) if holders else None
    if kind is None:
        fail(str(child), EXTENDS, f"parent '{parent}' not found (looked in: {beside})")
    try:
        return resolve_config(kind, parent)
    except (UnknownNameError, ConfigError) as exc:
        fail(str(child), EXTENDS, str(exc))


def check_keys(cls: type, data: Any, source: str, prefix: str = "") -> None:
    """Fail on the first key of mapping ``data`` (recursively into nested dataclasses) that
    dataclass ``cls`` does not have, naming ``source`` and the key path (values are not checked)."""
    if not isinstance(data, dict):
        return
    hints = get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    for key, value in data.items():
        if key not in fields:
            fail(source, _join(prefix, str(key)), f"unknown key; allowed keys: {', '.join(sorted(fields))}")
        tp = hints[key]
        nested = [a for a in (get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,))
                  if dataclasses.is_dataclass(a)]
        if nested and isinstance(value, dict):
            check_keys(nested[0], value, source, _join(prefix, key))


#: ``--set KIND.key=value`` overrides while a command runs, as JSON in this environment variable
#: (so the node processes the command starts apply them too): ``{kind: nested mapping}``.
OVERRIDES_ENV = "MORL_ROBOT_SET"
#: Config kind of each config dataclass (a subclass, e.g. a task's config, has its base's kind).
OVERRIDE_KINDS = {"TaskConfig": "task", "MPOConfig": "learner", "SessionConfig": "session",
                  "RobotConfig": "robot", "SafetyConfig": "safety"}


def _flat_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        keys.extend(_flat_keys(value, name) if isinstance(value, dict) and value else [name])
    return keys


def active_overrides(cls: type) -> dict[str, Any]:
    """The active ``--set`` overrides for configs of dataclass ``cls`` (empty: none)."""
    text = os.environ.get(OVERRIDES_ENV)
    if not text:
        return {}
    kind = next((OVERRIDE_KINDS[c.__name__] for c in getattr(cls, "__mro__", ()) if c.__name__ in OVERRIDE_KINDS), None)
    if kind is None:
        return {}
    import json

    return dict(json.loads(text).get(kind) or {})


@contextlib.contextmanager
def config_overrides(by_kind: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Within the block, every YAML of kind K read through :func:`from_mapping` (in this process
    and in the node processes started in it) gets ``by_kind[K]`` merged over it (``--set``)."""
    import json

    before = os.environ.get(OVERRIDES_ENV)
    os.environ[OVERRIDES_ENV] = json.dumps(by_kind, default=str)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OVERRIDES_ENV, None)
        else:
            os.environ[OVERRIDES_ENV] = before


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
    """Build dataclass ``cls`` from a mapping, checking keys and types recursively.  A YAML file's
    top level (``source`` a ``.yaml`` path) first gets the active ``--set`` overrides of its kind
    (:func:`config_overrides`)."""
    extra = active_overrides(cls) if not prefix and str(source).endswith((".yaml", ".yml")) else {}
    if extra and isinstance(data, dict):
        try:
            return _from_mapping(cls, merge(data, extra), source, prefix)
        except ConfigError as exc:
            kind = next(OVERRIDE_KINDS[c.__name__] for c in cls.__mro__ if c.__name__ in OVERRIDE_KINDS)
            raise ConfigError(f"{exc} (with --set {', '.join(_flat_keys(extra, kind))})") from None
    return _from_mapping(cls, data, source, prefix)


def _from_mapping(cls: type[T], data: Any, source: str = "", prefix: str = "") -> T:
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
