"""A refused resume changes nothing: the fault check a soak can run (issue 33, item 2).

:func:`refused_resume_check` makes a small run of one task (checkpoint, snapshot, ``policy.onnx``,
under the run lock, as a training leaves it), then resumes it as another task twice — through the
real command line (``morl-robot train --task OTHER --out RUN``, whose preflight must refuse before
any node starts) and through the learner's own start (what a ``learner_node`` started by a launch
file runs) — and compares a content hash of every file of the run before and after.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def tree_digest(root: str | os.PathLike[str]) -> dict[str, str]:
    """Every entry under ``root`` → the sha256 of its content (``dir`` for a folder, ``-> target``
    for a symlink), by relative path: equal digests mean a byte-identical tree, whatever the mtimes."""
    root = Path(root)
    digest: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            digest[str((Path(folder) / name).relative_to(root))] = "dir"
        for name in files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            digest[key] = f"-> {os.readlink(path)}" if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def make_run(run_dir: str | os.PathLike[str], task: str, learner_config: str = "mo_mpo_cpu_small") -> list[str]:
    """A small run of ``task`` in ``run_dir`` as a training leaves it (the lock file, a checkpoint,
    the first policy snapshot, ``policy.onnx``), in-process; returns its files."""
    from morl_robot.learning.run_lock import RunLock
    from morl_robot.training.session import session_for_task

    with RunLock.acquire(run_dir, "refused_resume_check"):
        session = session_for_task(task, None, learner_config, run_dir=run_dir, normalize_observations=True,
                                   log=lambda level, message: None)
        session.start()
        session.publish_policy()
        session.finish("made")
        session.close()
    return sorted(tree_digest(run_dir))


def _changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def refused_resume_check(tmpdir: str | os.PathLike[str], task: str = "sawyer_peg_in_hole",
                         other_task: str = "shadow_touch", timeout: float = 300.0) -> dict[str, Any]:
    """Resume a run of ``task`` as ``other_task``: the CLI must refuse with exit status 2 and one
    line, the learner's start must refuse, and the run directory must stay byte-identical after
    each.  Returns ``ok`` and what was seen (exit status, error lines, files changed)."""
    from morl_robot.errors import MorlRobotError
    from morl_robot.training.session import session_for_task

    run = Path(tmpdir) / "refused_resume_run"
    files = make_run(run, task)
    before = tree_digest(run)
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", other_task, "--out", str(run), "--steps", "10",
           "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    stderr = [line for line in done.stderr.splitlines() if line.strip()]
    after_cli = tree_digest(run)

    session = session_for_task(other_task, None, "mo_mpo_cpu_small", run_dir=run, normalize_observations=True,
                               log=lambda level, message: None)
    learner_error = ""
    try:
        session.start()
    except MorlRobotError as exc:
        learner_error = str(exc)
    finally:
        session.finish("shutdown")  # as the learner node's cleanup: must write nothing after a refusal
        session.close()
    after_learner = tree_digest(run)
    result = {
        "files": len(files),
        "cli_returncode": done.returncode,
        "cli_error": stderr[-1] if stderr else "",
        "cli_error_lines": len(stderr),
        "cli_changed": _changes(before, after_cli),
        "learner_error": learner_error,
        "learner_changed": _changes(before, after_learner),
    }
    result["ok"] = (done.returncode == 2 and len(stderr) == 1 and not result["cli_changed"]
                    and bool(learner_error) and not result["learner_changed"])
    return result
