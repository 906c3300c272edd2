"""The MuJoCo backend of the robot interface.

One physics timestep (``model.opt.timestep``) and a separate control period: each ``advance``
runs ``substeps = control_period / timestep`` physics steps in one ``mj_step(nstep=…)`` call, so
the per-step wrapper cost is paid once per control period.  Control modes reconfigure the MJCF
actuators in place (their gain/bias/ctrlrange), so no Python runs inside the substeps:

* position: the MJCF position servos as written (kp, kv from the model)
* velocity: velocity servos, force = kv_v (u − q̇), kv_v from the robot YAML
* effort: direct motor torque, force = u (gravity compensation still routed through actuators)
* cartesian_velocity: resolved-rate (:class:`morl_robot.robots.kinematics.CartesianController`,
  the hardware backend's controller too) at the control rate, integrated into position-servo
  targets that lead the measured joints by at most ``max_tracking_error``.  With
  ``cartesian.compliance`` in the robot YAML the twist is executed through the force-limited
  admittance (:mod:`morl_robot.robots.compliance`) at every physics substep: ``advance`` then steps
  the physics one timestep at a time, reading the wrist F/T sensor and moving the targets between
  steps (the reading is the one MuJoCo computed for the step just taken: one timestep of latency),
  the whole period in one compiled call (:mod:`morl_robot.robots.compiled_period`).

Determinism: the same model, seed and command sequence give the same trajectory.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import mujoco
import numpy as np

from morl_robot.errors import CommandError, ConfigError, UnknownNameError
from morl_robot.robots.base import Robot
from morl_robot.robots.config import RobotConfig
from morl_robot.robots.context import NOMINAL, RobotContext, scale_model
from morl_robot.robots.kinematics import CartesianController, _as_slice
from morl_robot.robots.model import (
    build_spec,
    is_static_world_body,
    load_model,
    model_path,
    site_id,
)
from morl_robot.robots.spec import ControlMode, RobotState


class MujocoRobot(Robot):
    """A robot simulated in MuJoCo, from its robot YAML and an MJCF scene that includes it."""

    def __init__(
        self,
        config: RobotConfig,
        scene: str | os.PathLike[str] | None = None,
        control_period: float = 0.05,
        timestep: float | None = None,
        model_source: str = "builtin",
        settle_time: float = 0.1,
    ) -> None:
        self.settle_time = settle_time  # s of physics with the servos holding, at every reset
        path = model_path(config, scene, model_source)
        model = load_model(path)
        if timestep is not None:
            if timestep <= 0:
                raise ConfigError(f"timestep must be positive, got {timestep}")
            model.opt.timestep = timestep
        substeps = control_period / model.opt.timestep
        if substeps < 1 or abs(substeps - round(substeps)) > 1e-6:
            raise ConfigError(
                f"control_period {control_period} s must be a whole multiple of the physics timestep "
                f"{model.opt.timestep} s"
            )
        self.model = model
        self.data = mujoco.MjData(model)
        d = self.data
        self._data_views = (d.sensordata, d.qpos, d.qvel, d.qfrc_actuator, d.site_xmat, d.site_xpos)
        self.model_path = path
        self.substeps = round(substeps)
        self.config = config
        super().__init__(build_spec(model, config, str(path)), control_period)
        self._index(config)
        self._kp_gain = model.actuator_gainprm[self._act, 0].copy()
        self._kp_bias = model.actuator_biasprm[self._act, :3].copy()
        self._ctrlrange0 = model.actuator_ctrlrange[self._act].copy()
        self._ctrllimited0 = model.actuator_ctrllimited[self._act].copy()
        self._kv_vel = (
            np.asarray(config.velocity_gains, dtype=float)
            if config.velocity_gains
            else np.maximum(-self._kp_bias[:, 2], 1.0) * 4.0
        )
        self._target = np.zeros(len(self._act))  # integrated position targets (cartesian mode)
        # the nominal model a context is applied to (apply_context restores these first)
        self._nominal = {"body_mass": model.body_mass.copy(), "body_inertia": model.body_inertia.copy(),
                         "geom_friction": model.geom_friction.copy(), "dof_damping": model.dof_damping.copy(),
                         "body_pos": model.body_pos.copy()}
        self._gain = 1.0
        self.context: RobotContext = NOMINAL
        self._noise = np.random.default_rng(0)
        self._on_mode_change(self.control_mode)
        mujoco.mj_forward(model, self.data)

    def _index(self, config: RobotConfig) -> None:
        m = self.model
        jids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j.name) for j in self.spec.joints]
        self._jids = np.array(jids)
        self._qadr = m.jnt_qposadr[self._jids].copy()
        self._dadr = m.jnt_dofadr[self._jids].copy()
        self._act = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in self.spec.actuator_names])

        def sensor_slice(name: str) -> slice:
            sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, name)
            adr = int(m.sensor_adr[sid])
            return slice(adr, adr + int(m.sensor_dim[sid]))

        self._force = self._torque = None
        self._wrench: slice | None = None  # force and torque as one slice when adjacent (read_state)
        if config.wrench is not None:
            self._force = sensor_slice(config.wrench.force_sensor)
            self._torque = sensor_slice(config.wrench.torque_sensor)
            if self._force.stop == self._torque.start:
                self._wrench = slice(self._force.start, self._torque.stop)
        # read_state's joint reads: a slice copy when the addresses are a contiguous range (cheaper than fancy indexing)
        self._qsel, self._dsel = _as_slice(self._qadr), _as_slice(self._dadr)
        self._tactile = None
        if config.tactile is not None:
            self._tactile = np.concatenate([np.arange(sensor_slice(s).start, sensor_slice(s).stop) for s in config.tactile.sensors])
        self._scene = {s.name: sensor_slice(s.name) for s in self.spec.sensors if s.kind == "scene"}
        self._site = None
        self._cartesian: CartesianController | None = None
        if config.cartesian is not None:
            self._site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, config.cartesian.site)
            self._cartesian = CartesianController(m, config.cartesian, self.spec, self.control_period, config.wrench)
        self._compliant = self._cartesian is not None and self._cartesian.compliant

    # --- modes ---------------------------------------------------------------------------
    def _on_mode_change(self, mode: ControlMode) -> None:
        m, a, g = self.model, self._act, self._gain
        if mode in (ControlMode.POSITION, ControlMode.CARTESIAN_VELOCITY):
            m.actuator_gainprm[a, 0] = self._kp_gain * g
            m.actuator_biasprm[a, :3] = self._kp_bias * g
            m.actuator_ctrlrange[a] = self._ctrlrange0
            m.actuator_ctrllimited[a] = self._ctrllimited0
        elif mode == ControlMode.VELOCITY:
            kv = self._kv_vel * g
            m.actuator_gainprm[a, 0] = kv
            m.actuator_biasprm[a, :3] = np.stack([np.zeros_like(kv), np.zeros_like(kv), -kv], 1)
            lim = np.array([s.velocity_limit for s in self.spec.actuators])
            m.actuator_ctrlrange[a] = np.stack([-lim, lim], 1)
            m.actuator_ctrllimited[a] = 1
        elif mode == ControlMode.EFFORT:
            m.actuator_gainprm[a, 0] = g
            m.actuator_biasprm[a, :3] = 0.0
            lim = np.array([s.force_limit for s in self.spec.actuators])
            m.actuator_ctrlrange[a] = np.stack([-lim, lim], 1)
            m.actuator_ctrllimited[a] = 1
        if hasattr(self, "data"):
            self.data.ctrl[a] = self._hold_for(mode)
            self._target = self._actuator_positions()
            self._tare()

    def _actuator_positions(self) -> np.ndarray:
        return self.data.actuator_length[self._act].copy()

    def _hold_for(self, mode: ControlMode) -> np.ndarray:
        if mode in (ControlMode.POSITION, ControlMode.CARTESIAN_VELOCITY):
            return self._actuator_positions()
        return np.zeros(len(self._act))

    def hold_command(self) -> np.ndarray:
        if self.control_mode == ControlMode.CARTESIAN_VELOCITY:
            return np.zeros(6)
        return self._hold_for(self.control_mode)

    # --- the loop ------------------------------------------------------------------------
    def _apply(self, command: np.ndarray) -> None:
        if self.control_mode == ControlMode.CARTESIAN_VELOCITY:
            self.data.ctrl[self._act] = self._cartesian_targets(command)
        else:
            self.data.ctrl[self._act] = command  # MuJoCo clamps to ctrlrange (the mode's limits)

    def _cartesian_targets(self, twist: np.ndarray) -> np.ndarray:
        """Resolved-rate step on the simulation's own kinematics: twist (6,) → position targets (A,)
        (compliant: the period's reference, whose targets :meth:`advance` moves every substep)."""
        cart = self._cartesian
        assert cart is not None
        if self._compliant:
            cart.begin_period(self.data, twist)
            return self._target
        qdot = cart.joint_velocities(self.data, twist)
        self._target = cart.position_targets(self._target, qdot, self._data_views[1][self._qadr])
        return self._target

    def advance(self) -> None:
        if not (self._compliant and self.control_mode == ControlMode.CARTESIAN_VELOCITY):
            mujoco.mj_step(self.model, self.data, nstep=self.substeps)
            return
        cart = self._cartesian
        assert cart is not None and self._force is not None
        # per physics step: the F/T reading, one compliance tick, the targets, one mj_step (compiled)
        self._target = cart.run_period(self.model, self.data, self._target, self._act, self._force, self.substeps)

    def set_compliant(self, enabled: bool) -> None:
        """Execute Cartesian commands through the force-limited admittance (the robot YAML's
        ``cartesian.compliance``, the default when it has one) or stiffly (resolved rate only, as
        before the compliant controller existed: ``--contact-control stiff``)."""
        if enabled and (self._cartesian is None or not self._cartesian.compliant):
            raise ConfigError(f"robot '{self.spec.name}' has no cartesian.compliance section to enable")
        self._compliant = bool(enabled)

    def _tare(self) -> None:
        """The compliant controller's no-contact reference: the wrist reading now (at rest)."""
        if self._compliant and self._force is not None:
            cart = self._cartesian
            assert cart is not None
            cart.tare(cart.sensor_rotation(self.data), self.data.sensordata[self._force])

    # --- contexts (issue 37) ----------------------------------------------------------------
    def apply_context(self, context: RobotContext | None) -> None:
        """Put the model in ``context`` (None: nominal), starting from the nominal model, so
        contexts never accumulate; call before :meth:`reset` (see :mod:`morl_robot.robots.context`)."""
        ctx = NOMINAL if context is None else context
        ctx.validate()
        m, nom = self.model, self._nominal
        scale_model(m, nom, ctx, str(self.model_path))
        m.body_pos[:] = nom["body_pos"]

        def ident(kind: mujoco.mjtObj, name: str, what: str) -> int:
            i = mujoco.mj_name2id(m, kind, name)
            if i < 0:
                raise UnknownNameError(f"context '{ctx.name}': {self.model_path} has no {what} named '{name}'")
            return i

        for body, off in ctx.body_offset.items():
            b = ident(mujoco.mjtObj.mjOBJ_BODY, body, "body")
            if not is_static_world_body(m, b):
                raise ConfigError(f"context '{ctx.name}': body '{body}' is not a static body of the world "
                                  "(only fixed fixtures can be moved by a context)")
            m.body_pos[b] = nom["body_pos"][b] + np.asarray(off, dtype=float)
        self._gain = float(ctx.actuator_gain)
        self.context = ctx
        self._noise = np.random.default_rng(ctx.seed)
        self._on_mode_change(self.control_mode)
        mujoco.mj_forward(m, self.data)

    def _sensor_faults(self, wrench: np.ndarray | None, tactile: np.ndarray | None) -> None:
        """The context's bias (after the reset's tare: from the first step on) and noise, in place."""
        ctx = self.context
        if wrench is not None:
            if self.data.time > 0 and any(ctx.wrench_bias):
                wrench += np.asarray(ctx.wrench_bias)
            if ctx.wrench_noise:
                wrench[:3] += self._noise.normal(0.0, ctx.wrench_noise, 3)
        if tactile is not None and ctx.tactile_noise:
            tactile += self._noise.normal(0.0, ctx.tactile_noise, tactile.shape)

    def read_state(self) -> RobotState:
        d = self.data
        # views of d's arrays, made once (each attribute read of MjData builds a new array object)
        sensordata, qpos, qvel, qfrc_actuator, site_xmat, site_xpos = self._data_views
        wrench = None
        if self._wrench is not None:
            wrench = sensordata[self._wrench].copy()
        elif self._force is not None:
            wrench = np.concatenate([sensordata[self._force], sensordata[self._torque]])
        tactile = sensordata[self._tactile].copy() if self._tactile is not None else None
        if self.context.sensor_faults:
            self._sensor_faults(wrench, tactile)
        ee = None
        if self._site is not None:
            ee = np.empty(7)
            ee[:3] = site_xpos[self._site]
            mujoco.mju_mat2Quat(ee[3:], site_xmat[self._site])
        qsel, dsel = self._qsel, self._dsel
        return RobotState(
            stamp=float(d.time),
            position=qpos[qsel].copy() if isinstance(qsel, slice) else qpos[qsel],  # copies, never views
            velocity=qvel[dsel].copy() if isinstance(dsel, slice) else qvel[dsel],
            effort=qfrc_actuator[dsel].copy() if isinstance(dsel, slice) else qfrc_actuator[dsel],
            wrench=wrench,
            tactile=tactile,
            ee_pose=ee,
            sensors={k: sensordata[s].copy() for k, s in self._scene.items()},
            contact_force_peak=self._cartesian.period_peak if self._compliant and self._cartesian is not None else None,
        )

    def reset(
        self,
        seed: int | None = None,
        joint_positions: Mapping[str, float] | None = None,
        scene: Mapping[str, Any] | None = None,
        keyframe: str | None = "home",
        settle: bool = True,
    ) -> RobotState:
        m, d = self.model, self.data
        key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, keyframe) if keyframe else -1
        if key >= 0:
            mujoco.mj_resetDataKeyframe(m, d, key)
        else:
            mujoco.mj_resetData(m, d)
        # a model without the keyframe (the bare robot MJCF) starts in the robot YAML's home pose (the
        # scenes' 'home'), not in MuJoCo's all-zero one (the outstretched Sawyer's peg is outside the
        # safety workspace)
        home = self.config.hardware.home if self.config.hardware is not None else {}
        start = {} if key >= 0 or not keyframe else dict(home)
        for name, value in {**start, **(joint_positions or {})}.items():
            if name not in self.spec.joint_names:
                raise UnknownNameError(f"unknown joint '{name}' for robot '{self.spec.name}'; joints: {list(self.spec.joint_names)}")
            d.qpos[self._qadr[self.spec.joint_names.index(name)]] = value
        for name, value in (scene or {}).items():
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise UnknownNameError(f"the scene has no joint named '{name}'")
            adr = int(m.jnt_qposadr[jid])
            val = np.atleast_1d(np.asarray(value, dtype=float))
            d.qpos[adr : adr + len(val)] = val
        d.qvel[:] = 0.0
        d.xfrc_applied[:] = 0.0  # a reset ends any external push (apply_external_force)
        mujoco.mj_forward(m, d)  # actuator lengths of the new configuration
        if self.control_mode in (ControlMode.POSITION, ControlMode.CARTESIAN_VELOCITY):
            d.ctrl[self._act] = self._actuator_positions()
        else:
            d.ctrl[self._act] = 0.0
        # Let the servos take the load before the episode starts (a real robot is at rest when an
        # episode begins and its F/T sensor is tared), then restart the clock.
        nsettle = round(self.settle_time / m.opt.timestep) if settle else 0
        if nsettle > 0:
            mujoco.mj_step(m, d, nstep=nsettle)
            d.time = 0.0
            mujoco.mj_forward(m, d)
        self._target = self._actuator_positions()
        if self.control_mode in (ControlMode.POSITION, ControlMode.CARTESIAN_VELOCITY):
            d.ctrl[self._act] = self._target
        self._tare()
        return self.read_state()

    def apply_external_force(self, body: str, force: np.ndarray, torque: np.ndarray | None = None) -> None:
        """MuJoCo's ``xfrc_applied`` on ``body`` (world frame, at its centre of mass): held through
        every substep until changed or a reset."""
        bid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, body)
        if bid < 0:
            raise UnknownNameError(f"no body named '{body}' in {self.model_path}")
        wrench = np.concatenate([np.asarray(force, dtype=float).reshape(-1),
                                 np.zeros(3) if torque is None else np.asarray(torque, dtype=float).reshape(-1)])
        if wrench.size != 6 or not np.all(np.isfinite(wrench)):
            raise CommandError(f"external force on '{body}': expected finite force (3,) and torque (3,), got {wrench}")
        self.data.xfrc_applied[bid] = wrench

    def landmark(self, name: str) -> np.ndarray:
        sid = site_id(self.model, name, str(self.model_path))
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[sid])
        return np.concatenate([self.data.site_xpos[sid], quat])

