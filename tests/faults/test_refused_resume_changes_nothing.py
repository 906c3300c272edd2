"""Fault (issue 33, item 2): a refused resume rewrote the run before refusing.  ``morl-robot train
--task shadow_touch --out R`` over a sawyer_peg_in_hole run was refused by the learner ("contract
mismatch in 'robot'", exit status 1) after ``session.yaml``, ``policy.onnx`` and the first snapshot
were replaced by an untrained shadow_touch model and a foreign checkpoint was added.  Now the CLI
checks the resume before any node starts and before anything in the run changes (one line, exit
status 2), and the learner node started without the CLI (a launch file) writes nothing before its
own restore check passes: the run directory stays byte-identical either way."""
from __future__ import annotations

import pytest

from morl_robot.bench.faults_resume import make_run, refused_resume_check, tree_digest


def test_train_cli_and_learner_refuse_a_resume_as_another_task_and_change_nothing(tmp_path):
    result = refused_resume_check(tmp_path)
    assert result["cli_returncode"] == 2, result
    assert result["cli_error_lines"] == 1, result  # one line, no traceback, no node output
    assert "refusing to resume" in result["cli_error"] and "mismatch in 'robot'" in result["cli_error"], result
    assert result["cli_changed"] == [], result
    assert "mismatch in 'robot'" in result["learner_error"] and result["learner_changed"] == [], result
    assert result["files"] >= 5 and result["ok"], result


def test_train_cli_refuses_a_resume_with_only_unreadable_checkpoints_and_changes_nothing(tmp_path, capsys):
    from morl_robot.cli import main

    run = tmp_path / "run"
    make_run(run, "sawyer_peg_in_hole")
    ckpt = next((run / "checkpoints").glob("ckpt-*.pt"))
    ckpt.write_bytes(ckpt.read_bytes()[:100])  # a disk that filled up mid-write
    before = tree_digest(run)
    assert main(["train", "--task", "sawyer_peg_in_hole", "--steps", "10", "--out", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no readable checkpoint" in err[0] and "nothing was changed" in err[0], err
    assert tree_digest(run) == before


@pytest.mark.ros
def test_a_learner_node_started_without_the_cli_refuses_and_writes_nothing(tmp_path, ros_session):
    from morl_robot.session.processes import NodeSpec

    run = tmp_path / "run"
    make_run(run, "sawyer_peg_in_hole")
    before = tree_digest(run)
    spec = NodeSpec("learner_node", "learner_node", "/refused", {
        "task": "shadow_touch", "out_dir": str(run), "config": "mo_mpo_cpu_small", "total_steps": 10})
    node = ros_session.group.start(spec)
    assert node.proc.wait(120) != 0, node.log_text()[-3000:]
    log = node.log_text()
    assert "mismatch in 'robot'" in log and "nothing written" in log, log[-3000:]
    assert tree_digest(run) == before, log[-3000:]
