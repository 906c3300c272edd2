"""End-to-end sanity: train() on a 1-step continuous bandit with two conflicting objectives."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from morl_robot.learning import MPOConfig
from morl_robot.learning.config import NetworkConfig, ReplayConfig, TrainingConfig
from morl_robot.training import evaluate, train

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


def test_demonstration_episodes_come_first_and_score_their_own_log_probability() -> None:
    import dataclasses

    from morl_robot.acting.demonstrator import NoisyDemonstrator
    from morl_robot.learning.config import DemonstrationConfig

    calls: list[np.ndarray] = []

    def demonstrator(obs: np.ndarray) -> np.ndarray:
        calls.append(obs)
        return np.array([0.6])

    cfg = bandit_config([0.1, 0.1])
    cfg.training = dataclasses.replace(cfg.training, demonstrations=DemonstrationConfig(episodes=40, action_noise=0.1))
    result = train(TwoTargetBandit, cfg, total_steps=120, seed=0, progress=False, demonstrator=demonstrator)
    assert len(calls) == 40 and result.env_steps == 120  # one step per bandit episode: 40 demos, then the policy

    # log μ(a|s) of the noisy demonstrator is the Gaussian log-density of the action it returned
    noisy = NoisyDemonstrator(lambda obs: np.array([0.1, -0.3]), std=0.2, seed=3)
    for _ in range(20):
        action, log_mu = noisy.act(np.zeros(1, np.float32))
        expected = torch.distributions.Normal(torch.tensor([0.1, -0.3]), 0.2).log_prob(torch.from_numpy(action)).sum()
        assert np.all(np.abs(action) <= 1.0) and abs(log_mu - float(expected)) < 1e-5


def test_demonstrations_without_a_demonstrator_are_refused() -> None:
    import dataclasses

    import pytest

    from morl_robot.errors import ConfigError
    from morl_robot.learning.config import DemonstrationConfig

    cfg = bandit_config([0.1, 0.1])
    cfg.training = dataclasses.replace(cfg.training, demonstrations=DemonstrationConfig(episodes=5))
    with pytest.raises(ConfigError, match="no demonstrator"):
        train(TwoTargetBandit, cfg, total_steps=20, seed=0, progress=False)
    with pytest.raises(ConfigError, match="action_noise"):
        DemonstrationConfig(episodes=5, action_noise=0.0).validate()


def test_behaviour_cloning_on_the_demonstrations_before_the_policy_acts() -> None:
    import dataclasses

    from morl_robot.learning.config import DemonstrationConfig

    cfg = bandit_config([0.1, 0.1])
    demos = DemonstrationConfig(episodes=40, action_noise=0.1, pretrain_updates=300)
    cfg.training = dataclasses.replace(cfg.training, demonstrations=demos)
    cloned = train(TwoTargetBandit, cfg, total_steps=41, seed=0, progress=False, demonstrator=lambda obs: np.array([0.6]))
    plain = train(TwoTargetBandit, bandit_config([0.1, 0.1]), total_steps=41, seed=0, progress=False)
    # the policy acts like the demonstrator (its mean at the noise-free 0.6), the untrained one does not
    assert abs(deterministic_action(cloned) - 0.6) < 0.1 and abs(deterministic_action(plain) - 0.6) > 0.3


def test_behaviour_cloning_has_its_own_learning_rate() -> None:
    """``training.demonstrations.pretrain_lr``: the cloning steps at its rate, the fine-tuning after
    it at ``policy_lr`` (here too small to clone in 300 steps)."""
    import dataclasses

    from morl_robot.learning.config import DemonstrationConfig

    def run(pretrain_lr: float | None):
        cfg = dataclasses.replace(bandit_config([0.1, 0.1]), policy_lr=1e-5)
        demos = DemonstrationConfig(episodes=40, action_noise=0.1, pretrain_updates=300, pretrain_lr=pretrain_lr)
        cfg.training = dataclasses.replace(cfg.training, demonstrations=demos)
        return train(TwoTargetBandit, cfg, total_steps=41, seed=0, progress=False, demonstrator=lambda obs: np.array([0.6]))

    own, shared = run(3e-3), run(None)
    assert abs(deterministic_action(own) - 0.6) < 0.1 and abs(deterministic_action(shared) - 0.6) > 0.3
    assert [g["lr"] for g in own.learner.policy_optimizer.param_groups] == [1e-5]


def test_critic_warm_up_fits_the_critics_while_the_policy_and_duals_stay_put() -> None:
    """``training.demonstrations.critic_warmup_updates``: after cloning, policy-evaluation-only
    updates move the critics (towards the demonstrations' values) and nothing of the policy."""
    import dataclasses

    from morl_robot.learning.config import DemonstrationConfig

    def run(warmup: int):
        cfg = bandit_config([0.1, 0.1])
        demos = DemonstrationConfig(episodes=40, action_noise=0.1, pretrain_updates=200, critic_warmup_updates=warmup)
        cfg.training = dataclasses.replace(cfg.training, demonstrations=demos)
        # 41 steps: 40 demonstrations, then cloning (+ warm-up) and one policy step; no MO-MPO update yet
        return train(TwoTargetBandit, cfg, total_steps=41, seed=0, progress=False, demonstrator=lambda obs: np.array([0.6]))

    plain, warmed = run(0), run(150)
    assert plain.updates == 0 and warmed.updates == 150
    for name, p in plain.learner.policy.state_dict().items():  # the policy is the cloned one, bit for bit
        assert torch.equal(p, warmed.learner.policy.state_dict()[name]), name
        assert torch.equal(p, warmed.learner.target_policy.state_dict()[name]), name
    for a, b in zip(plain.learner.dual_params, warmed.learner.dual_params):
        assert torch.equal(a.detach(), b.detach())
    # the critics learned the demonstrated action's returns: Q_k(s, 0.6) ≈ (-(0.6-0.6)², -(0.6+0.6)²)
    q = {r.updates: r.learner.critic(torch.zeros(1, 1), torch.tensor([[0.6]]))[0].detach().numpy()
         for r in (plain, warmed)}
    assert np.abs(q[0]).max() < 0.1 and abs(q[150][1] - (-1.44)) < 0.3, q
    # and the targets were synchronised with them
    for name, p in warmed.learner.critic.state_dict().items():
        assert torch.equal(p, warmed.learner.target_critic.state_dict()[name]), name


def test_policy_evaluation_only_update_leaves_policy_and_duals_untouched() -> None:
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.networks import ActionSpec

    learner = MOMPOLearner(3, ActionSpec.box(2), 2, bandit_config([0.1, 0.1]), seed=0)
    rng = np.random.default_rng(0)
    T, B = 1, 32
    batch = {"observations": rng.standard_normal((T + 1, B, 3)).astype(np.float32),
             "actions": rng.uniform(-1, 1, (T, B, 2)).astype(np.float32),
             "rewards": np.stack([np.ones((T, B)), -np.ones((T, B))], -1).astype(np.float32),
             "mask": np.ones((T, B), np.float32), "terminated": np.ones((T, B), np.float32),
             "truncated": np.zeros((T, B), np.float32), "behaviour_log_prob": np.zeros((T, B), np.float32)}
    before = {k: v.clone() for k, v in learner.state_dict()["policy"].items()}
    duals = [p.detach().clone() for p in learner.dual_params]
    critic = [p.detach().clone() for p in learner.critic.parameters()]
    first = learner.update(batch, improve_policy=False)
    for _ in range(60):
        last = learner.update(batch, improve_policy=False)
    assert learner.num_updates == 61 and "kl_mean" not in last and "temperature/objective_0" not in last
    assert all(torch.equal(v, learner.policy.state_dict()[k]) for k, v in before.items())
    assert all(torch.equal(a, b.detach()) for a, b in zip(duals, learner.dual_params))
    assert any(not torch.equal(a, b.detach()) for a, b in zip(critic, learner.critic.parameters()))
    assert last["loss/critic"] < 0.5 * first["loss/critic"], (first["loss/critic"], last["loss/critic"])
    stepped = learner.update(batch)  # a full update moves the policy
    assert "kl_mean" in stepped and any(not torch.equal(v, learner.policy.state_dict()[k]) for k, v in before.items())


def test_training_stops_once_the_greedy_return_is_stable() -> None:
    """``training.stop_when_stable``: N equal evaluations in a row end the run; changing ones do not."""
    import dataclasses

    cfg = bandit_config([0.1, 0.1])
    cfg = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, eval_every=50, stop_when_stable=3))
    steady = train(TwoTargetBandit, cfg, total_steps=1000, seed=0, progress=False,
                   eval_fn=lambda policy: np.array([-1.0, -2.0]))
    assert steady.converged_at == 50 and steady.env_steps == 150, (steady.converged_at, steady.env_steps)
    assert [s for s, _ in steady.evaluations] == [50, 100, 150]
    assert np.array_equal(steady.final_return, [-1.0, -2.0])
    calls = iter(range(100))
    moving = train(TwoTargetBandit, cfg, total_steps=300, seed=0, progress=False,
                   eval_fn=lambda policy: np.array([float(next(calls)), 0.0]))
    assert moving.converged_at is None and moving.env_steps == 300


