"""Pareto filtering and the scalar front metrics used across MORL papers (maximisation).

* :func:`pareto_front` / :func:`pareto_mask`: the non-dominated subset of a set of return vectors
  (MO-MPO, Abdolmaleki et al. 2020, §3 "Problem Statement": a policy is non-dominated if no other
  improves one objective without reducing another).
* :func:`expected_utility`: the expected utility metric EUM (Zintgraf et al., 2015; used by PGMORL
  and the MORL-generalisation benchmark): the mean over weight vectors w of max_p w·p.
* :func:`simplex_weights`: equally spaced weight vectors on the probability simplex.
* :func:`sparsity`: PGMORL's sparsity (Xu et al., 2020, eq. 5):
  S(P) = 1/(|P|−1) Σ_j Σ_i (P̃_j(i) − P̃_j(i+1))², P̃_j the sorted values of objective j.
* :func:`cardinality`: the number of distinct non-dominated points.

Shapes: P points, K objectives, W weight vectors.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "cardinality",
    "dominates",
    "expected_utility",
    "pareto_front",
    "pareto_mask",
    "simplex_weights",
    "sparsity",
]


def _as_matrix(points: ArrayLike) -> NDArray[np.float64]:
    """``points`` as a float64 (P, K) matrix; an empty input becomes (0, 0)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.size == 0:
        return pts.reshape(0, pts.shape[-1] if pts.ndim == 2 else 0)
    if pts.ndim == 1:
        pts = pts.reshape(1, -1)
    if pts.ndim != 2:
        raise ValueError(f"points must have shape (P, K), got {pts.shape}")
    if np.any(np.isnan(pts)):
        raise ValueError("points contain NaN")
    return pts


def dominates(a: ArrayLike, b: ArrayLike) -> bool:
    """True when return vector ``a`` (K,) Pareto-dominates ``b`` (K,): a ≥ b everywhere, > somewhere."""
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.all(a_arr >= b_arr) and np.any(a_arr > b_arr))


def pareto_mask(points: ArrayLike) -> NDArray[np.bool_]:
    """Boolean mask (P,) of the non-dominated points; of several equal points only the first is set."""
    pts = _as_matrix(points)
    n = pts.shape[0]
    if n <= 1:
        return np.ones(n, dtype=bool)
    mask = np.empty(n, dtype=bool)
    # Chunked pairwise test (no sort: the exact-front iteration calls this ~10^5 times on a few
    # points). Column j is dropped if some row i has p_i ≥ p_j everywhere and either p_i ≠ p_j
    # (Pareto dominance) or p_i = p_j with i < j (a later copy of an equal point).
    chunk = max(1, 2_000_000 // (n * pts.shape[1]))
    rows = np.arange(n)[:, None]  # (P, 1)
    for start in range(0, n, chunk):
        block = pts[start : start + chunk]  # (C, K)
        ge = (pts[:, None, :] >= block[None, :, :]).all(axis=2)  # (P, C): p_i ≥ block_j
        le = (pts[:, None, :] <= block[None, :, :]).all(axis=2)  # (P, C): p_i ≤ block_j
        cols = np.arange(start, start + block.shape[0])[None, :]  # (1, C)
        drop = ge & (~le | (rows < cols))  # dominated by row i, or equal to an earlier row i
        mask[start : start + block.shape[0]] = ~drop.any(axis=0)
    return mask


def pareto_front(points: ArrayLike) -> NDArray[np.float64]:
    """Non-dominated points (F, K) of ``points`` (P, K), each distinct point once, sorted by
    the first objective (then the next ones) ascending."""
    pts = _as_matrix(points)
    front = pts[pareto_mask(pts)]
    if front.shape[0] > 1:
        front = front[np.lexsort(front.T[::-1])]
    return front


def expected_utility(points: ArrayLike, weights: ArrayLike) -> float:
    """EUM: mean over weight vectors ``weights`` (W, K) of max over ``points`` (P, K) of w·p.

    With linear utilities the best point for a weight is the one an oracle user with that
    weight would pick; EUM averages that utility over the weight distribution.
    """
    pts = _as_matrix(points)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        w = w.reshape(1, -1)
    if pts.shape[0] == 0:
        raise ValueError("expected_utility of an empty point set is undefined")
    if w.shape[1] != pts.shape[1]:
        raise ValueError(f"weights have K={w.shape[1]} but points have K={pts.shape[1]}")
    utilities = w @ pts.T  # (W, P)
    return float(utilities.max(axis=1).mean())


def simplex_weights(num_objectives: int, divisions: int) -> NDArray[np.float64]:
    """All weight vectors (W, K) on the simplex with coordinates in {0, 1/d, …, 1} summing to 1.

    W = C(d + K − 1, K − 1); e.g. K = 2, d = 100 gives the 101 weights [w, 1 − w] that the
    MO-MPO paper sweeps for scalarized MPO on Deep Sea Treasure (§5.2).
    """
    if num_objectives < 1 or divisions < 1:
        raise ValueError("num_objectives and divisions must be >= 1")
    k, d = num_objectives, divisions
    rows = []
    # Stars and bars: choose K−1 bar positions among d + K − 1 slots.
    for bars in itertools.combinations(range(d + k - 1), k - 1):
        edges = (-1,) + bars + (d + k - 1,)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(k)])
    w = np.asarray(rows, dtype=np.float64) / d
    assert w.shape[0] == math.comb(d + k - 1, k - 1)
    return w[np.lexsort(w.T[::-1])] if k > 1 else w


def sparsity(front: ArrayLike) -> float:
    """PGMORL sparsity of ``front`` (P, K): Σ_j Σ_i (sorted gap of objective j)² / (P − 1).

    Lower is denser.  0.0 for fewer than two points.  Apply it to a Pareto front (the metric is
    defined on one); duplicates add zero gaps but do count in P.
    """
    pts = _as_matrix(front)
    if pts.shape[0] < 2:
        return 0.0
    gaps = np.diff(np.sort(pts, axis=0), axis=0)  # (P−1, K)
    return float(np.sum(gaps**2) / (pts.shape[0] - 1))


def cardinality(points: ArrayLike) -> int:
    """Number of distinct non-dominated points among ``points`` (P, K)."""
    return int(pareto_mask(points).sum())
