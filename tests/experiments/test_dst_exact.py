"""Exact tabular MO-MPO on Deep Sea Treasure: the model read off MO-Gymnasium, exact evaluation,
the E-step's KL bound, the fixed points' dependence on c, and the CLI on a tiny grid."""
import json
from pathlib import Path

import numpy as np
import pytest

from morl_robot.cli import main
from morl_robot.experiments import dst_exact as d
from morl_robot.experiments.deep_sea_treasure import YANG_2019_TREASURES


@pytest.fixture(scope="module")
def model():
    return d.build_model()


def test_model_is_the_convex_dst(model):
    assert sorted(set(model.treasure_at[model.treasure_at > 0])) == pytest.approx(sorted(YANG_2019_TREASURES))
    assert tuple(model.cells[model.start]) == (0, 0)
    assert model.terminal.any(axis=1).sum() >= 10  # a move onto each treasure ends the episode


def test_exact_evaluation_matches_a_rollout_of_a_deterministic_policy(model):
    down = np.zeros((model.num_states, 4))  # "down" everywhere: the first treasure, one step from the start
    down[:, 1] = 1.0
    q = d.evaluate_q(model, down, gamma=0.9)  # (K, S, A)
    _, ret = d.greedy_path(model, down)
    assert ret.tolist() == pytest.approx([0.7, -1.0])
    # from the start, going down ends on 0.7 after one step: Q = (0.7, -1)
    assert q[:, model.start, 1] == pytest.approx([0.7, -1.0])


def test_e_step_meets_its_kl_bound(model):
    policy = np.full((model.num_states, 4), 0.25)
    q = d.evaluate_q(model, policy, 0.99)
    states = ~model.terminal.all(axis=1)
    for eps in (0.01, 0.1):
        improved, _ = d.e_step(q[0], policy, eps, states)
        assert np.allclose(improved.sum(axis=1), 1.0)
        assert d._kl_rows(improved, policy)[states].mean() == pytest.approx(eps, rel=1e-4)


def test_visitation_is_the_discounted_occupancy_of_a_rollout(model):
    """μ = visitation: the policy's normalised discounted occupancy from the start, checked against
    a direct sum over time of the state distribution."""
    rng = np.random.default_rng(0)
    policy = rng.dirichlet(np.ones(4), size=model.num_states)
    gamma = 0.9
    mu = d.visitation(model, policy, gamma)
    dist, total = np.zeros(model.num_states), np.zeros(model.num_states)
    dist[model.start] = 1.0
    for t in range(400):
        total += gamma**t * dist
        dist = dist @ d.transition_matrix(model, policy)
    np.testing.assert_allclose(mu, total / total.sum(), atol=1e-9)
    down = np.zeros((model.num_states, 4))
    down[:, 1] = 1.0  # ends on the first treasure at once: only the start is visited
    assert d.visitation(model, down, 0.99)[model.start] == pytest.approx(1.0)
    weights = d.state_weights(model, policy, gamma, "uniform")
    assert set(np.unique(weights)) <= {0.0, 1.0}
    with pytest.raises(ValueError, match="state distribution"):
        d.state_weights(model, policy, gamma, "replay")


def test_exploring_visitation_is_the_occupancy_of_rollouts_from_uniform_open_water_starts(model):
    """μ = exploring: the discounted occupancy of episodes started as ExploringStarts starts them
    (uniformly on open water, never on a treasure), summed directly over time."""
    rng = np.random.default_rng(2)
    policy = rng.dirichlet(np.ones(4), size=model.num_states)
    gamma = 0.9
    mu = d.state_weights(model, policy, gamma, "exploring")
    dist = (model.treasure_at == 0).astype(float)
    dist /= dist.sum()
    total = np.zeros(model.num_states)
    for t in range(400):
        total += gamma**t * dist
        dist = dist @ d.transition_matrix(model, policy)
    total *= ~model.terminal.all(axis=1)
    np.testing.assert_allclose(mu / mu.sum(), total / total.sum(), atol=1e-9)
    assert mu[model.treasure_at > 0].sum() == 0.0  # a treasure is entered only by the move that ends the episode


