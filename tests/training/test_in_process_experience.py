"""The in-process ``train()`` acts through the actor core's experience writer into the session's
ingest (the graph's path): one transition per chunk, no sequence break between them, the task's
termination reason and the actor columns in ``episodes.csv``; discrete actions too."""
from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from morl_robot.learning.config import (
    MPOConfig,
    NetworkConfig,
    ReplayConfig,
    TrainingConfig,
)
from morl_robot.training import train
from morl_robot.training.ingest import ExperienceIngest

torch.set_num_threads(1)


class Walk(gym.Env):
    """Four steps per episode; Box or Discrete actions; the end names its reason."""

    observation_space = gym.spaces.Box(-5.0, 5.0, (2,), np.float32)
    reward_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self, discrete: bool = False) -> None:
        self.action_space = gym.spaces.Discrete(3) if discrete else gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        a = float(np.asarray(action, np.float64).reshape(-1)[0])
        obs = np.array([self.t, a], np.float32)
        return obs, np.array([a, -a], np.float32) * 0.1, self.t >= 4, False, {"termination": "walked" if self.t >= 4 else ""}


def config() -> MPOConfig:
    return MPOConfig(epsilons=[0.1, 0.1], batch_size=8, num_samples=4, sequence_length=3, target_update_period=5,
                     networks=NetworkConfig(policy_hidden=[16], critic_hidden=[16]),
                     replay=ReplayConfig(capacity=500, samples_per_insert=4.0, min_size_to_sample=16, error_buffer=32.0),
                     training=TrainingConfig(eval_every=0, eval_episodes=1, checkpoint_every=0, log_every=5,
                                             tensorboard=False))


def test_train_writes_through_the_ingest_one_contiguous_transition_per_chunk(monkeypatch, tmp_path: Path) -> None:
    calls: list[tuple[int, int, bool]] = []
    original = ExperienceIngest.add

    def spy(self, chunk, columns=None, contiguous=False):
        result = original(self, chunk, columns, contiguous=contiguous)
        calls.append((result.transitions, result.breaks, contiguous))
        return result

    monkeypatch.setattr(ExperienceIngest, "add", spy)
    result = train(Walk, config(), total_steps=40, seed=0, progress=False, out_dir=tmp_path)
    assert len(calls) == result.env_steps == 40
    assert all(c == (1, 0, True) for c in calls)  # every step its own chunk, never a sequence break
    assert result.updates > 0
    with open(tmp_path / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == result.episodes == 10
    assert {r["termination"] for r in rows} == {"walked"} and {r["actor"] for r in rows} == {"0"}
    assert {r["length"] for r in rows} == {"4"}


def test_discrete_actions_go_through_the_ingest_as_indices() -> None:
    result = train(lambda: Walk(discrete=True), dataclasses.replace(config(), sequence_length=2), total_steps=40,
                   seed=1, progress=False)
    assert result.env_steps == 40 and result.updates > 0
    assert np.isfinite(result.final_return).all()
