"""The learner core (:class:`LearnerSession`) without ROS: back-pressure bounds the updates owed,
a divergence rolls back to the newest policy version, and an interrupted ``train()`` resumes with
nothing lost and nothing repeated (counters, replay, metrics/episodes rows)."""
from __future__ import annotations

import csv
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from morl_robot.learning.checkpoint import (
    list_checkpoints,
    load_checkpoint,
    run_checkpoint_dir,
)
from morl_robot.learning.networks import ActionSpec
from morl_robot.training import train
from morl_robot.training.run_directory import PAYLOAD_KEYS
from morl_robot.training.session import LearnerSession

sys.path.insert(0, str(Path(__file__).parent))
from test_learner_sanity import TwoTargetBandit, bandit_config

torch.set_num_threads(1)
OBS, ACT, K = 3, 2, 2


def small_session(**options) -> LearnerSession:
    cfg = bandit_config([0.1, 0.1])
    cfg = dataclasses.replace(cfg, batch_size=16, replay=dataclasses.replace(
        cfg.replay, samples_per_insert=8.0, min_size_to_sample=32, error_buffer=64.0))
    session = LearnerSession(OBS, ActionSpec.box(ACT), K, cfg, seed=0, **options)
    session.start()
    return session


def feed(session: LearnerSession, steps: int, rng: np.random.Generator) -> None:
    for _ in range(steps):
        session.add_transition(rng.normal(size=OBS).astype(np.float32), rng.uniform(-1, 1, ACT).astype(np.float32),
                               rng.normal(size=K).astype(np.float32), rng.normal(size=OBS).astype(np.float32),
                               False, False, -1.0)


@pytest.mark.parametrize("respect_allowance", [True, False])
def test_updates_owed_stay_bounded_while_actors_respect_the_allowance(respect_allowance: bool) -> None:
    """A slow learner (one update per tick) and an actor sending chunks of 8 transitions: with
    back-pressure the backlog never exceeds ``max_updates_owed`` (+ one chunk's worth); without
    it the backlog grows with every chunk."""
    session, rng, chunk = small_session(), np.random.default_rng(0), 8
    bound = session.max_updates_owed + chunk * session.config.replay.samples_per_insert / session.config.batch_size
    owed, waits = [], 0
    for _ in range(400):
        received, allowed = session.allowance()
        if respect_allowance and received >= allowed:
            waits += 1  # the actor waits for the learner
        else:
            feed(session, chunk, rng)
        session.learn(max_updates=1)
        owed.append(session.updates_owed())
    assert session.statistics()["updates_owed"] == owed[-1]
    if respect_allowance:
        assert waits > 0 and max(owed) <= bound, (max(owed), bound)
        assert session.learner.num_updates > 300  # learning kept going
    else:
        assert max(owed) > 10 * bound  # unbounded: what back-pressure prevents


def test_a_divergence_rolls_back_to_the_newest_policy_version_and_stops_learning() -> None:
    session, rng = small_session(snapshot_every=5), np.random.default_rng(1)
    feed(session, 200, rng)
    session.learn(max_updates=10)
    assert session.counters["policy_version"] == 2  # new versions at updates 5 and 10
    version_state = {k: v.clone() for k, v in session.learner.policy.state_dict().items()}
    session.learn(max_updates=3)  # updates 11-13 change the weights …
    real_update = session.learner.update
    session.learner.update = lambda batch: {**real_update(batch), "loss/policy": float("nan")}
    session.learn()  # … update 14 diverges
    assert "non-finite learner statistics at update 14" in session.diverged and "loss/policy" in session.diverged
    assert session.learner.num_updates == 10 and session.counters["updates"] == 10  # version 2's state
    for key, value in session.learner.policy.state_dict().items():
        assert torch.equal(value, version_state[key]), key
    assert not session.can_learn() and session.learn() == 0  # stopped, although the ratio allows


