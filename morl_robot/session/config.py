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
from morl_robot.resources import resolve_config

SESSIONS = ("train", "deploy", "safety_test")
#: How a training session acts: ``per-step`` (robot_node + safety_monitor + policy_server per actor:
#: hardware, deployment, sim-to-sim checks) or ``vectorized`` (vector_actor processes, B simulated
#: environments each: simulated training).
ACTORS_KINDS = ("per-step", "vectorized")

#: Largest step count any counter takes (a ROS integer parameter is 64-bit; floats are exact to 2^53).
MAX_STEPS = 2**53


# --- node settings: one dataclass per node, the node's ROS parameters ----------------------------
# Each node declares its ROS parameters from its dataclass (morl_robot.nodes.base.declare_settings),
# and a session YAML's node section is loaded into the same dataclass, so a typo or a wrong type
# in either is an error naming the key and the allowed keys.  The comment after a field is the
# parameter's description (``ros2 param describe``).

def new_session_id() -> str:
    """A fresh session id (``ManagedNodeSettings.session``): 12 random hex digits, 48 bits, so its
    wire value (``nodes.wire.session_token``) is exact as a float; never decimal digits only, so
    every YAML reader of node parameters (``-p``, a launch file's parameter file) keeps it a string."""
    import secrets

    while (session := secrets.token_hex(6)).isdigit():
        pass
    return session


@dataclass
class ManagedNodeSettings:
    """What every lifecycle node has."""

    autostart: bool = True  # walk to active on start-up; false: wait in unconfigured for `ros2 lifecycle set`
    session: str = ""  # session id (12 hex digits, set by the session builder): commands must carry it; "" = none (a node started by hand)
    session_started: float = 0.0  # s since the epoch when the session started (the first session on a name keeps it)

    def validate(self) -> None:
        if self.session and (len(self.session) != 12 or any(c not in "0123456789abcdef" for c in self.session)):
            fail("", "session", f"must be 12 lowercase hex digits (a session id) or empty, got {self.session!r}")


@dataclass
class RobotNodeSettings(ManagedNodeSettings):
    """``robot_node``: a robot (sim or hardware) and optionally its task."""

    robot: str = ""  # robot name or YAML; default: the task's robot
    task: str = ""  # task name; "" = a bare robot (commands in the control mode)
    task_config: str = ""  # optional task YAML (name or path)
    reward_machine: str = ""  # reward-machine task spec (config/reward_machines/<name>.yaml or a path; "" = none): the task in its product machine
    backend: Literal["sim", "hardware"] = "sim"
    timing: Literal["lockstep", "realtime"] = "lockstep"
    control_mode: str = ""  # bare robot: control mode ("" = the robot's default)
    control_period: float = 0.05  # s, bare robot only (a task sets its own)
    scene: str = ""  # bare sim robot: MJCF scene relative to sim/ ("" = robot only)
    seed: int = 0
    model: Literal["builtin", "menagerie"] = "builtin"
    command_timeout: float = 0.2  # s (realtime): hold when no command arrived for this long
    republish_period: float = 0.5  # s (lockstep): re-send task_step while no command comes
    end_episode_on_estop: bool = False  # a command meeting an engaged e-stop ends the episode ('safety')
    state_timeout: float = 5.0  # s (hardware): wait for the first driver state at configure
    scene_rate: float = 5.0  # Hz: the scene MarkerArray (topic scene), only while subscribed; 0 = off
    view_rate: float = 50.0  # Hz: at most this many messages per view/… topic (lockstep steps faster than anyone looks; episode ends always); 0 = every step
    video_dir: str = ""  # sim: one MP4 per episode (a bare robot: per reset) into this folder ("" = none; morl_robot.rendering)
    video_fps: float = 10.0  # frames per second of robot time (every n-th control step; the loop waits for each frame)

    def validate(self) -> None:
        super().validate()
        if self.reward_machine and not self.task:
            fail("", "reward_machine", "needs a task (the reward machine's events are labelled on the task's readings)")
        if self.backend == "hardware" and self.timing == "lockstep":
            fail("", "timing", "lockstep needs the sim backend (real time does not wait); use realtime")
        for name in ("control_period", "command_timeout", "republish_period", "state_timeout"):
            _positive(self, name)
        if not 0 <= self.scene_rate <= 100:
            fail("", "scene_rate", f"must be 0 (off) or in (0, 100] Hz, got {self.scene_rate}")
        if self.view_rate < 0:
            fail("", "view_rate", f"must be 0 (every step) or a positive rate in Hz, got {self.view_rate}")
        if self.video_dir and self.backend != "sim":
            fail("", "video_dir", "videos render the simulated robot: needs backend sim")
        if not self.video_fps > 0:
            fail("", "video_fps", f"must be a positive rate in Hz, got {self.video_fps}")


