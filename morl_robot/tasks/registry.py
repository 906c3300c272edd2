"""The task registry: task name → task class, its config dataclass and its default YAML.

Tasks come from four places, looked up in this order (the first to name a task wins):

1. the package's own tasks (:data:`BUILTIN_TASKS`, their YAMLs in ``config/tasks/``);
2. task YAMLs that name their class (``class: my_pkg.my_module:MyTask``) in the package's
   ``config/tasks/`` or in a folder (or file) listed in ``$MORL_ROBOT_TASK_PATH``;
3. the ``morl_robot.tasks`` entry-point group of installed distributions (``name = module:Class``);
4. a task YAML passed by path (``--task-config PATH``) that names its class: registered in-process
   by :func:`load_task` / :func:`resolve_task_name` (and added to ``$MORL_ROBOT_TASK_PATH`` so the
   processes started afterwards, the ROS nodes, find it too).

A YAML's ``class`` module is imported from ``sys.path`` or, failing that, from the YAML's folder.
The config dataclass is the task class's ``config_class`` or the type of its ``config`` attribute.
How to add a task: ``docs/howto/add_task.md``.
"""
from __future__ import annotations

import importlib
import os
import sys
import typing
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from morl_robot.configuration import from_mapping, load_yaml, merge
from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.resources import config_path, resolve_config
from morl_robot.tasks.base import Task, TaskConfig, TaskDescription

#: The package's own tasks: name → ``module:Class`` (their YAMLs: ``config/tasks/<name>.yaml``).
BUILTIN_TASKS: dict[str, str] = {
    "sawyer_peg_in_hole": "morl_robot.tasks.sawyer_peg_in_hole:SawyerPegInHole",
    "shadow_touch": "morl_robot.tasks.shadow_hand:ShadowTouch",
    "shadow_turn": "morl_robot.tasks.shadow_hand:ShadowTurn",
    "shadow_orient": "morl_robot.tasks.shadow_hand:ShadowOrient",
}
#: Entry-point group of plugin tasks (``[project.entry-points."morl_robot.tasks"]``).
ENTRY_POINT_GROUP = "morl_robot.tasks"
#: Environment variable: folders of task YAMLs (or YAML files), ``os.pathsep``-separated.
TASK_PATH_VAR = "MORL_ROBOT_TASK_PATH"
#: How to make a task known (the end of an unknown-task message).
HOW_TO_REGISTER = ("a task YAML that names its class (class: module:Class), passed with --task-config or put in a "
                   f"folder listed in ${TASK_PATH_VAR}, or an entry point in group '{ENTRY_POINT_GROUP}' "
                   "(docs/howto/add_task.md)")


@dataclass(frozen=True)
class TaskEntry:
    """Where a task comes from: ``target`` ``module:Class``, its default YAML (None: the package's
    ``config/tasks/<name>.yaml`` or the class's ``config_file``) and, for messages, ``source``."""

    name: str
    target: str
    config_file: Path | None
    source: str
    key: str = "class"  # what names the class in the source (for errors)


_registered: dict[str, TaskEntry] = {}  # in-process (a --task-config YAML naming its class)
_cache: dict[str, Any] = {}


def reload_tasks() -> None:
    """Forget the discovered tasks (after installing a plugin or changing ``$MORL_ROBOT_TASK_PATH``)."""
    _cache.clear()


def _yaml_class(path: Path) -> str | None:
    """The ``class`` key of a task YAML (None without one); a ConfigError if it is not ``module:Class``."""
    data = load_yaml(path)
    target = data.get("class")
    if target is None:
        return None
    if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
        raise ConfigError(f"{path}: key 'class': expected 'module:Class' (e.g. my_tasks.reach:Reach), got {target!r}")
    return target


def _yaml_files(entry: str) -> list[Path]:
    p = Path(entry).expanduser()
    if p.is_dir():
        return sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml"))
    return [p] if p.is_file() else []


