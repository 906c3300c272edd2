"""Resolved-rate Cartesian velocity control (pure numpy, no simulator).

The Sawyer policy of the MO-MPO paper (section 6) acts in end-effector Cartesian velocity.  A
twist ẋ = [v; ω] (6,) is turned into joint velocities with damped least squares

    q̇ = Jᵀ (J Jᵀ + λ² I)⁻¹ ẋ                                   (Nakamura & Hanafusa 1986)

respecting joint limits: a joint that would cross ``[lower + margin, upper − margin]`` within one
control period in the direction the solution drives it is frozen (its Jacobian column removed) and
the system is solved again; then q̇ is scaled uniformly (direction kept) so that every
|q̇_i| ≤ velocity_limit_i.
"""
from __future__ import annotations

import math

import mujoco
import numpy as np


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