@dataclass
class SafetyMonitorSettings(ManagedNodeSettings):
    """``safety_monitor``: thresholds and watchdogs between the policy and the robot."""

    robot: str = ""  # robot name (config/safety/<robot>.yaml)
    config: str = ""  # or a safety YAML path (wins over robot)
    control_mode: str = ""  # how actuator-labelled commands are read ("" = the robot's default)
    action_labels: str = ""  # the task's action components, comma-separated: commands may also carry these
    watchdogs: bool = True  # false: lockstep-training profile (no deadlines, no unsolicited holds)
    check_period: float = 0.002  # s, watchdog timer
    diagnostics_period: float = 1.0  # s

    def validate(self) -> None:
        super().validate()
        _positive(self, "check_period")
        _positive(self, "diagnostics_period")


@dataclass
class PolicyServerSettings(ManagedNodeSettings):
    """``policy_server``: an ONNX policy at the control rate (deploy) or an exploring actor (train)."""

    mode: Literal["deploy", "train"] = "deploy"
    policy: str = ""  # ONNX file (deploy); train: snapshots from the learner
    timing: Literal["lockstep", "realtime"] = "lockstep"
    actor_id: int = 0
    chunk_size: int = 64  # train: transitions per experience message
    seed: int = 0
    observation_timeout: float = 0.25  # s
    rate: float = 0.0  # Hz (realtime); 0 = the policy's control rate
    diagnostics_period: float = 1.0  # s
    realtime_priority: int = 0  # realtime loop thread: SCHED_FIFO priority 1..99 (0 = normal scheduling)
    back_pressure: bool = True  # train + lockstep: wait while the learner's experience_allowance is used up
    preference: list[float] = field(default_factory=list)  # ε per objective of a conditioned policy ([] = centre)
    demonstrations: int = 0  # train: this actor's first episodes acted by the task's scripted demonstrator (learner YAML training.demonstrations)
    demonstration_noise: float = 0.2  # train: σ of the demonstrator's Gaussian action noise (normalised action units)

    def validate(self) -> None:
        super().validate()
        if self.demonstrations < 0:
            fail("", "demonstrations", f"must be >= 0 episodes, got {self.demonstrations}")
        if self.demonstrations and self.mode != "train":
            fail("", "demonstrations", "demonstration episodes are acted by an exploring actor: needs mode train")
        _positive(self, "demonstration_noise")
        if self.chunk_size < 1:
            fail("", "chunk_size", f"must be >= 1, got {self.chunk_size}")
        _positive(self, "observation_timeout")
        _positive(self, "diagnostics_period")
        if not 0 <= self.rate <= 1000:
            fail("", "rate", f"must be 0 (the contract's control rate) or in (0, 1000] Hz, got {self.rate}")
        if not 0 <= self.realtime_priority <= 99:
            fail("", "realtime_priority", f"must be in 0..99, got {self.realtime_priority}")
        if not all(v > 0 for v in self.preference):
            fail("", "preference", f"must be positive numbers (ε per objective), got {self.preference}")
        if self.mode == "train" and self.preference:
            fail("", "preference", "mode train samples a preference per episode (log-uniform in the policy's "
                 "ranges); leave it empty")


