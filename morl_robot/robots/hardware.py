"""The ros2_control hardware backend of the robot interface (pure: no rclpy here).

The driver's interfaces (state by joint name, forward / trajectory / JointState commands, wrench,
tactile), the ``hardware:`` section of ``config/robots/<robot>.yaml`` and stale-state faults:
docs/howto/connect_sawyer.md and docs/explanation/sim_to_real.md.  Every conversion between the
driver's world and ours happens in :class:`~morl_robot.robots.driver_codec.DriverCodec` only.
:class:`HardwareRobot` receives driver messages as plain data (from the ROS thread of
:class:`morl_robot.nodes.hardware_link.HardwareLink`) and emits :class:`DriverCommand` objects
through a sink.  Out-of-order messages (stamp not newer) are discarded; after a stale period any
stamp is accepted again (a restarted driver may restart its clock).  Cartesian control runs
:class:`~morl_robot.robots.kinematics.CartesianController` on a kinematics-only MuJoCo model set to
the measured joints (and, with ``cartesian.compliance``, the admittance of
:mod:`morl_robot.robots.compliance` once per joint state: docs/explanation/contact_control.md).

Shapes: J joints, A actuators, C command columns of the driver controller, M joints in a message.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from morl_robot.errors import ConfigError, MorlRobotError, UnknownNameError
from morl_robot.resources import resolve_config, sim_path
from morl_robot.robots.base import Robot
from morl_robot.robots.config import (
    HardwareCommandConfig,
    HardwareConfig,
    HardwareResetConfig,
    HardwareStateConfig,
    HardwareTactileConfig,
    HardwareUnitsConfig,
    HardwareWrenchConfig,
    RobotConfig,
    load_robot_config,
)
from morl_robot.robots.driver_codec import DriverCodec, DriverCommand
from morl_robot.robots.kinematics import CartesianController
from morl_robot.robots.model import build_spec, load_model
from morl_robot.robots.spec import ControlMode, RobotState

__all__ = [
    "HardwareCommandConfig", "HardwareConfig", "HardwareError", "HardwareResetConfig", "HardwareRobot",
    "HardwareStateConfig", "HardwareTactileConfig", "HardwareUnitsConfig", "HardwareWrenchConfig", "StaleStateError",
    "load_hardware_robot",
]


class HardwareError(MorlRobotError, RuntimeError):
    """The real robot cannot do what was asked (reset not reachable, no driver connected…)."""


class StaleStateError(HardwareError):
    """A driver stream had no accepted message within its deadline (or never had one): a fault;
    the robot is not commanded until fresh state arrives."""


#: Control modes a controller's command interface can serve (Cartesian velocity is resolved into
#: joint position targets or joint velocities here).
MODES_OF_INTERFACE: dict[str, tuple[ControlMode, ...]] = {
    "position": (ControlMode.POSITION, ControlMode.CARTESIAN_VELOCITY),
    "velocity": (ControlMode.VELOCITY, ControlMode.CARTESIAN_VELOCITY),
    "effort": (ControlMode.EFFORT,),
}


@dataclass
class _Stream:
    """Freshness bookkeeping of one driver stream."""

    what: str  # e.g. "joint state"
    topic: str
    deadline: float  # s
    last_receive: float | None = None  # our clock
    last_stamp: float = -math.inf  # driver header stamp of the newest accepted message
    accepted: int = 0
    out_of_order: int = 0
    rejected: int = 0
    reject_reason: str = ""

    def age(self, now: float) -> float:
        return math.inf if self.last_receive is None else now - self.last_receive

    def reject(self, reason: str) -> bool:
        """Count a malformed message; returns False (not accepted)."""
        self.rejected += 1
        self.reject_reason = reason
        return False

    def in_order(self, stamp: float, now: float) -> float | None:
        """The message's stamp (``now`` when it has none) if it is newer than the newest accepted
        one, or the stream has gone stale (a restarted driver may reset its clock); else None,
        counted as out of order."""
        stamp = float(stamp) if stamp > 0 else now
        if stamp <= self.last_stamp and not self.stale(now):
            self.out_of_order += 1
            return None
        return stamp

    def accept(self, stamp: float, now: float) -> bool:
        self.last_receive, self.last_stamp = now, stamp
        self.accepted += 1
        return True

    def stale(self, now: float) -> bool:
        return self.age(now) > self.deadline

    def problem(self, now: float) -> str | None:
        if not self.stale(now):
            return None
        why = (f"never received on {self.topic}" if self.last_receive is None else
               f"last message on {self.topic} {self.age(now):.3f} s ago (deadline {self.deadline:.3f} s)")
        if self.rejected:
            why += f"; {self.rejected} message(s) rejected: {self.reject_reason}"
        return f"{self.what} {why}"


class HardwareRobot(Robot):
    """A real robot behind its ros2_control driver topics (see the module docstring).

    Args:
        config: the robot YAML with a ``hardware:`` section.
        control_period: s between commands (the task's); used for Cartesian integration and reset.
        source: file name for error messages.
        sink: where :class:`DriverCommand` objects go (set later with :meth:`connect`).
        clock: monotonic seconds for freshness (injectable for tests).
        sleep: waits one reset period (injectable: tests step an emulated driver instead).
        stamp_clock: now in the time base of the driver's header stamps (the node's ROS clock), for a
            reading's :attr:`~RobotState.age`; None: ages count from receipt only (link latency unknown).
    """

    def __init__(self, config: RobotConfig, control_period: float, *, source: str = "",
                 sink: Callable[[DriverCommand], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 stamp_clock: Callable[[], float] | None = None) -> None:
        if config.hardware is None:
            raise ConfigError(f"{source or config.name}: the robot YAML has no 'hardware:' section (driver topics)")
        self.config, self.hardware, self.source = config, config.hardware, source or config.name
        path = Path(sim_path(config.model.mjcf))
        self.model = load_model(path)  # kinematics only: never stepped
        self.data = mujoco.MjData(self.model)
        spec = build_spec(self.model, config, str(path))
        hw = self.hardware
        served = MODES_OF_INTERFACE[hw.command.mode]
        modes = tuple(m for m in spec.control_modes if m in served)
        if not modes:
            raise ConfigError(f"{self.source}: key 'hardware.command.mode': a {hw.command.mode} controller serves "
                              f"none of the robot's control modes {[m.value for m in spec.control_modes]}")
        default = spec.default_control_mode if spec.default_control_mode in modes else modes[0]
        spec = replace(spec, control_modes=modes, default_control_mode=default,
                       sensors=tuple(s for s in spec.sensors if s.kind != "scene"))
        super().__init__(spec, control_period)
        self.codec = DriverCodec(spec, hw, self.source)
        self._sink = sink
        #: Called with each fresh state while :meth:`reset` drives the robot (a reset takes seconds
        #: on hardware; the robot node keeps publishing the sensor streams from it, so watchdogs
        #: downstream do not see a silent robot).
        self.reset_progress: Callable[[RobotState], None] | None = None
        self._clock, self._sleep = clock, sleep
        self.stamp_clock = stamp_clock
        self._stamped = False  # the newest joint state carried the driver's header stamp
        self._lock = threading.Lock()  # the streams' buffers (driver thread writes, the node reads)
        # the Cartesian targets (_target, _ticking, _last_tick, the controller's period): moved by the
        # driver thread's compliance ticks and by the node's commands, resets and mode changes
        self._control = threading.RLock()
        m = self.model
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in spec.joint_names]
        self._qadr = m.jnt_qposadr[jids].copy()
        self._jlo = np.array([j.lower for j in spec.joints])
        self._jhi = np.array([j.upper for j in spec.joints])
        self._avel = np.array([a.velocity_limit for a in spec.actuators])
        # --- joint stream: per-joint values, driver stamps and receive times --------------------
        n = len(spec.joints)
        self._q, self._qd, self._tau = np.zeros(n), np.zeros(n), np.zeros(n)
        self._jstamp = np.full(n, -math.inf)
        self._jrecv = np.full(n, -math.inf)
        self._joints = _Stream("joint state", hw.state.topic, hw.state.deadline)
        self._wrench_stream = (_Stream("wrench", hw.wrench.topic, hw.wrench.deadline)
                               if hw.wrench is not None and spec.has_sensor("wrench") else None)
        self._tactile_stream = (_Stream("tactile", hw.tactile.topic, hw.tactile.deadline)
                                if hw.tactile is not None and spec.has_sensor("tactile") else None)
        self._wrench = np.zeros(6)
        self._tactile = np.zeros(len(self.codec.tactile_labels))
        self._tactile_cache: dict[tuple[str, ...], np.ndarray | None] = {}
        # --- Cartesian control (the simulation's controller, on a kinematics-only model) --------------
        self._site = -1
        self._cartesian: CartesianController | None = None
        if config.cartesian is not None:
            self._site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, config.cartesian.site)
            self._cartesian = CartesianController(m, config.cartesian, spec, control_period, config.wrench)
        # the compliant controller ticks at the driver rate (each joint state) on its own kinematics data,
        # apart from read_state's (another thread)
        self._compliant = (self._cartesian is not None and self._cartesian.compliant and self._wrench_stream is not None
                           and hw.command.mode == "position")
        self._tick_data = mujoco.MjData(m) if self._compliant else None
        self._ticking = False  # a Cartesian command is active: joint states move its targets
        self._last_tick = -math.inf
        self._target: np.ndarray | None = None  # (A,) integrated position targets (Cartesian mode)
        self._last_position: np.ndarray | None = None  # (A,) newest position command sent
        self.commands_sent = 0
        self.reset_peak_force = 0.0  # N: the largest tared wrist force of the newest reset
        self.reset_seconds = 0.0  # s the newest completed reset took
        self.home = self._home()

    def _home(self) -> dict[str, float]:
        """reset() target: ``hardware.home`` or the robot MJCF's keyframe ``home``."""
        if self.hardware.home:
            return dict(self.hardware.home)
        key = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_KEY, "home")
        if key < 0:
            return {}
        qpos = self.model.key_qpos[key]
        return {n: float(qpos[a]) for n, a in zip(self.spec.joint_names, self._qadr)}

    # --- wiring ---------------------------------------------------------------------------
    def connect(self, sink: Callable[[DriverCommand], None] | None) -> None:
        """Where commands go (``HardwareLink`` publishes them); None disconnects."""
        self._sink = sink

    # --- driver messages (called from the ROS thread) -------------------------------------
    def on_joint_state(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
                       effort: Sequence[float], stamp: float) -> bool:
        """A driver ``JointState`` (driver names, order and units; ``stamp`` = header stamp in s,
        0 if the driver does not stamp).  Returns whether any joint was updated."""
        now = self._clock()
        pos = np.asarray(position, np.float64)
        vel = np.asarray(velocity, np.float64)
        eff = np.asarray(effort, np.float64)
        s = self._joints
        with self._lock:
            if pos.size != len(names) or (vel.size and vel.size != len(names)) or (eff.size and eff.size != len(names)):
                return s.reject(f"malformed JointState: {len(names)} names, {pos.size} positions, "
                                f"{vel.size} velocities, {eff.size} efforts")
            m_idx, j_idx = self.codec.state_index(names)
            if not j_idx.size:  # another device on a shared topic (e.g. a gripper): not ours
                return False
            self._stamped = stamp > 0
            stamp = float(stamp) if stamp > 0 else now
            fresh = (self._jstamp[j_idx] < stamp) | (now - self._jrecv[j_idx] > s.deadline)
            if not fresh.any():
                s.out_of_order += 1
                return False
            m_idx, j_idx = m_idx[fresh], j_idx[fresh]
            sc = self.codec.scale
            q = pos[m_idx] * sc["position"]
            if not np.all(np.isfinite(q)):
                return s.reject("non-finite joint positions")
            if vel.size:
                qd = vel[m_idx] * sc["velocity"]
            else:  # the driver sends no velocities: finite differences of accepted positions
                dt = stamp - self._jstamp[j_idx]
                ok = np.isfinite(dt) & (dt > 0) & (now - self._jrecv[j_idx] <= s.deadline)
                qd = np.where(ok, (q - self._q[j_idx]) / np.where(ok, dt, 1.0), 0.0)
            self._q[j_idx] = q
            self._qd[j_idx] = qd
            self._tau[j_idx] = eff[m_idx] * sc["effort"] if eff.size else 0.0
            self._jstamp[j_idx] = stamp
            self._jrecv[j_idx] = now
            s.accepted += 1
            oldest = float(self._jrecv.min())  # the stream is as fresh as its oldest joint
            s.last_receive = oldest if oldest > -math.inf else None
            s.last_stamp = max(s.last_stamp, stamp)
        if self._ticking:
            self._compliance_tick(now)
        return True

    # --- compliance at the driver rate ---------------------------------------------------------
    def _sensor_rotation(self, q: np.ndarray) -> np.ndarray:
        """(3, 3) the F/T sensor frame in the base frame at joints ``q`` (the tick's own kinematics)."""
        d, cart = self._tick_data, self._cartesian
        assert d is not None and cart is not None
        d.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.model, d)
        return cart.sensor_rotation(d).copy()

    def _compliance_tick(self, now: float) -> None:
        """One tick of the force-limited admittance (:mod:`morl_robot.robots.compliance`) at the driver
        rate: the newest joints and wrench move the position targets, which go to the driver.  A stale
        stream stops the ticks (nothing is sent); the next policy command restarts them."""
        cart = self._cartesian
        assert cart is not None
        with self._lock:
            stale = self._problems(now)
            q, wrench = self._q.copy(), self._wrench.copy()
        with self._control:
            self._tick(now, stale, q, wrench)

    def _tick(self, now: float, stale: list[str], q: np.ndarray, wrench: np.ndarray) -> None:
        cart = self._cartesian
        assert cart is not None
        if stale or not self._ticking or self._target is None or self._sink is None or self.control_mode != ControlMode.CARTESIAN_VELOCITY:
            self._ticking = False
            return
        dt = min(max(now - self._last_tick, 0.0), self.control_period)
        self._last_tick = now
        if dt <= 0.0:
            return
        force = cart.contact_force(self._sensor_rotation(q), wrench[:3])
        self._target = cart.tick(self._target, q, force, dt)
        self._emit(self._target, "position")

    @property
    def contact_force_peak(self) -> float | None:
        """The compliant controller's largest contact force (N) since the last command, or None."""
        return self._cartesian.period_peak if self._compliant and self._cartesian is not None else None

    def on_wrench(self, force: Sequence[float], torque: Sequence[float], stamp: float, frame: str = "") -> bool:
        """A driver ``WrenchStamped`` (driver units); rejected if ``frame`` is not the configured one."""
        s = self._wrench_stream
        if s is None:
            return False
        now = self._clock()
        hw = self.hardware.wrench
        assert hw is not None
        w = np.concatenate([np.asarray(force, np.float64).reshape(3) * self.codec.force_scale,
                            np.asarray(torque, np.float64).reshape(3) * self.codec.torque_scale])
        with self._lock:
            if hw.frame and frame and frame != hw.frame:
                return s.reject(f"frame '{frame}' is not '{hw.frame}' (hardware.wrench.frame)")
            if not np.all(np.isfinite(w)):
                return s.reject("non-finite wrench")
            ordered = s.in_order(stamp, now)
            if ordered is None:
                return False
            self._wrench = w
            return s.accept(ordered, now)

    def on_tactile(self, values: Sequence[float], labels: Sequence[str], stamp: float = 0.0) -> bool:
        """A tactile array (driver units): by label when the message names its elements, else in our
        sensor order.  Float arrays carry no header: ``stamp`` 0 means 'now'."""
        s = self._tactile_stream
        if s is None:
            return False
        now = self._clock()
        v = np.asarray(values, np.float64)
        want = self.codec.tactile_labels
        with self._lock:
            if labels:
                key = tuple(labels)
                if key not in self._tactile_cache:
                    self._tactile_cache[key] = (np.array([key.index(lab) for lab in want])
                                                if set(want) <= set(key) and len(key) == v.size else None)
                idx = self._tactile_cache[key]
                if idx is None:
                    return s.reject(f"tactile labels {list(key)[:4]}… do not include all of {list(want)}")
                v = v[idx]
            elif v.size != len(want):
                return s.reject(f"unlabelled tactile array of {v.size} values, expected {len(want)}")
            if not np.all(np.isfinite(v)):
                return s.reject("non-finite tactile values")
            ordered = s.in_order(stamp, now)
            if ordered is None:
                return False
            assert self.hardware.tactile is not None
            self._tactile = v * self.hardware.tactile.scale
            s.accept(ordered, now)
            return True

    # --- state ----------------------------------------------------------------------------
    def streams(self) -> list[_Stream]:
        return [s for s in (self._joints, self._wrench_stream, self._tactile_stream) if s is not None]

    def stale_streams(self) -> list[str]:
        """What makes the state stale now (empty when fresh)."""
        now = self._clock()
        with self._lock:
            return self._problems(now)

    def _problems(self, now: float) -> list[str]:
        problems = [p for p in (s.problem(now) for s in self.streams()) if p is not None]
        missing = [n for n, r in zip(self.spec.joint_names, self._jrecv) if r == -math.inf]
        if missing and self._joints.accepted:
            problems[0] += f" (the driver never sent joints {', '.join(missing)})"
        return problems

    def read_state(self) -> RobotState:
        """The newest state; raises :class:`StaleStateError` if any stream is past its deadline."""
        now = self._clock()
        with self._lock:
            problems = self._problems(now)
            if problems:
                raise StaleStateError(f"{self.spec.name}: stale driver state, not commanding: " + "; ".join(problems))
            q, qd, tau = self._q.copy(), self._qd.copy(), self._tau.copy()
            stamp = float(self._jstamp.min())
            age = self._age(now, stamp)
            wrench = self._wrench.copy() if self._wrench_stream is not None else None
            tactile = self._tactile.copy() if self._tactile_stream is not None else None
        return RobotState(stamp=stamp, position=q, velocity=qd, effort=tau, wrench=wrench, tactile=tactile,
                          ee_pose=self._ee_pose(q), contact_force_peak=self.contact_force_peak, age=age)

    def _age(self, now: float, stamp: float) -> float:
        """s since the oldest joint of the newest state was measured: by the driver's stamps on
        :attr:`stamp_clock` (a clock offset between driver and host reads as age: the safe side,
        slower approaches; ``reading_age`` in :meth:`status` shows it), else since receipt."""
        if self._stamped and self.stamp_clock is not None:
            return max(self.stamp_clock() - stamp, 0.0)
        return max(now - float(self._jrecv.min()), 0.0)

    def _kinematics(self, q: np.ndarray) -> None:
        self.data.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def _ee_pose(self, q: np.ndarray) -> np.ndarray | None:
        if self._site < 0:
            return None
        self._kinematics(q)
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[self._site])
        return np.concatenate([self.data.site_xpos[self._site], quat])

    def status(self) -> dict[str, Any]:
        """Counters for diagnostics (accepted / out-of-order / rejected messages, ages, commands)."""
        now = self._clock()
        out: dict[str, Any] = {"commands_sent": self.commands_sent}
        with self._lock:
            for s in self.streams():
                key = s.what.replace(" ", "_")
                out.update({f"{key}/accepted": s.accepted, f"{key}/out_of_order": s.out_of_order,
                            f"{key}/rejected": s.rejected, f"{key}/age": s.age(now)})
            if self._joints.accepted and np.isfinite(self._jstamp).all():  # the reading's age (RobotState.age)
                out["reading_age"] = self._age(now, float(self._jstamp.min()))
        return out

    # --- commands -------------------------------------------------------------------------
    def _emit(self, values: np.ndarray, mode: str) -> None:
        """Actuator values (A,) in SI for the controller's ``mode`` → the driver."""
        if self._sink is None:
            raise HardwareError(f"{self.spec.name}: no driver connection (HardwareLink) to send commands to")
        c = self.hardware.command
        tfs = c.time_from_start or self.control_period
        self._sink(DriverCommand(self.codec.command_names, self.codec.encode_command(values, mode), c.interface,
                                 mode, tfs))
        if mode == "position":
            self._last_position = np.asarray(values, np.float64).copy()
        self.commands_sent += 1

    def _apply(self, command: np.ndarray) -> None:
        with self._control:
            self._apply_locked(command)

    def _apply_locked(self, command: np.ndarray) -> None:
        state = self.read_state()  # stale: raises, nothing is sent
        mode = self.control_mode
        if mode == ControlMode.CARTESIAN_VELOCITY:
            cart = self._cartesian
            assert cart is not None
            q = state.position
            self._kinematics(q)
            qdot = cart.joint_velocities(self.data, command)
            if self.hardware.command.mode == "velocity":
                self._emit(cart.actuator_velocities(qdot, len(self.spec.actuators)), "velocity")
                return
            target = self._target if self._target is not None else self.codec.actuator_positions(q)
            if self._compliant:  # the period's reference; the joint states' ticks move the targets
                cart.begin_period(self.data, command)
                self._target = target
                self._last_tick = self._clock()
                self._ticking = True
                self._emit(self._target, "position")  # at once: a hold must not wait for the next joint state
                return
            self._target = cart.position_targets(target, qdot, q)
            self._emit(self._target, "position")
            return
        lo, hi = self.spec.command_bounds(mode)
        self._emit(np.minimum(np.maximum(command, lo), hi), mode.value)

    def advance(self) -> None:
        """Nothing to do: on hardware time passes by itself (the robot node's timer keeps the rate)."""

    def hold_command(self) -> np.ndarray:
        mode = self.control_mode
        if mode == ControlMode.CARTESIAN_VELOCITY:
            return np.zeros(6)
        if mode != ControlMode.POSITION:
            return np.zeros(len(self.spec.actuators))
        measured = self.codec.actuator_positions(self.read_state().position)
        last = self._last_position
        lead = self.config.cartesian.max_tracking_error if self.config.cartesian is not None else 0.05
        if last is not None and np.all(np.abs(last - measured) <= lead):
            return last.copy()  # hold the target, not the (sagging) measurement
        return measured

    def _on_mode_change(self, mode: ControlMode) -> None:
        with self._control:
            self._target = None  # re-seeded from the measured joints on the next Cartesian command
            self._ticking = False
        self._tare()

    def _tare(self) -> None:
        """The compliant controller's no-contact reference: the newest wrist reading (at rest)."""
        if not self._compliant or self._cartesian is None:
            return
        with self._lock:
            if self._wrench_stream is None or not self._wrench_stream.accepted:
                return
            q, wrench = self._q.copy(), self._wrench.copy()
        self._cartesian.tare(self._sensor_rotation(q), wrench[:3])

    # --- reset ----------------------------------------------------------------------------
    def _reset_guard(self, state: RobotState) -> None:
        """Raise (after commanding a hold at the measured joints) if the tared wrist force or a joint
        effort exceeds ``hardware.reset.force_limit`` / ``effort_limit``: a reset never pushes on."""
        rc, problem = self.hardware.reset, ""
        if state.wrench is not None and self._cartesian is not None:
            self._kinematics(state.position)
            force = float(np.linalg.norm(self._cartesian.contact_force(
                self._cartesian.sensor_rotation(self.data), state.wrench[:3])))
            self.reset_peak_force = max(self.reset_peak_force, force)
            if force > rc.force_limit:
                problem = f"tared wrist force {force:.1f} N > hardware.reset.force_limit {rc.force_limit:.1f} N"
        if not problem:
            for joint, tau in zip(self.spec.joints, state.effort):
                if joint.effort_limit and abs(tau) > rc.effort_limit * joint.effort_limit:
                    problem = (f"'{joint.name}' effort {abs(tau):.1f} N·m > {rc.effort_limit:g} × its limit "
                               f"{joint.effort_limit:.1f} N·m")
                    break
        if problem:
            self._reset_hold(state)
            raise HardwareError(f"{self.spec.name}: reset stopped, {problem}: the arm is pushing against something "
                                "(a peg still in its hole, an obstacle, a person). It holds where it is; take the peg "
                                "out by hand / clear the obstacle, then reset")

    def _reset_hold(self, state: RobotState) -> None:
        """Stop a reset motion at once: targets at the measured joints (velocity interface: zero)."""
        with self._control:
            self._ticking = False
        if self._sink is None:
            return
        if self.hardware.command.mode == "position":
            self._emit(self.codec.actuator_positions(state.position), "position")
        else:
            self._emit(np.zeros(len(self.spec.actuators)), "velocity")

    def _reset_state(self, progress: bool = True) -> RobotState:
        """The fresh state of one reset period, through ``reset_progress`` (which may raise: a latched
        e-stop stops the reset) and the force guard."""
        state = self.read_state()
        if progress and self.reset_progress is not None:
            try:
                self.reset_progress(state)
            except MorlRobotError:
                self._reset_hold(state)
                raise
        self._reset_guard(state)
        return state

    def _guarded_sleep(self, dt: float) -> None:
        """Wait one reset period, checking the force guard at every driver message (state rate)
        in between: a jam is caught within a driver period, not a control period."""
        n = max(1, round(dt * self.hardware.state.rate))
        for _ in range(n):
            self._sleep(dt / n)
            try:
                state = self.read_state()
            except StaleStateError:
                continue  # the next reset period handles a stale state
            self._reset_guard(state)

    def _fresh_reset_state(self, give_up: float) -> RobotState:
        """:meth:`_reset_state`, waiting (not commanding) through a stale gap of up to
        ``hardware.reset.stale_grace`` s (and not past ``give_up``)."""
        return self._fresh(self._reset_state, give_up)

    def _fresh(self, read: Callable[[], RobotState], give_up: float) -> RobotState:
        """``read()``, waiting (not commanding) through a stale gap of up to
        ``hardware.reset.stale_grace`` s (and not past ``give_up``)."""
        since: float | None = None
        while True:
            try:
                return read()
            except StaleStateError:
                with self._control:
                    self._ticking = False
                now = self._clock()
                since = now if since is None else since
                if now - since > self.hardware.reset.stale_grace or now > give_up:
                    raise
                self._sleep(self.control_period)

    def _retract(self) -> None:
        """``hardware.reset.retract``: move the tool against its approach axis by ``distance`` at
        ``speed`` (the Cartesian path of a policy command, compliant when configured)."""
        r, cart = self.hardware.reset.retract, self._cartesian
        if r is None or cart is None or self._site < 0 or self.hardware.command.mode == "effort":
            return
        dt = self.control_period
        state = self._reset_state()
        self._kinematics(state.position)
        axis = np.asarray(r.axis, np.float64)
        away = -(self.data.site_xmat[self._site].reshape(3, 3) @ (axis / np.linalg.norm(axis)))
        start = self.data.site_xpos[self._site].copy()
        twist = np.concatenate([away * r.speed, np.zeros(3)])
        compliant = self._compliant and self.control_mode == ControlMode.CARTESIAN_VELOCITY
        target = self.codec.actuator_positions(state.position)
        budget = min(2.0 * r.distance / r.speed + 2.0, self.hardware.reset.timeout)
        give_up = self._clock() + budget
        while True:
            self._kinematics(state.position)
            moved = float((self.data.site_xpos[self._site] - start) @ away)
            if moved >= r.distance:
                break
            if self._clock() > give_up:
                self._reset_hold(state)
                raise HardwareError(f"{self.spec.name}: reset's retract moved the tool {moved:.3f} m of "
                                    f"{r.distance} m (hardware.reset.retract) in {budget:.1f} s; "
                                    "blocked? take the peg out by hand / clear the obstacle, then reset")
            if compliant:
                self._apply(twist)  # the force-limited admittance moves the targets at the driver rate
            elif self.hardware.command.mode == "position":
                qdot = cart.joint_velocities(self.data, twist)
                target = cart.position_targets(target, qdot, state.position)
                self._emit(target, "position")
            else:
                qdot = cart.joint_velocities(self.data, twist)
                self._emit(cart.actuator_velocities(qdot, len(self.spec.actuators)), "velocity")
            self._guarded_sleep(dt)
            state = self._fresh_reset_state(give_up)
        with self._control:
            self._ticking = False
            self._target = None
        self._reset_hold(state)

    def reset(self, seed: int | None = None, joint_positions: Mapping[str, float] | None = None,
              scene: Mapping[str, Any] | None = None) -> RobotState:
        """First ``hardware.reset.retract`` (the tool backs out along its approach axis), then drive
        to a start configuration at a bounded joint speed and wait until every actuator is
        within ``hardware.reset.tolerance`` (position or velocity interface).  The target is
        ``home`` (``hardware.home`` or the MJCF keyframe) overridden by ``joint_positions``.
        Scene objects cannot be placed by the robot: with ``scene`` values this raises unless
        ``hardware.reset.scene`` is ``ignore`` (a person resets them).  The state must be fresh to
        start; a stale gap mid-motion pauses commanding for up to ``hardware.reset.stale_grace`` s,
        then :class:`StaleStateError` is raised.  Every period the tared wrist force and the joint
        efforts are checked against ``hardware.reset.force_limit`` / ``effort_limit`` and
        ``reset_progress`` is called (it may raise, e.g. on a latched e-stop): either stops the
        motion at once (a hold at the measured joints) and raises :class:`HardwareError`."""
        rc = self.hardware.reset
        if scene and rc.scene == "error":
            raise HardwareError(
                f"{self.spec.name}: the task wants scene objects placed ({', '.join(scene)}); on hardware a person "
                f"or a fixture does that. Set hardware.reset.scene: ignore in {self.source} once that is arranged")
        interface = self.hardware.command.mode
        if interface == "effort":
            raise HardwareError(f"{self.spec.name}: reset needs a position or velocity controller; "
                                f"hardware.command.mode is 'effort' in {self.source}")
        self.reset_peak_force = 0.0
        t0 = self._clock()
        with self._control:  # the policy's compliant ticks stop (none is mid-way): the reset alone commands from here
            self._ticking = False
        names = self.spec.joint_names
        wanted = {**self.home, **dict(joint_positions or {})}
        for name in wanted:
            if name not in names:
                raise UnknownNameError(f"unknown joint '{name}' for robot '{self.spec.name}'; joints: {list(names)}")

        def goal_from(position: np.ndarray) -> np.ndarray:
            target_q = position.copy()
            for name, value in wanted.items():
                target_q[names.index(name)] = value
            return self.codec.actuator_positions(np.clip(target_q, self._jlo, self._jhi))

        # a late driver message before the motion (a loaded host) is waited out as one during it
        state = self._fresh(self.read_state, self._clock() + rc.timeout)
        here = self.codec.actuator_positions(state.position)
        if float(np.abs(goal_from(state.position) - here).max(initial=0.0)) > rc.tolerance:
            self._retract()  # (already at the start configuration: nothing to back out of)
        state = self._fresh(self.read_state, self._clock() + rc.timeout)
        goal = goal_from(state.position)
        dt = self.control_period
        vmax = rc.speed * self._avel * dt  # per period
        setpoint = self.codec.actuator_positions(state.position)
        give_up = self._clock() + rc.timeout
        stale_since: float | None = None
        while True:
            try:
                state = self._reset_state()
                stale_since = None
            except StaleStateError:  # a gap in the stream: wait (not commanding) for a while
                now = self._clock()
                stale_since = now if stale_since is None else stale_since
                if now - stale_since > rc.stale_grace or now > give_up:
                    raise
                self._sleep(dt)
                continue
            err = goal - self.codec.actuator_positions(state.position)
            if float(np.abs(err).max(initial=0.0)) <= rc.tolerance:
                break
            if self._clock() > give_up:
                worst = int(np.argmax(np.abs(err)))
                raise HardwareError(
                    f"{self.spec.name}: reset did not reach its start configuration in {rc.timeout:.1f} s: "
                    f"'{self.spec.actuator_names[worst]}' is {err[worst]:+.4f} rad off (tolerance {rc.tolerance} rad); "
                    "blocked by an obstacle or a person needed?")
            if interface == "position":
                setpoint = setpoint + np.clip(goal - setpoint, -vmax, vmax)
                self._emit(setpoint, "position")
            else:
                self._emit(np.clip(rc.gain * err, -vmax / dt, vmax / dt), "velocity")
            self._guarded_sleep(dt)
        hold = goal if interface == "position" else np.zeros(len(goal))
        for _ in range(round(rc.settle / dt)):
            if not self.stale_streams():  # never command on a stale state
                self._reset_state()
                self._emit(hold, interface)
            self._sleep(dt)
        with self._control:
            self._target = goal.copy() if interface == "position" else None
            self._ticking = False
        self._tare()  # at rest after the settle: the tool's weight is the no-contact reading
        self.reset_seconds = self._clock() - t0
        return self._fresh(self.read_state, self._clock() + rc.stale_grace)  # a late message at the end too

    # --- landmarks ------------------------------------------------------------------------
    def landmark(self, name: str) -> np.ndarray:
        """Calibrated pose (7,) [m, quaternion wxyz] in the robot base frame (``hardware.landmarks``)."""
        pose = self.hardware.landmarks.get(name)
        if pose is None:
            known = ", ".join(self.hardware.landmarks) or "none"
            raise UnknownNameError(f"{self.spec.name}: no calibrated landmark '{name}' (known: {known}); measure it on "
                                   f"your cell and add it under hardware.landmarks in {self.source}")
        return np.asarray(pose, np.float64).copy()

    def close(self) -> None:
        self._sink = None


def load_hardware_robot(name_or_path: str, control_period: float, **kwargs: Any) -> HardwareRobot:
    """The hardware backend of robot ``name_or_path`` (``sawyer``, ``shadow_hand`` or a YAML path)."""
    config = load_robot_config(name_or_path)
    return HardwareRobot(config, control_period, source=str(resolve_config("robots", name_or_path)), **kwargs)
