"""Deep Sea Treasure (MO-MPO §5.2): environment facts, sweep settings, a --quick smoke run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from morl_robot.experiments import deep_sea_treasure as dst


def test_environment_is_yang_2019_convex_dst() -> None:
    facts = dst.check_environment()
    assert facts["treasures"] == pytest.approx(list(dst.YANG_2019_TREASURES))
    front = np.asarray(facts["pareto_front"])
    assert front.shape == (10, 2)
    # Undiscounted: each treasure reached by its shortest path (time = −steps).
    np.testing.assert_allclose(front[:, 1], [-1, -3, -5, -7, -8, -9, -13, -14, -17, -19])
    env = dst.make_env()
    obs, _ = env.reset(seed=0)
    assert obs.shape == (121,) and obs.sum() == 1.0 and obs[0] == 1.0
    env.close()


def test_pareto_points_found() -> None:
    front = dst.true_pareto_front()
    returns = np.array([front[0], front[0], front[3] + 1e-6, [5.0, -30.0]])
    mask = dst.pareto_points_found(returns, front)
    assert mask.sum() == 2 and mask[0] and mask[3]


def test_sweep_settings() -> None:
    mo = dst.mo_mpo_settings(101)
    assert len(mo) == 303  # the paper's grid
    eps = np.array([s.params["epsilons"] for s in mo])
    ratio = eps[:, 0] / eps[:, 1]
    assert ratio.min() == pytest.approx(0.5) and ratio.max() == pytest.approx(1.5)
    assert set(np.round(eps[:, 1], 6)) == {0.01, 0.02, 0.05}
    sc = dst.scalarized_settings(101)
    w = np.array([s.params["weights"] for s in sc])
    np.testing.assert_allclose(w[:, 0], np.linspace(0, 1, 101))
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert len({s.name for s in mo + sc}) == len(mo) + len(sc)


def test_quick_smoke_run(tmp_path: Path) -> None:
    pytest.importorskip("morl_robot.learning.training")
    from morl_robot.cli import main

    assert main(["experiment", "deep-sea-treasure", "--out", str(tmp_path), "--quick",
                 "--processes", "1", "--no-progress"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert (tmp_path / "fronts.png").stat().st_size > 1000
    assert len(results["environment"]["pareto_front"]) == 10
    for algorithm in ("mo-mpo", "scalarized-mpo"):
        r = results[algorithm]
        assert r["runs"] == 2 and r["failures"] == [], r["failures"]
        assert 0 <= r["pareto_points_found"] <= 10
        assert r["hypervolume"] >= 0.0 and r["wall_time_s"] > 0
        for d in r["distinct_returns"]:
            assert len(d["returns"]) == 2 and d["runs"] >= 1