def test_exploring_visitation_with_a_horizon_sums_only_the_first_steps(model):
    """μ = exploring with horizon H: episodes cut after H steps hold the states of their first H
    steps; H = 1 is the start distribution itself (uniform on open water), and a long horizon
    approaches the untruncated visitation."""
    rng = np.random.default_rng(3)
    policy = rng.dirichlet(np.ones(4), size=model.num_states)
    gamma = 0.9
    start = (model.treasure_at == 0).astype(float)
    start /= start.sum()
    np.testing.assert_allclose(d.state_weights(model, policy, gamma, "exploring", horizon=1),
                               start * ~model.terminal.all(axis=1), atol=1e-12)
    three = start + gamma * start @ d.transition_matrix(model, policy)
    three += gamma**2 * (start @ d.transition_matrix(model, policy)) @ d.transition_matrix(model, policy)
    np.testing.assert_allclose(d.visitation(model, policy, gamma, start, horizon=3), three / three.sum(), atol=1e-12)
    np.testing.assert_allclose(d.state_weights(model, policy, gamma, "exploring", horizon=600),
                               d.state_weights(model, policy, gamma, "exploring"), atol=1e-9)
    with pytest.raises(ValueError, match="horizon"):
        d.state_weights(model, policy, gamma, "uniform", horizon=3)
    with pytest.raises(ValueError, match="horizon"):
        d.state_weights(model, policy, gamma, "exploring", horizon=0)


def test_e_step_meets_its_kl_bound_under_weighted_states(model):
    rng = np.random.default_rng(1)
    policy = rng.dirichlet(np.ones(4), size=model.num_states)
    q = d.evaluate_q(model, policy, 0.99)
    mu = d.visitation(model, policy, 0.99)
    improved, _ = d.e_step(q[0], policy, 0.05, mu)
    assert float(d._kl_rows(improved, policy) @ mu) == pytest.approx(0.05, rel=1e-4)


def test_the_state_distribution_moves_the_fixed_point(model):
    """Golden values of the committed exact grids (ε_time 0.02): at c = 1.28 the uniform μ reaches
    16.1, the corner policy's own visitation stops at 8.2 — the learned runs' plateau."""
    uniform = d.solve(model, (1.28 * 0.02, 0.02))
    visited = d.solve(model, (1.28 * 0.02, 0.02), distribution="visitation")
    assert uniform.converged and visited.converged
    assert uniform.greedy_return[0] == pytest.approx(16.1)
    assert visited.greedy_return[0] == pytest.approx(8.2)


def test_more_weight_on_treasure_reaches_a_farther_treasure(model):
    near = d.solve(model, (0.5 * 0.01, 0.01))
    far = d.solve(model, (1.5 * 0.01, 0.01))
    assert near.converged and far.converged
    assert near.greedy_return[0] == pytest.approx(0.7)
    assert far.greedy_return[0] > 15.0 and far.greedy_return[1] < near.greedy_return[1]


def test_cli_runs_a_tiny_grid(tmp_path, capsys):
    assert main(["experiment", "dst-exact", "--out", str(tmp_path), "--c-values", "2", "--epsilon", "time=0.02",
                 "--processes", "1", "--no-progress"]) == 0
    assert "Pareto points from greedy policies" in capsys.readouterr().out
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["runs"]) == 2 and (tmp_path / "c_to_treasure.png").stat().st_size > 0
    assert main(["experiment", "dst-exact", "--out", str(tmp_path), "--gamma", "1.0"]) == 2


COMMITTED = Path(__file__).resolve().parents[2] / "results" / "deep_sea_treasure_exact" / "results.json"


@pytest.mark.skipif(not COMMITTED.is_file(), reason="no committed exact DST results")
def test_committed_exact_results_reproduce_in_the_narrowest_c_windows(model):
    """The README's exact figures are re-derivable: re-solve the committed runs whose c-window is
    narrowest (one c value either side of a treasure change) and get the same greedy treasure."""
    data = json.loads(COMMITTED.read_text())
    assert data["pareto_points_found_greedy"] == 10 and data["converged"] == len(data["runs"]) == 303
    runs = [r for r in data["runs"] if r["eps_time"] == 0.02]
    changes = [i for i in range(1, len(runs)) if runs[i]["treasure"] != runs[i - 1]["treasure"]][:3]
    for i in changes:
        for r in (runs[i - 1], runs[i]):
            got = d.solve(model, (r["eps_treasure"], r["eps_time"]))
            assert got.greedy_return[0] == pytest.approx(r["treasure"]), (r["c"], got.greedy_return)


VISITATION = COMMITTED.parents[1] / "deep_sea_treasure_exact_visitation" / "results.json"


@pytest.mark.skipif(not VISITATION.is_file(), reason="no committed visitation results")
def test_committed_visitation_results_reproduce_at_their_treasure_changes(model):
    """The README's visitation figures: 6 of 10 over the three ε_time (4 at 0.02); re-solve the
    runs either side of the first treasure changes at ε_time 0.02 through the CLI's solver."""
    data = json.loads(VISITATION.read_text())
    assert data["pareto_points_found_greedy"] == 6 and data["converged"] == 303
    assert data["state_distribution"].startswith("the current policy's discounted visitation")
    runs = [r for r in data["runs"] if r["eps_time"] == 0.02]
    assert sorted({round(r["treasure"], 1) for r in runs}) == [0.7, 8.2, 11.5, 14.0]
    changes = [i for i in range(1, len(runs)) if runs[i]["treasure"] != runs[i - 1]["treasure"]][:2]
    for i in changes:
        for r in (runs[i - 1], runs[i]):
            got = d.solve(model, (r["eps_treasure"], r["eps_time"]), distribution="visitation")
            assert got.greedy_return[0] == pytest.approx(r["treasure"]), (r["c"], got.greedy_return)


