"""Fault: two runs into one run directory interleaved episodes.csv and deleted each other's
checkpoints.  Every writer takes the run directory's lock; a second one is refused with the
holder named; a lock left by a dead process is taken over and named."""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys

import pytest

from morl_robot.cli import main
from morl_robot.learning.run_lock import LOCK_NAME, RunDirectoryBusy, RunLock


def _hold(path, started, release):
    with RunLock.acquire(path, "test holder"):
        started.set()
        release.wait(30)


def test_a_second_writer_is_refused_and_the_holder_named(tmp_path):
    ctx = multiprocessing.get_context("fork")
    started, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(tmp_path, started, release))
    holder.start()
    try:
        assert started.wait(10)
        with pytest.raises(RunDirectoryBusy, match=rf"in use by test holder \(pid {holder.pid}"):
            RunLock.acquire(tmp_path, "second")
    finally:
        release.set()
        holder.join(10)
    with RunLock.acquire(tmp_path, "after") as lock:  # released: free again, and not stale
        assert lock.stale == ""


def test_a_lock_left_by_a_dead_process_is_taken_over_and_named(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"owner": "morl-robot train", "pid": int(dead.stdout),
                                                  "host": os.uname().nodename, "started": 0}))
    with RunLock.acquire(tmp_path, "new run") as lock:
        assert f"morl-robot train (pid {int(dead.stdout)}" in lock.stale
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()


def test_in_process_training_refuses_a_busy_run_directory(tmp_path):
    from morl_robot.training.loop import train

    with RunLock.acquire(tmp_path, "morl-robot train"), pytest.raises(RunDirectoryBusy):
        train(lambda: None, None, total_steps=1, out_dir=tmp_path, progress=False)


def test_train_cli_refuses_a_busy_run_directory_before_starting_nodes(tmp_path, capsys):
    with RunLock.acquire(tmp_path, "another morl-robot train"):
        assert main(["train", "--task", "sawyer_peg_in_hole", "--steps", "10", "--out", str(tmp_path),
                     "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "in use by another morl-robot train" in err
    assert not (tmp_path / "logs").exists() and not (tmp_path / "session.yaml").exists()
