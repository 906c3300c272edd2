"""Scale invariance through the whole learner (MOMPOLearner.update: critic, E-step, M-step, Adam),
MO-MPO paper §4.2.1: multiplying one objective's reward by 20 leaves the learned policy unchanged when
the temperatures are solved exactly (the default), Gaussian and categorical."""
import numpy as np
import pytest

from morl_robot.bench.scale_invariance import run_bandit
from morl_robot.learning.config import MPOConfig


def test_exact_temperatures_are_the_default():
    assert MPOConfig().temperature_solver == "exact"


@pytest.mark.parametrize("kind, tol", [  # the Gaussian policy's run takes 45 s: make test-extended
    pytest.param("gaussian", 0.05, marks=pytest.mark.extended), ("categorical", 0.05)])
def test_a_x20_objective_leaves_the_converged_policy_unchanged(kind, tol):
    base = run_bandit(kind, "exact", 1.0, updates=500)
    scaled = run_bandit(kind, "exact", 20.0, updates=500)
    assert np.max(np.abs(base.policy - scaled.policy)) < tol, (base.policy, scaled.policy)
    # the rescaled objective's temperature followed the rescale (eq. 4's solution scales with Q)
    assert scaled.temperatures[1] / base.temperatures[1] == pytest.approx(20.0, rel=0.2)
    # and the policy is a compromise, not one objective's optimum
    if kind == "gaussian":
        assert abs(float(base.policy[0])) < 0.2
    else:
        assert base.policy[0] > 0.2 and base.policy[1] > 0.2


@pytest.mark.extended  # make test-extended: a contrast, 11 s
def test_scalarized_mpo_is_not_scale_invariant_for_contrast():
    """The same learner with scalarized MPO (equal weights) moves to the rescaled objective's optimum:
    the check above can fail."""
    from morl_robot.bench import scale_invariance as si

    moved = si.run_bandit("gaussian", "exact", 20.0, updates=500, algorithm="scalarized_mpo")
    assert float(moved.policy[0]) < -0.3


def test_the_benchmark_runs_through_the_cli(capsys):
    from morl_robot.cli import main

    assert main(["bench", "scale-invariance", "--updates", "3", "--scale", "20"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("gaussian", "categorical"))]
    assert len(rows) == 4 and {r.split()[1] for r in rows} == {"gradient", "exact"}
    assert main(["bench", "scale-invariance", "--updates", "0"]) == 2
