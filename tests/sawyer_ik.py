"""Inverse kinematics for the Sawyer tests: the peg tip at a point, the peg along world −z."""
from __future__ import annotations

import mujoco
import numpy as np


def peg_down_ik(m: mujoco.MjModel, q_start: np.ndarray, tip: np.ndarray, iters: int = 200, tolerance: float = 1e-11,
                damping: float = 1e-8) -> np.ndarray:
    """Joint positions putting site ``peg_tip`` at ``tip`` (3,) with the peg along world −z: damped
    least squares on ``mj_jacSite`` (position + axis alignment) on a scratch MjData, from ``q_start``."""
    d = mujoco.MjData(m)
    sid = m.site("peg_tip").id
    q = q_start.copy()
    lo, hi = m.jnt_range[:, 0], m.jnt_range[:, 1]
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for _ in range(iters):
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, jp, jr, sid)
        axis = d.site_xmat[sid].reshape(3, 3)[:, 2]
        err = np.concatenate([tip - d.site_xpos[sid], np.cross(axis, [0.0, 0.0, -1.0])])
        if np.linalg.norm(err) < tolerance:
            break
        jac = np.vstack([jp, jr])
        q = np.clip(q + jac.T @ np.linalg.solve(jac @ jac.T + damping * np.eye(6), err), lo, hi)
    return q
