"""Simple World (MO-MPO §5.1): the real experiment, its qualitative findings, the exact M-step."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from morl_robot.cli import main
from morl_robot.experiments import simple_world
from morl_robot.learning.mpo import categorical_m_step, solve_categorical_m_step


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("simple_world")
    assert main(["experiment", "simple-world", "--out", str(out)]) == 0
    for name in ("results.json", "runs.json", "action_probabilities.png", "policy_trajectories.png"):
        assert (out / name).exists(), name
    runs = json.loads((out / "runs.json").read_text())
    assert all(r["converged"] for r in runs["runs"])
    return json.loads((out / "results.json").read_text())


def best(probs: dict[str, float]) -> str:
    return max(probs, key=probs.get)


def test_results_schema(results: dict) -> None:
    assert set(results) == {"mo-mpo", "scalarized-mpo"}
    for scales in results.values():
        assert set(scales) == {"balanced", "imbalanced"}
        for prefs in scales.values():
            assert set(prefs) == {"equal", "prefer_first", "prefer_second"}
            for probs in prefs.values():
                assert set(probs) == {"left", "up", "right"}
                assert sum(probs.values()) == pytest.approx(1.0, abs=1e-9)


def test_balanced_rewards_both_algorithms_follow_the_preference(results: dict) -> None:
    # Paper Fig. 3 (solid bars): up for equal, right for prefer-first, left for prefer-second.
    for algorithm in ("mo-mpo", "scalarized-mpo"):
        policies = results[algorithm]["balanced"]
        assert best(policies["equal"]) == "up"
        assert best(policies["prefer_first"]) == "right"
        assert best(policies["prefer_second"]) == "left"
        for probs in policies.values():
            assert max(probs.values()) > 0.9


def test_mo_mpo_is_scale_invariant(results: dict) -> None:
    # Objective 1 ×20 leaves MO-MPO's converged policies unchanged (η_1 scales by 20).
    for pref in ("equal", "prefer_first", "prefer_second"):
        a = results["mo-mpo"]["balanced"][pref]
        b = results["mo-mpo"]["imbalanced"][pref]
        for action in a:
            assert b[action] == pytest.approx(a[action], abs=1e-4)


def test_scalarized_mpo_shifts_to_the_first_objectives_best_arm(results: dict) -> None:
    # Paper Fig. 3 (striped bars): equal and prefer-second move to right when objective 1 is ×20.
    imbalanced = results["scalarized-mpo"]["imbalanced"]
    for pref in ("equal", "prefer_first", "prefer_second"):
        assert best(imbalanced[pref]) == "right"
    for pref in ("equal", "prefer_second"):
        assert simple_world.shifted_to_first_objective(results, "scalarized-mpo", pref) > 0.9
        assert simple_world.shifted_to_first_objective(results, "mo-mpo", pref) == pytest.approx(0, abs=1e-4)


def test_exact_m_step_is_the_stationary_point_of_the_learners_m_step_loss() -> None:
    rng = np.random.default_rng(0)
    prior = rng.dirichlet(np.ones(3))
    weights = rng.dirichlet(np.ones(3), size=2)  # (K=2, A=3), far from the prior
    beta = 0.001
    policy, alpha = solve_categorical_m_step(weights, prior, beta)
    assert alpha > 0
    kl = float(np.sum(prior * np.log(prior / policy)))
    assert kl == pytest.approx(beta, rel=1e-6)
    # Gradient of the learner's categorical M-step loss (policy part + α·KL) w.r.t. the logits
    # vanishes at the exact solution for the exact multiplier.
    logits = torch.tensor(np.log(policy), dtype=torch.float64, requires_grad=True)
    loss, _ = categorical_m_step(
        weights=torch.tensor(weights, dtype=torch.float64).unsqueeze(-1),  # [K, N=A, B=1]
        actions=torch.arange(3).reshape(3, 1),
        online_logits=logits.unsqueeze(0),
        target_logits=torch.tensor(np.log(prior), dtype=torch.float64).unsqueeze(0),
        alpha=torch.tensor(alpha, dtype=torch.float64),
        epsilon=beta,
    )
    loss.backward()
    assert torch.max(torch.abs(logits.grad)).item() < 1e-6
    # Inside the trust region nothing binds: the fit is the mean of the q_k.
    policy0, alpha0 = solve_categorical_m_step(np.stack([prior, prior]), prior, beta)
    np.testing.assert_allclose(policy0, prior)
    assert alpha0 == 0.0


def test_e_step_meets_the_kl_bound() -> None:
    policy = np.full(3, 1 / 3)
    weights, temps, kls = simple_world.exact_e_step(policy, simple_world.Q_VALUES, [0.01, 0.002])
    np.testing.assert_allclose(kls, [0.01, 0.002], rtol=1e-4)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    # Scaling objective 1 by 20 scales η_1 by 20 and leaves q_1 unchanged (paper eq. 4).
    w20, t20, _ = simple_world.exact_e_step(policy, simple_world.Q_VALUES * [20.0, 1.0], [0.01, 0.002])
    assert t20[0] == pytest.approx(20 * temps[0], rel=1e-5)
    np.testing.assert_allclose(w20, weights, atol=1e-6)


def test_cli_rejects_bad_beta(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "simple-world", "--out", str(tmp_path), "--beta", "0"]) == 2
    assert "--beta" in capsys.readouterr().err
