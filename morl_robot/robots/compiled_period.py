"""The compliant MuJoCo robot's control period in compiled code (numba; issue 36).

One call runs a whole period: per physics substep the F/T reading rotated into the base frame and
tared, the force-limited admittance (:class:`~morl_robot.robots.compliance.ForceLimitedAdmittance`'s
law), the reference joint velocities plus the DLS pseudo-inverse image of its correction, the lead
and range clamps of the position targets, the ``ctrl`` write, then MuJoCo's C ``mj_step`` through
the wheel's own ``libmujoco`` (the same library the bindings use; no Python between substeps).  The
maths is :meth:`~morl_robot.robots.kinematics.CartesianController.run_period_reference`'s, which
stays the reference (``tests/test_sawyer_env_fast_path.py`` holds them together); the parameters
come from the same dataclasses, passed as scalars and arrays.  The arrays it reads and writes are
numpy views of the ``MjData`` buffers, which ``mj_step`` updates in place.

Compiled once per machine: numba's cache (next to this file, or its user-wide cache directory when
the package is read-only; ``NUMBA_CACHE_DIR`` overrides both).  Floating point: the 3-vector dot
products and the small matrix-vector products are summed left to right here, where numpy calls
OpenBLAS (fused multiply-adds): the targets differ in the last bits, not in their arithmetic.
See docs/explanation/contact_control.md.
"""
from __future__ import annotations

import ctypes
import glob
import math
import os

import llvmlite.binding as _llvm
import mujoco
import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from morl_robot.errors import ConfigError


def _libmujoco() -> ctypes.CDLL:
    """The MuJoCo shared library of the ``mujoco`` wheel (already loaded by its bindings: the same
    handle, so the same plugins and callbacks)."""
    folder = os.path.dirname(mujoco.__file__)
    found = sorted(glob.glob(os.path.join(folder, "libmujoco.so*")) + glob.glob(os.path.join(folder, "libmujoco*.dylib"))
                   + glob.glob(os.path.join(folder, "mujoco.dll")))
    if not found:
        raise ConfigError(f"no MuJoCo shared library (libmujoco.so*) next to the mujoco bindings in {folder}")
    return ctypes.CDLL(found[0])


_LIB = _libmujoco()
# registered under a private name: the compiled code (cached across processes) links to it by name
_llvm.add_symbol("morl_robot_mj_step", ctypes.cast(_LIB.mj_step, ctypes.c_void_p).value)
#: ``void mj_step(const mjModel*, mjData*)``, the pointers passed as integers (same calling convention)
_mj_step = types.ExternalFunction("morl_robot_mj_step", types.void(types.intp, types.intp))


@intrinsic
def _fma(typingctx, a, b, c):
    """a·b + c rounded once (LLVM's ``fma``: the FMA instruction, or libm's where there is none)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@njit(cache=True, inline="always")
def _dot3(a0: float, a1: float, a2: float, b0: float, b1: float, b2: float) -> float:
    """a·b (3,) rounded as numpy's ``a @ b`` (OpenBLAS ``ddot``, x86-64 AVX2 kernels)."""
    return _fma(a2, b2, _fma(a1, b1, a0 * b0))


@njit(cache=True, inline="always")
def _row3(a0: float, a1: float, a2: float, b0: float, b1: float, b2: float) -> float:
    """One row of a matrix (n, 3) @ (3,) rounded as numpy's (OpenBLAS ``dgemv``, x86-64 AVX2 kernels)."""
    return _fma(a2, b2, _fma(a0, b0, a1 * b1))


