"""The task registry: task name → task class and its config dataclass (``config/tasks/``)."""
from __future__ import annotations

import os
from typing import Any

from morl_robot.configuration import load_config
from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.resources import resolve_config
from morl_robot.tasks.base import Task, TaskConfig
from morl_robot.tasks.sawyer_peg_in_hole import SawyerPegInHole, SawyerPegInHoleConfig
from morl_robot.tasks.shadow_hand import (
    ShadowOrient,
    ShadowOrientConfig,
    ShadowTouch,
    ShadowTouchConfig,
    ShadowTurn,
    ShadowTurnConfig,
)

TASKS: dict[str, tuple[type[Task], type[TaskConfig]]] = {
    "sawyer_peg_in_hole": (SawyerPegInHole, SawyerPegInHoleConfig),
    "shadow_touch": (ShadowTouch, ShadowTouchConfig),
    "shadow_turn": (ShadowTurn, ShadowTurnConfig),
    "shadow_orient": (ShadowOrient, ShadowOrientConfig),
}


def task_names() -> tuple[str, ...]:
    return tuple(TASKS)


def load_task(
    name: str, config_file: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None
) -> Task:
    """Build task ``name`` from its YAML (``config/tasks/<name>.yaml`` unless ``config_file``, a
    task config name or path: :func:`~morl_robot.resources.resolve_config`)."""
    if name not in TASKS:
        raise UnknownNameError(f"unknown task '{name}'; known tasks: {', '.join(TASKS)}")
    cls, cfg_cls = TASKS[name]
    path = resolve_config("tasks", config_file if config_file is not None else name)
    config = load_config(cfg_cls, path, overrides)
    if config.robot != cls.robot_name:
        raise ConfigError(f"{path}: key 'robot': task '{name}' runs on robot '{cls.robot_name}', got '{config.robot}'")
    return cls(config)  # type: ignore[arg-type]


def write_task_config(name: str, overrides: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """Write task ``name``'s YAML with ``overrides`` applied to ``path`` (checked by loading it), for
    a process that takes a task YAML rather than overrides (the robot node of a deployed policy whose
    contract asks for, e.g., ``action_mode: delta``); returns the path."""
    import yaml

    if name not in TASKS:
        raise UnknownNameError(f"unknown task '{name}'; known tasks: {', '.join(TASKS)}")
    with open(resolve_config("tasks", name), encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    data.update(overrides)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# task {name} with {overrides} (written for a policy whose contract asks for them)\n")
        yaml.safe_dump(data, f, sort_keys=False)
    load_task(name, path)
    return str(path)
