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

import numpy as np


def damped_least_squares(jacobian: np.ndarray, twist: np.ndarray, damping: float) -> np.ndarray:
    """q̇ (n,) = Jᵀ (J Jᵀ + λ² I)⁻¹ ẋ for J (m, n), ẋ (m,)."""
    m = jacobian.shape[0]
    jjt = jacobian @ jacobian.T + (damping**2) * np.eye(m)
    return jacobian.T @ np.linalg.solve(jjt, twist)


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
    free = np.ones(n, dtype=bool)
    qdot = np.zeros(n)
    lo = lower + margin
    hi = upper - margin
    for _ in range(n):
        j = jacobian * free  # frozen joints contribute nothing
        qdot = damped_least_squares(j, twist, damping) * free
        nxt = q + qdot * dt
        violating = free & (((nxt > hi) & (qdot > 0)) | ((nxt < lo) & (qdot < 0)))
        if not violating.any():
            break
        free &= ~violating
    else:
        qdot = np.zeros(n)
    # A joint already inside the margin band may still move away from the limit, never into it.
    qdot = np.where((q >= hi) & (qdot > 0), 0.0, qdot)
    qdot = np.where((q <= lo) & (qdot < 0), 0.0, qdot)
    ratio = np.max(np.abs(qdot) / velocity_limit) if n else 0.0
    if ratio > 1.0:
        qdot = qdot / ratio
    return qdot


def quat_error(target_wxyz: np.ndarray, current_wxyz: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) taking ``current`` to ``target`` (both unit quaternions, w first),
    expressed in the base frame: used to hold orientation while translating."""
    w1, x1, y1, z1 = target_wxyz
    w2, x2, y2, z2 = current_wxyz[0], -current_wxyz[1], -current_wxyz[2], -current_wxyz[3]
    # q_err = target ⊗ conj(current)
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    vec = np.array([x, y, z])
    s = np.linalg.norm(vec)
    if s < 1e-12:
        return np.zeros(3)
    angle = 2.0 * np.arctan2(s, w)
    return vec / s * angle
