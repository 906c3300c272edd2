"""Per-robot YAML (``config/robots/<robot>.yaml``) as typed dataclasses.

What MJCF expresses (joint ranges, actuator force ranges, sensors) is read from the compiled
model; this file holds what MJCF cannot say: velocity limits, control modes, sensor roles,
units and frames, Cartesian control limits, and (for the hardware backend) driver topics.
"""
from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from morl_robot.configuration import fail, load_config, load_yaml
from morl_robot.errors import UnknownNameError
from morl_robot.resources import (
    config_names,
    config_path,
    is_config_path,
    resolve_config,
)
from morl_robot.robots.compliance import ComplianceConfig

ModeName = Literal["position", "velocity", "effort", "cartesian_velocity"]


@dataclass
class ModelConfig:
    mjcf: str  # robot-only MJCF, relative to sim/ or to this YAML's folder, or absolute
    menagerie: str | None = None  # alternative model path under MENAGERIE_ROOT (optional)
    # The robot's cell (an MJCF scene that includes the robot), as mjcf: the driver emulator's
    # default scene and the safety test's ("" = the robot alone)
    scene: str = ""


@dataclass
class JointConfig:
    name: str
    velocity_limit: float  # rad/s (the robot's published limit)


@dataclass
class CartesianConfig:
    site: str  # MJCF site that the twist command moves
    base_frame: str = "base"
    max_linear_velocity: float = 0.25  # m/s
    max_angular_velocity: float = 0.5  # rad/s
    damping: float = 0.05  # damped least-squares lambda (rad-equivalent)
    joint_limit_margin: float = 0.05  # rad kept from the hard limits
    max_tracking_error: float = 0.05  # rad: integrated targets never lead the joints by more
    # Force-limited admittance at the physics / driver rate (morl_robot/robots/compliance.py); needs
    # the robot's wrist wrench sensor.  None: the twist is executed stiffly (resolved rate only).
    compliance: ComplianceConfig | None = None


@dataclass
class WrenchConfig:
    force_sensor: str  # MJCF <force> sensor name
    torque_sensor: str  # MJCF <torque> sensor name
    frame: str  # frame name reported in WrenchStamped.header.frame_id


@dataclass
class TactileConfig:
    sensors: list[str]  # MJCF <touch> sensor names, in the order of the tactile vector
    frame: str = "rh_palm"


# --- the hardware backend's driver interface (``hardware:`` section) --------------------------
#: SI value of one driver unit.  Anything a driver reports or accepts in other units is converted at
#: the hardware boundary (:class:`morl_robot.robots.driver_codec.DriverCodec`) and nowhere else.
UNIT_SCALE: dict[str, float] = {
    "rad": 1.0, "deg": math.pi / 180.0,
    "rad/s": 1.0, "deg/s": math.pi / 180.0,
    "N·m": 1.0, "mN·m": 1e-3,
    "N": 1.0, "kgf": 9.80665,
}


@dataclass
class HardwareStateConfig:
    """The driver's joint-state stream (ros2_control ``joint_state_broadcaster`` or a bridged ROS 1
    driver): matched to our joints by name, extra names ignored."""

    topic: str
    type: Literal["sensor_msgs/JointState"] = "sensor_msgs/JointState"
    deadline: float = 0.1  # s: no message for this long is a stale-state fault
    rate: float = 100.0  # Hz the driver publishes at (the driver emulator's default)
    # The names the driver publishes, in its order, extra joints included (what the driver
    # emulator publishes; the backend matches by name whatever the order).  [] = our joints.
    joints: list[str] = field(default_factory=list)


@dataclass
class HardwareCommandConfig:
    """Where commands go: a ros2_control forward command controller (``std_msgs/Float64MultiArray``
    in ``joints`` order), a ``joint_trajectory_controller`` (``trajectory_msgs/JointTrajectory``) or
    a ``sensor_msgs/JointState`` command topic."""

    topic: str
    interface: Literal["forward", "trajectory", "joint_state"]
    joints: list[str]  # the controller's joint order (driver names); a coupled actuator as its joints
    mode: Literal["position", "velocity", "effort"] = "position"  # the controller's command interface
    time_from_start: float = 0.0  # s, trajectory point time (0 = one control period)


