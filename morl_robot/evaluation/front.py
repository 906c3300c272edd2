"""Fronts of a preference sweep across seeds, and their metrics with confidence intervals.

A single-policy method such as MO-MPO traces a Pareto front by training one policy per preference
setting (MO-MPO paper §5.2: one run per ε setting).  With several seeds per setting, every seed
gives one front: the non-dominated set of the return vectors its policies reached under the
evaluation protocol (:mod:`morl_robot.evaluation.protocol`).  Per front:

* **hypervolume** w.r.t. a stated reference point (:func:`~morl_robot.evaluation.hypervolume.hypervolume`);
* **EUM**, expected utility (Zintgraf et al. 2015): mean over simplex weights of the best linear
  utility, on returns normalised to [0, 1] by the reference point (0) and the ideal point of the
  whole sweep (1), so objectives in N and in unitless reward weigh comparably;
* **sparsity** (PGMORL; on the same normalised returns);
* **cardinality** (distinct non-dominated points).

Across seeds each metric is summarised by its interquartile mean (IQM: the 25 % trimmed mean,
Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice", robust where seeds
disagree) with a percentile-bootstrap 95 % confidence interval over seeds (``scipy.stats``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from morl_robot.evaluation.hypervolume import hypervolume
from morl_robot.evaluation.pareto import (
    cardinality,
    expected_utility,
    pareto_mask,
    simplex_weights,
    sparsity,
)

__all__ = ["FrontPoint", "format_response", "front_report", "iqm_with_ci", "preference_response"]

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000


@dataclass(frozen=True)
class FrontPoint:
    """One trained policy of a sweep: its preference setting, seed and evaluated returns (K,)."""

    setting: str
    seed: int
    preference: Mapping[str, float]
    returns: tuple[float, ...]
    success_rate: float | None = None
    policy: str | None = None


def iqm_with_ci(values: Sequence[float] | NDArray[np.float64], confidence: float = CONFIDENCE,
                seed: int = 0) -> dict[str, float]:
    """``{"iqm", "ci_low", "ci_high", "n"}`` of ``values`` (S,) across seeds.

    IQM = mean of the middle 50 % (``scipy.stats.trim_mean(x, 0.25)``; with fewer than four
    values it trims nothing and equals the mean).  The CI is the percentile bootstrap of the IQM;
    with fewer than two distinct values it collapses to the IQM.
    """
    from scipy.stats import bootstrap, trim_mean

    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"iqm": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}
    iqm = float(trim_mean(x, 0.25))
    if x.size < 2 or np.ptp(x) == 0.0:
        return {"iqm": iqm, "ci_low": iqm, "ci_high": iqm, "n": int(x.size)}
    res = bootstrap((x,), lambda s, axis=-1: trim_mean(s, 0.25, axis=axis), confidence_level=confidence,
                    n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", rng=np.random.default_rng(seed))
    return {"iqm": iqm, "ci_low": float(res.confidence_interval.low), "ci_high": float(res.confidence_interval.high),
            "n": int(x.size)}


def preference_response(preference: Sequence[float], measures: Mapping[str, Sequence[float | None]],
                        groups: Sequence[Any] | None = None, resamples: int = 9_999,
                        seed: int = 0) -> dict[str, dict[str, float]]:
    """How each measure of a sweep's policies moves with the preference setting: the Spearman rank
    correlation ρ between the setting's value (P,) and the measure (P,), with a two-sided
    permutation p-value.

    This is the test of whether a front *trades*: where a setting gives one objective more weight
    as it grows (MO-MPO's ε_k: a larger KL bound, more influence on the policy, MO-MPO §4.2), that
    objective's measures should rise with it and the others' fall.  Rank-based, so ε and log ε give
    the same ρ.

    ``groups`` (P,), e.g. each policy's seed: ρ is then the mean of the within-group correlations and
    the permutations shuffle the settings within each group only (a stratified test), so a seed that
    is better at every setting adds no noise; the design of a front with one policy per (setting,
    seed), and of an ε-conditioned policy evaluated at every setting.  Without it all policies are one
    group.  The p-value counts the permutations whose |ρ| reaches the observed one: all of them when
    there are at most ``resamples`` + 1 (exact), else ``resamples`` random ones, p = (1 + hits) /
    (1 + resamples).  A sweep is small: the t approximation would call three perfectly ranked points
    certain.

    Policies whose measure is None or not finite are left out (``n`` counts the rest); groups with
    fewer than two of them, or constant in either column, add nothing; with no group left, or fewer
    than three policies, ρ and p are NaN.  Returns ``{name: {"rho", "p", "n"}}``.
    """
    import functools
    import itertools

    from scipy.stats import rankdata

    pref = np.asarray(preference, dtype=np.float64).reshape(-1)
    labels = np.zeros(pref.size, dtype=np.int64) if groups is None else np.unique(
        np.asarray(list(groups)), return_inverse=True)[1].reshape(-1)
    if labels.size != pref.size:
        raise ValueError(f"groups has {labels.size} values for {pref.size} preference settings")
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, float]] = {}
    for name, values in measures.items():
        y = np.asarray([math.nan if v is None else v for v in values], dtype=np.float64).reshape(-1)
        if y.shape != pref.shape:
            raise ValueError(f"measure '{name}' has {y.size} values for {pref.size} preference settings")
        ok = np.isfinite(y) & np.isfinite(pref)
        n = int(ok.sum())
        # per usable group: centred ranks of the setting (G_i,) and of the measure (G_i,), ties averaged
        strata = []
        for g in np.unique(labels[ok]):
            sel = ok & (labels == g)
            if sel.sum() >= 2 and np.ptp(pref[sel]) > 0 and np.ptp(y[sel]) > 0:
                rx, ry = (rankdata(v[sel]) - (sel.sum() + 1) / 2.0 for v in (pref, y))
                strata.append((rx, ry / np.sqrt((ry * ry).sum())))
        if n < 3 or not strata:
            out[name] = {"rho": math.nan, "p": math.nan, "n": n}
            continue

        statistic = functools.partial(_mean_within_group_rho, strata)
        observed = float(statistic([np.arange(rx.size)[None, :] for rx, _ in strata])[0])
        count = math.prod(math.factorial(rx.size) for rx, _ in strata)
        if count <= resamples + 1:  # every permutation of every group: exact
            per_group = [np.asarray(list(itertools.permutations(range(rx.size)))) for rx, _ in strata]
            grid = np.asarray(list(itertools.product(*[range(len(p)) for p in per_group])))  # (count, groups)
            stats = statistic([p[grid[:, i]] for i, p in enumerate(per_group)])
            p_value = float(np.mean(np.abs(stats) >= abs(observed) - 1e-12))
        else:
            orders = [rng.permuted(np.tile(np.arange(rx.size), (resamples, 1)), axis=1) for rx, _ in strata]
            hits = int(np.sum(np.abs(statistic(orders)) >= abs(observed) - 1e-12))
            p_value = (1 + hits) / (1 + resamples)
        out[name] = {"rho": observed, "p": p_value, "n": n}
    return out


def format_response(response: Mapping[str, Mapping[str, float | None]]) -> str:
    """One line of :func:`preference_response`'s result: ``name ρ (p …)`` per measure, ``—`` where
    it could not tell (NaN, or null once read back from JSON)."""
    def one(v: Mapping[str, float | None]) -> str:
        rho, p = v.get("rho"), v.get("p")
        if rho is None or p is None or not (math.isfinite(rho) and math.isfinite(p)):
            return "—"
        return f"{rho:+.2f} (p {p:.2g})"

    return ", ".join(f"{name} {one(v)}" for name, v in response.items())


def _mean_within_group_rho(strata: list[tuple[NDArray[np.float64], NDArray[np.float64]]],
                           orders: list[NDArray[np.int64]]) -> NDArray[np.float64]:
    """Mean within-group Spearman ρ (R,) of :func:`preference_response`: group i's centred setting
    ranks (G_i,) taken in the orders ``orders[i]`` (R, G_i) against its centred, unit-norm measure
    ranks (G_i,)."""
    total = np.zeros(orders[0].shape[0])
    for (rx, ry), order in zip(strata, orders):
        total += (rx[order] * ry).sum(axis=1) / np.sqrt((rx * rx).sum())  # (R,)
    return total / len(strata)


def _normalise(points: NDArray[np.float64], ref: NDArray[np.float64], ideal: NDArray[np.float64]) -> NDArray[np.float64]:
    span = np.where(ideal - ref > 0, ideal - ref, 1.0)
    return (points - ref) / span


def front_report(points: Sequence[FrontPoint], ref: ArrayLike, objective_names: Sequence[str],
                 weight_divisions: int = 100) -> dict[str, Any]:
    """Per-seed fronts and their metrics, and the metrics' IQM with CIs across seeds.

    Args:
        points: every evaluated policy of the sweep (settings × seeds).
        ref: (K,) hypervolume reference point, in return units (every point should dominate it;
            points that do not add no volume).
        objective_names: the K objective names, in the order of ``FrontPoint.returns``.
        weight_divisions: EUM weights = the simplex grid with this many divisions.

    Returns a JSON-ready dict: ``ref``, ``ideal`` (per-objective best over the sweep), ``per_seed``
    (seed → front points with their settings, hypervolume, EUM, sparsity, cardinality) and
    ``across_seeds`` (metric → IQM and CI), plus the front of all seeds' policies pooled.
    """
    ref_arr = np.asarray(ref, dtype=np.float64).reshape(-1)
    k = len(objective_names)
    if ref_arr.shape != (k,):
        raise ValueError(f"ref must have {k} values ({', '.join(objective_names)}), got {ref_arr.tolist()}")
    if not points:
        raise ValueError("front_report needs at least one evaluated policy")
    all_returns = np.asarray([p.returns for p in points], dtype=np.float64)  # (P, K)
    if all_returns.shape[1] != k:
        raise ValueError(f"returns have {all_returns.shape[1]} objectives, expected {k}")
    ideal = all_returns.max(axis=0)
    weights = simplex_weights(k, weight_divisions)
    per_seed: dict[str, Any] = {}
    metrics: dict[str, list[float]] = {"hypervolume": [], "eum": [], "sparsity": [], "cardinality": []}
    for seed in sorted({p.seed for p in points}):
        mine = [p for p in points if p.seed == seed]
        rets = np.asarray([p.returns for p in mine], dtype=np.float64)  # (S, K)
        mask = pareto_mask(rets)
        norm = _normalise(rets, ref_arr, ideal)
        row = {
            "hypervolume": hypervolume(rets, ref_arr),
            "eum": expected_utility(norm, weights),
            "sparsity": sparsity(norm[mask]),
            "cardinality": cardinality(rets),
            "front": [{"setting": p.setting, "returns": list(p.returns)} for p, m in zip(mine, mask) if m],
        }
        per_seed[str(seed)] = row
        for name, values in metrics.items():
            values.append(float(row[name]))
    pooled_mask = pareto_mask(all_returns)
    return {
        "objectives": list(objective_names),
        "ref": ref_arr.tolist(),
        "ideal": ideal.tolist(),
        "eum_weights": f"simplex grid, {weight_divisions} divisions ({len(weights)} weights), returns normalised "
                       "to [0, 1] between ref and ideal",
        "per_seed": per_seed,
        "across_seeds": {name: iqm_with_ci(values) for name, values in metrics.items()},
        "pooled_front": [{"setting": p.setting, "seed": p.seed, "returns": list(p.returns)}
                         for p, m in zip(points, pooled_mask) if m],
    }
