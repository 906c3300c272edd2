"""What a learner run writes (the source of docs/reference/run_directory.md), the checkpoint
payload's keys and counters, and where a session's messages go by default."""
from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

#: What a learner session writes in its run directory (path, content): the source of
#: docs/reference/run_directory.md.  ``<env_steps>``: zero-padded env steps.
RUN_FILES: tuple[tuple[str, str], ...] = (
    ("checkpoints/ckpt-<env_steps>.pt", ("checkpoint (atomic, checksummed; the newest training.keep_checkpoints are "
                                         "kept; an unreadable one is renamed *.corrupt once an older one restored); "
                                         "the replay only with training.checkpoint_replay")),
    ("metrics.csv", "one row per logged learner update (every training.log_every updates)"),
    ("episodes.csv", "one row per finished training episode (the exploring policy's returns)"),
    ("eval.csv", "deterministic evaluations during training (in-process train only)"),
    ("tb/", "TensorBoard event files mirroring the CSVs"),
    ("snapshots/policy_<env_steps>.onnx", "the initial policy and the policy of every checkpoint"),
    ("policy.onnx", "the final policy with its contract (at the end of the run or a clean shutdown)"),
    ("plots/learning_curves.png", "returns of finished training episodes (exploring policy), at the end"),
    ("plots/pareto_front.png", "per-objective returns of the newest training episodes (2+ objectives), at the end"),
)
#: The columns of the session's CSV files (column, meaning); ``<objective>`` stands for each objective.
CSV_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "metrics.csv": (
        ("step", "learner updates so far"),
        ("env_steps", "environment steps so far"),
        ("<statistic>", "every named statistic of the update, e.g. temperature/<objective>, kl_q/<objective>, kl_mean"),
        ("policy_version", "the newest policy version"),
        ("replay_size", "transitions in the replay"),
        ("actor/<id>/transitions", "transitions received from each actor (in-process train: actor 0)"),
    ),
    "episodes.csv": (
        ("env_steps", "environment steps when the episode ended"),
        ("return/<objective>", "the episode's return of each objective"),
        ("length", "steps in the episode"),
        ("actor", "the actor id that acted it (in-process train: 0)"),
        ("policy_version", "the policy version that acted it (0: the demonstrator)"),
        ("termination", "why it ended (a task's reason, 'safety', 'terminated' or 'truncated')"),
        ("context", ("a task with contexts (issue 37): the episode's context, train#<seed> for a domain-randomised "
                    "draw (reproduced by that name) or the task key 'contexts' (one named context)")),
    ),
    "eval.csv": (
        ("env_steps", "environment steps at the evaluation"),
        ("return/<objective>", "mean deterministic return of each objective"),
    ),
}
#: the keys of every checkpoint payload (None where a session has no such part).
PAYLOAD_KEYS = ("learner", "config", "contract", "normalizer", "counters", "limiter", "replay", "rng", "ingest",
                "evaluations")
COUNTERS = ("env_steps", "updates", "episodes", "policy_version", "chunks", "demonstration_episodes",
            "demonstrations_done")
#: ``log(level, message)``; level is ``info``, ``warning`` or ``error``.
Log = Callable[[str, str], None]


def warnings_log(level: str, message: str) -> None:
    """The default :data:`Log` of in-process training: problems as ``RuntimeWarning``\\ s, the
    rest to the ``morl_robot.training.session`` logger (Python :mod:`logging`, level INFO)."""
    if level == "info":
        logging.getLogger("morl_robot.training.session").info(message)
    else:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
