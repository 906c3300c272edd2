"""Figures for reports (matplotlib, Agg backend, PNG files).

* :func:`plot_pareto_fronts`: return vectors of one or more algorithms, each algorithm's
  non-dominated front highlighted (staircase in 2-D), optional true front and reference point.
  K = 2: one panel; K ≥ 3: one panel per pair of objectives (projections).  Cf. MO-MPO
  (Abdolmaleki et al., 2020) Fig. 5 for Deep Sea Treasure.
* :func:`plot_learning_curves`: per-objective returns against environment steps from a training
  run's ``metrics.csv`` (one panel per objective).
* :func:`plot_switched_force_traces`: force against time with a live change in the middle (a
  vertical line) against unswitched controls (dashed); one panel per episode.
* :func:`plot_action_probabilities`: grouped bars of a categorical policy's action
  probabilities per setting (MO-MPO Fig. 3).

Every function writes the file and returns its path; nothing is shown on screen.
"""
from __future__ import annotations

import csv
import itertools
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import ArrayLike

from morl_robot.evaluation.pareto import pareto_front
from morl_robot.records import save_figure

__all__ = ["plot_action_probabilities", "plot_force_traces", "plot_learning_curves", "plot_pareto_fronts",
           "plot_switched_force_traces", "read_metrics_csv"]

_COLOURS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def _colour(index: int) -> str:
    return _COLOURS[index % len(_COLOURS)]


