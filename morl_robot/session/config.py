"""Session YAML (``config/sessions/*.yaml``): which nodes a session runs and their parameters.

The same file drives ``morl-robot train|deploy|safety-test`` (processes started by
:mod:`morl_robot.session.processes`) and the launch files in ``launch/`` (through
:func:`morl_robot.session.graph.session_nodes`), so the two ways of starting a session cannot
drift apart.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail, load_config, to_mapping
from morl_robot.node_settings import (
    MAX_STEPS,
    DriverEmulatorSettings,
    LearnerNodeSettings,
    PolicyServerSettings,
    RobotNodeSettings,
    SafetyMonitorSettings,
    VectorActorSettings,
)
from morl_robot.resources import resolve_config

SESSIONS = ("train", "deploy", "safety_test")
#: How a training session acts: ``per-step`` (robot_node + safety_monitor + policy_server per actor:
#: hardware, deployment, sim-to-sim checks), ``vectorized`` (vector_actor processes, B simulated
#: environments each: simulated training) or ``auto`` (vectorized for backend sim unless the session
#: needs what only per-step has; :func:`morl_robot.session.graph.resolve_actors_kind`).
ACTORS_KINDS = ("auto", "per-step", "vectorized")


def node_parameters(settings: Any, session: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ROS parameters of one node of a session: every field of its ``settings``, with the
    values the session sets (``task``, ``seed``, ...) over the fields left at their defaults (a
    value the node section changes wins).  An empty list is left out: on the command line it
    has no ROS type, and it is every list field's default."""
    defaults = type(settings)()
    params = {k: v for k, v in to_mapping(settings).items() if v != []}
    for key, value in (session or {}).items():
        if not hasattr(defaults, key) or getattr(settings, key) == getattr(defaults, key):
            params[key] = value
    return params


@dataclass
class SessionConfig:
    task: str = ""  # task name ("" for a bare robot: safety tests)
    reward_machine: str = ""  # reward-machine task spec for the task ("" = none; see README "Reward machines"); deploy: set from the policy contract
    robot: str = ""  # robot name; default the task's robot
    backend: Literal["sim", "hardware"] = "sim"
    actors: int = 1  # training: actor pipelines (robot + safety monitor + policy server) per learner
    namespace: str = "morl"
    seed: int = 0
    total_steps: int = 0  # training: env steps; 0 = until stopped
    use_sim_time: bool = False  # every node follows /clock (published by the simulated robot node)
    policy: str = ""  # deploy: ONNX file
    robot_node: RobotNodeSettings = field(default_factory=RobotNodeSettings)
    safety_monitor: SafetyMonitorSettings = field(default_factory=SafetyMonitorSettings)
    policy_server: PolicyServerSettings = field(default_factory=PolicyServerSettings)
    learner_node: LearnerNodeSettings = field(default_factory=LearnerNodeSettings)
    driver_emulator: DriverEmulatorSettings = field(default_factory=DriverEmulatorSettings)  # deploy --emulate
    actors_kind: Literal["auto", "per-step", "vectorized"] = "auto"  # training: ACTORS_KINDS
    vector_actor: VectorActorSettings = field(default_factory=VectorActorSettings)  # actors_kind: vectorized

    def validate(self) -> None:
        if self.actors < 1:
            fail("", "actors", f"must be >= 1, got {self.actors}")
        if not self.task and not self.robot:
            fail("", "task", "a session needs a task or a robot")
        if self.reward_machine and not self.task:
            fail("", "reward_machine", "needs a task (the reward machine's events are labelled on the task's readings)")
        if self.total_steps < 0:
            fail("", "total_steps", f"must be >= 0, got {self.total_steps}")
        ns = self.namespace.strip("/")
        if not ns or not all(c.isalnum() or c == "_" for c in ns):
            fail("", "namespace", f"must be a ROS name (letters, digits, _), got '{self.namespace}'")
        if self.use_sim_time and self.backend != "sim":
            fail("", "use_sim_time", "needs backend sim: only the simulated robot node publishes /clock "
                 f"(backend is '{self.backend}')")
        if self.total_steps > MAX_STEPS:
            fail("", "total_steps", f"must be <= 2^53, got {self.total_steps}")
        if self.actors_kind == "vectorized" and self.backend != "sim":
            fail("", "actors_kind", f"vectorized actors step simulated environments: needs backend sim "
                 f"(backend is '{self.backend}')")


def load_session_config(kind_or_path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> SessionConfig:
    """Load ``config/sessions/<kind>.yaml`` (kind: train, deploy, safety_test) or a YAML path
    (:func:`~morl_robot.resources.resolve_config`), with ``overrides`` (non-None values) applied on top."""
    path = resolve_config("sessions", kind_or_path)
    return load_config(SessionConfig, path, {k: v for k, v in (overrides or {}).items() if v is not None})
