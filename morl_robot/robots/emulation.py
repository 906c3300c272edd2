"""A robot's driver, emulated from MuJoCo, and an unreliable link (pure core of ``driver_emulator``).

:class:`DriverEmulatorCore` plays what a real robot's ros2_control driver exposes (see
:mod:`morl_robot.robots.hardware`): joint states in the **driver's** joint order, names and units
(extra joints included, e.g. the Sawyer's ``head_pan``), a wrist wrench and a tactile array, and it
accepts the driver's commands — a forward command controller's array in the controller's joint
order, a ``JointTrajectory`` (interpolated linearly to its point over ``time_from_start``, as a
joint trajectory controller does for a single point) or a ``JointState`` command — in driver
units, applied to a :class:`~morl_robot.robots.mujoco_robot.MujocoRobot` stepping at its control
period.  Conversions use the same :class:`~morl_robot.robots.driver_codec.DriverCodec` as the
hardware backend, run backwards.

:class:`FaultyLink` models the network between a driver and us: every message gets a fixed
``latency`` plus a uniform ``jitter`` in [0, jitter] (order kept, as on a reliable transport), is
lost with probability ``drop``, and with probability ``reorder`` is held back by ``reorder_delay``
so that later messages overtake it.  Seeded: the same seed gives the same faults.
"""
from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import mujoco
import numpy as np

from morl_robot.errors import CommandError, ConfigError
from morl_robot.resources import sim_path
from morl_robot.robots.config import RobotConfig
from morl_robot.robots.context import RobotContext
from morl_robot.robots.driver_codec import DriverCodec
from morl_robot.robots.mujoco_robot import MujocoRobot

T = TypeVar("T")

def _timestep(scene: str) -> float:
    """The physics timestep of an MJCF scene (relative to sim/ or a path)."""
    path = Path(scene)
    if not path.exists():
        path = sim_path(scene)
    try:
        return float(mujoco.MjModel.from_xml_path(str(path)).opt.timestep)
    except ValueError as exc:
        raise ConfigError(f"{path}: MJCF does not compile: {exc}") from None


@dataclass
class LinkFaults:
    """What the link does to messages (all zero: a perfect link)."""

    latency: float = 0.0  # s added to every message
    jitter: float = 0.0  # s: extra uniform delay in [0, jitter]; order kept
    drop: float = 0.0  # probability a message is lost
    reorder: float = 0.0  # probability a message is held back by reorder_delay (later ones overtake it)
    reorder_delay: float = 0.03  # s

    def validate(self) -> None:
        for name in ("latency", "jitter", "reorder_delay"):
            if getattr(self, name) < 0:
                raise ConfigError(f"link fault '{name}' must be >= 0 s, got {getattr(self, name)}")
        for name in ("drop", "reorder"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"link fault '{name}' is a probability in [0, 1], got {getattr(self, name)}")

    @property
    def active(self) -> bool:
        return bool(self.latency or self.jitter or self.drop or self.reorder)

    def with_context(self, context: RobotContext | None) -> LinkFaults:
        """These faults plus an environment context's ``latency`` and ``jitter`` (the same names
        mean the same delays in the in-process environment: :meth:`MORobotEnv.set_contexts`)."""
        if context is None:
            return self
        return LinkFaults(self.latency + context.latency, self.jitter + context.jitter, self.drop, self.reorder,
                          self.reorder_delay)


@dataclass
class LinkStats:
    sent: int = 0
    dropped: int = 0
    held_back: int = 0
    delivered: int = 0


class FaultyLink(Generic[T]):
    """Messages queued with delivery times; :meth:`due` releases those whose time has come, in
    delivery order.  ``now`` is any monotonic clock in seconds."""

    def __init__(self, faults: LinkFaults | None = None, seed: int = 0) -> None:
        self.faults = faults if faults is not None else LinkFaults()
        self.faults.validate()
        self._rng = np.random.default_rng(seed)
        self._queue: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._floor = -np.inf  # delivery time of the newest in-order message
        self.stats = LinkStats()

    def send(self, item: T, now: float) -> bool:
        """Queue ``item``; returns False if the link dropped it."""
        f = self.faults
        self.stats.sent += 1
        if f.drop and self._rng.random() < f.drop:
            self.stats.dropped += 1
            return False
        t = now + f.latency + (self._rng.uniform(0.0, f.jitter) if f.jitter else 0.0)
        if f.reorder and self._rng.random() < f.reorder:
            t += f.reorder_delay
            self.stats.held_back += 1
        else:
            t = max(t, self._floor)
            self._floor = t
        heapq.heappush(self._queue, (t, next(self._seq), item))
        return True

    def due(self, now: float) -> list[T]:
        """Items whose delivery time is ≤ ``now``, in delivery order."""
        out = []
        while self._queue and self._queue[0][0] <= now:
            out.append(heapq.heappop(self._queue)[2])
        self.stats.delivered += len(out)
        return out

    @property
    def pending(self) -> int:
        return len(self._queue)