@dataclass
class HardwareWrenchConfig:
    topic: str  # geometry_msgs/WrenchStamped from the F/T sensor's driver
    frame: str = ""  # expected header.frame_id ("" = accept any); other frames are rejected
    deadline: float = 0.1  # s


@dataclass
class HardwareTactileConfig:
    topic: str  # std_msgs/Float64MultiArray, labelled as in morl_robot.nodes.wire or plain
    # Driver label of each of our tactile sensors, in our order ([] = the driver sends our order).
    labels: list[str] = field(default_factory=list)
    deadline: float = 0.2  # s
    scale: float = 1.0  # N per driver unit


@dataclass
class HardwareUnitsConfig:
    """Units the driver speaks (converted to rad, rad/s, N·m, N at the boundary)."""

    position: Literal["rad", "deg"] = "rad"
    velocity: Literal["rad/s", "deg/s"] = "rad/s"
    effort: Literal["N·m", "mN·m"] = "N·m"
    force: Literal["N", "kgf"] = "N"
    torque: Literal["N·m", "mN·m"] = "N·m"


@dataclass
class HardwareRetractConfig:
    """``hardware.reset.retract``: the first phase of a reset, a straight Cartesian move of the tool
    against its approach axis (out of a hole, away from the fixture) before any joint motion."""

    distance: float = 0.08  # m along -axis
    speed: float = 0.02  # m/s
    axis: list[float] = field(default_factory=lambda: [0.0, 0.0, 1.0])  # approach axis, tool site frame


@dataclass
class HardwareResetConfig:
    """How ``reset`` drives the real robot to a start configuration (docs/explanation/safety_design.md)."""

    speed: float = 0.25  # fraction of each joint's velocity limit
    tolerance: float = 0.01  # rad: every joint within this of its target
    timeout: float = 20.0  # s before reset gives up with an error naming the worst joint
    settle: float = 0.2  # s holding still before the episode starts (F/T taring happens after)
    gain: float = 2.0  # 1/s, velocity interfaces: qdot = gain * error (bounded by speed)
    scene: Literal["error", "ignore"] = "error"  # scene objects to place: refuse, or leave to a person
    stale_grace: float = 1.0  # s a stale state may last mid-reset (not commanding meanwhile) before it fails
    retract: HardwareRetractConfig | None = None  # None: no retract phase (e.g. a hand)
    force_limit: float = 30.0  # N, tared wrist force: above it the reset stops and raises (the task's limit)
    effort_limit: float = 0.9  # fraction of each joint's effort limit: above it the reset stops and raises