def test_stable_since_and_its_config_checks() -> None:
    import pytest

    from morl_robot.errors import ConfigError
    from morl_robot.training.loop import stable_since

    evals = [(10, np.array([1.0, 2.0])), (20, np.array([3.0, 2.0])), (30, np.array([3.0, 2.0]))]
    assert stable_since(evals, 2) == 20 and stable_since(evals, 3) is None and stable_since(evals[:1], 2) is None
    with pytest.raises(ConfigError, match="stop_when_stable"):
        TrainingConfig(eval_every=100, stop_when_stable=1).validate()
    with pytest.raises(ConfigError, match="stop_when_stable"):
        TrainingConfig(eval_every=0, stop_when_stable=3).validate()


class ScaledObservationBandit(TwoTargetBandit):
    """The bandit with a large, noisy observation (scale 1000): only a normaliser makes it O(1)."""

    observation_space = gym.spaces.Box(-1e4, 1e4, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return (np.array([1000.0, -500.0]) + 100.0 * self.np_random.standard_normal(2)).astype(np.float32), {}

    def step(self, action):
        _, reward, terminated, truncated, info = super().step(action)
        return self.reset()[0], reward, terminated, truncated, info


def test_observation_normalization_is_learned_checkpointed_and_travels_with_the_policy(tmp_path: Path) -> None:
    import dataclasses

    import pytest

    from morl_robot.errors import ConfigError

    cfg = bandit_config([0.1, 0.1])
    cfg = cfg.replace(training=dataclasses.replace(cfg.training, observation_normalization=True))
    result = train(ScaledObservationBandit, cfg, total_steps=300, seed=0, out_dir=tmp_path, progress=False)
    norm = result.policy.normalizer
    assert norm is not None and norm.count == 300
    np.testing.assert_allclose(norm.mean, [1000.0, -500.0], atol=30.0)
    np.testing.assert_allclose(norm.std, [100.0, 100.0], rtol=0.25)
    # the policy acts on normalised inputs: a raw observation is normalised inside act()
    raw = np.array([1000.0, -500.0], np.float32)
    with torch.no_grad():
        direct = result.learner.policy(torch.as_tensor(norm.normalize(raw), dtype=torch.float32).reshape(1, -1))[0]
    np.testing.assert_allclose(result.policy(raw), direct.numpy().reshape(-1), atol=1e-6)
    # the statistics are in the checkpoint; resuming with normalisation off is refused by name
    resumed = train(ScaledObservationBandit, cfg, total_steps=350, seed=0, out_dir=tmp_path, progress=False)
    assert resumed.resumed_from is not None and resumed.policy.normalizer.count == 350
    plain = cfg.replace(training=dataclasses.replace(cfg.training, observation_normalization=False))
    with pytest.raises(ConfigError, match="observation_normalization"):
        train(ScaledObservationBandit, plain, total_steps=400, seed=0, out_dir=tmp_path, progress=False)


def test_one_conditioned_policy_follows_its_preference_through_train() -> None:
    from morl_robot.learning.preferences import PreferenceConfig

    cfg = bandit_config([0.1, 0.1]).replace(epsilons=[], preferences=PreferenceConfig(ranges=[[0.002, 0.1]] * 2))
    result = train(TwoTargetBandit, cfg, total_steps=800, seed=0, progress=False)
    toward_0 = float(result.policy.with_preference([0.1, 0.002])(np.zeros(1, np.float32))[0])
    toward_1 = float(result.policy.with_preference([0.002, 0.1])(np.zeros(1, np.float32))[0])
    assert toward_0 > 0.05 and toward_1 < -0.05, (toward_0, toward_1)
    with_pref = result.learner.last_preference_kl
    assert with_pref is not None and with_pref[0].shape == (2, 32)
