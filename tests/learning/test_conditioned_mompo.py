"""ε-conditioned MO-MPO: the per-sequence E-step solves every sampled ε exactly, is scale invariant,
and the whole learner (MOMPOLearner.update) gives one policy that follows its preference input and
does not move when one objective is rescaled (MO-MPO paper §4.2.1, now at every ε)."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.bench.scale_invariance import run_bandit
from morl_robot.learning import mpo
from morl_robot.learning.config import config_from_dict
from morl_robot.learning.learner import MOMPOLearner
from morl_robot.learning.networks import ActionSpec

BOX = [[0.01, 1.0], [0.01, 1.0]]


def _q(seed, k=2, n=10, t=4, b=16, scale=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn((k, n, t, b), generator=g)
    if scale is not None:
        q = q * torch.as_tensor(scale).view(k, 1, 1, 1)
    return q


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(-4.5, -0.5))
def test_every_sequence_gets_its_own_epsilon(seed, log_eps):
    q = _q(seed)
    g = torch.Generator().manual_seed(seed + 1)
    eps = torch.exp(log_eps + torch.rand((2, 16), generator=g) * 2.0 - 1.0)  # ε over two orders of magnitude
    weights, eta, kl = mpo.conditioned_e_step(q, eps, torch.ones(4, 16))
    np.testing.assert_allclose(kl.numpy(), eps.numpy(), rtol=1e-3)
    torch.testing.assert_close(weights.sum(1), torch.ones(2, 4, 16))
    # the same η as the single-group exact solver (eq. 4) on that sequence alone
    for k, b in [(0, 0), (1, 7)]:
        ref = mpo.solve_temperature(q[k, :, :, b], float(eps[k, b]))
        assert float(eta[k, b]) == pytest.approx(ref, rel=1e-3)


def test_rescaling_an_objective_rescales_its_temperatures_and_leaves_the_weights():
    q, eps = _q(3), torch.full((2, 16), 0.1)
    w1, eta1, _ = mpo.conditioned_e_step(q, eps, torch.ones(4, 16))
    w2, eta2, _ = mpo.conditioned_e_step(q * torch.tensor([1.0, 20.0]).view(2, 1, 1, 1), eps, torch.ones(4, 16))
    torch.testing.assert_close(w1, w2, atol=1e-5, rtol=0)
    torch.testing.assert_close(eta2[1] / eta1[1], torch.full((16,), 20.0), rtol=1e-4, atol=0)


def test_masked_steps_do_not_count_and_flat_q_gives_the_prior():
    q = _q(4)
    mask = torch.ones(4, 16)
    mask[2:, 0] = 0  # sequence 0 ends after two steps
    changed = q.clone()
    changed[:, :, 2:, 0] = 100.0 * torch.randn_like(changed[:, :, 2:, 0])
    eps = torch.full((2, 16), 0.05)
    _, eta_a, kl_a = mpo.conditioned_e_step(q, eps, mask)
    _, eta_b, _ = mpo.conditioned_e_step(changed, eps, mask)
    torch.testing.assert_close(eta_a, eta_b)
    np.testing.assert_allclose(kl_a.numpy(), 0.05, rtol=1e-3)
    flat = torch.zeros(1, 10, 4, 3)
    w, _, kl = mpo.conditioned_e_step(flat, torch.full((1, 3), 0.1), torch.ones(4, 3))
    torch.testing.assert_close(w, torch.full_like(w, 0.1))
    assert float(kl.abs().max()) < 1e-9


def test_out_of_reach_epsilon_gives_the_greedy_limit():
    q = _q(5, n=4)  # greedy KL ≤ log 4 ≈ 1.39 < ε = 5
    w, _, kl = mpo.conditioned_e_step(q, torch.full((2, 16), 5.0), torch.ones(4, 16))
    assert float(kl.max()) <= np.log(4) + 1e-6
    assert float(w.max(1).values.min()) > 0.99


@pytest.mark.parametrize("kind", [pytest.param("gaussian", marks=pytest.mark.extended), "categorical"])  # (17 s each)
def test_one_policy_follows_its_preference_and_ignores_a_x20_rescale(kind):
    """Through the real update on the two-objective bandit: the conditioned policy moves toward
    objective 1's optimum as ε_1/ε_2 grows, and multiplying objective 2 by 20 leaves the policy
    at every ε of the grid where it was."""
    base = run_bandit(kind, "exact", 1.0, updates=300, preference_ranges=BOX)
    scaled = run_bandit(kind, "exact", 20.0, updates=300, preference_ranges=BOX)
    assert base.policy.shape[0] == 11
    assert np.max(np.abs(base.policy - scaled.policy)) < 0.03, (base.policy, scaled.policy)
    assert scaled.temperatures[1] / base.temperatures[1] == pytest.approx(20.0, rel=0.2)
    if kind == "gaussian":  # r = (−(a−½)², −(a+½)²): ε_1 ≫ ε_2 → a near +½, ε_2 ≫ ε_1 → near −½
        mean = base.policy[:, 0]
        assert mean[0] > 0.3 and mean[-1] < -0.3 and np.all(np.diff(mean) < 0.02)
    else:  # arm 0 pays objective 1, arm 1 objective 2
        p = base.policy
        assert p[0, 0] > 0.5 and p[-1, 1] > 0.5 and p[0, 0] > p[-1, 0] + 0.3


def test_relabelling_replaces_the_collected_preference_and_checkpoints_carry_the_box():
    cfg = config_from_dict({"preferences": {"ranges": BOX}, "batch_size": 8, "num_samples": 4,
                            "sequence_length": 2})
    learner = MOMPOLearner(3, ActionSpec.box(1), 2, cfg, seed=0)
    assert learner.input_dim == 5
    obs = np.zeros((3, 8, 5), np.float32)
    relabelled, eps = learner._condition(torch.as_tensor(obs))
    assert eps.shape == (8, 2) and len(torch.unique(eps[:, 0])) == 8
    torch.testing.assert_close(relabelled[0, :, 3:], learner.preferences.features(eps))
    torch.testing.assert_close(relabelled[2, :, 3:], relabelled[0, :, 3:])  # constant along the sequence
    with pytest.raises(ValueError, match="must carry the preference features"):
        learner._condition(torch.zeros(3, 8, 3))
    plain = MOMPOLearner(3, ActionSpec.box(1), 2, config_from_dict({}), seed=0)
    with pytest.raises(ValueError, match="preferences"):
        plain.load_state_dict(learner.state_dict())
    other = MOMPOLearner(3, ActionSpec.box(1), 2, cfg, seed=1)
    other.load_state_dict(learner.state_dict())  # same box: loads


def test_without_relabelling_the_collected_preference_is_learned():
    cfg = config_from_dict({"preferences": {"ranges": BOX, "relabel": False}, "batch_size": 4})
    learner = MOMPOLearner(2, ActionSpec.box(1), 2, cfg, seed=0)
    eps = np.array([[0.02, 0.5], [0.1, 0.1], [1.0, 0.01], [0.3, 0.03]])
    obs = np.concatenate([np.zeros((3, 4, 2)), np.broadcast_to(learner.preferences.features(eps), (3, 4, 2))], -1)
    out, got = learner._condition(torch.as_tensor(obs, dtype=torch.float32))
    np.testing.assert_allclose(got.numpy(), eps, rtol=1e-5)
    torch.testing.assert_close(out, torch.as_tensor(obs, dtype=torch.float32))