@dataclass
class HardwareConfig:
    """The robot's real driver as ros2_control exposes it (README "Hardware backend")."""

    state: HardwareStateConfig
    command: HardwareCommandConfig
    wrench: HardwareWrenchConfig | None = None
    tactile: HardwareTactileConfig | None = None
    units: HardwareUnitsConfig = field(default_factory=HardwareUnitsConfig)
    name_map: dict[str, str] = field(default_factory=dict)  # our joint/actuator name -> driver name
    home: dict[str, float] = field(default_factory=dict)  # rad: reset() target ({} = MJCF keyframe 'home')
    reset: HardwareResetConfig = field(default_factory=HardwareResetConfig)
    # Calibrated poses [x, y, z, qw, qx, qy, qz] (m, unit quaternion) in the robot base frame.
    landmarks: dict[str, list[float]] = field(default_factory=dict)
    driver: str = ""  # free text: which driver / controller this section targets

    def validate(self) -> None:
        k = "hardware"
        for key, value in ((f"{k}.state.deadline", self.state.deadline), (f"{k}.state.rate", self.state.rate),
                           (f"{k}.reset.speed", self.reset.speed), (f"{k}.reset.tolerance", self.reset.tolerance),
                           (f"{k}.reset.timeout", self.reset.timeout), (f"{k}.reset.gain", self.reset.gain)):
            if value <= 0:
                fail("", key, f"must be positive, got {value}")
        if self.reset.speed > 1:
            fail("", f"{k}.reset.speed", f"is a fraction of the velocity limits, in (0, 1]; got {self.reset.speed}")
        if self.reset.stale_grace < 0:
            fail("", f"{k}.reset.stale_grace", f"must be >= 0, got {self.reset.stale_grace}")
        if self.reset.settle < 0:
            fail("", f"{k}.reset.settle", f"must be >= 0, got {self.reset.settle}")
        if self.reset.force_limit <= 0 or self.reset.effort_limit <= 0:
            fail("", f"{k}.reset.force_limit", "and effort_limit must be positive (N; fraction of the joint limits)")
        r = self.reset.retract
        if r is not None and (r.distance <= 0 or r.speed <= 0 or len(r.axis) != 3 or not any(r.axis)):
            fail("", f"{k}.reset.retract", f"needs distance > 0 (m), speed > 0 (m/s), a non-zero axis [x, y, z]; got {r}")
        for sub in ("wrench", "tactile"):
            cfg = getattr(self, sub)
            if cfg is not None and cfg.deadline <= 0:
                fail("", f"{k}.{sub}.deadline", f"must be positive, got {cfg.deadline}")
        if self.tactile is not None and self.tactile.scale <= 0:
            fail("", f"{k}.tactile.scale", f"must be positive (N per driver unit), got {self.tactile.scale}")
        c = self.command
        if not c.joints:
            fail("", f"{k}.command.joints", "must name the controller's joints in its order")
        if len(set(c.joints)) != len(c.joints):
            dup = sorted({j for j in c.joints if c.joints.count(j) > 1})
            fail("", f"{k}.command.joints", f"names {dup} more than once")
        if c.time_from_start < 0:
            fail("", f"{k}.command.time_from_start", f"must be >= 0, got {c.time_from_start}")
        if c.interface == "trajectory" and c.mode != "position":
            fail("", f"{k}.command.mode", f"the trajectory interface takes positions; got '{c.mode}'")
        if len(set(self.state.joints)) != len(self.state.joints):
            fail("", f"{k}.state.joints", "names a joint more than once")
        for name, pose in self.landmarks.items():
            if len(pose) != 7:
                fail("", f"{k}.landmarks.{name}", f"needs 7 values [x, y, z, qw, qx, qy, qz], got {len(pose)}")
            norm = math.sqrt(sum(v * v for v in pose[3:]))
            if abs(norm - 1.0) > 1e-3:
                fail("", f"{k}.landmarks.{name}", f"quaternion [qw, qx, qy, qz] must have unit norm, got {norm:.4f}")

    def check_robot(self, robot: RobotConfig) -> None:
        """Cross-checks against the robot's joints, actuators and sensors (names only; the
        coupling of actuators to joints is checked against the MJCF by the driver codec)."""
        k = "hardware"
        ours = [j.name for j in robot.joints] + list(robot.actuators)
        for name in self.name_map:
            if name not in ours:
                fail("", f"{k}.name_map.{name}", f"is not a joint or actuator of '{robot.name}'; known: {', '.join(ours)}")
        driver = {self.name_map.get(n, n): n for n in ours}
        for i, name in enumerate(self.command.joints):
            if name not in driver:
                fail("", f"{k}.command.joints[{i}]",
                     f"'{name}' is not a joint or actuator of '{robot.name}' (after hardware.name_map); known: {', '.join(ours)}")
        joints = [j.name for j in robot.joints]
        for name in self.home:
            if name not in joints:
                fail("", f"{k}.home.{name}", f"is not a joint of '{robot.name}'; joints: {', '.join(joints)}")
        published = set(self.state.joints)
        if published:
            missing = [n for n in joints if self.name_map.get(n, n) not in published]
            if missing:
                fail("", f"{k}.state.joints", f"lacks joints of '{robot.name}': {', '.join(missing)}")
        if (self.wrench is not None) != (robot.wrench is not None):
            fail("", f"{k}.wrench", "needed exactly when the robot has a wrench sensor (top-level 'wrench:')")
        if (self.tactile is not None) != (robot.tactile is not None):
            fail("", f"{k}.tactile", "needed exactly when the robot has tactile sensors (top-level 'tactile:')")
        if self.tactile is not None and robot.tactile is not None and self.tactile.labels \
                and len(self.tactile.labels) != len(robot.tactile.sensors):
            fail("", f"{k}.tactile.labels",
                 f"needs one driver label per tactile sensor ({len(robot.tactile.sensors)}), got {len(self.tactile.labels)}")


