"""The driver codec: every conversion between our robot's world and its ros2_control driver's.

Joint order and names (``hardware.name_map``, the controller's ``command.joints``), units
(:data:`~morl_robot.robots.config.UNIT_SCALE`: degrees, mN·m, kgf → SI) and couplings (the Shadow
Hand's J0 motor drives J1 + J2, which a trajectory controller lists separately) are converted here
and nowhere else: by :class:`~morl_robot.robots.hardware.HardwareRobot` (driver state in, commands
out) and by the driver emulator (:mod:`morl_robot.robots.emulation`, the other direction).

Shapes: J joints, A actuators, C command columns of the driver controller, M joints in a message.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from morl_robot.errors import ConfigError
from morl_robot.robots.config import UNIT_SCALE, HardwareConfig
from morl_robot.robots.spec import RobotSpec

__all__ = ["DriverCodec", "DriverCommand", "split_coupled"]


@dataclass(frozen=True)
class DriverCommand:
    """One command for the driver, already in the driver's joint order, names and units.

    ``kind`` is the controller interface (``forward`` → ``Float64MultiArray``, ``trajectory`` →
    ``JointTrajectory`` with one point at ``time_from_start``, ``joint_state`` → ``JointState``);
    ``mode`` says which field the values are (position, velocity or effort).
    """

    joint_names: tuple[str, ...]  # (C,)
    values: np.ndarray  # (C,) driver units
    kind: str  # forward | trajectory | joint_state
    mode: str = "position"  # position | velocity | effort
    time_from_start: float = 0.0  # s (trajectory)


def split_coupled(total: float, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Joint positions (n,) of a coupled actuator whose position is their sum (the Shadow Hand's
    J0 = J1 + J2): equal shares, and what a joint's range cannot take goes to the others.  The
    equal split matches the hand's J1 = J2 coupling in our MJCF (``right_hand_common.xml``)."""
    n = len(lower)
    x = np.full(n, total / n)
    for _ in range(n):
        x = np.clip(x, lower, upper)
        rest = total - float(x.sum())
        if abs(rest) < 1e-12:
            break
        free = x < upper if rest > 0 else x > lower
        if not free.any():
            break
        x[free] += rest / int(free.sum())
    return np.clip(x, lower, upper)