def _entry_from_yaml(path: Path, source: str) -> TaskEntry:
    target = _yaml_class(path)
    assert target is not None
    cls = import_task_class(target, f"{path}: key 'class'", path.parent)
    return TaskEntry(_class_task_name(cls, f"{path}: key 'class'"), target, path, source)


def _discover() -> dict[str, TaskEntry]:
    entries: dict[str, TaskEntry] = {}
    broken: list[str] = []  # task YAMLs on the path whose class does not load (said where the task is asked for)
    _cache["broken"] = broken

    def add(entry: TaskEntry) -> None:
        entries.setdefault(entry.name, entry)

    for name, target in BUILTIN_TASKS.items():
        add(TaskEntry(name, target, None, "the morl_robot package"))
    folders = [str(config_path("tasks"))] + [e for e in os.environ.get(TASK_PATH_VAR, "").split(os.pathsep) if e]
    for folder in folders:
        yamls = _yaml_files(folder)
        # the YAML named after its task is that task's default config (the others are variants)
        for path in yamls:
            try:
                if _yaml_class(path) is None:
                    continue
                entry = _entry_from_yaml(path, f"task YAML {path}")
            except ConfigError as exc:  # one broken plugin must not break every command
                broken.append(str(exc))
                warnings.warn(f"task YAML skipped: {exc}", stacklevel=2)
                continue
            if entry.name not in entries and (path.stem == entry.name or not any(q.stem == entry.name for q in yamls)):
                add(entry)
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "an installed distribution"
        add(TaskEntry(ep.name, ep.value, None, f"entry point '{ep.name}' of {dist}",
                      key=f"entry point '{ep.name} = {ep.value}' (group {ENTRY_POINT_GROUP})"))
    for entry in _registered.values():
        add(entry)
    return entries


def task_entries() -> dict[str, TaskEntry]:
    """Every known task (name → :class:`TaskEntry`), discovered once per process and
    ``$MORL_ROBOT_TASK_PATH`` value (:func:`reload_tasks` to look again)."""
    key = os.environ.get(TASK_PATH_VAR, "") + "|" + ",".join(_registered)
    if _cache.get("key") != key:
        _cache["entries"] = _discover()
        _cache["key"] = key
    return dict(_cache["entries"])


def task_names() -> tuple[str, ...]:
    """The names of every known task (the package's first, then plugins)."""
    return tuple(task_entries())