# --- the safety test (``safety_test:`` section; ``morl-robot safety-test``) ----------------------
ProbeName = Literal["press", "joint_limit", "stale", "nan", "flood", "heartbeat"]
PROBES: tuple[str, ...] = ("press", "joint_limit", "stale", "nan", "flood", "heartbeat")


@dataclass
class GaugeConfig:
    """The simulated force gauge (the robot node's ``~/external_wrench``): pushes ``body`` along
    ``direction`` (world frame), ramped at ``--gauge-rate`` N/s, until the collision level trips."""

    body: str  # MJCF body pushed (a wrist sensor's load: a body it carries; a fingertip)
    direction: list[float]  # world frame; normalised
    max_force: float = 100.0  # N: the gauge gives up here (the level was 'not reached')


@dataclass
class ReachStep:
    """One actuator's position-target step per control period while the probe moves the robot
    onto the surface it presses (``press.kind: tactile``)."""

    actuator: str
    step: float  # actuator units (rad) per control period; the sign is the direction
    limit: float | None = None  # never beyond this target (default: the actuator's range)


@dataclass
class PressConfig:
    """The force probe.  ``wrench`` (a wrist F/T sensor, Cartesian velocity control): drive the tool
    down (−z) at each ``--approach-speeds`` speed onto the scene (the ``approach`` rule must slow it),
    then the gauge pushes the tool until the ``wrench.force_norm`` / ``wrench.force_axis`` levels
    trip.  ``tactile`` (touch sensors, position control): step the ``reach`` actuators until
    ``sensor`` reads its contact level, then the gauge presses until its collision level trips."""

    kind: Literal["wrench", "tactile"]
    gauge: GaugeConfig
    sensor: str = ""  # tactile: the touch sensor pressed (one of tactile.sensors)
    reach: list[ReachStep] = field(default_factory=list)  # tactile: the motion onto the surface
    withdraw_speed: float = 0.01  # wrench: m/s the tool withdraws while the gauge presses (shows the clamp)


@dataclass
class JointLimitProbe:
    """Position mode: one joint's target ramped past its ``side`` limit; the monitor must clamp it
    into the soft range."""

    joint: str  # an actuator driving one joint (position targets in rad)
    side: Literal["upper", "lower"] = "upper"
    step: float = 0.05  # rad per control period


@dataclass
class SafetyTestPhase:
    """A control mode the probes need: one robot node + safety monitor pair in ``/<ns>/<mode>``."""

    mode: ModeName
    probes: list[ProbeName]  # run in this order


