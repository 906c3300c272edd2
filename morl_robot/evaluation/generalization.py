"""Generalisation across environment contexts: the MORL-generalisation paper's metrics (issue 37).

Per context c, with a policy's front F (mean return vectors, one per preference or policy) and a
reference front F*_c (the paper: specialists trained on c; here by default the nondominated union
of everything evaluated on c, see :func:`reference_front`):

* :func:`hypervolume_raw` — HV at a raw reference point (``moocore``, maximisation);
* :func:`normalised_hypervolume` — HV of (v − v_min) / (v_max − v_min) at the origin, v_min/v_max
  the reference front's per-objective minimum and maximum (the reference front itself lies in the
  unit box);
* :func:`nhgr` = HV_norm(F) / HV_norm(F*_c);
* :func:`eum` / :func:`eugr` — expected utility (linear utilities, weights uniform on the simplex)
  and its ratio to the reference front's.  The paper leaves EUM on the raw returns, for utilities
  that carry the stakeholders' scales; uniform weights carry none (the Sawyer's force cost would
  swamp its task return), so :func:`eugr` measures utilities on the objectives normalised as for
  HV_norm (each in [0, 1] over the reference front).

:func:`aggregate` puts the scores of seeds × contexts through ``rliable``: IQM and optimality gap
(target 1) with stratified bootstrap CIs.  Everything else (running the protocol per context) is
:func:`evaluate_in_context`.  How-to: docs/howto/generalization.md.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from morl_robot.errors import UsageError


def _points(points: ArrayLike, k: int | None = None) -> np.ndarray:
    p = np.asarray(points, dtype=np.float64)
    p = p.reshape(0, k or 0) if p.size == 0 else (p.reshape(1, -1) if p.ndim == 1 else p)
    if p.ndim != 2 or (k is not None and p.shape[1] != k):
        raise ValueError(f"points must have shape (P, {k or 'K'}), got {p.shape}")
    return p


def nondominated(points: ArrayLike) -> np.ndarray:
    """The points of ``points`` (P, K) no other point weakly dominates (maximisation; duplicates once)."""
    p = np.unique(_points(points), axis=0)
    keep = [i for i in range(len(p))
            if not np.any(np.all(p >= p[i], axis=1) & np.any(p > p[i], axis=1))]
    return p[keep]


def hypervolume_raw(points: ArrayLike, ref: Sequence[float]) -> float:
    """HV of ``points`` (P, K) at the raw reference point ``ref`` (K,), maximisation (moocore)."""
    import moocore

    r = np.asarray(ref, dtype=np.float64)
    p = _points(points, r.size)
    p = p[np.all(p > r, axis=1)]
    return float(moocore.hypervolume(p, ref=r, maximise=True)) if len(p) else 0.0


def bounds(reference: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The reference front's per-objective minimum and maximum (v_min, v_max)."""
    ref = _points(reference)
    if not len(ref):
        raise ValueError("the reference front is empty")
    return ref.min(axis=0), ref.max(axis=0)


def normalised_hypervolume(points: ArrayLike, reference: ArrayLike) -> float:
    """HV_norm: the hypervolume of the points normalised by the reference front's min/max, at the
    origin.  An objective on which the reference front has no spread (v_max = v_min) cannot be
    normalised: NaN."""
    lo, hi = bounds(reference)
    span = hi - lo
    if np.any(span <= 0):
        return math.nan
    q = (_points(points, lo.size) - lo) / span
    return hypervolume_raw(q, np.zeros(lo.size))


def nhgr(points: ArrayLike, reference: ArrayLike) -> float:
    """Normalised Hypervolume Generalisation Ratio HV_norm(F) / HV_norm(F*) (1: the reference's)."""
    den = normalised_hypervolume(reference, reference)
    if not den > 0:
        return math.nan
    return normalised_hypervolume(points, reference) / den


def simplex_weights(k: int, n: int = 101) -> np.ndarray:
    """Evenly spaced weights on the (K−1)-simplex (K = 2: n points; K > 2: a grid of ~n points)."""
    if k == 1:
        return np.ones((1, 1))
    if k == 2:
        w = np.linspace(0.0, 1.0, n)
        return np.stack([w, 1.0 - w], axis=1)
    steps = max(1, round(n ** (1.0 / (k - 1))))
    grid = [c for c in np.ndindex(*(steps + 1,) * (k - 1)) if sum(c) <= steps]
    return np.array([[*c, steps - sum(c)] for c in grid], dtype=np.float64) / steps


def eum(points: ArrayLike, ref: Sequence[float], weights: np.ndarray | None = None) -> float:
    """Expected utility: mean over ``weights`` of max over the front of w·(v − ref) (linear utility)."""
    r = np.asarray(ref, dtype=np.float64)
    p = _points(points, r.size)
    if not len(p):
        return math.nan
    w = simplex_weights(r.size) if weights is None else np.asarray(weights, dtype=np.float64)
    return float(np.mean(np.max((p - r) @ w.T, axis=0)))


