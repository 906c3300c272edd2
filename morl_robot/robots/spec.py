"""What a robot is, independent of whether it is simulated: joints, actuators, control modes,
sensors (with units and frames), and the timestamped state it reports.

Units: joint positions rad, velocities rad/s, efforts N·m; forces N, torques N·m; Cartesian
positions m, orientations as unit quaternions (w, x, y, z); time s.  Joint and sensor names are
the real drivers' names (Sawyer ``right_j0…right_j6``; Shadow Hand ``rh_WRJ2…rh_THJ1``) so
simulation and hardware share one name space.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from morl_robot.errors import CommandError


class ControlMode(str, enum.Enum):
    """How a command vector is interpreted."""

    POSITION = "position"  # actuator position targets (rad; a coupled J0 actuator: J1 + J2)
    VELOCITY = "velocity"  # actuator velocity targets (rad/s)
    EFFORT = "effort"  # actuator efforts (N·m)
    CARTESIAN_VELOCITY = "cartesian_velocity"  # end-effector twist [vx vy vz wx wy wz] (m/s, rad/s), base frame


CARTESIAN_LABELS: tuple[str, ...] = ("vx", "vy", "vz", "wx", "wy", "wz")
WRENCH_LABELS: tuple[str, ...] = ("fx", "fy", "fz", "tx", "ty", "tz")
POSE_LABELS: tuple[str, ...] = ("x", "y", "z", "qw", "qx", "qy", "qz")

#: Suffix of a relative position command component, ``<actuator>/delta``: the change (rad) of that
#: actuator's position target from its *measured* position (a coupled J0 actuator: J1 + J2), i.e.
#: the target is ``actuator_positions(q) + delta``.  The label says what the value is, so no layer
#: (safety monitor, robot node) can mistake a change for an absolute target; a task declares it
#: with ``action_mode: delta`` (:mod:`morl_robot.tasks.shadow_hand`).
DELTA_SUFFIX = "/delta"


def delta_label(actuator: str) -> str:
    """The relative command label of ``actuator`` (``rh_FFJ3`` → ``rh_FFJ3/delta``)."""
    return actuator + DELTA_SUFFIX


def delta_actuator(label: str) -> str | None:
    """The actuator a relative command label names, or None for any other label."""
    return label[: -len(DELTA_SUFFIX)] if label.endswith(DELTA_SUFFIX) else None


@dataclass(frozen=True)
class JointSpec:
    """One joint: position range (rad), velocity limit (rad/s), effort limit (N·m, None if the
    joint is driven only through a coupling and has no motor of its own)."""

    name: str
    lower: float
    upper: float
    velocity_limit: float
    effort_limit: float | None


@dataclass(frozen=True)
class ActuatorSpec:
    """One motor. ``joints`` names the joints it drives (two for a coupled J1+J2 tendon);
    ``lower``/``upper`` bound its position target (rad, the sum for a coupling);
    ``force_limit`` bounds its effort (N·m)."""

    name: str
    joints: tuple[str, ...]
    lower: float
    upper: float
    velocity_limit: float
    force_limit: float


@dataclass(frozen=True)
class SensorSpec:
    """A sensor stream: ``kind`` is ``wrench``, ``tactile`` or ``scene`` (task objects);
    ``labels`` name its components; ``units`` per component; ``frame`` it is expressed in."""

    name: str
    kind: str
    labels: tuple[str, ...]
    units: tuple[str, ...]
    frame: str

    @property
    def size(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class CartesianSpec:
    """Cartesian end-effector velocity control: controlled site and twist limits."""

    site: str
    base_frame: str
    max_linear_velocity: float  # m/s
    max_angular_velocity: float  # rad/s


@dataclass(frozen=True)
class RobotSpec:
    """Everything a policy, a task or the safety monitor may know about a robot."""

    name: str
    joints: tuple[JointSpec, ...]
    actuators: tuple[ActuatorSpec, ...]
    control_modes: tuple[ControlMode, ...]
    default_control_mode: ControlMode
    sensors: tuple[SensorSpec, ...] = ()
    cartesian: CartesianSpec | None = None

    @cached_property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints)

    @cached_property
    def actuator_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.actuators)

    @cached_property
    def actuator_joint_matrix(self) -> np.ndarray:
        """(A, J) 0/1 matrix: actuator a's position is the sum of its joints' positions."""
        index = {n: i for i, n in enumerate(self.joint_names)}
        m = np.zeros((len(self.actuators), len(self.joints)))
        for a, act in enumerate(self.actuators):
            for j in act.joints:
                m[a, index[j]] = 1.0
        return m

    def actuator_positions(self, position: np.ndarray) -> np.ndarray:
        """Measured actuator positions (A,) rad from joint positions (J,) (a coupled J0: J1 + J2);
        NaN where a joint reads NaN (not measured yet)."""
        m = self.actuator_joint_matrix
        return np.where(m > 0, np.asarray(position, np.float64)[None, :], 0.0).sum(axis=1)

    def sensor(self, name: str) -> SensorSpec:
        for s in self.sensors:
            if s.name == name:
                return s
        raise KeyError(f"robot '{self.name}' has no sensor '{name}'; sensors: {[s.name for s in self.sensors]}")

    def has_sensor(self, kind: str) -> bool:
        return any(s.kind == kind for s in self.sensors)

    def command_labels(self, mode: ControlMode) -> tuple[str, ...]:
        """Names of the command vector's components in ``mode``."""
        if mode == ControlMode.CARTESIAN_VELOCITY:
            return CARTESIAN_LABELS
        return self.actuator_names

    def command_size(self, mode: ControlMode) -> int:
        return len(self.command_labels(mode))

    def command_bounds(self, mode: ControlMode) -> tuple[np.ndarray, np.ndarray]:
        """Per-component limits of a command in ``mode`` (shape (size,), (size,))."""
        if mode == ControlMode.POSITION:
            lo = np.array([a.lower for a in self.actuators])
            hi = np.array([a.upper for a in self.actuators])
        elif mode == ControlMode.VELOCITY:
            hi = np.array([a.velocity_limit for a in self.actuators])
            lo = -hi
        elif mode == ControlMode.EFFORT:
            hi = np.array([a.force_limit for a in self.actuators])
            lo = -hi
        else:
            if self.cartesian is None:
                raise CommandError(f"robot '{self.name}' has no Cartesian control")
            v, w = self.cartesian.max_linear_velocity, self.cartesian.max_angular_velocity
            hi = np.array([v, v, v, w, w, w])
            lo = -hi
        return lo, hi

    def validate_command(self, command: np.ndarray, mode: ControlMode) -> np.ndarray:
        """Check a command for ``mode``: declared mode, right size, finite.  Returns it as a
        float64 array of shape (size,); raises :class:`CommandError` naming the problem."""
        mode = ControlMode(mode)
        if mode not in self.control_modes:
            raise CommandError(
                f"robot '{self.name}' does not support control mode '{mode.value}'; "
                f"supported: {[m.value for m in self.control_modes]}"
            )
        arr = np.asarray(command, dtype=np.float64)
        labels = self.command_labels(mode)
        if arr.ndim != 1 or arr.shape[0] != len(labels):
            raise CommandError(
                f"'{mode.value}' command for robot '{self.name}' must have shape ({len(labels)},) "
                f"[{', '.join(labels)}], got shape {tuple(arr.shape)}"
            )
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CommandError(
                f"'{mode.value}' command for robot '{self.name}' has a non-finite value {arr[i]} "
                f"at index {i} ('{labels[i]}')"
            )
        return arr


