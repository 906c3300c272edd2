"""Per-robot YAML (``config/robots/<robot>.yaml``) as typed dataclasses.

What MJCF expresses (joint ranges, actuator force ranges, sensors) is read from the compiled
model; this file holds what MJCF cannot say: velocity limits, control modes, sensor roles,
units and frames, Cartesian control limits, and (for the hardware backend) driver topics.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail, load_config
from morl_robot.errors import UnknownNameError
from morl_robot.resources import config_path

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


@dataclass
class WrenchConfig:
    force_sensor: str  # MJCF <force> sensor name
    torque_sensor: str  # MJCF <torque> sensor name
    frame: str  # frame name reported in WrenchStamped.header.frame_id


@dataclass
class TactileConfig:
    sensors: list[str]  # MJCF <touch> sensor names, in the order of the tactile vector
    frame: str = "rh_palm"


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
    hardware: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if self.default_control_mode not in self.control_modes:
            fail("", "default_control_mode", f"'{self.default_control_mode}' is not in control_modes {self.control_modes}")
        if "cartesian_velocity" in self.control_modes and self.cartesian is None:
            fail("", "cartesian", "required when control_modes has 'cartesian_velocity'")
        if self.velocity_gains and len(self.velocity_gains) != len(self.actuators):
            fail("", "velocity_gains", f"needs one gain per actuator ({len(self.actuators)}), got {len(self.velocity_gains)}")
        for i, j in enumerate(self.joints):
            if j.velocity_limit <= 0:
                fail("", f"joints[{i}].velocity_limit", f"must be positive, got {j.velocity_limit}")


ROBOTS = ("sawyer", "shadow_hand")


def load_robot_config(name_or_path: str) -> RobotConfig:
    """Load a robot's YAML by robot name (``sawyer``, ``shadow_hand``) or by file path."""
    if name_or_path.endswith((".yaml", ".yml")):
        return load_config(RobotConfig, name_or_path)
    if name_or_path not in ROBOTS:
        raise UnknownNameError(f"unknown robot '{name_or_path}'; known robots: {', '.join(ROBOTS)}")
    return load_config(RobotConfig, config_path(f"robots/{name_or_path}.yaml"))