def _save(fig: plt.Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` to ``path`` atomically (:func:`~morl_robot.records.save_figure`); an ``OSError`` is a
    :class:`~morl_robot.learning.run_lock.WriteError` naming ``path`` (the figure is closed either way)."""
    from morl_robot.learning.run_lock import write_error

    try:
        return save_figure(fig, path, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise write_error(path, exc) from None


def plot_pareto_fronts(
    points_by_algorithm: Mapping[str, ArrayLike],
    path: str | os.PathLike[str],
    ref: ArrayLike | None = None,
    objective_names: Sequence[str] | None = None,
    true_front: ArrayLike | None = None,
    title: str | None = None,
    counts: bool = True,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> Path:
    """Scatter each algorithm's return vectors (P_a, K) and highlight its Pareto front.

    ``counts``: marker area grows with the number of runs that reached the same point (as in
    MO-MPO Fig. 5).  ``true_front`` (T, K) is drawn as stars, ``ref`` (K,) as a cross.
    ``labels[algo][p]`` annotates point p of that set (e.g. the ε setting that produced it).
    """
    arrays = {name: np.atleast_2d(np.asarray(p, dtype=float)) for name, p in points_by_algorithm.items()}
    arrays = {n: a for n, a in arrays.items() if a.size}
    k_values = {a.shape[1] for a in arrays.values()}
    if true_front is not None:
        k_values.add(np.atleast_2d(np.asarray(true_front)).shape[1])
    if len(k_values) != 1:
        raise ValueError(f"all point sets must have the same number of objectives, got {sorted(k_values)}")
    k = k_values.pop()
    if k < 2:
        raise ValueError("a Pareto plot needs at least two objectives")
    names = list(objective_names) if objective_names else [f"objective {i + 1}" for i in range(k)]
    pairs = list(itertools.combinations(range(k), 2))
    cols = min(3, len(pairs))
    rows = int(np.ceil(len(pairs) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 4.2 * rows), squeeze=False)
    for ax, (i, j) in zip(axes.flat, pairs):
        if true_front is not None:
            tf = np.atleast_2d(np.asarray(true_front, dtype=float))
            ax.scatter(tf[:, i], tf[:, j], marker="*", s=160, facecolors="none", edgecolors="k",
                       linewidths=1.0, label="true front", zorder=2)
        for index, (algo, pts) in enumerate(arrays.items()):
            colour = _colour(index)
            shrink = 1.0 / (1.0 + 1.5 * index)  # later algorithms smaller, so coincident points stay visible
            uniq, n_hits = np.unique(pts[:, [i, j]], axis=0, return_counts=True)
            sizes = (30 + 30 * (n_hits - 1) if counts else 30) * shrink
            ax.scatter(uniq[:, 0], uniq[:, 1], s=sizes, color=colour, alpha=0.35, linewidths=0)
            front = pareto_front(pts)  # (F, K): the K-objective front, projected on (i, j)
            ax.scatter(front[:, i], front[:, j], s=50 * shrink, color=colour, edgecolors="k", linewidths=0.6,
                       label=f"{algo} ({len(front)} on front)", zorder=3)
            if k == 2 and len(front) > 1:
                ax.step(front[:, 0], front[:, 1], where="pre", color=colour, alpha=0.6, linewidth=1.0)
            for p, text in zip(pts, (labels or {}).get(algo, [])):
                ax.annotate(text, (p[i], p[j]), fontsize=7, color=colour, xytext=(4, 3), textcoords="offset points")
        if ref is not None:
            r = np.asarray(ref, dtype=float)
            ax.scatter([r[i]], [r[j]], marker="x", s=60, color="k", label="reference point", zorder=5)
        ax.set_xlabel(names[i])
        ax.set_ylabel(names[j])
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(pairs):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8, loc="best")
    if title:
        fig.suptitle(title, y=1.03)
    return _save(fig, path)


def plot_force_traces(traces: Mapping[str, Sequence[float]], path: str | os.PathLike[str], period_s: float,
                      threshold: float | None = None, title: str | None = None) -> Path:
    """One line per labelled force trace (T_i,) in N against time (steps × ``period_s``); an
    optional horizontal ``threshold`` line (e.g. the task's force threshold)."""
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    for index, (label, trace) in enumerate(traces.items()):
        y = np.asarray(trace, dtype=float)
        ax.plot(np.arange(1, y.size + 1) * period_s, y, color=_colour(index), linewidth=1.0, label=label)
    if threshold is not None:
        ax.axhline(threshold, color="k", linestyle="--", linewidth=0.8, label=f"threshold {threshold:g} N")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("force (N)")
    ax.grid(alpha=0.3)
    if traces:
        ax.legend(fontsize=7, loc="best")
    if title:
        ax.set_title(title, fontsize=9)
    return _save(fig, path)


def plot_switched_force_traces(panels: Sequence[Mapping[str, Any]], path: str | os.PathLike[str],
                               threshold: float | None = None, title: str | None = None) -> Path:
    """One panel per entry of ``panels``, each a mapping with ``title``, ``switch_s`` (s, or None),
    ``switched`` = ``(label, (t, force))`` drawn solid, and ``controls`` = ``{label: (t, force)}``
    drawn dashed; times in s, forces in N.  A vertical line marks the switch, an optional horizontal
    one the ``threshold``.  The panels share the time axis."""
    n = max(1, len(panels))
    fig, axes = plt.subplots(n, 1, figsize=(8.0, 2.6 * n + 0.6), squeeze=False, sharex=True, layout="constrained")
    for ax, panel in zip(axes.flat, panels):
        label, (t, f) = panel["switched"]
        ax.plot(np.asarray(t, float), np.asarray(f, float), color=_colour(0), linewidth=1.4, label=label, zorder=3)
        for index, (name, (tc, fc)) in enumerate(panel["controls"].items(), start=1):
            ax.plot(np.asarray(tc, float), np.asarray(fc, float), color=_colour(index), linewidth=1.0,
                    linestyle="--", label=name)
        if panel.get("switch_s") is not None:
            ax.axvline(panel["switch_s"], color="k", linestyle=":", linewidth=1.0,
                       label=f"switch ({panel['switch_s']:.2f} s)")
        if threshold is not None:
            ax.axhline(threshold, color="0.5", linestyle="-.", linewidth=0.8, label=f"threshold {threshold:g} N")
        ax.set_ylabel("‖F‖ (N)")
        ax.set_title(panel.get("title", ""), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    axes.flat[-1].set_xlabel("time since the episode's start (s)")
    if title:
        fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def read_metrics_csv(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a ``metrics.csv`` (header row, numeric cells) into columns; blank cells are NaN."""
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        fields = reader.fieldnames or []
    out: dict[str, np.ndarray] = {}
    for name in fields:
        values = []
        for row in rows:
            cell = row.get(name, "")
            try:
                values.append(float(cell) if cell not in ("", None) else np.nan)
            except ValueError:
                values.append(np.nan)
        out[name] = np.asarray(values, dtype=float)
    return out


_STEP_COLUMNS = ("env_steps", "step", "steps", "total_steps", "actor_steps", "learner_steps")
_RETURN_PATTERN = re.compile(r"^(eval[_/])?(episode[_/])?returns?[_/\[]", re.IGNORECASE)


def plot_learning_curves(
    metrics_csv: str | os.PathLike[str],
    path: str | os.PathLike[str],
    step_column: str | None = None,
    return_columns: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """Per-objective returns against steps from ``metrics_csv``; one panel per objective.

    ``step_column`` defaults to the first of env_steps/step/steps/total_steps/… present;
    ``return_columns`` default to the columns named like ``return_<objective>``,
    ``return/<objective>`` or ``eval_return_<objective>``, or, when there are none (the learner's
    ``eval.csv``: ``env_steps`` and one column per objective), every non-step column.  Rows where
    a column is blank are skipped for that column.  Where ``ci_low/<objective>`` and
    ``ci_high/<objective>`` columns exist (an evaluation curve), the confidence band is shaded.
    """
    data = read_metrics_csv(metrics_csv)
    if step_column is None:
        step_column = next((c for c in _STEP_COLUMNS if c in data), None)
        if step_column is None:
            raise ValueError(f"{metrics_csv}: no step column (looked for {', '.join(_STEP_COLUMNS)})")
    if return_columns is None:
        return_columns = [c for c in data if _RETURN_PATTERN.match(c)]
        if not return_columns:  # e.g. the learner's eval.csv: env_steps + one column per objective
            return_columns = [c for c in data if c not in _STEP_COLUMNS]
    if not return_columns:
        raise ValueError(f"{metrics_csv}: no return columns (columns: {', '.join(data)})")
    steps = data[step_column]
    n = len(return_columns)
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 3.6), squeeze=False, layout="constrained")
    for index, (ax, column) in enumerate(zip(axes.flat, return_columns)):
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
        y = data[column]
        ok = np.isfinite(steps) & np.isfinite(y)
        few = int(ok.sum()) <= 40  # evaluation curves: few points, each one a measurement
        ax.plot(steps[ok], y[ok], color=_colour(index), linewidth=1.2, marker="o" if few else None, markersize=3)
        name = column.split("/", 1)[-1]
        low, high = data.get(f"ci_low/{name}"), data.get(f"ci_high/{name}")
        if low is not None and high is not None:  # confidence band (evaluation protocol)
            band = ok & np.isfinite(low) & np.isfinite(high)
            ax.fill_between(steps[band], low[band], high[band], color=_colour(index), alpha=0.2, linewidth=0)
        ax.set_title(column)
        ax.set_xlabel(step_column)
        ax.set_ylabel("success rate" if column == "success_rate" else "return")
        if column == "success_rate":
            ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def plot_action_probabilities(
    probabilities: Mapping[str, Mapping[str, float]],
    path: str | os.PathLike[str],
    title: str | None = None,
    ax_groups: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
) -> Path:
    """Grouped bars: for each setting (outer key) the probability of each action (inner key).

    ``ax_groups`` (panel title → settings → action → probability) draws several panels in one
    figure instead, e.g. one per algorithm × reward scale as in MO-MPO Fig. 3.
    """
    panels = dict(ax_groups) if ax_groups is not None else {title or "": probabilities}
    n = len(panels)
    cols = min(2, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.4 * rows), squeeze=False)
    for ax, (panel_title, settings) in zip(axes.flat, panels.items()):
        setting_names = list(settings)
        actions = list(next(iter(settings.values()))) if settings else []
        width = 0.8 / max(1, len(actions))
        x = np.arange(len(setting_names))
        for a_index, action in enumerate(actions):
            heights = [settings[s][action] for s in setting_names]
            ax.bar(x + (a_index - (len(actions) - 1) / 2) * width, heights, width, label=action,
                   color=_colour(a_index))
        ax.set_xticks(x)
        ax.set_xticklabels(setting_names)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("action probability")
        ax.set_title(panel_title)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    if ax_groups is not None and title:
        fig.suptitle(title, y=1.03)
        fig.tight_layout(rect=(0, 0, 1, 0.96))
    else:
        fig.tight_layout()
    return _save(fig, path)


def plot_distance_heatmap(names: Sequence[str], distance: np.ndarray, path: str | os.PathLike[str], title: str,
                          lower: np.ndarray | None = None, upper: np.ndarray | None = None) -> Path:
    """Heatmap of a symmetric distance matrix in [0, 1] (EPIC), each cell labelled with its value and,
    when given, its confidence interval [lower, upper]."""
    m = len(names)
    size = max(4.0, 0.9 * m + 1.5)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(distance, vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(m), labels=list(names), rotation=45, ha="right")
    ax.set_yticks(range(m), labels=list(names))
    for i in range(m if m <= 12 else 0):  # too many cells to label: colour only
        for j in range(m):
            text = f"{distance[i, j]:.2f}"
            if lower is not None and upper is not None and i != j:
                text += f"\n[{lower[i, j]:.2f}, {upper[i, j]:.2f}]"
            ax.text(j, i, text, ha="center", va="center", fontsize=7 if m > 6 else 8,
                    color="white" if distance[i, j] < 0.5 else "black")
    fig.colorbar(im, ax=ax, label="EPIC distance")
    ax.set_title(title)
    return _save(fig, path)