@dataclass(frozen=True)
class DriverJointState:
    """A driver ``JointState`` (driver names, order and units)."""

    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass(frozen=True)
class DriverWrench:
    force: np.ndarray  # (3,) driver force unit
    torque: np.ndarray  # (3,) driver torque unit
    frame: str


@dataclass(frozen=True)
class DriverTactile:
    values: np.ndarray  # (T,) driver units
    labels: tuple[str, ...]


@dataclass
class _Ramp:
    start: np.ndarray  # (A,)
    goal: np.ndarray  # (A,)
    t0: float
    duration: float


@dataclass
class EmulatorStats:
    commands: int = 0
    rejected: int = 0
    last_error: str = ""
    by_kind: dict[str, int] = field(default_factory=dict)


def recalibrated_landmarks(config: RobotConfig, context: RobotContext, scene: str | None = None
                           ) -> dict[str, list[float]]:
    """The hardware YAML's calibrated landmarks after ``context`` moved fixtures of the emulated
    cell (``body_offset``), as re-measuring the cell would find them: each moves by its simulated
    site's displacement (nominal model → the context's).  A context's placement is a placement,
    not a calibration error, in process too (the simulated landmark moves with its body).  Returns
    ``{}`` when the context moves nothing; ``scene`` as :class:`DriverEmulatorCore`'s."""
    if config.hardware is None or not context.body_offset or not config.hardware.landmarks:
        return {}
    scene = scene or config.model.scene or None
    nominal = MujocoRobot(config, scene=scene)
    moved = MujocoRobot(config, scene=scene)
    moved.apply_context(context)
    for r in (nominal, moved):
        r.reset(settle=False)  # forward kinematics: the sites of the static fixture
    out = {}
    for name, pose in config.hardware.landmarks.items():
        shift = moved.landmark(name)[:3] - nominal.landmark(name)[:3]  # (3,) m, base == world in sim
        out[name] = [*(float(x) for x in np.asarray(pose[:3], float) + shift), *(float(q) for q in pose[3:])]
    for r in (nominal, moved):
        r.close()
    return out