class _TaskTable(Mapping[str, tuple[type[Task], type[TaskConfig]]]):
    """``TASKS[name]`` → (task class, config class), over every known task (built-ins and plugins)."""

    def __getitem__(self, name: str) -> tuple[type[Task], type[TaskConfig]]:
        cls = task_class(name)
        return cls, config_class(cls)

    def __iter__(self) -> Iterator[str]:
        return iter(task_names())

    def __len__(self) -> int:
        return len(task_names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in task_entries()


#: Compatibility view of the registry: name → (task class, config class).
TASKS: Mapping[str, tuple[type[Task], type[TaskConfig]]] = _TaskTable()


def broken_tasks() -> tuple[str, ...]:
    """Why each task YAML on the task path that names a class could not be loaded (one message each)."""
    task_entries()
    return tuple(_cache.get("broken", ()))


def unknown_task(name: str) -> UnknownNameError:
    broken = "".join(f"; not loaded: {b}" for b in broken_tasks())
    return UnknownNameError(f"unknown task '{name}'; known tasks: {', '.join(task_names())}{broken}. "
                            f"To add a task: {HOW_TO_REGISTER}")


def import_task_class(target: str, where: str, folder: Path | None = None) -> type[Task]:
    """The :class:`Task` subclass ``module:Class`` names; ``where`` (e.g. "FILE: key 'class'") leads
    every error.  The module comes from ``sys.path`` or else from ``folder`` (a YAML's folder)."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        if folder is None or exc.name != top or not (folder / top).with_suffix(".py").exists() and not (
                folder / top).is_dir():
            hint = f" nor in {folder}" if folder is not None else ""
            raise ConfigError(f"{where}: cannot import module '{module_name}' of {target!r} ({exc}); it is not on "
                              f"sys.path{hint}: put its folder on PYTHONPATH or install its package") from None
        if str(folder) not in sys.path:  # here and in the processes started from here (ROS nodes)
            sys.path.append(str(folder))
            listed = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e]
            os.environ["PYTHONPATH"] = os.pathsep.join([*listed, str(folder)])
        try:
            module = importlib.import_module(module_name)
        except Exception as inner:
            raise ConfigError(f"{where}: importing module '{module_name}' from {folder} failed: "
                              f"{type(inner).__name__}: {inner}") from inner
    except Exception as exc:
        raise ConfigError(f"{where}: importing module '{module_name}' of {target!r} failed: "
                          f"{type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{where}: module '{module_name}' ({getattr(module, '__file__', '?')}) has no "
                              f"attribute '{attr}'")
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, Task)):
        raise ConfigError(f"{where}: {target} is {obj!r}, not a subclass of morl_robot.tasks.base.Task")
    return obj


def _class_task_name(cls: type[Task], where: str) -> str:
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: task class {cls.__module__}.{cls.__qualname__} sets no 'name' "
                          "(a class attribute: the task's name)")
    return name


def task_class(name: str) -> type[Task]:
    """The task class of task ``name`` (an :class:`UnknownNameError` listing the known tasks)."""
    entries = task_entries()
    if name not in entries:
        raise unknown_task(name)
    entry = entries[name]
    cls = import_task_class(entry.target, f"{entry.config_file}: key 'class'" if entry.config_file
                            and entry.key == "class" else entry.key,
                            entry.config_file.parent if entry.config_file else None)
    if _class_task_name(cls, entry.key) != name:
        raise ConfigError(f"{entry.key} of {entry.source}: names task '{name}' but {entry.target} is task "
                          f"'{cls.name}' (its class attribute 'name')")
    return cls


def config_class(cls: type[Task]) -> type[TaskConfig]:
    """The config dataclass of task class ``cls``: its ``config_class`` attribute or the type of
    its ``config`` annotation (e.g. ``config: MyTaskConfig``)."""
    explicit = getattr(cls, "config_class", None)
    if explicit is not None:
        return explicit
    for klass in cls.__mro__:
        if "config" in getattr(klass, "__annotations__", {}):
            hint = typing.get_type_hints(klass).get("config")
            if isinstance(hint, type) and issubclass(hint, TaskConfig):
                return hint
    return TaskConfig


def task_config_file(name: str) -> Path:
    """The default YAML of task ``name``: a plugin YAML that names the class, the class's
    ``config_file`` (relative to its module), or ``config/tasks/<name>.yaml``."""
    if name in BUILTIN_TASKS:  # the package's: no plugin discovery needed (a broken plugin cannot hide them)
        return resolve_config("tasks", name)
    entries = task_entries()
    if name not in entries:
        raise unknown_task(name)
    entry = entries[name]
    if entry.config_file is not None:
        return entry.config_file
    own = getattr(task_class(name), "config_file", None)
    if own:
        module = sys.modules[task_class(name).__module__]
        return Path(getattr(module, "__file__", ".")).parent / own
    try:
        return resolve_config("tasks", name)
    except UnknownNameError:
        raise ConfigError(f"task '{name}' ({entry.source}) has no YAML: set 'config_file' on its class (a path "
                          f"relative to its module) or pass a task YAML (--task-config)") from None


def resolve_task_name(name: str | None, config_file: str | os.PathLike[str] | None = None) -> str:
    """The task a command runs: ``name`` if given, else the task of ``config_file`` (a YAML that
    names its class, which is then registered in this process and the ones it starts, or a
    package task's YAML named after it).  A :class:`UsageError`-like ConfigError if neither says."""
    if name:
        if config_file is not None:
            _register_yaml(config_file)
        return name
    if config_file is None:
        raise ConfigError(f"no task given: name one (--task, known: {', '.join(task_names())}) or pass a task YAML "
                          "that names its class (--task-config PATH with 'class: module:Class')")
    path = resolve_config("tasks", config_file)
    registered = _register_yaml(path)
    if registered is not None:
        return registered
    if path.stem in task_entries():
        return path.stem
    raise ConfigError(f"{path}: key 'class': missing, so the task is not known from the file alone; add "
                      f"'class: module:Class' or give the task's name (--task, known: {', '.join(task_names())})")


def _register_yaml(config_file: str | os.PathLike[str]) -> str | None:
    """Register the task of a YAML that names its class (in this process and, through
    ``$MORL_ROBOT_TASK_PATH``, the processes it starts); its name, or None without a ``class``."""
    path = resolve_config("tasks", config_file).resolve()
    if path.is_dir() or _yaml_class(path) is None:
        return None
    entry = _entry_from_yaml(path, f"task YAML {path}")
    known = task_entries().get(entry.name)
    if known is not None and known.target != entry.target:
        raise ConfigError(f"{path}: key 'class': {entry.target} is task '{entry.name}', which {known.source} "
                          f"already defines as {known.target}; rename the task (its class attribute 'name')")
    if known is None:
        _registered[entry.name] = entry
        listed = [e for e in os.environ.get(TASK_PATH_VAR, "").split(os.pathsep) if e]
        if str(path) not in listed:
            os.environ[TASK_PATH_VAR] = os.pathsep.join([*listed, str(path)])
    return entry.name


def load_task(
    name: str | None, config_file: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None
) -> Task:
    """Build task ``name`` from its YAML (:func:`task_config_file` unless ``config_file``, a task
    config name or path: :func:`~morl_robot.resources.resolve_config`).  ``name`` None: the task
    the YAML's ``class`` names (:func:`resolve_task_name`)."""
    name = resolve_task_name(name, config_file)
    cls = task_class(name)
    cfg_cls = config_class(cls)
    path = resolve_config("tasks", config_file) if config_file is not None else task_config_file(name)
    data = load_yaml(path)
    target = data.pop("class", None)
    if target is not None and config_file is not None:
        named = import_task_class(_yaml_class(path) or "", f"{path}: key 'class'", path.parent)
        if named is not cls:
            raise ConfigError(f"{path}: key 'class': {target} is task '{named.name}', not task '{name}' "
                              f"({cls.__module__}:{cls.__qualname__})")
    if overrides:
        data = merge(data, overrides)
    config = from_mapping(cfg_cls, data, source=str(path))
    if config.robot != cls.robot_name:
        raise ConfigError(f"{path}: key 'robot': task '{name}' runs on robot '{cls.robot_name}', got '{config.robot}'")
    return cls(config)  # type: ignore[arg-type]


def describe_task(name: str, config_file: str | os.PathLike[str] | None = None) -> TaskDescription:
    """Task ``name``'s reference card (:meth:`~morl_robot.tasks.base.Task.describe`) from its YAML."""
    return load_task(name, config_file).describe()


def scripted_tasks() -> tuple[str, ...]:
    """The tasks with a hand-written controller (:attr:`~morl_robot.tasks.base.Task.scripted`)."""
    return tuple(n for n in task_names() if task_class(n).scripted is not None)


def write_task_config(name: str, overrides: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """Write task ``name``'s YAML with ``overrides`` applied to ``path`` (checked by loading it), for
    a process that takes a task YAML rather than overrides (the robot node of a deployed policy whose
    contract asks for, e.g., ``action_mode: delta``); returns the path."""
    import yaml

    source = task_config_file(name)
    data = load_yaml(source)
    data.update(overrides)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# task {name} with {overrides} (written for a policy whose contract asks for them)\n")
        yaml.safe_dump(data, f, sort_keys=False)
    load_task(name, path)
    return str(path)


__all__ = ["BUILTIN_TASKS", "ENTRY_POINT_GROUP", "TASKS", "TASK_PATH_VAR", "TaskEntry", "broken_tasks", "config_class",
           "describe_task", "import_task_class", "load_task", "reload_tasks",
           "resolve_task_name", "scripted_tasks", "task_class", "task_config_file", "task_entries", "task_names",
           "write_task_config"]
