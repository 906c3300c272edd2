"""Resolved-rate Cartesian velocity control: the maths and the one controller both robot backends use.

The Sawyer policy of the MO-MPO paper (section 6) acts in end-effector Cartesian velocity.  A
twist ẋ = [v; ω] (6,) is turned into joint velocities with damped least squares

    q̇ = Jᵀ (J Jᵀ + λ² I)⁻¹ ẋ                                   (Nakamura & Hanafusa 1986)

respecting joint limits: a joint that would cross ``[lower + margin, upper − margin]`` within one
control period in the direction the solution drives it is frozen (its Jacobian column removed) and
the system is solved again; then q̇ is scaled uniformly (direction kept) so that every
|q̇_i| ≤ velocity_limit_i.

:class:`CartesianController` is that control law on a robot: the site Jacobian from a MuJoCo
model's kinematics (``mj_jacSite``: the simulation's own data in
:class:`~morl_robot.robots.mujoco_robot.MujocoRobot`, a kinematics-only copy set to the measured
joints in :class:`~morl_robot.robots.hardware.HardwareRobot`), the twist limited to the robot's
Cartesian limits, and joint velocities integrated into position targets of the actuators that drive
one arm joint each, leading the measured joints by at most ``max_tracking_error``.

With ``cartesian.compliance`` in the robot YAML the twist is executed compliantly
(:mod:`morl_robot.robots.compliance`): :meth:`CartesianController.begin_period` solves the
resolved-rate step once per control period, and :meth:`CartesianController.tick` runs the
force-limited admittance at the physics rate (MuJoCo substeps) or the driver rate (hardware), moving
the position targets by the reference joint velocities plus the pseudo-inverse image of the
admittance's velocity correction.  The contact force it acts on is the wrist F/T reading rotated
into the base frame and tared at rest (:meth:`CartesianController.tare`): the force the environment
exerts on the tool.
"""
from __future__ import annotations

import math

import mujoco
import numpy as np

# numpy's clip ufunc, min(max(x, lo), hi) in one call: np.clip's Python-level checks cost more than
# its arithmetic on 7 joints (run_period, per physics tick)
try:
    from numpy._core.umath import clip as _CLIP
except ImportError:  # numpy 1.x
    from numpy.core.umath import clip as _CLIP

from morl_robot.robots.compiled_period import PeriodBlocks
from morl_robot.robots.compliance import ForceLimitedAdmittance
from morl_robot.robots.config import CartesianConfig, WrenchConfig
from morl_robot.robots.spec import RobotSpec


def damped_least_squares(jacobian: np.ndarray, twist: np.ndarray, damping: float) -> np.ndarray:
    """q̇ (n,) = Jᵀ (J Jᵀ + λ² I)⁻¹ ẋ for J (m, n), ẋ (m,)."""
    jjt = jacobian @ jacobian.T
    jjt.flat[:: jjt.shape[0] + 1] += damping**2
    # JJᵀ + λ²I is symmetric positive definite: MuJoCo's in-place Cholesky is ~10x cheaper to
    # call than numpy.linalg.solve for a 6x6 system (this runs once per control step).
    mujoco.mju_cholFactor(jjt, 0.0)
    y = np.empty(jjt.shape[0])
    mujoco.mju_cholSolve(y, jjt, np.ascontiguousarray(twist, dtype=np.float64))
    return jacobian.T @ y


def resolved_rate(
    jacobian: np.ndarray,
    twist: np.ndarray,
    q: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    velocity_limit: np.ndarray,
    dt: float,
    damping: float = 0.05,
    margin: float = 0.05,
) -> np.ndarray:
    """Joint velocities (n,) realising ``twist`` (6,) through ``jacobian`` (6, n) at ``q`` (n,).

    Never drives a joint past its limit band within ``dt`` and never exceeds ``velocity_limit``.
    """
    n = jacobian.shape[1]
    # Joint-limit band as per-joint velocity bounds for this period: a joint inside the band
    # may move up to its edge; a joint outside it may only move back toward the middle.
    ub = np.maximum((upper - margin - q) / dt, 0.0)
    lb = np.minimum((lower + margin - q) / dt, 0.0)
    qdot = damped_least_squares(jacobian, twist, damping)
    violating = (qdot > ub) | (qdot < lb)
    if violating.any():
        free = ~violating
        for _ in range(n):
            # frozen joints contribute nothing; solve again with the rest
            qdot = damped_least_squares(jacobian * free, twist, damping) * free
            violating = free & ((qdot > ub) | (qdot < lb))
            if not violating.any():
                break
            free &= ~violating
        else:
            qdot = np.zeros(n)
    ratio = float((np.abs(qdot) / velocity_limit).max()) if n else 0.0
    if ratio > 1.0:
        qdot = qdot / ratio
    return qdot