class InterruptedBandit(TwoTargetBandit):
    """The bandit, interrupted (Ctrl-C) at its ``at``-th step."""

    steps, at = 0, 0

    def step(self, action):
        InterruptedBandit.steps += 1
        if InterruptedBandit.steps == InterruptedBandit.at:
            raise KeyboardInterrupt
        return super().step(action)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_an_interrupted_train_call_resumes_with_nothing_lost_or_repeated(tmp_path: Path) -> None:
    cfg = bandit_config([0.1, 0.1])
    cfg = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, checkpoint_every=100,
                                                                checkpoint_replay=True))
    InterruptedBandit.steps, InterruptedBandit.at = 0, 351
    with pytest.raises(KeyboardInterrupt):
        train(InterruptedBandit, cfg, total_steps=500, seed=0, out_dir=tmp_path, progress=False)
    newest = list_checkpoints(run_checkpoint_dir(tmp_path))[-1]
    assert newest.name == "ckpt-000000000300.pt"
    payload = load_checkpoint(newest)
    assert set(payload) == set(PAYLOAD_KEYS)  # the one schema (train(): no contract, no ingest)
    saved = payload["counters"]
    assert saved["env_steps"] == saved["episodes"] == 300 and saved["updates"] > 0

    result = train(TwoTargetBandit, cfg, total_steps=500, seed=0, out_dir=tmp_path, progress=False)  # lock released
    assert result.resumed_from == newest and result.env_steps == result.episodes == 500
    assert result.updates > saved["updates"]
    # one episodes.csv row per (one-step) episode: the 50 rows after the checkpoint were dropped, not repeated
    steps = [int(r["env_steps"]) for r in _rows(tmp_path / "episodes.csv")]
    assert steps == list(range(1, 501))
    updates = [int(r["step"]) for r in _rows(tmp_path / "metrics.csv")]
    assert updates == sorted(set(updates)) and updates[-1] <= result.updates
    assert len(updates) == result.updates // cfg.training.log_every
    final = load_checkpoint(list_checkpoints(run_checkpoint_dir(tmp_path))[-1])
    assert final["counters"]["env_steps"] == 500 and final["counters"]["updates"] == result.updates
    assert final["limiter"]["inserts"] == 500  # the replay and its ratio came back with the checkpoint


def _chunk(actor: int, episode: int, rows: int, version: int, rng: np.random.Generator):
    """A chunk of one whole episode of ``rows`` steps acted by policy ``version`` (0: the demonstrator)."""
    from morl_robot.acting.experience import ExperienceChunk

    obs = rng.normal(size=(rows + 1, OBS))
    return ExperienceChunk(actor=actor, policy_version=np.full(rows, float(version)), episode=np.full(rows, float(episode)),
                           step=np.arange(rows, dtype=float), obs=obs[:-1], action=rng.uniform(-1, 1, (rows, ACT)),
                           log_prob=np.full(rows, -1.0), reward=rng.normal(size=(rows, K)), next_obs=obs[1:],
                           terminated=np.arange(rows) == rows - 1, truncated=np.zeros(rows, bool),
                           objectives=("objective_0", "objective_1"))


def _demo_session(episodes: int, **options) -> LearnerSession:
    from morl_robot.acting.experience import experience_columns
    from morl_robot.learning.config import DemonstrationConfig

    cfg = bandit_config([0.1, 0.1])
    cfg = dataclasses.replace(cfg, batch_size=16, objective_names=["objective_0", "objective_1"], training=dataclasses.replace(
        cfg.training, demonstrations=DemonstrationConfig(episodes=episodes, action_noise=0.1, pretrain_updates=300)))
    session = LearnerSession(OBS, ActionSpec.box(ACT), K, cfg, seed=0,
                             demonstrator=lambda obs: np.array([0.6, -0.4]), **options)
    session.accept_experience(experience_columns([f"o{i}" for i in range(OBS)], [f"a{i}" for i in range(ACT)],
                                                 ["objective_0", "objective_1"]))
    session.start()
    return session


def test_distributed_demonstrations_are_cloned_once_all_are_in() -> None:
    """The graph's learner: rows of policy_version 0 are demonstrations; once the configured
    episodes are in, a tick clones the policy on the demonstrator's noise-free actions (not the
    noisy ones in the rows) and makes it the next policy version."""
    rng = np.random.default_rng(0)
    session = _demo_session(episodes=2)
    session.add_chunk(_chunk(0, 0, 20, 0, rng))
    assert session.demonstrating and not session.demonstrations_complete
    version = session.counters["policy_version"]
    session.add_chunk(_chunk(0, 1, 20, 0, rng))
    assert session.demonstrations_complete and session.counters["demonstration_episodes"] == 2
    session.tick(deadline=0.0)
    assert not session.demonstrating and session.counters["policy_version"] == version + 1
    with torch.no_grad():
        mean, _ = session.learner.policy(torch.zeros(1, OBS))
    assert np.allclose(mean.numpy()[0], [0.6, -0.4], atol=0.1)
    with pytest.raises(Exception, match="no demonstrator"):
        LearnerSession(OBS, ActionSpec.box(ACT), K, session.config, seed=0)


def test_a_learned_policy_acting_ends_the_demonstration_phase() -> None:
    """A resumed run's actors do not demonstrate again: the first row of a learned policy ends the
    phase (cloned on what was received)."""
    rng = np.random.default_rng(1)
    session = _demo_session(episodes=5)
    session.add_chunk(_chunk(0, 0, 20, 0, rng))
    session.add_chunk(_chunk(0, 1, 20, 3, rng))
    assert session.demonstrations_complete and session.counters["demonstration_episodes"] == 1
    assert session.end_demonstrations() and not session.demonstrating