class DriverCodec:
    """Names, order, units and couplings between our joints/actuators and a driver.

    State: a driver ``JointState`` (names in any order, extra joints, driver units) → our joint
    indices and SI values.  Commands: actuator values (A,) in SI → the controller's columns (C,) in
    driver units; a coupled actuator listed as its joints is split (position: :func:`split_coupled`;
    velocity: equal shares; effort: the tendon force acts on each joint) and merged back by the
    driver emulator (sum, sum, mean).
    """

    def __init__(self, spec: RobotSpec, hardware: HardwareConfig, source: str = "") -> None:
        self.spec, self.hardware = spec, hardware
        nm = hardware.name_map
        self.driver_joint_names: tuple[str, ...] = tuple(nm.get(n, n) for n in spec.joint_names)  # (J,)
        self._joint_of_driver = {d: i for i, d in enumerate(self.driver_joint_names)}
        u = hardware.units
        self.scale = {"position": UNIT_SCALE[u.position], "velocity": UNIT_SCALE[u.velocity],
                      "effort": UNIT_SCALE[u.effort]}
        self.force_scale, self.torque_scale = UNIT_SCALE[u.force], UNIT_SCALE[u.torque]
        self._jlo = np.array([j.lower for j in spec.joints])
        self._jhi = np.array([j.upper for j in spec.joints])
        # actuator -> indices of the joints it drives
        self.actuator_joints: list[np.ndarray] = [
            np.array([spec.joint_names.index(j) for j in a.joints], dtype=int) for a in spec.actuators
        ]
        # command columns: (actuator, slot) with slot -1 = the whole actuator
        ours = {nm.get(n, n): n for n in spec.joint_names + spec.actuator_names}
        cols: list[tuple[int, int]] = []
        for i, dn in enumerate(hardware.command.joints):
            key = f"hardware.command.joints[{i}]"
            our = ours.get(dn)
            if our is None:
                raise _config_error(source, key, f"'{dn}' is not a joint or actuator of '{spec.name}'")
            if our in spec.actuator_names:
                cols.append((spec.actuator_names.index(our), -1))
                continue
            owner = [a for a, act in enumerate(spec.actuators) if our in act.joints]
            if not owner:
                raise _config_error(source, key, f"joint '{our}' is driven by no actuator of '{spec.name}'")
            a = owner[0]
            joints = spec.actuators[a].joints
            cols.append((a, -1 if len(joints) == 1 else joints.index(our)))
        for a, act in enumerate(spec.actuators):
            slots = [k for b, k in cols if b == a]
            whole = slots.count(-1)
            parts = sorted(k for k in slots if k >= 0)
            if whole + (1 if parts else 0) > 1 or (whole == 0 and parts != list(range(len(act.joints)))):
                need = act.name if len(act.joints) == 1 else f"{act.name} (or all of {', '.join(act.joints)})"
                raise _config_error(source, "hardware.command.joints",
                                    f"must command actuator {need} exactly once; got columns "
                                    f"{[hardware.command.joints[c] for c, (b, _) in enumerate(cols) if b == a]}")
        self.command_names: tuple[str, ...] = tuple(hardware.command.joints)  # (C,)
        self._cols = cols
        # what the driver publishes (the emulator), extra joints included
        self.state_names: tuple[str, ...] = tuple(hardware.state.joints) or self.driver_joint_names
        self._publish_index = np.array([self._joint_of_driver.get(n, -1) for n in self.state_names], dtype=int)
        self._state_cache: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
        # tactile labels the driver uses for our sensors, in our order
        self.tactile_labels: tuple[str, ...] = ()
        tactile = next((s for s in spec.sensors if s.kind == "tactile"), None)
        if hardware.tactile is not None and tactile is not None:
            self.tactile_labels = tuple(hardware.tactile.labels) or tactile.labels

    # --- state ----------------------------------------------------------------------------
    def state_index(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(message indices (M,), our joint indices (M,)) of the known joints among ``names``."""
        key = tuple(names)
        hit = self._state_cache.get(key)
        if hit is None:
            pairs = [(m, self._joint_of_driver[n]) for m, n in enumerate(key) if n in self._joint_of_driver]
            hit = (np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int))
            if len(self._state_cache) < 64:
                self._state_cache[key] = hit
        return hit

    def encode_state(self, position: np.ndarray, velocity: np.ndarray, effort: np.ndarray
                     ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
        """Our joint state (J,) ×3 in SI → the driver's published names and arrays in driver units
        (extra joints read 0), as the driver emulator publishes them."""
        idx = self._publish_index
        known = idx >= 0

        def pick(values: np.ndarray, scale: float) -> np.ndarray:
            out = np.zeros(len(idx))
            out[known] = np.asarray(values, np.float64)[idx[known]] / scale
            return out

        return (self.state_names, pick(position, self.scale["position"]), pick(velocity, self.scale["velocity"]),
                pick(effort, self.scale["effort"]))

    # --- commands -------------------------------------------------------------------------
    def encode_command(self, values: np.ndarray, mode: str) -> np.ndarray:
        """Actuator values (A,) in SI → controller columns (C,) in driver units."""
        values = np.asarray(values, np.float64)
        out = np.empty(len(self._cols))
        splits: dict[int, np.ndarray] = {}
        for c, (a, k) in enumerate(self._cols):
            if k < 0:
                out[c] = values[a]
                continue
            if a not in splits:
                j = self.actuator_joints[a]
                if mode == "position":
                    splits[a] = split_coupled(float(values[a]), self._jlo[j], self._jhi[j])
                elif mode == "velocity":
                    splits[a] = np.full(len(j), values[a] / len(j))
                else:  # a tendon force f exerts f on every joint it spans
                    splits[a] = np.full(len(j), values[a])
            out[c] = splits[a][k]
        return out / self.scale[mode]

    def decode_command(self, driver_values: np.ndarray, mode: str) -> np.ndarray:
        """Controller columns (C,) in driver units → actuator values (A,) in SI (the emulator)."""
        si = np.asarray(driver_values, np.float64) * self.scale[mode]
        out = np.zeros(len(self.spec.actuators))
        parts = np.zeros(len(self.spec.actuators))
        for c, (a, k) in enumerate(self._cols):
            out[a] += si[c]
            parts[a] += 1
        if mode == "effort":
            out /= np.maximum(parts, 1)
        return out

    def actuator_positions(self, q: np.ndarray) -> np.ndarray:
        """Actuator positions (A,) of joint positions (J,): a coupled actuator's is the sum."""
        return np.array([float(q[j].sum()) for j in self.actuator_joints])


def _config_error(source: str, key: str, message: str) -> ConfigError:
    where = f"{source}: " if source else ""
    return ConfigError(f"{where}key '{key}': {message}")
