"""EPIC core: invariances, the Pearson distance's metric properties, estimator convergence, vector
rewards, bootstrap CIs and the paper's reproductions (gridworld exact, PointMass sampled)."""
import numpy as np
import pytest

from morl_robot.evaluation import epic

GAMMA = 0.9


def _random_mdp(rng, n_s=6, n_a=3):
    return rng.normal(size=(n_s, n_a, n_s))


def _shaped(r, phi, gamma):
    return r + gamma * phi[None, None, :] - phi[:, None, None]


def test_potential_shaping_and_positive_rescaling_give_zero():
    rng = np.random.default_rng(0)
    r = _random_mdp(rng)
    ds, da = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(3))
    cov = rng.dirichlet(np.ones(r.size)).reshape(r.shape)
    other = 3.7 * _shaped(r, rng.normal(size=6) * 5, GAMMA) + 2.0
    assert epic.epic_tabular(r, other, GAMMA, cov, ds, da) < 1e-7
    # canonicalisation itself removes the shaping
    np.testing.assert_allclose(epic.canonicalize_tabular(_shaped(r, rng.normal(size=6), GAMMA), GAMMA, ds, da),
                               epic.canonicalize_tabular(r, GAMMA, ds, da), atol=1e-10)
    # a negative rescale is not equivalent
    assert epic.epic_tabular(r, -r, GAMMA, cov, ds, da) == pytest.approx(1.0, abs=1e-9)


def test_unrelated_rewards_are_far_and_triangle_inequality_holds():
    rng = np.random.default_rng(1)
    rewards = [_random_mdp(rng) for _ in range(6)]
    d = epic.epic_matrix_tabular(np.stack(rewards, -1), GAMMA)
    assert np.all(d[~np.eye(6, dtype=bool)] > 0.3)
    assert np.allclose(d, d.T) and np.all((d >= 0) & (d <= 1))
    for i in range(6):
        for j in range(6):
            for k in range(6):
                assert d[i, k] <= d[i, j] + d[j, k] + 1e-12


def test_constant_reward_is_a_clear_error():
    r = np.ones((3, 2, 3))
    with pytest.raises(ValueError, match="constant"):
        epic.epic_tabular(r, np.random.default_rng(0).normal(size=r.shape), GAMMA)


def _tabular_fn(table):
    def fn(s, a, s2):
        return table[s[:, 0].astype(int), a[:, 0].astype(int), s2[:, 0].astype(int)]
    return fn


def test_sample_estimator_converges_to_exact_value():
    rng = np.random.default_rng(2)
    n_s, n_a = 5, 3
    ra, rb = _random_mdp(rng, n_s, n_a), _random_mdp(rng, n_s, n_a)
    rb = 0.6 * ra + 0.4 * rb  # correlated, distance well inside (0, 1)
    # coverage: uniform over all transitions; D_S, D_A its marginals (uniform)
    s, a, s2 = np.meshgrid(np.arange(n_s), np.arange(n_a), np.arange(n_s), indexing="ij")
    cov = epic.Transitions(s.reshape(-1, 1).astype(float), a.reshape(-1, 1).astype(float), s2.reshape(-1, 1).astype(float))
    exact = epic.epic_tabular(ra, rb, GAMMA)
    rmse = []
    for n in (32, 4096):  # N_V = N_M = n; root-mean-square error over 8 seeds
        errs = [epic.epic_samples({"a": _tabular_fn(ra), "b": _tabular_fn(rb)}, cov, GAMMA, n, n, resamples=0,
                                  seed=seed)[0].distance[0, 1] - exact for seed in range(8)]
        rmse.append(float(np.sqrt(np.mean(np.square(errs)))))
    assert rmse[1] < 0.01
    assert rmse[1] < rmse[0] / 3


