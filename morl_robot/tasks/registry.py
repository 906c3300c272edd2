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
