"""Per-robot YAML (``config/robots/<robot>.yaml``) as typed dataclasses.

What MJCF expresses (joint ranges, actuator force ranges, sensors) is read from the compiled
model; this file holds what MJCF cannot say: velocity limits, control modes, sensor roles,
units and frames, Cartesian control limits, and (for the hardware backend) driver topics.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Literal

from morl_robot.configuration import fail, load_config
from morl_robot.resources import resolve_config
from morl_robot.robots.compliance import ComplianceConfig

ModeName = Literal["position", "velocity", "effort", "cartesian_velocity"]


@dataclass
class ModelConfig:
    mjcf: str  # robot-only MJCF, relative to sim/
    menagerie: str | None = None  # alternative model path under MENAGERIE_ROOT (optional)


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
class HardwareResetConfig:
    """How ``reset`` drives the real robot to a start configuration."""

    speed: float = 0.25  # fraction of each joint's velocity limit
    tolerance: float = 0.01  # rad: every joint within this of its target
    timeout: float = 20.0  # s before reset gives up with an error naming the worst joint
    settle: float = 0.2  # s holding still before the episode starts (F/T taring happens after)
    gain: float = 2.0  # 1/s, velocity interfaces: qdot = gain * error (bounded by speed)
    scene: Literal["error", "ignore"] = "error"  # scene objects to place: refuse, or leave to a person
    stale_grace: float = 1.0  # s a stale state may last mid-reset (not commanding meanwhile) before it fails


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


def load_robot_config(name_or_path: str | os.PathLike[str]) -> RobotConfig:
    """Load a robot's YAML by robot name (``sawyer``, ``shadow_hand``) or by file path
    (:func:`~morl_robot.resources.resolve_config`)."""
    return load_config(RobotConfig, resolve_config("robots", name_or_path))
