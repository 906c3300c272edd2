"""PRISM (issue 38): the sparse-channel wrapper and ReSymNet's maths — released sums equal the true
sums over their segments, the segment-sum loss (paper eq. 1), the residual architecture, a
densified target that sums to the released value, the TorchScript model the learner re-reads."""
import gymnasium
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.errors import ConfigError
from morl_robot.learning import mpo
from morl_robot.prism.config import PrismConfig, ReSymNetConfig, load_prism_config
from morl_robot.prism.resymnet import (
    Densifier,
    ReSymNet,
    RewardEnsemble,
    export_densifier,
    segment_data,
    segment_sum_loss,
    train_densifier,
)
from morl_robot.prism.sparse import SparseRewardWrapper, collect_episodes


class ToyEnv(gymnasium.Env):
    """2-D observation, 1-D action; rewards [obs·a-ish forward, -a², 1]; episodes of 7-13 steps."""

    def __init__(self):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.reward_space = gymnasium.spaces.Box(-np.inf, np.inf, (3,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.limit = 0, int(self.np_random.integers(7, 14))
        self.s = self.np_random.normal(size=2).astype(np.float32)
        return self.s.copy(), {}

    def step(self, action):
        a = float(np.asarray(action).reshape(-1)[0])
        r = np.array([2.0 * a + self.s[0], -a * a, 1.0], np.float32)
        self.s = (0.9 * self.s + np.array([a, -a], np.float32)).astype(np.float32)
        self.t += 1
        return self.s.copy(), r, False, self.t >= self.limit, {}


@pytest.mark.parametrize("p_rel", [[0.0, 1.0, 1.0], [0.3, 1.0, 0.0], [1.0, 1.0, 1.0]])
def test_released_segments_sum_to_the_true_rewards(p_rel):
    env = SparseRewardWrapper(ToyEnv(), p_rel)
    episodes = collect_episodes(env, None, 6, seed=1)
    for ep in episodes:
        # every episode's released total equals its true total, per objective
        np.testing.assert_allclose(ep.released_rewards.sum(0), ep.true_rewards.sum(0), rtol=1e-5, atol=1e-5)
        assert ep.released[-1].all(), "everything is released at the episode's end"
        for k in range(3):
            for start, stop, total in ep.segments(k):
                assert total == pytest.approx(float(ep.true_rewards[start:stop, k].sum()), abs=1e-4)
            if p_rel[k] == 0.0:
                assert ep.released[:-1, k].sum() == 0 and len(ep.segments(k)) == 1
            if p_rel[k] == 1.0:
                np.testing.assert_array_equal(ep.released_rewards[:, k], ep.true_rewards[:, k])


def test_release_probabilities_are_checked():
    with pytest.raises(ConfigError, match=r"p_rel\[1\]: a release probability must be in \[0, 1\]"):
        SparseRewardWrapper(ToyEnv(), [0.0, 1.5, 1.0])
    with pytest.raises(ConfigError, match="expected 3 release probabilities"):
        SparseRewardWrapper(ToyEnv(), [0.0])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6), st.integers(0, 10_000))
def test_segment_sum_loss_is_eq1(lengths, seed):
    g = torch.Generator().manual_seed(seed)
    seg = torch.cat([torch.full((n,), j, dtype=torch.long) for j, n in enumerate(lengths)])
    pred = torch.randn(len(seg), generator=g)
    returns = torch.randn(len(lengths), generator=g)
    sums = torch.stack([pred[seg == j].sum() for j in range(len(lengths))])
    assert float(segment_sum_loss(pred, seg, returns)) == pytest.approx(float(((sums - returns) ** 2).mean()), rel=1e-5)
    # zero exactly when each segment's predictions sum to its released value, however they are spread
    spread = torch.rand(len(seg), generator=g) + 0.1
    spread = spread / torch.zeros(len(lengths)).index_add(0, seg, spread)[seg]
    assert float(segment_sum_loss(spread * returns[seg], seg, returns)) == pytest.approx(0.0, abs=1e-10)


def test_resymnet_architecture_follows_the_paper():
    net = ReSymNet(7, hidden=32, blocks=2, dropout=0.3)
    assert [type(m).__name__ for m in net.stem] == ["Linear", "LayerNorm", "ReLU"]
    body = [type(m).__name__ for m in net.blocks[0].body]
    assert body == ["Linear", "LayerNorm", "ReLU", "Dropout", "Linear", "LayerNorm"]
    assert net(torch.randn(5, 7)).shape == (5,)
    # the residual block adds its input; without residual it does not
    block = net.blocks[0].eval()
    x = torch.randn(4, 32)
    np.testing.assert_allclose((block(x) - block.body(x)).detach(), x, atol=1e-6)
    plain = ReSymNet(7, hidden=32, residual=False).blocks[0].eval()
    np.testing.assert_allclose(plain(x).detach(), plain.body(x).detach())


