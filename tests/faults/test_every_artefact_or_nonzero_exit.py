"""Faults (issue 33, items 5 and 9): a training whose disk filled up printed "done" and exited 0
without ``policy.onnx``, ``metrics.csv`` or the plots (the error only in the learner's log), and a
read-only or over-long output path made ``export`` / ``train`` end in a traceback with status 1.
Now every artefact is written or the run exits non-zero naming the file and the OS error (the CLI
shows the learner's first error line, not "done"), and an output path that cannot be written is
one line with exit status 2.

Disk-full is not simulated by filling a disk: the OS refuses the write for real — ``/dev/full``
(ENOSPC), a folder where the file should be (EISDIR), a file where a folder should be, a name
over 255 bytes (ENAMETOOLONG), a read-only folder (as root, which ignores permissions: ``/sys``)."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import pytest

from morl_robot.bench.faults_resume import make_run, tree_digest
from morl_robot.cli import main
from morl_robot.learning.run_lock import WriteError, write_error

LONG = "x" * 300  # longer than NAME_MAX (255)


def read_only_dir(tmp_path: Path) -> Path:
    """A folder where creating files fails: a 0o555 folder, or under /sys when running as root."""
    if os.geteuid() == 0:
        return Path("/sys") / f"morl_robot_test_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def test_a_disk_full_error_names_the_file_and_the_os_error():
    with pytest.raises(OSError) as info, open("/dev/full", "wb", buffering=0) as f:
        f.write(b"policy")
    assert str(write_error(Path("runs/x/policy.onnx"), info.value)) == \
        "cannot write runs/x/policy.onnx: [Errno 28] No space left on device"


# --- the learner: every artefact or an error naming it --------------------------------------------
def _session(run: Path, **options):
    from morl_robot.training.session import session_for_task

    logged: list[tuple[str, str]] = []
    session = session_for_task("sawyer_peg_in_hole", None, "mo_mpo_cpu_small", run_dir=run,
                               normalize_observations=True, end_of_run_plots=True,
                               log=lambda level, message: logged.append((level, message)), **options)
    return session, logged


def test_finish_raises_the_first_artefact_it_could_not_write_after_trying_the_others(tmp_path):
    run = tmp_path / "run"
    session, logged = _session(run)
    session.start()
    session.publish_policy()
    k = len(session.objective_names)
    for i in range(3):  # finished episodes: the plots have something to draw
        session.record_episode(np.arange(k, dtype=float) + i, "truncated")
    (run / "policy.onnx").mkdir()  # a folder in the way: the OS refuses the file (EISDIR)
    (run / "plots").write_text("a file where the plots folder goes")
    with pytest.raises(WriteError, match=rf"cannot write {run / 'policy.onnx'}: \[Errno 21\] Is a directory"):
        session.finish("total_steps reached")
    errors = [m for level, m in logged if level == "error"]
    assert len(errors) == 2 and "policy.onnx" in errors[0] and "plots/learning_curves.png" in errors[1], errors
    assert list((run / "checkpoints").glob("ckpt-*.pt")), "the checkpoint is still written"
    session.close()


def test_a_metrics_file_that_cannot_be_written_stops_the_session_naming_it(tmp_path):
    run = tmp_path / "run"
    session, _ = _session(run)
    session.start()
    (run / "episodes.csv").mkdir()
    with pytest.raises(WriteError, match=r"cannot write .*episodes\.csv: \[Errno 21\] Is a directory"):
        session.record_episode(np.zeros(len(session.objective_names)), "truncated")
    session.close()


def test_a_session_that_did_not_start_writes_nothing(tmp_path):
    run = tmp_path / "run"
    make_run(run, "shadow_touch")
    before = tree_digest(run)
    session, _ = _session(run)
    with pytest.raises(Exception, match="mismatch in 'robot'"):
        session.start()
    session.finish("shutdown")  # what the learner node's cleanup does after a failed configure
    assert tree_digest(run) == before


@pytest.mark.ros
def test_train_exits_non_zero_with_the_learners_error_when_policy_onnx_cannot_be_written(tmp_path):
    from tests.conftest import run_cli, tiny_learner_yaml

    out = tmp_path / "run"
    (out / "policy.onnx").mkdir(parents=True)  # the learner's final write fails for real
    learner = tmp_path / "learner.yaml"
    learner.write_text(tiny_learner_yaml(1.0))
    done = run_cli(["train", "--task", "sawyer_peg_in_hole", "--steps", "150", "--out", str(out), "--no-progress",
                    "--learner", str(learner), "--namespace", "enospc"], out=out)
    assert done.returncode != 0, done.stdout + done.stderr[-3000:]
    assert "done:" not in done.stdout
    line = [x for x in done.stderr.splitlines() if "the learner exited" in x]
    assert line and f"cannot write {out / 'policy.onnx'}: [Errno 21] Is a directory" in line[0], done.stderr[-3000:]


# --- the command line: an output path that cannot be written is one line, status 2 ----------------
@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("export") / "run"
    make_run(run, "sawyer_peg_in_hole")
    return run


def _one_line(capsys, *expected: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    for text in expected:
        assert text in err[0], err
    return err[0]


@pytest.mark.parametrize("where", ["too_long", "file_as_folder", "read_only"])
def test_export_to_an_unwritable_path_is_one_line_and_status_2(where, trained_run, tmp_path, capsys):
    if where == "too_long":
        out, errno = tmp_path / f"{LONG}.onnx", "[Errno 36]"
    elif where == "file_as_folder":
        (tmp_path / "a_file").write_text("")
        out, errno = tmp_path / "a_file" / "policy.onnx", "a_file is not a folder"
    else:
        out, errno = read_only_dir(tmp_path) / "policy.onnx", "[Errno "
    assert main(["export", str(trained_run), "--out", str(out)]) == 2
    _one_line(capsys, "morl-robot export: error: cannot write", str(out)[:60], errno)


def test_export_refuses_an_output_that_is_not_a_regular_file(trained_run, capsys):
    assert main(["export", str(trained_run), "--out", "/dev/full"]) == 2
    _one_line(capsys, "not a regular file")
    assert Path("/dev/full").is_char_device()


@pytest.mark.parametrize("where", ["too_long", "file_as_folder", "read_only"])
def test_train_into_an_unwritable_run_directory_is_one_line_and_status_2(where, tmp_path, capsys):
    if where == "too_long":
        out, errno = tmp_path / LONG, "[Errno 36] File name too long"
    elif where == "file_as_folder":
        (tmp_path / "a_file").write_text("")
        out, errno = tmp_path / "a_file" / "run", "[Errno 20] Not a directory"
    else:
        out, errno = read_only_dir(tmp_path) / "run", "[Errno "
    assert main(["train", "--task", "sawyer_peg_in_hole", "--steps", "10", "--out", str(out), "--no-progress"]) == 2
    _one_line(capsys, "morl-robot train: error: cannot write", errno)
