"""Exact hypervolume of a set of K-objective return vectors (maximisation).

The hypervolume indicator (Zitzler & Thiele, 1998) of a point set P with respect to a reference
point r is the Lebesgue measure of the region dominated by P and bounded by r:

    HV(P; r) = λ( ∪_{p ∈ P, p ≻ r} [r_1, p_1] × … × [r_K, p_K] ).

It is the headline Pareto-front metric of the MO-MPO paper (Abdolmaleki et al., 2020, Table 1:
reference point [0, 20] for touch/turn), of PGMORL and of the MORL-generalisation benchmark.
Only points that *strictly* dominate ``r`` (every coordinate larger) enclose a box of positive
volume; the others contribute nothing.

Algorithms (all exact; shapes: P points, K objectives):

* K = 1: the largest gain over the reference.
* K = 2: sort by the first objective (descending), running maximum of the second; the area is a
  sum of strips (O(P log P), vectorised).
* K = 3: sweep over the third objective (descending), inserting each point into a 2-D
  staircase whose dominated area is updated incrementally; each slab between consecutive levels
  contributes its depth times that area (O(P log P) plus list moves; cf. HV3D, Beume et al. 2009).
* K ≥ 4: HSO-style slicing (While et al., 2006, "A faster algorithm for calculating
  hypervolume"): slice along the last objective, each slab is a (K−1)-dimensional problem on the
  non-dominated projection of the points above it; recursion ends in the K = 3 sweep.
  Exponential in K in the worst case but exact; fine for the front sizes of RL experiments
  (tens to a few hundred points at K ≤ 5).

Everything works on gains ``q = p − r`` (all positive after filtering), so the region is the
union of the origin-anchored boxes [0, q].
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["hypervolume", "hypervolume_contributions"]


def _as_points(points: ArrayLike, ref: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate and return ``points`` (P, K) and ``ref`` (K,) as float64 arrays."""
    ref_arr = np.asarray(ref, dtype=np.float64).reshape(-1)
    pts = np.asarray(points, dtype=np.float64)
    if pts.size == 0:
        return pts.reshape(0, ref_arr.shape[0]), ref_arr
    if pts.ndim == 1:
        pts = pts.reshape(1, -1)
    if pts.ndim != 2:
        raise ValueError(f"points must have shape (P, K), got {pts.shape}")
    if pts.shape[1] != ref_arr.shape[0]:
        raise ValueError(f"points have K={pts.shape[1]} objectives but ref has {ref_arr.shape[0]}")
    if not np.all(np.isfinite(ref_arr)):
        raise ValueError("ref must be finite")
    if np.any(np.isnan(pts)):
        raise ValueError("points contain NaN")
    return pts, ref_arr


