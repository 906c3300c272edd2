"""``train --from-recording``: a real recorded training session (its first episodes acted by the
scripted demonstrator) read back into the learner's transitions, rewards recomputed, offline
training through the CLI, another task's recording refused (issue 39).  One recording per module."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli

TASK = "sawyer_peg_in_hole"
STEPS = 330  # two 160-step demonstration episodes and the start of a third
#: the recipe clones its demonstrations (3 000 minibatches) when the run ends inside its demonstration
#: phase, as these short graph runs do: what is recorded, and the replay seeded, come before the
#: cloning, so a tiny one keeps its path without the minutes of CPU on a shared host
TINY_CLONE = ["--set", "learner.training.demonstrations.pretrain_updates=10"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("rclpy")
    out = tmp_path_factory.mktemp("from_recording") / "train"
    proc = run_cli(["train", "--task", TASK, "--steps", str(STEPS), "--record", "--no-progress", *TINY_CLONE,
                    "--out", str(out)], timeout=240, out=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def frame():  # a TaskFrame
    from morl_robot.training.recordings import task_frame

    return task_frame(TASK)


def test_transitions_match_the_sessions_episodes_and_task_steps(recorded: Path, frame) -> None:
    tr = frame.read([recorded])
    summary = json.loads((recorded / "session.recording.json").read_text())
    step_topic = next(t for t in summary["topics"] if t.endswith("/task_step"))
    assert tr.task_steps == summary["topics"][step_topic]
    # every task step is a transition's start, an episode's end, (the last) one never answered, or a
    # lockstep re-send of a step already read
    assert len(tr) + tr.episodes + tr.unanswered_steps + tr.repeated_steps == tr.task_steps
    assert tr.unanswered_steps <= 1
    with open(recorded / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert tr.episodes == len(rows) == 2
    returns = tr.episode_returns()
    for row, ret in zip(rows, returns):
        np.testing.assert_allclose(ret, [float(row["return/task"]), float(row["return/wrist_force"])], rtol=1e-9)
    ends = np.flatnonzero(tr.terminated | tr.truncated)
    assert [int(tr.step[i]) + 1 for i in ends] == [int(r["length"]) for r in rows]
    # transitions chain: next_obs of a step is the obs of the following step of its episode
    same = (tr.episode[1:] == tr.episode[:-1]) & (tr.step[1:] == tr.step[:-1] + 1)
    np.testing.assert_array_equal(tr.next_obs[:-1][same], tr.obs[1:][same])
    assert np.all(np.abs(tr.action) <= 1.0) and tr.action.std(axis=0).min() > 0.0
    # the normalised action of the executed command is the policy's last action in the next observation
    last = [tr.observation_labels.index(f"t-0/last_action_{a}") for a in tr.action_labels]
    np.testing.assert_allclose(tr.next_obs[:, last], tr.action, atol=1e-9)


def _without_rewards(src: Path, dst: Path) -> None:
    """``src`` rewritten with the reward columns taken out of every task_step (an older or foreign
    recorder's layout), with mcap_ros2's writer and the real schemas."""
    from mcap_ros2.writer import Writer

    from morl_robot.recording import read_messages
    from morl_robot.recording.schema import schema_text

    with open(dst, "wb") as f:
        writer = Writer(f)
        schemas: dict[str, object] = {}
        for m in read_messages(src, topics=lambda t: t.endswith(("/task_step", "/command_safe"))):
            if m.type not in schemas:
                schemas[m.type] = writer.register_msgdef(m.type.replace("/msg/", "/"), schema_text(m.type))
            msg = m.message
            labels = msg.layout.dim[0].label.split(",")
            data = list(msg.data)
            if m.topic.endswith("/task_step"):
                keep = [i for i, lab in enumerate(labels) if not lab.startswith("reward/")]
                labels, data = [labels[i] for i in keep], [data[i] for i in keep]
            out = {"layout": {"dim": [{"label": ",".join(labels), "size": len(data), "stride": len(data)}],
                              "data_offset": 0}, "data": data}
            writer.write_message(m.topic, schemas[m.type], out, log_time=m.log_time, publish_time=m.publish_time)
        writer.finish()


def test_rewards_recomputed_where_the_recording_lacks_them(recorded: Path, frame, tmp_path: Path) -> None:
    tr = frame.read([recorded])
    np.testing.assert_allclose(frame.recompute(tr.obs, tr.action, tr.next_obs), tr.reward, rtol=1e-9, atol=1e-9)
    bare = tmp_path / "no_rewards.mcap"
    _without_rewards(recorded / "session.mcap", bare)
    again = frame.read([bare])
    assert again.rewards_recomputed and len(again) == len(tr)
    np.testing.assert_allclose(again.reward, tr.reward, rtol=1e-9, atol=1e-9)


def test_train_from_recording_writes_a_policy(recorded: Path, tmp_path: Path) -> None:
    from morl_robot.cli import main

    out = tmp_path / "offline"
    rc = main(["train", "--task", TASK, "--from-recording", str(recorded / "session.mcap"), "--updates", "3",
               "--set", "learner.training.demonstrations.pretrain_updates=5", "--out", str(out)])
    assert rc == 0
    assert (out / "policy.onnx").stat().st_size > 0
    summary = json.loads((out / "from_recording.json").read_text())
    assert summary["updates"] == 3 and summary["clone_updates"] == 5 and summary["episodes"] == 2
    with open(out / "episodes.csv") as f:
        assert len(list(csv.DictReader(f))) == 2


def test_fewer_transitions_than_a_batch_is_an_error_not_a_hang(recorded: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """MO-MPO updates need one full batch of sequences: too short a recording says so (rc 2) instead
    of waiting for a sample that never comes; ``--updates 0`` clones it."""
    from morl_robot.cli import main

    base = ["train", "--task", TASK, "--from-recording", str(recorded / "session.mcap"), "--steps", "50",
            "--set", "learner.training.demonstrations.pretrain_updates=2"]
    assert main([*base, "--updates", "3", "--out", str(tmp_path / "a")]) == 2
    assert "fewer than one batch" in capsys.readouterr().err
    assert main([*base, "--updates", "0", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "policy.onnx").is_file()


def test_a_recording_of_another_task_is_refused(recorded: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from morl_robot.cli import main

    out = tmp_path / "other"
    rc = main(["train", "--task", "shadow_touch", "--from-recording", str(recorded), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "another task or robot" in err and "shadow_touch" in err
    assert not (out / "policy.onnx").exists()


def test_graph_options_do_not_apply_offline(recorded: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from morl_robot.cli import main

    rc = main(["train", "--task", TASK, "--from-recording", str(recorded), "--record", "--out", str(tmp_path / "x")])
    assert rc == 2 and "--record" in capsys.readouterr().err


def test_online_session_seeded_with_the_recording(recorded: Path, frame, tmp_path: Path) -> None:
    n = len(frame.read([recorded]))
    out = tmp_path / "online"
    proc = run_cli(["train", "--task", TASK, "--from-recording", str(recorded / "session.mcap"), "--online",
                    "--steps", "64", "--no-progress", *TINY_CLONE, "--out", str(out)], timeout=240, out=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (out / "logs" / "learner_node.log").read_text()
    assert f"replay seeded with {n} recorded transitions" in log, log[-2000:]
    assert (out / "policy.onnx").is_file()
