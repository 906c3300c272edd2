"""The critic must learn how Q depends on the action, with the sign of the rewards, under
bootstrapped targets: a synthetic task whose second reward is −|a|² (6-D actions), next states
independent of the action, γ = 0.99.  The Retrace targets regress on |a_t|² with slope ≈ −1; a ReLU
critic (``networks.critic_torso: relu``) fits that slope; the LayerNorm/tanh torso was seen fitting
it with the wrong sign at this budget (see :mod:`morl_robot.learning.networks`)."""
import numpy as np
import pytest
import torch

from morl_robot.learning.config import MPOConfig, NetworkConfig, ReplayConfig
from morl_robot.learning.learner import MOMPOLearner
from morl_robot.learning.networks import ActionSpec
from morl_robot.learning.replay import SequenceReplay


def _slope_after_training(torso: str) -> tuple[float, float]:
    torch.manual_seed(0)
    cfg = MPOConfig(epsilons=[0.1, 0.1], batch_size=64, num_samples=8, sequence_length=4, discount=0.99,
                    policy_lr=3e-4, critic_lr=1e-3, target_update_period=50,
                    networks=NetworkConfig(policy_hidden=[64, 64], critic_hidden=[128, 128], init_std=0.5,
                                           critic_torso=torso, critic_output_scale=1.0),
                    replay=ReplayConfig(capacity=10_000, min_size_to_sample=100, error_buffer=1000.0))
    learner = MOMPOLearner(8, ActionSpec.box(4), 2, cfg, seed=0)
    replay = SequenceReplay(10_000, 8, 4, 2, seed=0)
    rng = np.random.default_rng(0)
    obs = rng.standard_normal(8).astype(np.float32)
    actor = learner.actor()
    for t in range(6000):
        a, log_mu = actor.act(obs)
        nxt = rng.standard_normal(8).astype(np.float32)
        replay.add(obs, a, np.array([a[0], -np.sum(a ** 2)], np.float32), nxt, False, (t + 1) % 500 == 0, log_mu)
        obs = nxt
    for _ in range(800):
        learner.update(replay.sample(64, 4))
    x = torch.randn(200, 8)
    with torch.no_grad():
        mean, std = learner.policy(x)
        acts = (mean + std * torch.randn(12, 200, 4)).clamp(-1, 1)
        q = learner.critic(x, acts)
    sq = (acts ** 2).sum(-1)
    slope_cost = np.mean([np.polyfit(sq[:, i].numpy(), q[:, i, 1].numpy(), 1)[0] for i in range(200)])
    slope_speed = np.mean([np.polyfit(acts[:, i, 0].numpy(), q[:, i, 0].numpy(), 1)[0] for i in range(200)])
    return float(slope_cost), float(slope_speed)


def test_a_relu_critic_learns_the_action_dependence_with_the_rewards_sign():
    cost, speed = _slope_after_training("relu")
    assert cost < -0.5, cost  # true: −1
    assert speed > 0.5, speed  # true: +1


@pytest.mark.extended  # make test-extended: a contrast, 18 s
def test_the_layernorm_torso_misses_it_at_this_budget_for_contrast():
    """Why ``conditioned.yaml`` uses ``critic_torso: relu``: the default torso's fitted cost slope
    stays near zero or positive (measured +0.08 here, against the ReLU critic's −1.20)."""
    cost, _ = _slope_after_training("layernorm")
    assert cost > -0.5, cost