def _nondominated_gains(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Non-dominated, de-duplicated rows of ``q`` (P, K) under maximisation (vectorised, chunked)."""
    if q.shape[0] <= 1:
        return q
    q = np.unique(q, axis=0)  # rows unique: "≥ everywhere" below means "dominates or equals"
    n, k = q.shape
    if n <= 1:
        return q
    keep = np.ones(n, dtype=bool)
    chunk = max(1, 4_000_000 // (n * k))
    for start in range(0, n, chunk):
        block = q[start : start + chunk]  # (C, K)
        ge = np.all(q[:, None, :] >= block[None, :, :], axis=2)  # (P, C): q_i ≥ block_j
        ge[start + np.arange(block.shape[0]), np.arange(block.shape[0])] = False  # not itself
        keep[start : start + chunk] = ~ge.any(axis=0)
    return q[keep]


def _hv2(q: NDArray[np.float64]) -> float:
    """Area of the union of boxes [0, q_i] for gains ``q`` (P, 2), all positive."""
    if q.shape[0] == 0:
        return 0.0
    order = np.lexsort((-q[:, 1], -q[:, 0]))  # x descending, then y descending
    x = q[order, 0]
    y_max = np.maximum.accumulate(q[order, 1])
    dy = np.diff(y_max, prepend=0.0)  # (P,) new height each point adds, at width x
    return float(np.dot(x, dy))


class _Staircase2D:
    """A 2-D non-dominated staircase (x ascending, y descending) with its dominated area, updated
    point by point in O(log P + removed) — the inner structure of the 3-D sweep (cf. HV3D,
    Beume et al., 2009)."""

    def __init__(self) -> None:
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.area = 0.0

    def insert(self, px: float, py: float) -> None:
        xs, ys = self.xs, self.ys
        i = bisect.bisect_left(xs, px)  # first point with x >= px: the highest y among those
        if i < len(xs) and ys[i] >= py:
            return  # dominated (or equal): no new area
        h = ys[i] if i < len(xs) else 0.0  # staircase height just left of px
        right, added = px, 0.0
        j = i - 1
        while j >= 0 and ys[j] < py:  # points left of px and below py: covered by the new box
            added += (right - xs[j]) * (py - h)
            right, h = xs[j], ys[j]
            j -= 1
        left = xs[j] if j >= 0 else 0.0
        added += (right - left) * (py - h)
        stop = i + 1 if i < len(xs) and xs[i] == px else i  # same x, lower y: dominated too
        xs[j + 1 : stop] = [px]
        ys[j + 1 : stop] = [py]
        self.area += added


def _hv3(q: NDArray[np.float64]) -> float:
    """Volume of the union of boxes [0, q_i] for gains ``q`` (P, 3): sweep down the 3rd axis,
    inserting each point into a 2-D staircase; each slab adds its depth times the current area."""
    if q.shape[0] == 0:
        return 0.0
    order = np.argsort(-q[:, 2], kind="stable")
    q = q[order]
    z = q[:, 2]
    depth = z - np.append(z[1:], 0.0)  # (P,) slab thickness below point i (0 for ties)
    stairs = _Staircase2D()
    total = 0.0
    for (x, y), d in zip(q[:, :2].tolist(), depth.tolist()):
        stairs.insert(x, y)
        total += d * stairs.area
    return float(total)


def _hv_slicing(q: NDArray[np.float64]) -> float:
    """Exact hypervolume of gains ``q`` (P, K), K ≥ 1, by slicing along the last objective."""
    k = q.shape[1]
    if q.shape[0] == 0:
        return 0.0
    if k == 1:
        return float(q[:, 0].max())
    if k == 2:
        return _hv2(q)
    if k == 3:
        return _hv3(q)
    q = _nondominated_gains(q)
    order = np.argsort(-q[:, -1], kind="stable")
    q = q[order]
    last = q[:, -1]
    depth = last - np.append(last[1:], 0.0)  # (P,)
    total = 0.0
    for i in np.flatnonzero(depth > 0):
        total += depth[i] * _hv_slicing(q[: i + 1, :-1])
    return float(total)


def hypervolume(points: ArrayLike, ref: ArrayLike | Sequence[float]) -> float:
    """Exact hypervolume dominated by ``points`` (P, K) and bounded by ``ref`` (K,), maximising.

    Only points that strictly dominate ``ref`` (every coordinate larger) count; dominated and
    duplicate points do not change the value.  Returns 0.0 for an empty set.

    >>> hypervolume([[1.0, 2.0], [2.0, 1.0]], [0.0, 0.0])
    3.0
    """
    pts, ref_arr = _as_points(points, ref)
    if pts.shape[0] == 0:
        return 0.0
    q = pts - ref_arr  # (P, K) gains over the reference
    q = q[np.all(q > 0, axis=1)]
    if q.shape[0] == 0:
        return 0.0
    if np.any(np.isinf(q)):
        return float("inf")
    return _hv_slicing(q)


def hypervolume_contributions(points: ArrayLike, ref: ArrayLike | Sequence[float]) -> NDArray[np.float64]:
    """Exclusive contribution of each point (P,): HV(P) − HV(P \\ {p}).

    Dominated points and all but one copy of a duplicate contribute 0 (a duplicate's removal
    leaves the other copy).  O(P) hypervolume evaluations; meant for small fronts (reports,
    choosing which policy to keep).
    """
    pts, ref_arr = _as_points(points, ref)
    total = hypervolume(pts, ref_arr)
    out = np.empty(pts.shape[0], dtype=np.float64)
    for i in range(pts.shape[0]):
        out[i] = total - hypervolume(np.delete(pts, i, axis=0), ref_arr)
    return out
