"""Session YAML (``config/sessions/*.yaml``): which nodes a session runs and their parameters.

The same file drives ``morl-robot train|deploy|safety-test`` (processes started by
:mod:`morl_robot.session.processes`) and the launch files in ``launch/`` (through
:func:`morl_robot.session.graph.session_nodes`), so the two ways of starting a session cannot
drift apart.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail, load_config
from morl_robot.resources import config_path

SESSIONS = ("train", "deploy", "safety_test")


@dataclass
class SessionConfig:
    task: str = ""  # task name ("" for a bare robot: safety tests)
    robot: str = ""  # robot name; default the task's robot
    backend: Literal["sim", "hardware"] = "sim"
    actors: int = 1  # training: actor pipelines (robot + safety monitor + policy server) per learner
    namespace: str = "morl"
    seed: int = 0
    total_steps: int = 0  # training: env steps; 0 = until stopped
    policy: str = ""  # deploy: ONNX file
    robot_node: dict[str, Any] = field(default_factory=dict)
    safety_monitor: dict[str, Any] = field(default_factory=dict)
    policy_server: dict[str, Any] = field(default_factory=dict)
    learner_node: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if self.actors < 1:
            fail("", "actors", f"must be >= 1, got {self.actors}")
        if not self.task and not self.robot:
            fail("", "task", "a session needs a task or a robot")
        if self.total_steps < 0:
            fail("", "total_steps", f"must be >= 0, got {self.total_steps}")
        ns = self.namespace.strip("/")
        if not ns or not all(c.isalnum() or c == "_" for c in ns):
            fail("", "namespace", f"must be a ROS name (letters, digits, _), got '{self.namespace}'")


def load_session_config(kind_or_path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> SessionConfig:
    """Load ``config/sessions/<kind>.yaml`` (kind: train, deploy, safety_test) or a YAML path,
    with ``overrides`` (non-None values) applied on top."""
    text = str(kind_or_path)
    path = config_path(f"sessions/{text}.yaml") if text in SESSIONS else text
    return load_config(SessionConfig, path, {k: v for k, v in (overrides or {}).items() if v is not None})
