"""The run directory's files and CSV columns (``morl_robot.training.run_directory.RUN_FILES`` /
``CSV_COLUMNS`` and ``morl_robot.cli.train.RUN_FILES``)."""
from __future__ import annotations

from . import md


def render() -> str:
    from morl_robot.cli import train
    from morl_robot.learning import run_lock
    from morl_robot.training import run_directory

    parts = ["## Files\n",
             md.table(("path", "written by", "content"),
                      [(md.code(p), "learner", md.text(d)) for p, d in run_directory.RUN_FILES]
                      + [(md.code(p), md.code("morl-robot train"), md.text(d))
                         for p, d in getattr(train, "RUN_FILES", ())]
                      + [(md.code(run_lock.LOCK_NAME), "every writer",
                          md.text("held (flock) while a run writes there, naming its holder in JSON: a second "
                                  "writer is refused with that description; one left by a holder that is gone is "
                                  "taken over"))])]
    parts.append("## CSV columns\n")
    for name, columns in run_directory.CSV_COLUMNS.items():
        parts.append(f"### `{name}`\n")
        parts.append(md.table(("column", "meaning"), [(md.code(c), md.text(d)) for c, d in columns]))
    return "\n".join(parts)