@dataclass
class SafetyTestConfig:
    """What ``morl-robot safety-test`` does with this robot (docs/howto/add_robot.md)."""

    phases: list[SafetyTestPhase]
    scene: str = ""  # simulation: the scene the probes press against ("" = model.scene)
    press: PressConfig | None = None
    joint_limit: JointLimitProbe | None = None
    flood_step: float = 0.1  # command units (m/s, rad) alternated by the command flood

    def check_robot(self, robot: RobotConfig) -> None:
        """Names and modes against the robot (the scene's bodies are checked when the probe runs)."""
        k = "safety_test"
        if not self.phases:
            fail("", f"{k}.phases", "needs at least one phase (a control mode and its probes)")
        used: list[str] = []
        for i, phase in enumerate(self.phases):
            if phase.mode not in robot.control_modes:
                fail("", f"{k}.phases[{i}].mode", f"'{phase.mode}' is not in control_modes {robot.control_modes}")
            for name in phase.probes:
                if name in used:
                    fail("", f"{k}.phases[{i}].probes", f"runs '{name}' twice (once per test)")
                used.append(name)
            if "press" in phase.probes and self.press is not None:
                need = "cartesian_velocity" if self.press.kind == "wrench" else "position"
                if phase.mode != need:
                    fail("", f"{k}.phases[{i}].mode", f"press kind '{self.press.kind}' runs in {need} mode, not {phase.mode}")
            if "joint_limit" in phase.probes and phase.mode != "position":
                fail("", f"{k}.phases[{i}].mode", f"the joint_limit probe runs in position mode, not {phase.mode}")
        for section, probe in (("press", "press"), ("joint_limit", "joint_limit")):
            if (getattr(self, section) is None) == (probe in used):
                fail("", f"{k}.{section}", f"needed exactly when a phase runs the '{probe}' probe")
        if self.flood_step <= 0:
            fail("", f"{k}.flood_step", f"must be positive, got {self.flood_step}")
        p = self.press
        if p is not None:
            if len(p.gauge.direction) != 3 or math.hypot(*p.gauge.direction) < 1e-9:
                fail("", f"{k}.press.gauge.direction", f"needs 3 values, not all zero; got {p.gauge.direction}")
            p.gauge.direction = [v / math.hypot(*p.gauge.direction) for v in p.gauge.direction]
            if p.gauge.max_force <= 0:
                fail("", f"{k}.press.gauge.max_force", f"must be positive (N), got {p.gauge.max_force}")
            if p.kind == "wrench":
                if robot.wrench is None or robot.cartesian is None:
                    fail("", f"{k}.press.kind", "'wrench' needs a wrist force sensor ('wrench:') and 'cartesian:' control")
                if p.withdraw_speed < 0:
                    fail("", f"{k}.press.withdraw_speed", f"must be >= 0 m/s, got {p.withdraw_speed}")
            else:
                sensors = robot.tactile.sensors if robot.tactile is not None else []
                if p.sensor not in sensors:
                    fail("", f"{k}.press.sensor", f"'{p.sensor}' is not a tactile sensor of '{robot.name}'; "
                                                  f"known: {', '.join(sensors) or 'none'}")
                if not p.reach:
                    fail("", f"{k}.press.reach", "needs the actuator steps that bring the sensor onto the surface")
                for i, r in enumerate(p.reach):
                    if r.actuator not in robot.actuators:
                        fail("", f"{k}.press.reach[{i}].actuator", f"'{r.actuator}' is not an actuator of '{robot.name}'")
                    if r.step == 0:
                        fail("", f"{k}.press.reach[{i}].step", "must not be 0")
        j = self.joint_limit
        if j is not None:
            if j.joint not in robot.actuators:
                fail("", f"{k}.joint_limit.joint", f"'{j.joint}' is not an actuator of '{robot.name}'")
            if j.step <= 0:
                fail("", f"{k}.joint_limit.step", f"must be positive (rad per period), got {j.step}")