@dataclass
class LearnerNodeSettings(ManagedNodeSettings):
    """``learner_node``: the MO-MPO learner of a training session."""

    task: str = ""  # task name (config/tasks/<task>.yaml)
    task_config: str = ""  # optional task YAML (name or path)
    reward_machine: str = ""  # reward-machine task spec (config/reward_machines/<name>.yaml or a path; "" = none): the task in its product machine
    config: str = "mo_mpo_cpu_small"  # learner YAML: name under config/learner/ or a path
    out_dir: str = ""  # run directory
    seed: int = 0
    total_steps: int = 0  # env steps, then final artefacts and exit; 0 = until stopped
    snapshot_every: int = 50  # learner updates between policy snapshots
    update_budget: float = 0.05  # s of learner updates per timer tick
    update_period: float = 0.01  # s between update ticks
    observation_normalization: bool = True
    recordings: str = ""  # comma-separated session.mcap paths seeding a new run's replay (train --from-recording … --online)

    def validate(self) -> None:
        super().validate()
        for name, low in (("total_steps", 0), ("snapshot_every", 1)):
            value = getattr(self, name)
            if not low <= value <= MAX_STEPS:
                fail("", name, f"must be a whole number in [{low}, 2^53], got {value!r}")
        _positive(self, "update_budget")
        _positive(self, "update_period")


@dataclass
class DriverEmulatorSettings:
    """``driver_emulator``: a real robot's driver topics played from MuJoCo, over a faulty link."""

    robot: str = "sawyer"  # robot name or YAML (its hardware: section names the topics)
    config: str = ""  # or a robot YAML path (wins over robot)
    scene: str = ""  # MJCF scene relative to sim/ ("" = robot only)
    rate: float = 0.0  # Hz of the state streams; 0 = the robot's control rate
    latency: float = 0.0  # s added to every message
    jitter: float = 0.0  # s, uniform extra delay
    drop: float = 0.0  # probability a message is lost
    reorder: float = 0.0  # probability a message is held back and overtaken
    reorder_delay: float = 0.03  # s a reordered message is held
    seed: int = 0

    def validate(self) -> None:  # the link faults are checked by robots.emulation.LinkFaults
        if self.rate < 0:
            fail("", "rate", f"must be >= 0 Hz, got {self.rate}")


@dataclass
class VectorActorSettings(ManagedNodeSettings):
    """``vector_actor``: B simulated environments stepped with one batched policy forward, every
    command through the robot's safety rules, experience to the learner (``actors_kind: vectorized``)."""

    task: str = ""  # task name (config/tasks/<task>.yaml)
    task_config: str = ""  # optional task YAML (name or path)
    reward_machine: str = ""  # reward-machine task spec (config/reward_machines/<name>.yaml or a path; "" = none): the task in its product machine
    envs: int = 8  # B environments in this process
    actor_id: int = 0  # actor index i: its environments' experience actor ids are i·B .. i·B + B - 1
    seed: int = 0
    chunk_size: int = 64  # transitions per experience message (per environment)
    safety: str = ""  # safety YAML (name or path); default: the task's robot
    policy: str = ""  # ONNX file to start with; default: wait for the learner's snapshots
    back_pressure: bool = True  # wait while the learner's experience_allowance is used up
    diagnostics_period: float = 1.0  # s

    def validate(self) -> None:
        super().validate()
        if self.envs < 1:
            fail("", "envs", f"must be a whole number >= 1, got {self.envs}")
        if self.chunk_size < 1:
            fail("", "chunk_size", f"must be >= 1, got {self.chunk_size}")
        _positive(self, "diagnostics_period")


#: The settings dataclass of each node executable.
NODE_SETTINGS: dict[str, type] = {
    "robot_node": RobotNodeSettings,
    "safety_monitor": SafetyMonitorSettings,
    "policy_server": PolicyServerSettings,
    "learner_node": LearnerNodeSettings,
    "driver_emulator": DriverEmulatorSettings,
    "vector_actor": VectorActorSettings,
}


def _positive(settings: Any, name: str) -> None:
    value = getattr(settings, name)
    if not value > 0:
        fail("", name, f"must be > 0, got {value}")


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
    actors_kind: Literal["per-step", "vectorized"] = "per-step"  # training: ACTORS_KINDS
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