def test_cli_state_distribution(tmp_path):
    assert main(["experiment", "dst-exact", "--out", str(tmp_path), "--c-values", "1", "--epsilon", "time=0.02",
                 "--processes", "1", "--no-progress", "--state-distribution", "visitation"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["state_distribution"].startswith("the current policy's") and data["runs"][0]["treasure"] == pytest.approx(8.2)
    with pytest.raises(SystemExit):
        main(["experiment", "dst-exact", "--out", str(tmp_path), "--state-distribution", "replay"])


EXPLORING = COMMITTED.parents[1] / "deep_sea_treasure_exact_exploring" / "results.json"


@pytest.mark.skipif(not EXPLORING.is_file(), reason="no committed exploring-starts exact results")
def test_committed_exploring_results_explain_the_learned_nine_of_ten(model):
    """The README's exploring-starts figures: with μ the visitation from exploring starts, exact
    MO-MPO at ε_time 0.02 (the learned sweep's) reaches every Pareto point but 19.6, as the learned
    runs do; 19.6 is a fixed point only at ε_time 0.01 (c ∈ [1.11, 1.14]); the three ε_time
    together give 10 of 10.  Two treasure changes are re-solved here."""
    data = json.loads(EXPLORING.read_text())
    assert data["state_distribution"].startswith("the current policy's discounted visitation from a start drawn")
    assert data["pareto_points_found_greedy"] == 10
    at = {(r["eps_time"], r["c"]): r["treasure"] for r in data["runs"]}
    assert 19.6 not in {round(t, 1) for (e, _), t in at.items() if e == 0.02}
    assert sorted(c for (e, c), t in at.items() if e == 0.01 and round(t, 1) == 19.6) == pytest.approx(
        [1.11, 1.12, 1.13, 1.14])
    for eps_time, c in ((0.01, 1.12), (0.02, 1.07)):
        run = d.solve(model, (c * eps_time, eps_time), distribution="exploring")
        assert run.converged and float(run.greedy_return[0]) == pytest.approx(at[(eps_time, c)])


EXPLORING_H1 = COMMITTED.parents[1] / "deep_sea_treasure_exact_exploring_h1" / "results.json"


@pytest.mark.skipif(not EXPLORING_H1.is_file(), reason="no committed exploring-horizon exact results")
def test_committed_one_step_exploring_results_widen_the_19_6_window(model):
    """The README's horizon-1 figures: with μ uniform on open water (exploring-start episodes cut
    after one step), 19.6 is a fixed point at ε_time 0.02 for c ∈ [1.23, 1.27] and at 0.01 for
    c ∈ [1.31, 1.41] (against none and [1.11, 1.14] with whole episodes); 10 of 10 at ε_time 0.02
    alone.  One setting in each window is re-solved here."""
    data = json.loads(EXPLORING_H1.read_text())
    assert data["exploring_horizon"] == 1 and data["converged"] == 303
    assert data["pareto_points_found_greedy"] == 10
    at = {(r["eps_time"], r["c"]): r["treasure"] for r in data["runs"]}
    window = {e: sorted(c for (t, c), v in at.items() if t == e and round(v, 1) == 19.6) for e in (0.01, 0.02, 0.05)}
    assert window[0.02] == pytest.approx([1.23, 1.24, 1.25, 1.26, 1.27])
    assert window[0.01] == pytest.approx([round(1.31 + 0.01 * i, 2) for i in range(11)]) and window[0.05] == []
    assert len({round(v, 1) for (t, _), v in at.items() if t == 0.02}) == 10
    for eps_time, c in ((0.02, 1.25), (0.01, 1.36)):
        run = d.solve(model, (c * eps_time, eps_time), distribution="exploring", horizon=1)
        assert run.converged and float(run.greedy_return[0]) == pytest.approx(19.6)


def test_cli_exploring_state_distribution(tmp_path):
    assert main(["experiment", "dst-exact", "--out", str(tmp_path), "--c-values", "1", "--epsilon", "time=0.02",
                 "--processes", "1", "--no-progress", "--state-distribution", "exploring"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert "exploring starts" in data["state_distribution"] and len(data["runs"]) == 1
    assert main(["experiment", "dst-exact", "--out", str(tmp_path / "h"), "--c-values", "1", "--epsilon", "time=0.02",
                 "--processes", "1", "--no-progress", "--state-distribution", "exploring",
                 "--exploring-horizon", "2"]) == 0
    data = json.loads((tmp_path / "h" / "results.json").read_text())
    assert data["exploring_horizon"] == 2 and "cut after 2 steps" in data["state_distribution"]
    assert main(["experiment", "dst-exact", "--out", str(tmp_path / "bad"), "--exploring-horizon", "2"]) == 2


def test_dst_diagnose_from_the_cli(tmp_path):
    """A tiny learned run through the real parser: the diagnosis holds the learned policy and
    critics on the exact model's states, their errors against exact Q^π, and both exact solves."""
    out = tmp_path / "diagnosis.json"
    assert main(["experiment", "dst-diagnose", "--out", str(out), "--c", "1.2", "--epsilon", "time=0.02", "--steps", "300",
                 "--converge", "100", "2", "--exploring-horizon", "1", "--quick"]) == 0
    r = json.loads(out.read_text())
    s_count = len(r["cells"])
    assert np.asarray(r["learned_log_policy"]).shape == (s_count, 4)
    assert np.asarray(r["learned_q"]).shape == (2, s_count, 4)
    assert np.exp(np.asarray(r["learned_log_policy"])).sum(axis=1) == pytest.approx(np.ones(s_count), abs=1e-3)
    assert r["exploring_horizon"] == 1 and "cut after 1 steps" in r["state_distribution"]
    assert r["exact_from_uniform"]["converged"] and len(r["critic_error"]["mean_abs"]) == 2
    assert r["learner_changes"] == {}
    assert main(["experiment", "dst-diagnose", "--out", str(out), "--c", "1.2", "--steps", "200", "--quick",
                 "--converge", "100", "2", "--critic-lr", "3e-4", "--batch-size", "8"]) == 0
    assert json.loads(out.read_text())["learner_changes"] == {"critic_lr": 3e-4, "batch_size": 8}
    assert main(["experiment", "dst-diagnose", "--out", str(out), "--c", "1.2", "--exploring-starts", "0",
                 "--exploring-horizon", "1"]) == 2


DIAGNOSIS = COMMITTED.parents[1] / "deep_sea_treasure_learned" / "exploring_starts" / "es_h1_e02" / "diagnosis_c1.24_seed0.json"


@pytest.mark.skipif(not DIAGNOSIS.is_file(), reason="no committed learned-run diagnosis")
def test_committed_diagnosis_exact_from_the_learned_policy_reaches_19_6(model):
    """The README's diagnosis: a learned run (ε_time 0.02, c 1.24, one-step exploring episodes)
    ends greedy on 20.3, yet exact MO-MPO started from its final policy converges to 19.6; both
    re-derived here from the committed policy."""
    r = json.loads(DIAGNOSIS.read_text())
    assert [tuple(c) for c in r["cells"]] == [tuple(c) for c in model.cells.tolist()]
    policy = np.exp(np.asarray(r["learned_log_policy"]))
    policy /= policy.sum(axis=1, keepdims=True)
    assert d.greedy_path(model, policy)[1][0] == pytest.approx(20.3)
    run = d.solve(model, (1.24 * 0.02, 0.02), distribution="exploring", horizon=1, initial_policy=policy)
    assert run.converged and run.greedy_return[0] == pytest.approx(19.6)
    assert r["exact_from_learned"]["greedy_return"][0] == pytest.approx(19.6)


LEVERS = DIAGNOSIS.parent / "levers"


@pytest.mark.skipif(not LEVERS.is_dir(), reason="no committed lever diagnoses")
@pytest.mark.parametrize("lever, learned, exact_from_learned", [
    ("spi32", 20.3, 20.3),  # accurate critics: the run reaches 20.3, a fixed point of the exact algorithm too
    ("table_spi32", 19.6, 19.6),  # and a tabular policy: 19.6, where exact MO-MPO from the uniform policy goes
])
def test_committed_lever_diagnoses(model, lever: str, learned: float, exact_from_learned: float):
    """The README's lever table at ε_time 0.02, c 1.24: each run's committed final policy is greedy on
    the treasure the README says, and exact MO-MPO (one-step exploring episodes) started from it goes
    where the README says; re-derived here from the committed policy."""
    r = json.loads((LEVERS / f"diagnosis_c1.24_seed0_{lever}.json").read_text())
    assert r["learner_changes"]["samples_per_insert"] == 32.0
    assert ("policy_hidden" in r["learner_changes"]) == lever.startswith("table")
    policy = np.exp(np.asarray(r["learned_log_policy"]))
    policy /= policy.sum(axis=1, keepdims=True)
    assert d.greedy_path(model, policy)[1][0] == pytest.approx(learned)
    run = d.solve(model, (1.24 * 0.02, 0.02), distribution="exploring", horizon=1, initial_policy=policy)
    assert run.converged and run.greedy_return[0] == pytest.approx(exact_from_learned)