@njit(cache=True, nogil=True)
def compliant_period(model_ptr: int, data_ptr: int, substeps: int, dt: float,
                     xmat: np.ndarray, reading: np.ndarray, qpos: np.ndarray, q_adr: np.ndarray,
                     ctrl: np.ndarray, ctrl_adr: np.ndarray, moved: np.ndarray, joint_of: np.ndarray,
                     bias: np.ndarray, v_ref: np.ndarray, qdot_ref: np.ndarray, pinv_lin: np.ndarray,
                     velocity_limit: np.ndarray, free_step: np.ndarray, has_free: bool, offset: np.ndarray,
                     stiffness: float, damping: float, force_limit: float, deadband: float, max_speed: float,
                     lead: float, lower: np.ndarray, upper: np.ndarray, peak: float) -> float:
    """``substeps`` physics steps with a compliance tick before each; ``moved`` (A',) (the targets)
    and ``offset`` (3,) (the admittance's state) in place.  Returns the period's force peak (N).

    xmat (9,): the F/T sensor site's rotation (row-major); reading (3,): the force sensor's data;
    q_adr / ctrl_adr (A',): each target's joint in ``qpos`` and actuator in ``ctrl``; joint_of
    (A',): its joint's index in the (J,) arrays; free_step (A'): the free-motion q̇·dt (has_free)."""
    n_moved = moved.shape[0]
    n_joints = qdot_ref.shape[0]
    qdot = np.empty(n_joints)
    vr0, vr1, vr2 = v_ref[0], v_ref[1], v_ref[2]
    for _ in range(substeps):
        # contact force: bias − R·reading (the tared base-frame force on the tool)
        r0, r1, r2 = reading[0], reading[1], reading[2]
        fx = bias[0] - _row3(xmat[0], xmat[1], xmat[2], r0, r1, r2)
        fy = bias[1] - _row3(xmat[3], xmat[4], xmat[5], r0, r1, r2)
        fz = bias[2] - _row3(xmat[6], xmat[7], xmat[8], r0, r1, r2)
        f_norm = math.sqrt(fx * fx + fy * fy + fz * fz)
        peak = max(peak, f_norm)
        if has_free and f_norm <= deadband:
            for i in range(n_moved):
                moved[i] += free_step[i]
        else:
            # ForceLimitedAdmittance.step
            v0, v1, v2 = vr0, vr1, vr2
            contact = f_norm > deadband
            fe0 = fe1 = fe2 = 0.0
            if contact:
                n0, n1, n2 = fx / f_norm, fy / f_norm, fz / f_norm
                inward = -_dot3(v0, v1, v2, n0, n1, n2)
                if inward > 0.0:
                    g = min(max((force_limit - f_norm) / (force_limit - deadband), 0.0), 1.0)
                    push = (1.0 - g) * inward
                    v0 += push * n0
                    v1 += push * n1
                    v2 += push * n2
                excess = f_norm - deadband
                fe0, fe1, fe2 = n0 * excess, n1 * excess, n2 * excess
            if contact or stiffness != 0.0:
                den = damping + dt * stiffness
                e0, e1, e2 = offset[0], offset[1], offset[2]
                if contact:
                    n0e, n1e, n2e = (damping * e0 + dt * fe0) / den, (damping * e1 + dt * fe1) / den, (damping * e2 + dt * fe2) / den
                else:
                    n0e, n1e, n2e = damping * e0 / den, damping * e1 / den, damping * e2 / den
                v0 += (n0e - e0) / dt
                v1 += (n1e - e1) / dt
                v2 += (n2e - e2) / dt
                offset[0], offset[1], offset[2] = n0e, n1e, n2e
            speed = math.sqrt(_dot3(v0, v1, v2, v0, v1, v2))
            if speed > max_speed:
                s = max_speed / speed
                v0 *= s
                v1 *= s
                v2 *= s
            # q̇ = q̇_ref + pinv_lin (v − v_ref), scaled into the joint velocity limits
            d0, d1, d2 = v0 - vr0, v1 - vr1, v2 - vr2
            ratio = 0.0
            for j in range(n_joints):
                qdot[j] = qdot_ref[j] + _row3(pinv_lin[j, 0], pinv_lin[j, 1], pinv_lin[j, 2], d0, d1, d2)
                r = abs(qdot[j]) / velocity_limit[j]
                ratio = max(ratio, r)
            if ratio > 1.0:
                for j in range(n_joints):
                    qdot[j] = qdot[j] / ratio
            for i in range(n_moved):
                moved[i] += qdot[joint_of[i]] * dt
        # integrate_position_targets: never lead the measured joint by more than `lead`, within range
        for i in range(n_moved):
            q = qpos[q_adr[i]]
            x = min(max(moved[i], q - lead), q + lead)
            x = min(max(x, lower[i]), upper[i])
            moved[i] = x
            ctrl[ctrl_adr[i]] = x
        _mj_step(model_ptr, data_ptr)
    return peak


@njit(cache=True)
def probe_dot3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a·b (n, 3) × (n, 3) → (n,) as the period rounds it (tests compare numpy's)."""
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = _dot3(a[i, 0], a[i, 1], a[i, 2], b[i, 0], b[i, 1], b[i, 2])
    return out


@njit(cache=True)
def probe_rows3(m: np.ndarray, a: np.ndarray) -> np.ndarray:
    """m[i] @ a[i] (n, k, 3) × (n, 3) → (n, k) as the period rounds it (tests compare numpy's)."""
    out = np.empty(m.shape[:2])
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i, j] = _row3(m[i, j, 0], m[i, j, 1], m[i, j, 2], a[i, 0], a[i, 1], a[i, 2])
    return out
