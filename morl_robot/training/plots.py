"""The end-of-run plots of a learner run (``plots/``): what the exploring policy's training episodes
returned, not an evaluation of the final policy."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from morl_robot.training.run_directory import Log

#: the end-of-run Pareto plot shows the returns of this many newest finished episodes.
RECENT_EPISODES = 200


def write_end_of_run_plots(run_dir: Path, objective_names: Sequence[str], log: Log) -> None:
    """``plots/learning_curves.png`` (returns of the finished training episodes, ``episodes.csv``)
    and, with 2+ objectives, ``plots/pareto_front.png`` of the newest :data:`RECENT_EPISODES`."""
    episodes_csv = run_dir / "episodes.csv"
    if not episodes_csv.exists():
        log("info", "no finished episode yet: no learning-curve plot")
        return
    from morl_robot.evaluation.plots import (  # matplotlib (a second of CPU): only with a plot to draw
        plot_learning_curves,
        plot_pareto_fronts,
        read_metrics_csv,
    )

    names = list(objective_names)
    columns = [f"return/{n}" for n in names]
    plots = run_dir / "plots"
    plot_learning_curves(episodes_csv, plots / "learning_curves.png", step_column="env_steps",
                         return_columns=columns,
                         title="returns of finished training episodes (exploring policy, all actors)")
    if len(names) >= 2:
        data = read_metrics_csv(episodes_csv)
        points = np.stack([data[c] for c in columns], axis=1)[-RECENT_EPISODES:]
        points = points[np.all(np.isfinite(points), axis=1)]
        if len(points):
            plot_pareto_fronts({f"training episodes (last {len(points)})": points}, plots / "pareto_front.png",
                               objective_names=names,
                               title="per-objective returns of the exploring policy's last training episodes "
                                     "(not an evaluation of the final policy)")