def test_ensemble_is_the_mean_of_its_standardised_members():
    members = [ReSymNet(3, hidden=8).eval() for _ in range(3)]
    mean, std = torch.tensor([1.0, -2.0, 0.5]), torch.tensor([2.0, 1.0, 4.0])
    ens = RewardEnsemble(members, mean, std).eval()
    h = torch.randn(6, 3)
    expected = torch.stack([m((h - mean) / std) for m in members]).mean(0)
    np.testing.assert_allclose(ens(h).detach(), expected.detach(), atol=1e-6)


def test_densified_target_sums_to_the_released_value():
    """A reward model that predicts the true per-step reward gives critic targets whose sum over every
    released segment is the released value (replace); mix keeps the released column's share."""
    env = SparseRewardWrapper(ToyEnv(), [0.25, 1.0, 1.0])
    for ep in collect_episodes(env, None, 4, seed=3):
        rewards = torch.as_tensor(ep.released_rewards)
        pred = torch.as_tensor(ep.true_rewards[:, :1])
        dense = mpo.densified_rewards(rewards, pred, [0], "replace")
        for start, stop, total in ep.segments(0):
            assert float(dense[start:stop, 0].sum()) == pytest.approx(total, abs=1e-4)
        torch.testing.assert_close(dense[:, 1:], rewards[:, 1:])
        mixed = mpo.densified_rewards(rewards, pred, [0], "mix", 0.25)
        torch.testing.assert_close(mixed[:, 0], 0.25 * pred[:, 0] + 0.75 * rewards[:, 0])


def test_resymnet_learns_a_per_step_reward_from_episode_sums(tmp_path):
    """p_rel = 0 (one sum per episode): the ensemble's per-step predictions correlate with the true
    per-step channel, and the exported TorchScript model gives the same numbers."""
    env = SparseRewardWrapper(ToyEnv(), [0.0, 1.0, 1.0])
    episodes = collect_episodes(env, None, 160, seed=0)
    cfg = ReSymNetConfig(hidden=32, ensemble=2, epochs=150, patience=15, dropout=0.0)
    densifier, reports = train_densifier(episodes, [0], [1, 2], cfg, seed=0)
    assert set(reports) == {0} and len(reports[0]) == 2
    data = segment_data(episodes, 0, [1, 2])
    assert data.num_segments == 160
    held = collect_episodes(env, None, 20, seed=10_000)
    o = torch.as_tensor(np.concatenate([e.observations for e in held]))
    a = torch.as_tensor(np.concatenate([e.actions for e in held]))
    r = torch.as_tensor(np.concatenate([e.released_rewards for e in held]))
    pred = densifier(o, a, r)[:, 0].detach().numpy()
    true = np.concatenate([e.true_rewards[:, 0] for e in held])
    assert np.corrcoef(pred, true)[0, 1] > 0.9
    path = export_densifier(densifier, tmp_path / "model.pt")
    loaded = torch.jit.load(str(path))
    np.testing.assert_allclose(loaded(o, a, r)[:, 0].detach().numpy(), pred, atol=1e-5)


def test_prism_config_defaults_are_table_8_and_errors_name_the_key(tmp_path):
    cfg = PrismConfig()
    r, ref = cfg.resymnet, cfg.refinement
    assert (ref.initial_episodes, ref.policy_episodes, ref.refinements, ref.steps_per_cycle) == (1000, 1000, 2, 100_000)
    assert (r.epochs, r.learning_rate, r.lr_decay, r.ensemble, r.hidden, r.dropout, r.validation_split, r.patience,
            r.batch_size) == (1000, 5e-3, 0.99, 3, 256, 0.3, 0.2, 20, 32)
    assert load_prism_config("mo-hopper-v5").p_rel == [0.0, 1.0, 1.0]
    bad = tmp_path / "bad.yaml"
    bad.write_text("resymnet:\n  dropout: 1.5\n")
    with pytest.raises(ConfigError, match=r"resymnet.dropout.*\[0, 1\)"):
        load_prism_config(bad)
    bad.write_text("symreg_weight: 0.1\nmirror: ''\n")
    with pytest.raises(ConfigError, match="mirror"):
        load_prism_config(bad)


def test_densifier_reads_only_the_dense_columns():
    ens = RewardEnsemble([ReSymNet(2 + 1 + 1, hidden=8).eval()], torch.zeros(4), torch.ones(4))
    d = Densifier([ens], dense=[2]).eval()
    o, a = torch.randn(5, 2), torch.randn(5, 1)
    r1, r2 = torch.randn(5, 3), torch.randn(5, 3)
    r2[:, 2] = r1[:, 2]  # the sparse columns differ, the dense one does not
    torch.testing.assert_close(d(o, a, r1), d(o, a, r2))
