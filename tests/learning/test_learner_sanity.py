"""End-to-end sanity: train() on a 1-step continuous bandit with two conflicting objectives."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from morl_robot.learning import MPOConfig, evaluate, train
from morl_robot.learning.config import NetworkConfig, ReplayConfig, TrainingConfig

torch.set_num_threads(1)


class TwoTargetBandit(gym.Env):
    """One step per episode; objective 0 wants a = +0.6, objective 1 wants a = -0.6."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    reward_space = gym.spaces.Box(-4.0, 0.0, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        a = float(np.asarray(action).reshape(-1)[0])
        reward = np.array([-(a - 0.6) ** 2, -(a + 0.6) ** 2], np.float32)
        return np.zeros(1, np.float32), reward, True, False, {}


def bandit_config(epsilons: list[float]) -> MPOConfig:
    return MPOConfig(
        epsilons=epsilons, batch_size=32, num_samples=10, sequence_length=1, target_update_period=10,
        policy_lr=3e-3, critic_lr=3e-3, initial_temperature=1.0, epsilon_mean=1e-2, epsilon_stddev=1e-4,
        networks=NetworkConfig(policy_hidden=[32, 32], critic_hidden=[32, 32]),
        replay=ReplayConfig(capacity=2000, samples_per_insert=16.0, min_size_to_sample=64, error_buffer=64.0),
        training=TrainingConfig(eval_every=0, eval_episodes=1, checkpoint_every=300, log_every=20, tensorboard=False),
    )


def deterministic_action(result) -> float:
    return float(result.policy(np.zeros(1, np.float32))[0])


def test_policy_moves_towards_the_preferred_objective() -> None:
    first = train(TwoTargetBandit, bandit_config([0.1, 0.002]), total_steps=500, seed=0, progress=False)
    second = train(TwoTargetBandit, bandit_config([0.002, 0.1]), total_steps=500, seed=0, progress=False)
    a1, a2 = deterministic_action(first), deterministic_action(second)
    assert a1 > 0.05 and a2 < -0.05, (a1, a2)  # started at 0.0
    assert first.final_return[0] > second.final_return[0] and first.final_return[1] < second.final_return[1]
    assert first.updates > 100 and first.metrics and "temperature/objective_0" in first.metrics[-1]


def test_train_writes_logs_and_resumes_from_out_dir(tmp_path: Path) -> None:
    cfg = bandit_config([0.1, 0.1])
    first = train(TwoTargetBandit, cfg, total_steps=300, seed=1, out_dir=tmp_path, progress=False)
    assert first.resumed_from is None and (tmp_path / "metrics.csv").exists() and (tmp_path / "eval.csv").exists()
    second = train(TwoTargetBandit, cfg, total_steps=450, seed=1, out_dir=tmp_path, progress=False)
    assert second.resumed_from is not None and second.resumed_from.name == "ckpt-000000000300.pt"
    assert second.env_steps == 450 and second.updates > first.updates
    returns = evaluate(second.policy, TwoTargetBandit, episodes=2, seed=0)
    assert returns.shape == (2,) and np.all(returns <= 0)