class DriverEmulatorCore:
    """A MuJoCo robot behind driver-format messages (see the module docstring).

    Args:
        config: robot YAML with a ``hardware:`` section (topics, joint order, units).
        scene: MJCF scene relative to sim/ or a path (default: the robot YAML's ``model.scene``).
        period: s per :meth:`step`; rounded to a whole number of physics timesteps.
    """

    def __init__(self, config: RobotConfig, scene: str | None = None, period: float | None = None,
                 source: str = "", context: RobotContext | None = None) -> None:
        if config.hardware is None:
            raise ConfigError(f"{source or config.name}: the robot YAML has no 'hardware:' section to emulate")
        self.hardware = config.hardware
        scene = scene or config.model.scene or None
        dt = _timestep(scene) if scene else 0.002
        wanted = period if period is not None else 1.0 / self.hardware.state.rate
        self.period = max(1, round(wanted / dt)) * dt
        self.robot = MujocoRobot(config, scene=scene, control_period=self.period)
        self.mode = self.hardware.command.mode
        self.robot.set_control_mode(self.mode)
        self.context = context  # physics and sensor faults here; its latency/jitter on the node's links
        if context is not None:
            self.robot.apply_context(context)
        self.robot.reset()
        self.codec = DriverCodec(self.robot.spec, self.hardware, source)
        self._columns = {n: i for i, n in enumerate(self.codec.command_names)}
        self._target = self.robot.hold_command()  # (A,) SI, what the controller tracks
        self._driver_target = self.codec.encode_command(self._target, self.mode)  # (C,) driver units
        self._ramp: _Ramp | None = None
        self.stats = EmulatorStats()

    @property
    def time(self) -> float:
        """Simulated time (s)."""
        return float(self.robot.data.time)

    # --- commands (driver format) -----------------------------------------------------------
    def _reject(self, why: str) -> None:
        self.stats.rejected += 1
        self.stats.last_error = why

    def _update(self, names: Sequence[str], values: np.ndarray, kind: str) -> np.ndarray | None:
        """New actuator target (A,) from named driver values (a subset keeps the other columns)."""
        values = np.asarray(values, np.float64)
        if len(names) != values.size:
            self._reject(f"{kind}: {len(names)} joint names but {values.size} values")
            return None
        unknown = [n for n in names if n not in self._columns]
        if unknown:
            self._reject(f"{kind}: joints {unknown} are not this controller's {list(self.codec.command_names)}")
            return None
        if not np.all(np.isfinite(values)):
            self._reject(f"{kind}: non-finite values")
            return None
        driver = self._driver_target.copy()
        driver[[self._columns[n] for n in names]] = values
        self._driver_target = driver
        self.stats.commands += 1
        self.stats.by_kind[kind] = self.stats.by_kind.get(kind, 0) + 1
        return self.codec.decode_command(driver, self.mode)

    def on_forward(self, values: Sequence[float]) -> None:
        """A forward command controller's ``Float64MultiArray`` (the controller's joint order)."""
        values = np.asarray(values, np.float64)
        if values.size != len(self.codec.command_names):
            self._reject(f"forward: {values.size} values for {len(self.codec.command_names)} joints")
            return
        target = self._update(self.codec.command_names, values, "forward")
        if target is not None:
            self._ramp, self._target = None, target

    def on_trajectory(self, names: Sequence[str], positions: Sequence[float], time_from_start: float) -> None:
        """A ``JointTrajectory``'s last point: reached linearly over ``time_from_start``."""
        if self.mode != "position":
            self._reject(f"trajectory: this controller takes {self.mode}, not positions")
            return
        target = self._update(names, np.asarray(positions, np.float64), "trajectory")
        if target is None:
            return
        if time_from_start > 0:
            self._ramp = _Ramp(self._target.copy(), target, self.time, float(time_from_start))
        else:
            self._ramp, self._target = None, target

    def on_joint_state_command(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
                               effort: Sequence[float]) -> None:
        """A ``JointState`` command: the field of the controller's mode."""
        field_values = {"position": position, "velocity": velocity, "effort": effort}[self.mode]
        target = self._update(names, np.asarray(field_values, np.float64), "joint_state")
        if target is not None:
            self._ramp, self._target = None, target

    # --- time ---------------------------------------------------------------------------------
    def step(self) -> None:
        """One period of physics with the controller tracking its target."""
        if self._ramp is not None:
            r = self._ramp
            a = min(max((self.time + self.period - r.t0) / r.duration, 0.0), 1.0)
            self._target = r.start + a * (r.goal - r.start)
            if a >= 1.0:
                self._ramp = None
        try:
            self.robot.send_command(self._target)
        except CommandError as exc:  # cannot happen with validated targets; keep the emulator alive
            self._reject(str(exc))
        self.robot.advance()

    # --- state (driver format) ----------------------------------------------------------------
    def joint_state(self) -> DriverJointState:
        s = self.robot.read_state()
        names, pos, vel, eff = self.codec.encode_state(s.position, s.velocity, s.effort)
        return DriverJointState(names, pos, vel, eff)

    def wrench(self) -> DriverWrench | None:
        hw = self.hardware.wrench
        if hw is None:
            return None
        w = self.robot.read_state().wrench
        if w is None:
            return None
        frame = hw.frame or (self.robot.config.wrench.frame if self.robot.config.wrench is not None else "")
        return DriverWrench(w[:3] / self.codec.force_scale, w[3:] / self.codec.torque_scale, frame)

    def tactile(self) -> DriverTactile | None:
        hw = self.hardware.tactile
        if hw is None:
            return None
        t = self.robot.read_state().tactile
        if t is None:
            return None
        return DriverTactile(t / hw.scale, self.codec.tactile_labels)

    def close(self) -> None:
        self.robot.close()