def test_vector_reward_matrix_paired_and_scalarisations_agree_with_direct_computation():
    rng = np.random.default_rng(4)
    r = rng.normal(size=(6, 3, 6, 3))  # K = 3
    c = epic.canonicalize_tabular(r, GAMMA).reshape(-1, 3)
    m = epic.distance_matrix(c)
    for i in range(3):
        for j in range(3):
            assert m[i, j] == pytest.approx(epic.epic_tabular(r[..., i], r[..., j], GAMMA), abs=1e-7)
    w = epic.weight_grid(3, 5)
    assert w.shape == (15, 3) and np.allclose(w.sum(1), 1.0)
    sd = epic.scalarisation_distances(c, w)
    direct = epic.epic_tabular(r @ w[3], r @ w[11], GAMMA)
    assert sd[3, 11] == pytest.approx(direct, abs=1e-9)
    other = r + 0.5 * rng.normal(size=r.shape)
    paired = epic.paired_distances(c, epic.canonicalize_tabular(other, GAMMA).reshape(-1, 3))
    for k in range(3):
        assert paired[k] == pytest.approx(epic.epic_tabular(r[..., k], other[..., k], GAMMA), abs=1e-9)


def test_bootstrap_interval_contains_estimate_and_shrinks_with_samples():
    rng = np.random.default_rng(5)
    widths = []
    for n in (200, 20000):
        x = rng.normal(size=n)
        v = np.stack([x, x + rng.normal(size=n), rng.normal(size=n)], 1)
        est, lo, hi = epic.bootstrap_distances(v, 500, rng=rng)
        assert np.all(lo <= est + 1e-12) and np.all(est <= hi + 1e-12)
        widths.append(hi[0, 1] - lo[0, 1])
    assert widths[1] < widths[0] / 3


def test_regret_bound_holds_on_a_random_mdp():
    from morl_robot.experiments.epic_gridworld import optimal_policy, policy_return

    rng = np.random.default_rng(6)
    n_s, n_a = 5, 2
    t = rng.dirichlet(np.ones(n_s), size=(n_s, n_a))
    ra, rb = rng.normal(size=(n_s, n_a, n_s)), rng.normal(size=(n_s, n_a, n_s))
    cov = np.full(t.shape, 1.0 / t.size)
    d0 = np.full(n_s, 1.0 / n_s)
    pa, pb = optimal_policy(ra, t, GAMMA), optimal_policy(rb, t, GAMMA)
    k = epic.coverage_ratio(t, d0, [pa, pb], cov)
    assert 0 < k <= n_s * n_s * n_a + 1e-9  # the paper's K <= |S|^2 |A| for uniform D
    regret = policy_return(pa, ra, t, d0, GAMMA) - policy_return(pb, ra, t, d0, GAMMA)
    bound = epic.regret_bound(epic.epic_tabular(ra, rb, GAMMA, cov), epic.reward_l2(ra, cov), GAMMA, k)
    assert 0 <= regret <= bound
    with pytest.raises(ValueError, match="discount"):
        epic.regret_bound(0.1, 1.0, 1.0, k)


def test_gridworld_reproduces_the_paper(tmp_path):
    from morl_robot.experiments import epic_gridworld

    r = epic_gridworld.run(tmp_path)
    e = r["epic"]
    assert set(e) == {"Sparse", "Dense", "Penalty", "Center", "Path", "Cliff"}
    assert e["Sparse"]["Dense"] < 1e-9
    assert round(e["Path"]["Cliff"], 2) == 0.27
    assert e["Sparse"]["Penalty"] == pytest.approx(1.0)
    penalty = [v for k, v in e["Penalty"].items() if k != "Penalty"]
    assert min(penalty) == pytest.approx(0.66, abs=0.005) and max(penalty) <= 1.0  # paper: [0.66, 1.0]
    assert (tmp_path / "epic_gridworld.png").stat().st_size > 0


def test_pointmass_equivalent_pairs_below_1e3(tmp_path):
    from morl_robot.experiments import epic_pointmass

    r = epic_pointmass.run(tmp_path, coverage_size=5000, resamples=50)
    assert all(v < 1e-3 for v in r["equivalent_pairs"].values())
    d = r["epic"]
    assert d["S"]["M"] > 0.3 and d["M"]["M‡"] > 0.05  # non-equivalent pairs are not collapsed
