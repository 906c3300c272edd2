"""Vectorized simulated actors end to end: ``morl-robot train --actors-kind vectorized`` through the
real CLI, two ``vector_actor`` processes and one ``learner_node`` on the real middleware.

One run (a slow learner: many samples per insert, short episodes) checks that the run directory is
complete, that experience from both actor processes' environments reached the one learner (its
episodes come from every environment, with hot-reloaded policy versions), and that back-pressure
keeps the environment steps within what the samples-per-insert ratio allows."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest
import yaml

from morl_robot.resources import config_path
from tests.conftest import SLOW_LEARNER_RATIO, slow_learner_limiter, slow_learner_yaml

pytestmark = [pytest.mark.ros]

ACTORS, ENVS, CHUNK, STEPS = 2, 2, 8, 700


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    pytest.importorskip("rclpy")
    from morl_robot.session.processes import ros_env
    from tests.conftest import _next_domain

    tmp = tmp_path_factory.mktemp("vectorized")
    (tmp / "slow.yaml").write_text(slow_learner_yaml(log_every=10))
    task = yaml.safe_load(config_path("tasks/sawyer_peg_in_hole.yaml").read_text())
    task["episode_duration"] = 0.5  # 10-step episodes: many finish in a short run
    (tmp / "short.yaml").write_text(yaml.safe_dump(task))
    session = yaml.safe_load(config_path("sessions/train.yaml").read_text())
    session["vector_actor"] = {"chunk_size": CHUNK}
    session["learner_node"].update(config=str(tmp / "slow.yaml"), task_config=str(tmp / "short.yaml"),
                                   snapshot_every=20)
    (tmp / "session.yaml").write_text(yaml.safe_dump(session))
    out = tmp / "run"
    domain = _next_domain()
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--session", str(tmp / "session.yaml"),
           "--task", "sawyer_peg_in_hole", "--actors-kind", "vectorized", "--envs", str(ENVS),
           "--actors", str(ACTORS), "--steps", str(STEPS), "--out", str(out), "--no-progress",
           "--namespace", "vec", "--domain-id", str(domain)]
    done = subprocess.run(cmd, env=ros_env(domain), capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_run_directory_is_complete(run):
    for name in ("policy.onnx", "session.yaml", "sessions.json", "metrics.csv", "episodes.csv",
                 "safety_violations.json", "logs/vector_actor.log", "logs/learner_node.log"):
        assert (run / name).is_file(), name
    assert list((run / "checkpoints").glob("*.pt")) and list((run / "snapshots").glob("*.onnx"))
    session = yaml.safe_load((run / "session.yaml").read_text())
    assert session["actors_kind"] == "vectorized" and session["vector_actor"]["envs"] == ENVS


def test_both_actor_processes_feed_the_one_learner(run):
    with open(run / "episodes.csv", newline="") as f:
        episodes = list(csv.DictReader(f))
    actors = {int(float(e["actor"])) for e in episodes}
    assert actors == set(range(ACTORS * ENVS)), actors  # environment b of actor i: i·ENVS + b
    assert all(int(float(e["length"])) == 10 for e in episodes if e["termination"] == "truncated")
    # the actors acted with the learner's newer snapshots (hot reload), not only the first
    assert max(int(float(e["policy_version"])) for e in episodes) > 1


def test_back_pressure_bounds_the_updates_owed(run):
    with open(run / "metrics.csv", newline="") as f:
        rows = [(int(float(r["step"])), int(float(r["env_steps"]))) for r in csv.DictReader(f)]
    assert len(rows) > 10, "too few logged updates to judge"
    for update, env_steps in rows:
        limiter = slow_learner_limiter(update)  # the samples taken after `update` updates of batch 16
        # every actor process sees the learner's allowance (<= max_inserts) and may pass it by what
        # its environments hold (a chunk each) and one chunk each in flight; without back-pressure
        # the actors finish all their steps while the learner has made a few updates
        bound = ACTORS * (limiter.max_inserts() + 2 * ENVS * CHUNK)
        assert env_steps <= bound, (update, env_steps, bound)
    update, env_steps = rows[-1]
    assert env_steps >= 0.5 * (16 * update) / SLOW_LEARNER_RATIO  # and the learner was not starved
