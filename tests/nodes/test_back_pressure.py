"""Actors keep pace with the learner (back-pressure): in lockstep training the policy servers wait
while the learner's ``experience_allowance`` is used up, so the environment steps taken never run
ahead of what the samples-per-insert ratio accepts (Reverb's rate limiter semantics).  Vector
actors: tests/nodes/test_vectorized_training.py."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from tests.conftest import SLOW_LEARNER_RATIO, slow_learner_limiter, slow_learner_yaml

pytestmark = [pytest.mark.ros]

CHUNK = 64  # config/sessions/train.yaml policy_server.chunk_size


def test_environment_steps_never_outrun_the_samples_per_insert_ratio(tmp_path, domain_id):
    pytest.importorskip("rclpy")
    from morl_robot.session.processes import ros_env

    config = tmp_path / "slow.yaml"
    config.write_text(slow_learner_yaml(log_every=20))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "morl_robot.cli", "train", "--task", "sawyer_peg_in_hole", "--steps", "400",
           "--learner", str(config), "--out", str(out), "--no-progress", "--namespace", "bp", "--actors-kind", "per-step",
           "--domain-id", str(domain_id)]
    done = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(out / "metrics.csv", newline="") as f:
        rows = [(int(float(r["step"])), int(float(r["env_steps"]))) for r in csv.DictReader(f)]  # step = update
    assert len(rows) > 20, "too few logged updates to judge"
    for update, env_steps in rows:
        limiter = slow_learner_limiter(update)
        # the allowance, one chunk of run-ahead, and one chunk in flight
        assert env_steps <= limiter.max_inserts() + 2 * CHUNK, (update, env_steps, limiter.max_inserts())
    # and the learner was not starved either: the ratio was met by the end
    update, env_steps = rows[-1]
    assert env_steps >= 0.5 * (16 * update) / SLOW_LEARNER_RATIO