@dataclass
class RobotConfig:
    name: str
    description: str
    model: ModelConfig
    joints: list[JointConfig]
    actuators: list[str]
    control_modes: list[ModeName]
    default_control_mode: ModeName
    # Velocity-mode servo gain per actuator (N·m·s/rad); position mode uses the MJCF gains.
    velocity_gains: list[float] = field(default_factory=list)
    cartesian: CartesianConfig | None = None
    wrench: WrenchConfig | None = None
    tactile: TactileConfig | None = None
    hardware: HardwareConfig | None = None  # the ros2_control driver interface (backend 'hardware')
    # The robot's safety YAML (name or path, as model.mjcf), read by the safety monitor the safety
    # test starts and by the robot node's inner safety layer; "" = config/safety/<name>.yaml
    safety: str = ""
    safety_test: SafetyTestConfig | None = None  # what `morl-robot safety-test` probes
    aliases: list[str] = field(default_factory=list)  # other names the robot is known by (e.g. shadow)

    def validate(self) -> None:
        if self.default_control_mode not in self.control_modes:
            fail("", "default_control_mode", f"'{self.default_control_mode}' is not in control_modes {self.control_modes}")
        if "cartesian_velocity" in self.control_modes and self.cartesian is None:
            fail("", "cartesian", "required when control_modes has 'cartesian_velocity'")
        if self.cartesian is not None and self.cartesian.compliance is not None and self.wrench is None:
            fail("", "cartesian.compliance", "needs the robot's wrist force sensor (top-level 'wrench:') to measure contact")
        if self.velocity_gains and len(self.velocity_gains) != len(self.actuators):
            fail("", "velocity_gains", f"needs one gain per actuator ({len(self.actuators)}), got {len(self.velocity_gains)}")
        for i, j in enumerate(self.joints):
            if j.velocity_limit <= 0:
                fail("", f"joints[{i}].velocity_limit", f"must be positive, got {j.velocity_limit}")
        if self.hardware is not None:
            self.hardware.check_robot(self)
        if self.safety_test is not None:
            self.safety_test.check_robot(self)


def robot_names() -> dict[str, str]:
    """Every name a shipped robot answers to (its YAML's file name and its ``aliases``) → the file name."""
    names: dict[str, str] = {}
    for name in config_names("robots"):
        names[name] = name
        with contextlib.suppress(Exception):  # a broken YAML is reported when it is loaded by name
            for alias in load_yaml(config_path("robots") / f"{name}.yaml").get("aliases") or []:
                names.setdefault(str(alias), name)
    return names


def resolve_robot(name_or_path: str | os.PathLike[str]) -> str:
    """A robot reference as the config loaders take it: a path stays, an alias becomes its robot's
    name (``shadow`` → ``shadow_hand``), an unknown name is an UnknownNameError listing the known."""
    if is_config_path(name_or_path):
        return os.fspath(name_or_path)
    text = os.fspath(name_or_path)
    if text and (config_path("robots") / f"{text}.yaml").is_file():
        return text  # a shipped robot's own name: no YAML read
    names = robot_names()
    if text in names:
        return names[text]
    raise UnknownNameError(f"unknown robot '{text}'; available: {', '.join(sorted(names))} "
                           "(config/robots/<name>.yaml or an alias in one), or a path to a robot YAML")


def beside(path: Path, ref: str) -> str:
    """``ref`` made absolute when it is a relative path to an existing file beside ``path``."""
    if ref and not os.path.isabs(ref) and (path.parent / ref).exists():
        return str((path.parent / ref).resolve())
    return ref


def load_robot_config(name_or_path: str | os.PathLike[str]) -> RobotConfig:
    """Load a robot's YAML by robot name or alias (``sawyer``, ``shadow_hand``, ``shadow``) or by
    file path (:func:`~morl_robot.resources.resolve_config`).  Files the YAML names (``model.mjcf``,
    ``model.scene``, ``safety``, ``safety_test.scene``) may be relative to its own folder: a robot
    defined outside the package is one folder (docs/howto/add_robot.md)."""
    path = resolve_config("robots", resolve_robot(name_or_path))
    config = load_config(RobotConfig, path, kind="robots")  # `extends: shadow_hand` works from any folder
    config.model.mjcf = beside(path, config.model.mjcf)
    config.model.scene = beside(path, config.model.scene)
    config.safety = beside(path, config.safety)
    if config.safety_test is not None:
        config.safety_test.scene = beside(path, config.safety_test.scene)
    return config