def eugr(points: ArrayLike, reference: ArrayLike) -> float:
    """Expected Utility Generalisation Ratio EUM(F) / EUM(F*), utilities on the objectives
    normalised by the reference front's min/max (NaN if it has no spread)."""
    lo, hi = bounds(reference)
    span = hi - lo
    if np.any(span <= 0):
        return math.nan
    origin = np.zeros(lo.size)
    den = eum((_points(reference, lo.size) - lo) / span, origin)
    return eum((_points(points, lo.size) - lo) / span, origin) / den if den > 0 else math.nan


def reference_front(fronts: Sequence[ArrayLike]) -> np.ndarray:
    """The nondominated union of ``fronts`` (the paper's approximation of F*_c when no optimum is
    known: the union of every evaluated policy's front on that context)."""
    pts = [_points(f) for f in fronts if np.asarray(f).size]
    if not pts:
        raise ValueError("no fronts to build a reference from")
    return nondominated(np.concatenate(pts))


def context_metrics(front: ArrayLike, reference: ArrayLike, ref: Sequence[float]) -> dict[str, float]:
    """Every per-context metric of ``front`` against ``reference`` (F*_c) at raw point ``ref``."""
    return {"hv": hypervolume_raw(front, ref), "hv_norm": normalised_hypervolume(front, reference),
            "nhgr": nhgr(front, reference), "eum": eum(front, ref), "eugr": eugr(front, reference)}


def aggregate(scores: dict[str, np.ndarray], reps: int = 2000, seed: int = 0,
              confidence: float = 0.95) -> dict[str, dict[str, Any]]:
    """``scores``: name → (runs, contexts) array (e.g. NHGR per policy seed × context).  IQM and
    optimality gap (target 1) with ``rliable``'s stratified bootstrap CIs (runs resampled within
    each context).  A context whose score is NaN for every method (a reference front without
    spread) is left out, and named in ``excluded`` (none left: every value NaN); a remaining NaN counts as 0.  Returns
    name → {"iqm": {value, ci_low, ci_high}, "optimality_gap": {…}, "runs", "contexts", "excluded"}."""
    from rliable import library as rly
    from rliable import metrics

    arrays: dict[str, np.ndarray] = {}
    for name, s in scores.items():
        a = np.asarray(s, dtype=np.float64)
        if a.ndim != 2 or a.size == 0:
            raise UsageError(f"scores of '{name}' must be a (runs, contexts) array, got shape {a.shape}")
        arrays[name] = a
    widths = {a.shape[1] for a in arrays.values()}
    if len(widths) != 1:
        raise UsageError(f"every method needs the same contexts, got {sorted(widths)} columns")
    keep = ~np.all(np.stack([np.all(np.isnan(a), axis=0) for a in arrays.values()]), axis=0)
    excluded = [int(i) for i in np.flatnonzero(~keep)]
    if not keep.any():  # nothing to aggregate (e.g. policies that all reach one point): undefined, not an error
        nan = {"value": math.nan, "ci_low": math.nan, "ci_high": math.nan}
        return {n: {"iqm": dict(nan), "optimality_gap": dict(nan), "runs": int(a.shape[0]), "contexts": 0,
                    "excluded": excluded} for n, a in arrays.items()}
    clean = {n: np.nan_to_num(a[:, keep], nan=0.0) for n, a in arrays.items()}

    def func(x: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(x), metrics.aggregate_optimality_gap(x, 1.0)])

    points = {n: func(a) for n, a in clean.items()}
    intervals: dict[str, np.ndarray] = {}
    if any(a.shape[0] > 1 for a in clean.values()):
        import warnings

        with warnings.catch_warnings():  # arch's notice that rliable still passes a RandomState
            warnings.simplefilter("ignore", FutureWarning)
            _, intervals = rly.get_interval_estimates(clean, func, reps=reps, confidence_interval_size=confidence,
                                                      random_state=np.random.RandomState(seed))
    out = {}
    for n, a in clean.items():
        ci = intervals.get(n) if a.shape[0] > 1 else None
        out[n] = {key: {"value": float(points[n][i]),
                        "ci_low": float(ci[0, i]) if ci is not None else float(points[n][i]),
                        "ci_high": float(ci[1, i]) if ci is not None else float(points[n][i])}
                  for i, key in enumerate(("iqm", "optimality_gap"))}
        out[n].update(runs=int(a.shape[0]), contexts=int(a.shape[1]), excluded=excluded)
    return out


def evaluate_in_context(loaded: Any, context: Any, episodes: int, seed: int, safety: bool = True,
                        progress: bool = False) -> Any:
    """The one evaluation protocol (:func:`~morl_robot.evaluation.protocol.evaluate_policy`) of a
    :class:`~morl_robot.evaluation.protocol.LoadedPolicy` with every episode in ``context`` (a
    :class:`morl_robot.contexts.Context`); the context is recorded in the result and in every episode."""
    from morl_robot.evaluation.protocol import evaluate_policy

    def env_fn() -> Any:
        env = loaded.make_env()
        env.set_contexts(context)
        return env

    ev = evaluate_policy(loaded.act, loaded.task, episodes, seed, loaded.description, env_fn=env_fn,
                         safety=safety, progress=progress)
    ev.extra["context"] = context.to_json()
    return ev