def integrate_position_targets(target: np.ndarray, qdot: np.ndarray, q: np.ndarray, dt: float, lead: float,
                               lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Resolved-rate integration (n,): ``target + qdot·dt``, never leading the measured ``q`` by more
    than ``lead`` (so a blocked arm does not wind up its targets) and kept within [lower, upper]."""
    new = target + qdot * dt
    new = np.minimum(np.maximum(new, q - lead), q + lead)
    return np.minimum(np.maximum(new, lower), upper)


def _as_slice(index: np.ndarray) -> np.ndarray | slice:
    """``index`` (n,) as a slice when it is a contiguous ascending range (a view instead of a copy)."""
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


#: np.linalg.solve's own LAPACK gufunc (gesv), without its Python checks (J Jᵀ + λ² I is positive definite)
_SOLVE = np.linalg._umath_linalg.solve

#: The three unit linear velocities as twists (6, 3): the DLS pseudo-inverse's linear columns.
_LINEAR_UNITS = np.eye(6)[:, :3]


class CartesianController:
    """Twist (6,) [vx vy vz (m/s), wx wy wz (rad/s)] in the base frame → joint velocities (J,) →
    actuator position targets (A,), for one robot (see the module docstring).

    Args:
        model: the robot's compiled MuJoCo model (only its kinematics are used).
        config: the robot YAML's ``cartesian`` section (site, limits, damping, margins).
        spec: the robot (joint order, limits; actuators driving one joint each take targets).
        dt: the control period (s) a command lasts.
    """

    def __init__(self, model: mujoco.MjModel, config: CartesianConfig, spec: RobotSpec, dt: float,
                 wrench: WrenchConfig | None = None) -> None:
        self.model, self.config, self.dt = model, config, dt
        self.site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, config.site)
        jids = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in spec.joint_names])
        self.qadr = model.jnt_qposadr[jids].copy()  # (J,)
        self.dadr = model.jnt_dofadr[jids].copy()  # (J,)
        self._jac = np.zeros((6, model.nv))  # rows: translational (3), rotational (3)
        self._jacp, self._jacr = self._jac[:3], self._jac[3:]  # views mj_jacSite writes into
        self.lower = np.array([j.lower for j in spec.joints])  # (J,) rad
        self.upper = np.array([j.upper for j in spec.joints])
        self.velocity_limit = np.array([j.velocity_limit for j in spec.joints])  # (J,) rad/s
        self.twist_limit = np.array([config.max_linear_velocity] * 3 + [config.max_angular_velocity] * 3)
        self._twist_floor = -self.twist_limit
        # actuators driven straight by one arm joint take position targets; the others hold
        act_joint = np.array([spec.joint_names.index(a.joints[0]) if len(a.joints) == 1 else -1
                              for a in spec.actuators])
        self.actuator_mask = act_joint >= 0  # (A,)
        self.actuator_joint = act_joint[self.actuator_mask]  # (A',) joint index of each such actuator
        half = config.joint_limit_margin * 0.5
        self.target_lower = self.lower[self.actuator_joint] + half  # (A',)
        self.target_upper = self.upper[self.actuator_joint] - half
        # --- compliance (force-limited admittance at the physics / driver rate) ------------------
        self.admittance: ForceLimitedAdmittance | None = None
        self.sensor_site = -1  # the F/T sensor's site: its frame rotates the reading into the base
        if config.compliance is not None and wrench is not None:
            sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, wrench.force_sensor)
            self.sensor_site = int(model.sensor_objid[sid])
            self.admittance = ForceLimitedAdmittance(config.compliance, config.max_linear_velocity)
        self._bias = np.zeros(3)  # (3,) base-frame reading at rest (tool weight): the tare
        self._qdot_ref = np.zeros(len(spec.joints))  # (J,) this period's resolved-rate solution
        self._pinv_lin = np.zeros((len(spec.joints), 3))  # (J, 3) DLS pseudo-inverse, linear columns
        self._v_ref = np.zeros(3)  # (3,) this period's commanded linear velocity (limited)
        self.period_peak = 0.0  # N: the largest contact force ‖f‖ of the ticks since begin_period
        self._period_index: tuple | None = None  # run_period: (actuators, qpos index, ctrl index), kept
        self._free_qdot: np.ndarray | None = None  # this period's q̇ while in free motion (begin_period)
        self._blocks = None  # run_period: the compiled period's arrays (compiled_period.PeriodBlocks), kept
        self._blocks_actuators: np.ndarray | None = None

    def joint_velocities(self, data: mujoco.MjData, twist: np.ndarray) -> np.ndarray:
        """q̇ (J,) realising ``twist`` (limited to the Cartesian limits) at ``data``'s joint positions;
        ``data``'s kinematics must be current (after ``mj_step``/``mj_forward``, or ``mj_kinematics``
        and ``mj_comPos``)."""
        return self._solve(data, twist)[0]

    def _solve(self, data: mujoco.MjData, twist: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`joint_velocities`, also returning the limited twist (6,) and the Jacobian's joint
        columns (6, J) it used."""
        c = self.config
        twist = _CLIP(twist, self._twist_floor, self.twist_limit)  # np.minimum(np.maximum(...)) in one call
        mujoco.mj_jacSite(self.model, data, self._jacp, self._jacr, self.site)
        jac = self._jac[:, self.dadr]
        q = data.qpos[self.qadr]
        qdot = resolved_rate(jac, twist, q, self.lower, self.upper, self.velocity_limit, self.dt, c.damping,
                             c.joint_limit_margin)
        return qdot, twist, jac

    def position_targets(self, target: np.ndarray, qdot: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The actuators' position targets (A,) after one period of ``qdot`` (J,) from ``target`` (A,)
        at measured joints ``q`` (J,) (:func:`integrate_position_targets`; other actuators keep theirs)."""
        out = target.copy()
        idx = self.actuator_joint
        out[self.actuator_mask] = integrate_position_targets(target[self.actuator_mask], qdot[idx], q[idx], self.dt,
                                                             self.config.max_tracking_error, self.target_lower,
                                                             self.target_upper)
        return out

    # --- compliant execution ----------------------------------------------------------------
    @property
    def compliant(self) -> bool:
        return self.admittance is not None

    def sensor_rotation(self, data: mujoco.MjData) -> np.ndarray:
        """(3, 3) rotation of the F/T sensor frame into the base frame at ``data``'s kinematics."""
        return data.site_xmat[self.sensor_site].reshape(3, 3)

    def tare(self, rotation: np.ndarray, force: np.ndarray) -> None:
        """Take the reading ``force`` (3,) (sensor frame; the force the arm exerts on the tool) at rest,
        with the sensor at ``rotation`` (3, 3), as the no-contact reference (the tool's weight), and
        forget the admittance's offset: a new start."""
        self._bias = rotation @ np.asarray(force, np.float64)
        if self.admittance is not None:
            self.admittance.reset()
        self.period_peak = 0.0

    def contact_force(self, rotation: np.ndarray, force: np.ndarray) -> np.ndarray:
        """The force (3,) N the environment exerts on the tool, base frame: −(R F − R₀ F₀) (the tool's
        weight, read at the tare, removed; quasi-static: the tool's own inertia reads as contact)."""
        return self._bias - rotation @ force

    def begin_period(self, data: mujoco.MjData, twist: np.ndarray) -> np.ndarray:
        """Solve this control period's resolved-rate step for ``twist`` (6,) at ``data``'s kinematics
        (as :meth:`joint_velocities`) and keep it, with the DLS pseudo-inverse's linear columns
        (J, 3), for :meth:`tick`.  Returns the reference joint velocities (J,)."""
        self._qdot_ref, twist, jac = self._solve(data, twist)  # jac (6, J) at data's kinematics, twist limited
        # Jᵀ (J Jᵀ + λ² I)⁻¹ applied to the three unit linear velocities: (J, 3)
        jjt = jac @ jac.T
        jjt.flat[:: jjt.shape[0] + 1] += self.config.damping**2
        self._pinv_lin = jac.T @ _SOLVE(jjt, _LINEAR_UNITS, signature="dd->d")  # np.linalg.solve's LAPACK call
        self._v_ref = twist[:3].copy()
        self.period_peak = 0.0
        # free motion (no force past the dead band, no stiffness) leaves the admittance's offset alone
        # and gives v = v_ref, scaled to the speed limit if faster (ForceLimitedAdmittance.step's
        # arithmetic), so q̇ is the same at every free tick: computed and limited once here
        self._free_qdot = None
        adm = self.admittance
        if adm is not None and adm.config.stiffness == 0.0:
            v = np.array(self._v_ref, dtype=np.float64)
            speed = math.sqrt(float(v.dot(v)))
            if speed > adm.max_speed:
                v *= adm.max_speed / speed
            qdot = self._qdot_ref + self._pinv_lin @ (v - self._v_ref)
            ratio = float((np.abs(qdot) / self.velocity_limit).max())
            self._free_qdot = qdot / ratio if ratio > 1.0 else qdot
        return self._qdot_ref

    def tick(self, target: np.ndarray, q: np.ndarray, force: np.ndarray, dt: float) -> np.ndarray:
        """One compliance tick of ``dt`` s: contact ``force`` (3,) N (:meth:`contact_force`) and the
        measured joints ``q`` (J,) → the actuators' position targets (A,) moved from ``target`` (A,)."""
        assert self.admittance is not None, "tick() needs cartesian.compliance"
        fx, fy, fz = float(force[0]), float(force[1]), float(force[2])
        f_norm = math.sqrt(fx * fx + fy * fy + fz * fz)
        self.period_peak = max(self.period_peak, f_norm)
        if self._free_qdot is not None and f_norm <= self.admittance.config.force_deadband:
            qdot = self._free_qdot  # the admittance's free-motion case (see begin_period): same numbers
        else:
            v = self.admittance.step(self._v_ref, force, dt)
            qdot = self._qdot_ref + self._pinv_lin @ (v - self._v_ref)  # (J,)
            ratio = float((np.abs(qdot) / self.velocity_limit).max())
            if ratio > 1.0:
                qdot = qdot / ratio
        out = target.copy()
        idx = self.actuator_joint
        out[self.actuator_mask] = integrate_position_targets(target[self.actuator_mask], qdot[idx], q[idx], dt,
                                                             self.config.max_tracking_error, self.target_lower,
                                                             self.target_upper)
        return out

    def run_period(self, model: mujoco.MjModel, data: mujoco.MjData, target: np.ndarray, actuators: np.ndarray,
                   force_slice: slice, substeps: int) -> np.ndarray:
        """``substeps`` physics steps of one control period with a compliance tick before each
        (simulation), in compiled code (:mod:`morl_robot.robots.compiled_period`): per tick, the F/T
        reading MuJoCo computed for the step just taken (:meth:`contact_force`), :meth:`tick`, the
        targets to ``actuators``' ``ctrl``, one ``mj_step``.  :meth:`run_period_reference` is the same
        period in Python.  Returns the targets (A,)."""
        adm = self.admittance
        assert adm is not None, "run_period() needs cartesian.compliance"
        blocks, mask, idx = self._blocks, self.actuator_mask, self.actuator_joint
        if blocks is None or blocks.data is not data or self._blocks_actuators is not actuators:  # once per robot
            blocks = self._blocks = PeriodBlocks(model, data, data.site_xmat[self.sensor_site], data.sensordata[force_slice],
                                                 self.qadr[idx], actuators[mask], idx, len(self.velocity_limit))
            self._blocks_actuators = actuators
        c, f = adm.config, blocks.f
        dt = model.opt.timestep
        f[:8] = (dt, c.stiffness, c.damping, c.force_limit, c.force_deadband, adm.max_speed,
                 self.config.max_tracking_error, self.period_peak)
        f[8:11], f[11:14], f[14:17] = self._bias, self._v_ref, adm.offset
        blocks.qdot_ref[:], blocks.pinv_lin[:], blocks.velocity_limit[:] = self._qdot_ref, self._pinv_lin, self.velocity_limit
        blocks.lower[:], blocks.upper[:] = self.target_lower, self.target_upper
        free = self._free_qdot
        if free is not None:
            blocks.free_step[:] = free[idx] * dt
        out = target.copy()
        blocks.ctrl[actuators] = out
        blocks.moved[:] = out[mask]
        self.period_peak = blocks.run(substeps, free is not None)
        adm.offset = f[14:17].copy()
        out[mask] = blocks.moved
        return out

    def run_period_reference(self, model: mujoco.MjModel, data: mujoco.MjData, target: np.ndarray,
                             actuators: np.ndarray, force_slice: slice, substeps: int) -> np.ndarray:
        """:meth:`run_period` in Python (the reference the compiled period is tested against): the
        per-tick loop's arithmetic, with what does not change within the period (sensor and joint
        views, index arrays, the free-motion q̇·dt) taken once.  Returns the targets (A,)."""
        assert self.admittance is not None, "run_period() needs cartesian.compliance"
        dt = model.opt.timestep
        rotation = data.site_xmat[self.sensor_site].reshape(3, 3)  # views: MuJoCo updates them in place
        reading, qpos, ctrl = data.sensordata[force_slice], data.qpos, data.ctrl
        mask, idx = self.actuator_mask, self.actuator_joint
        cached = self._period_index
        if cached is None or cached[0] is not actuators:  # the robot passes the same array every period
            cached = self._period_index = (actuators, _as_slice(self.qadr[idx]), _as_slice(actuators[mask]))
        _, q_index, ctrl_index = cached  # qpos address of each target's joint, its actuator's ctrl
        out = target.copy()
        ctrl[actuators] = out
        moved = out[mask]  # (A',) the targets the ticks move
        lead, lower, upper = self.config.max_tracking_error, self.target_lower, self.target_upper
        bias, deadband, adm = self._bias, self.admittance.config.force_deadband, self.admittance
        free_step = None if self._free_qdot is None else self._free_qdot[idx] * dt
        peak = self.period_peak
        # every tick's arrays written in place (the same arithmetic, no allocations); a contiguous
        # joint range is a view of qpos, which mj_step updates in place
        rotated, force, low, high = np.empty(3), np.empty(3), np.empty(len(moved)), np.empty(len(moved))
        q_view = qpos[q_index] if isinstance(q_index, slice) else None
        mj_step, clip, matmul, subtract, add = mujoco.mj_step, _CLIP, np.matmul, np.subtract, np.add
        for _ in range(substeps):
            matmul(rotation, reading, out=rotated)
            subtract(bias, rotated, out=force)
            fx, fy, fz = force.tolist()
            f_norm = math.sqrt(fx * fx + fy * fy + fz * fz)
            peak = max(peak, f_norm)
            if free_step is not None and f_norm <= deadband:
                add(moved, free_step, out=moved)
            else:
                v = adm.step(self._v_ref, force, dt)
                qdot = self._qdot_ref + self._pinv_lin @ (v - self._v_ref)  # (J,)
                ratio = float((np.abs(qdot) / self.velocity_limit).max())
                if ratio > 1.0:
                    qdot = qdot / ratio
                add(moved, qdot[idx] * dt, out=moved)
            q = q_view if q_view is not None else qpos[q_index]
            subtract(q, lead, out=low)
            add(q, lead, out=high)
            clip(moved, low, high, out=moved)  # integrate_position_targets (max, then min), in place
            clip(moved, lower, upper, out=moved)
            ctrl[ctrl_index] = moved
            mj_step(model, data)
        self.period_peak = peak
        out[mask] = moved
        return out

    def actuator_velocities(self, qdot: np.ndarray, n_actuators: int) -> np.ndarray:
        """Velocity targets (A,) of ``qdot`` (J,) for a velocity interface (others: 0)."""
        out = np.zeros(n_actuators)
        out[self.actuator_mask] = qdot[self.actuator_joint]
        return out


def quat_error(target_wxyz: np.ndarray, current_wxyz: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) taking ``current`` to ``target`` (both unit quaternions, w first),
    expressed in the base frame: used to hold orientation while translating."""
    w1, x1, y1, z1 = target_wxyz.tolist()
    w2, x2, y2, z2 = current_wxyz.tolist()
    x2, y2, z2 = -x2, -y2, -z2
    # q_err = target ⊗ conj(current)
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        return np.zeros(3)
    k = 2.0 * math.atan2(s, w) / s
    return np.array([x * k, y * k, z * k])