@dataclass
class RobotState:
    """A timestamped reading of the robot.  Arrays follow the spec's joint order.

    position (J,) rad · velocity (J,) rad/s · effort (J,) N·m · wrench (6,) [N, N·m] in the F/T
    sensor frame or None · tactile (T,) N or None · ee_pose (7,) [m, quaternion wxyz] in the
    robot base frame or None · sensors: scene sensors by name (task objects) ·
    contact_force_peak: the largest contact force ‖f‖ (N, tared) the compliant Cartesian controller
    measured at its own rate (physics substeps, driver messages) during the last control period, or
    None without one (:mod:`morl_robot.robots.compliance`): the peak a 20 Hz reading can miss ·
    age: s between the joints' measurement and this reading (a driver link's latency plus the time since
    it arrived: :meth:`~morl_robot.robots.hardware.HardwareRobot.read_state`; 0 in simulation, where the
    reading is the physics' own): how far the robot may have moved since, for speed-and-separation limits.
    """

    stamp: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    wrench: np.ndarray | None = None
    tactile: np.ndarray | None = None
    ee_pose: np.ndarray | None = None
    sensors: dict[str, np.ndarray] = field(default_factory=dict)
    contact_force_peak: float | None = None
    age: float = 0.0

    def non_finite_fields(self) -> list[str]:
        """Names of the fields that hold NaN or inf (a sensor fault)."""
        bad = []
        for name in ("position", "velocity", "effort", "wrench", "tactile", "ee_pose"):
            value = getattr(self, name)
            if value is not None and not np.all(np.isfinite(value)):
                bad.append(name)
        bad += [f"sensors.{k}" for k, v in self.sensors.items() if not np.all(np.isfinite(v))]
        return bad
