"""Each node's settings: one dataclass per node executable, its ROS parameters.

A node declares its parameters from its dataclass (:func:`morl_robot.nodes.base.declare_settings`)
and a session YAML's node section (:mod:`morl_robot.session.config`) loads into the same one, so a
typo or a wrong type in either is an error naming the key.  The comment after a field is the
parameter's description (``ros2 param describe``).  Plain dataclasses, no ROS: the cores that a
node wraps (``acting.server``, ``envs.robot_session``) take them too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail

#: Largest step count any counter takes (a ROS integer parameter is 64-bit; floats are exact to 2^53).
MAX_STEPS = 2**53


def looks_numeric(text: str) -> bool:
    """Whether a C number reader (``strtod``, ``strtol`` base 0) could read all of ``text``, as ROS's
    parameter parser does; errs on the side of yes (Python also reads ``1_0``), which only quotes."""
    for read in (float, lambda t: int(t, 0)):
        try:
            read(text)
            return True
        except ValueError:
            pass
    return False


def new_session_id() -> str:
    """A fresh session id (``ManagedNodeSettings.session``): 12 random hex digits, 48 bits, so its
    wire value (``nodes.wire.session_token``) is exact as a float; never one a number reader takes
    (decimal digits only, or ``0e5123``: ROS's parameter parser reads that as the float 0.0 even from
    a launch file's parameter file, where PyYAML writes it unquoted), so every node gets it as a string."""
    import secrets

    while looks_numeric(session := secrets.token_hex(6)):
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
    context: str = ""  # environment context 'TASK_OR_FILE:NAME' (config/contexts/; issue 37), "" = nominal

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
    demonstrations: int = 0  # this actor's first episodes acted by the task's scripted demonstrator (learner YAML training.demonstrations)
    demonstration_noise: float = 0.2  # σ of the demonstrator's Gaussian action noise (normalised action units)

    def validate(self) -> None:
        super().validate()
        if self.envs < 1:
            fail("", "envs", f"must be a whole number >= 1, got {self.envs}")
        if self.chunk_size < 1:
            fail("", "chunk_size", f"must be >= 1, got {self.chunk_size}")
        if self.demonstrations < 0:
            fail("", "demonstrations", f"must be >= 0 episodes, got {self.demonstrations}")
        _positive(self, "diagnostics_period")
        _positive(self, "demonstration_noise")


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
