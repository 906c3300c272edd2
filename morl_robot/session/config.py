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
#: How a training session acts: ``per-step`` (robot_node + safety_monitor + policy_server per actor:
#: hardware, deployment, sim-to-sim checks) or ``vectorized`` (vector_actor processes, B simulated
#: environments each: simulated training).
ACTORS_KINDS = ("per-step", "vectorized")

#: The parameters each node declares (a test checks these against the nodes themselves), so a
#: typo in a session YAML's node section is an error naming the allowed keys, not silently ignored.
NODE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "robot_node": ("autostart", "robot", "task", "task_config", "backend", "timing", "control_mode",
                   "control_period", "scene", "seed", "model", "command_timeout", "republish_period",
                   "end_episode_on_estop", "state_timeout"),
    "safety_monitor": ("autostart", "robot", "config", "control_mode", "action_labels", "watchdogs", "check_period",
                       "diagnostics_period"),
    "policy_server": ("autostart", "mode", "policy", "timing", "actor_id", "chunk_size", "seed",
                      "observation_timeout", "rate", "diagnostics_period", "realtime_priority", "back_pressure",
                      "preference"),
    "learner_node": ("autostart", "task", "task_config", "config", "out_dir", "seed", "total_steps",
                     "snapshot_every", "update_budget", "update_period",
                     "observation_normalization"),
    "vector_actor": ("autostart", "task", "task_config", "envs", "actor_id", "seed", "chunk_size", "safety",
                     "policy", "back_pressure", "diagnostics_period"),
}
#: Largest step count any counter takes (a ROS integer parameter is 64-bit; floats are exact to 2^53).
MAX_STEPS = 2**53


def check_learner_node_parameters(params: dict[str, Any], source: str = "", key: str = "learner_node") -> None:
    """The learner node's numeric parameters (the node checks them again at configure)."""
    for name, low in (("total_steps", 0), ("snapshot_every", 1)):
        if name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_STEPS:
                fail(source, f"{key}.{name}", f"must be a whole number in [{low}, 2^53], got {value!r}")
    for name in ("update_budget", "update_period"):
        if name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                fail(source, f"{key}.{name}", f"must be > 0 (s), got {value!r}")


@dataclass
class SessionConfig:
    task: str = ""  # task name ("" for a bare robot: safety tests)
    robot: str = ""  # robot name; default the task's robot
    backend: Literal["sim", "hardware"] = "sim"
    actors: int = 1  # training: actor pipelines (robot + safety monitor + policy server) per learner
    namespace: str = "morl"
    seed: int = 0
    total_steps: int = 0  # training: env steps; 0 = until stopped
    use_sim_time: bool = False  # every node follows /clock (published by the simulated robot node)
    policy: str = ""  # deploy: ONNX file
    robot_node: dict[str, Any] = field(default_factory=dict)
    safety_monitor: dict[str, Any] = field(default_factory=dict)
    policy_server: dict[str, Any] = field(default_factory=dict)
    learner_node: dict[str, Any] = field(default_factory=dict)
    actors_kind: Literal["per-step", "vectorized"] = "per-step"  # training: ACTORS_KINDS
    vector_actor: dict[str, Any] = field(default_factory=dict)

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
        if self.use_sim_time and self.backend != "sim":
            fail("", "use_sim_time", "needs backend sim: only the simulated robot node publishes /clock "
                 f"(backend is '{self.backend}')")
        if self.total_steps > MAX_STEPS:
            fail("", "total_steps", f"must be <= 2^53, got {self.total_steps}")
        for node, allowed in NODE_PARAMETERS.items():
            section = getattr(self, node)
            if not isinstance(section, dict):
                fail("", node, f"must be a mapping of parameters, got {type(section).__name__}")
            for name in section:
                if name not in allowed:
                    fail("", f"{node}.{name}", f"{node} has no parameter '{name}'; allowed: {', '.join(allowed)}")
        check_learner_node_parameters(self.learner_node)
        if self.actors_kind == "vectorized" and self.backend != "sim":
            fail("", "actors_kind", f"vectorized actors step simulated environments: needs backend sim "
                 f"(backend is '{self.backend}')")
        envs = self.vector_actor.get("envs", 1)
        if isinstance(envs, bool) or not isinstance(envs, int) or envs < 1:
            fail("", "vector_actor.envs", f"must be a whole number >= 1, got {envs!r}")
        if "preference" in self.policy_server:
            self.policy_server["preference"] = preference_values(self.policy_server["preference"],
                                                                 "", "policy_server.preference")


def preference_values(value: Any, source: str = "", key: str = "policy_server.preference") -> list[float]:
    """A policy server's ``preference`` (ε per objective of an ε-conditioned policy; [] = the
    centre of its box) as floats, or a :class:`ConfigError` naming the key.  Its ranges are the
    model's: the server (and ``morl-robot deploy``) check it against the contract."""
    if value is None:
        return []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value):
        fail(source, key, f"must be a list of positive numbers (ε per objective), got {value!r}")
    return [float(v) for v in value]


def load_session_config(kind_or_path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> SessionConfig:
    """Load ``config/sessions/<kind>.yaml`` (kind: train, deploy, safety_test) or a YAML path,
    with ``overrides`` (non-None values) applied on top."""
    text = str(kind_or_path)
    path = config_path(f"sessions/{text}.yaml") if text in SESSIONS else text
    return load_config(SessionConfig, path, {k: v for k, v in (overrides or {}).items() if v is not None})
