"""Deep Sea Treasure (MO-MPO §5.2): environment facts, sweep settings, a --quick smoke run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from morl_robot.experiments import deep_sea_treasure as dst

EXACT = Path(__file__).resolve().parents[2] / "results" / "deep_sea_treasure_exact" / "results.json"
ROOT = Path(__file__).resolve().parents[2]


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
    pytest.importorskip("morl_robot.training.loop")
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
    # --quick's two weights are 0 and 1: the optimum of each is the nearest and the farthest treasure
    opt = results["scalarized-mpo"]["agrees_with_optimum"]
    assert opt["settings"] == 2 and opt["points_reachable_on_this_grid"] == 2
    assert opt["same_treasure"] == sum(abs(t - s["returns"][0]) < 1e-3 for t, s in
                                       zip((0.7, 23.7), results["scalarized-mpo"]["per_setting"]))


def test_the_scalarization_optimum_walks_the_convex_hull() -> None:
    """Linear scalarization reaches a Pareto point only inside its window of weights: every point of
    this map's (convex) front has one, 20.3's only 0.006 wide (γ = 0.99), so 21 weights reach 8
    points, 51 reach 9 and the paper's 101 all 10."""
    w = np.linspace(0.0, 1.0, 1001)
    best = dst.scalarized_optimum(w)
    assert best[0] == 0.7 and best[-1] == 23.7 and bool(np.all(np.diff(best) >= 0))
    assert sorted(set(best)) == sorted(dst.true_pareto_front()[:, 0].round(1).tolist())
    window = w[np.isclose(best, 20.3)]
    assert 0.0055 < window.max() - window.min() < 0.0065
    assert [len(set(dst.scalarized_optimum(np.linspace(0, 1, n)))) for n in (21, 51, 101)] == [8, 9, 10]


def test_runs_to_convergence_record_when_they_stopped(tmp_path: Path) -> None:
    """``--converge EVERY COUNT``: each run evaluates its greedy policy every EVERY steps and stops
    once COUNT evaluations agree; results.json says where, and the c → treasure plot is drawn."""
    from morl_robot.cli import main

    assert main(["experiment", "deep-sea-treasure", "--out", str(tmp_path), "--quick", "--steps", "400",
                 "--converge", "100", "2", "--algorithms", "mo-mpo", "--processes", "1", "--no-progress",
                 "--exact-reference", str(EXACT)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["budget"]["convergence"] == "stop once 2 greedy evaluations 100 steps apart agree"
    r = results["mo-mpo"]
    for s in r["per_setting"]:
        steps = [e[0] for e in s["evaluations"]]
        assert steps[:2] == [100, 200] and s["env_steps"] <= 400
        if s["converged_at"] is not None:  # stopped early: the last two evaluations agree
            assert s["evaluations"][-1][1] == s["evaluations"][-2][1] and s["env_steps"] == steps[-1]
            assert s["returns"] == s["evaluations"][-1][1]
        else:  # ran the whole budget: no two consecutive evaluations agreed
            assert s["env_steps"] == 400
            assert all(a[1] != b[1] for a, b in zip(s["evaluations"], s["evaluations"][1:]))
    assert r["converged"] == sum(s["converged_at"] is not None for s in r["per_setting"])
    assert (tmp_path / "c_to_treasure.png").stat().st_size > 1000
    # --quick runs c = 1.0 at ε_time 0.01 and 0.05, both on the committed exact grid
    exact = {(x["eps_time"], round(x["c"], 6)): x["treasure"] for x in json.loads(EXACT.read_text())["runs"]}
    same = sum(abs(exact[(s["setting"]["params"]["epsilon_time"], 1.0)] - s["returns"][0]) < 1e-3
               for s in r["per_setting"])
    assert r["agrees_with_exact"]["settings"] == 2 and r["agrees_with_exact"]["same_treasure"] == same
    # split by ε_time (one c → treasure curve each in the paper's Fig. 5): one run each here
    by_eps = r["by_epsilon_time"]
    assert set(by_eps) == {"0.01", "0.05"}
    for eps, b in by_eps.items():
        (s,) = [s for s in r["per_setting"] if f"{s['setting']['params']['epsilon_time']:g}" == eps]
        assert b["runs"] == b["compared_with_exact"] == 1
        assert b["converged"] == int(s["converged_at"] is not None)
        assert b["same_treasure_as_exact"] == int(abs(exact[(s["setting"]["params"]["epsilon_time"], 1.0)]
                                                      - s["returns"][0]) < 1e-3)
        assert b["pareto_points_found"] == dst.pareto_points_found(np.array([s["returns"]]),
                                                                   dst.true_pareto_front()).sum()
    assert sum(b["same_treasure_as_exact"] for b in by_eps.values()) == same


def test_bad_convergence_settings_are_refused(capsys) -> None:
    from morl_robot.cli import main

    assert main(["experiment", "deep-sea-treasure", "--out", "/tmp/never", "--converge", "100", "1"]) == 2
    assert "--converge" in capsys.readouterr().err


def test_exploring_starts_cover_open_water_and_leave_evaluation_at_the_corner() -> None:
    """Training episodes start in uniformly drawn open cells (never land or a treasure), seeded;
    the default env (evaluation) always starts at the corner."""
    env = dst.make_env(one_hot=False, exploring_starts=1.0)
    sea = np.asarray(env.unwrapped.sea_map)
    starts = []
    for seed in range(400):
        obs, info = env.reset(seed=seed)
        r, c = (int(v) for v in obs)
        assert sea[r, c] == 0 and info["exploring_start"] == [r, c]
        starts.append((r, c))
    open_cells = {tuple(x) for x in np.argwhere(sea == 0)}
    assert set(starts) <= open_cells and len(set(starts)) > 0.8 * len(open_cells)
    # reproducible per seed, and the dynamics continue from the drawn cell
    assert [tuple(int(v) for v in env.reset(seed=s)[0]) for s in range(5)] == starts[:5]
    obs, _ = env.reset(seed=3)
    nxt, reward, *_ = env.step(1)  # down
    assert reward[1] == -1.0 and sea[int(nxt[0]), int(nxt[1])] >= 0
    env.close()
    half = dst.make_env(one_hot=False, exploring_starts=0.5)
    corner = sum(tuple(int(v) for v in half.reset(seed=s)[0]) == (0, 0) for s in range(400))
    assert 140 < corner < 260
    plain = dst.make_env()
    assert plain.reset(seed=5)[0][0] == 1.0  # one-hot cell (0, 0)
    with pytest.raises(ValueError, match="probability"):
        dst.ExploringStarts(dst.make_env(one_hot=False), 1.5)


def test_an_exploring_horizon_truncates_exploring_episodes_only() -> None:
    """``exploring_horizon`` H cuts an episode begun at an exploring start after H steps as a
    truncation (the learner bootstraps), never as a termination; corner starts keep the 100-step limit."""
    env = dst.make_env(one_hot=False, exploring_starts=1.0, exploring_horizon=3)
    for seed in range(20):
        env.reset(seed=seed)
        for t in range(1, 4):
            _, _, terminated, truncated, _ = env.step(0)  # up: open water or the top wall, never a treasure
            assert not terminated and truncated == (t == 3)
    corner = dst.make_env(one_hot=False, exploring_starts=0.0, exploring_horizon=3)
    corner.reset(seed=0)
    for _ in range(10):
        _, _, terminated, truncated, _ = corner.step(0)
        assert not terminated and not truncated
    with pytest.raises(ValueError, match="horizon"):
        dst.ExploringStarts(dst.make_env(one_hot=False), 1.0, 0)


def test_exploring_starts_from_the_cli(tmp_path: Path) -> None:
    from morl_robot.cli import main

    assert main(["experiment", "deep-sea-treasure", "--out", str(tmp_path), "--quick", "--steps", "200",
                 "--algorithms", "mo-mpo", "--processes", "1", "--no-progress", "--exploring-starts", "1"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["budget"]["exploring_starts"] == 1.0
    assert results["mo-mpo"]["failures"] == [] and results["mo-mpo"]["runs"] == 2
    assert main(["experiment", "deep-sea-treasure", "--out", "/tmp/never", "--exploring-starts", "2"]) == 2
    assert main(["experiment", "deep-sea-treasure", "--out", str(tmp_path / "h"), "--quick", "--steps", "200",
                 "--algorithms", "mo-mpo", "--processes", "1", "--no-progress", "--exploring-starts", "1",
                 "--exploring-horizon", "2"]) == 0
    results = json.loads((tmp_path / "h" / "results.json").read_text())
    assert results["budget"]["exploring_horizon"] == 2 and results["mo-mpo"]["failures"] == []
    assert main(["experiment", "deep-sea-treasure", "--out", "/tmp/never", "--exploring-horizon", "2"]) == 2


def test_a_sweep_resumes_from_the_cli(tmp_path: Path, capsys) -> None:
    """``--resume``: a second sitting keeps the first one's finished runs (none is rerun) and counts
    both sittings' wall time; another per-run budget is refused, naming what differs."""
    from morl_robot.cli import main

    args = ["experiment", "deep-sea-treasure", "--out", str(tmp_path), "--quick", "--steps", "200",
            "--algorithms", "mo-mpo", "--processes", "1", "--no-progress", "--resume"]
    assert main(args) == 0
    first = json.loads((tmp_path / "results.json").read_text())["mo-mpo"]
    assert first["kept_from_earlier_sittings"] == 0 and first["runs"] == 2
    capsys.readouterr()
    assert main(args) == 0
    assert "2 runs kept from earlier sittings (--resume)" in capsys.readouterr().out
    second = json.loads((tmp_path / "results.json").read_text())["mo-mpo"]
    assert second["kept_from_earlier_sittings"] == 2
    assert second["per_setting"] == first["per_setting"]  # the same runs, not retrained
    progress = json.loads((tmp_path / "sweep_mo-mpo.json").read_text())
    assert len(progress["sittings_wall_time_s"]) == 2
    assert second["total_wall_time_s"] == pytest.approx(sum(progress["sittings_wall_time_s"]))
    assert main([*args[:-1], "--resume", "--steps", "300"]) != 0
    assert "steps_per_run differ" in capsys.readouterr().err


def test_learner_changes_reach_both_algorithms_configs() -> None:
    """``LearnerKnobs`` change exactly the named fields of the learner config, for MO-MPO and
    scalarized MPO alike (equal budget), and nothing when unset."""
    budget = dst.RunBudget(steps=100)
    changed = dst.RunBudget(steps=100, learner=dst.LearnerKnobs(critic_lr=3e-4, target_update_period=100,
                                                                samples_per_insert=32.0, batch_size=64))
    for setting in (dst.mo_mpo_setting(0.02, 1.24, 0), dst.scalarized_settings(1)[0]):
        base, cfg = dst.learner_config(setting, budget), dst.learner_config(setting, changed)
        assert (base.critic_lr, base.target_update_period, base.replay.samples_per_insert, base.batch_size) == \
            (1e-3, 20, 8.0, 32)
        assert (cfg.critic_lr, cfg.target_update_period, cfg.replay.samples_per_insert, cfg.batch_size) == \
            (3e-4, 100, 32.0, 64)
        assert cfg.policy_lr == base.policy_lr and cfg.replay.capacity == base.replay.capacity
    assert changed.learner.changed() == {"critic_lr": 3e-4, "target_update_period": 100,
                                         "samples_per_insert": 32.0, "batch_size": 64}
    with pytest.raises(ValueError, match="target_update_period"):
        dst.LearnerKnobs(target_update_period=0).validate()
    table = dst.learner_config(dst.mo_mpo_setting(0.02, 1.24, 0), dst.RunBudget(steps=100, learner=dst.LearnerKnobs(
        policy_hidden=())))
    assert table.networks.policy_hidden == [] and table.networks.critic_hidden == [128, 128]
    assert dst.LearnerKnobs(policy_hidden=()).changed() == {"policy_hidden": []}


def test_learner_changes_from_the_cli(tmp_path: Path, capsys) -> None:
    from morl_robot.cli import main

    assert main(["experiment", "deep-sea-treasure", "--out", str(tmp_path), "--quick", "--steps", "200",
                 "--algorithms", "mo-mpo", "--processes", "1", "--no-progress", "--critic-lr", "3e-4",
                 "--target-update-period", "50", "--policy-hidden"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["budget"]["learner_changes"] == {"critic_lr": 3e-4, "target_update_period": 50,
                                                    "policy_hidden": []}
    assert results["mo-mpo"]["failures"] == []
    assert main(["experiment", "deep-sea-treasure", "--out", "/tmp/never", "--samples-per-insert", "0"]) == 2
    assert "--samples-per-insert must be > 0" in capsys.readouterr().err


ES = Path(__file__).resolve().parents[2] / "results" / "deep_sea_treasure_learned" / "exploring_starts" / "es_c51"


@pytest.mark.skipif(not (ES / "results.json").is_file(), reason="no committed exploring-starts results")
def test_committed_exploring_starts_figures() -> None:
    """The README's exploring-starts row: 9 of 10 Pareto points, hypervolume 2175.8, 43 of 51
    runs converged, every greedy return one of the true front's points."""
    results = json.loads((ES / "results.json").read_text())
    r = results["mo-mpo"]
    assert results["budget"]["exploring_starts"] == 1.0 and r["runs"] == 51 and r["failures"] == []
    assert r["pareto_points_found"] == 9 and not r["pareto_points_found_mask"][6]  # 19.6 missing
    assert r["hypervolume"] == pytest.approx(2175.8, abs=0.05) and r["converged"] == 43
    front = dst.true_pareto_front()
    assert dst.pareto_points_found(np.array([s["returns"] for s in r["per_setting"]]), front).sum() == 9


@pytest.mark.parametrize("name, eps_time, same, at_20_3, changes", [
    ("es_h1_e02", 0.02, 2, 5, {}), ("es_h1_e01", 0.01, 0, 5, {}),
    ("es_h1_e02_spi32", 0.02, 0, 4, {"samples_per_insert": 32.0})])
def test_committed_one_step_exploring_runs_skip_19_6(name: str, eps_time: float, same: int, at_20_3: int,
                                                     changes: dict) -> None:
    """The README's horizon-1 rows: eight learned runs across each window where exact MO-MPO with
    one-step exploring episodes reaches 19.6; none lands on it (they jump from 16.1 to 20.3), also
    with four times the updates per step (accurate critics)."""
    results = json.loads((ES.parent / name / "results.json").read_text())
    r = results["mo-mpo"]
    assert results["budget"]["exploring_horizon"] == 1 and results["budget"]["exploring_starts"] == 1.0
    assert results["budget"].get("learner_changes", {}) == changes
    assert r["runs"] == 8 and r["failures"] == [] and r["agrees_with_exact"]["same_treasure"] == same
    assert {s["setting"]["params"]["epsilon_time"] for s in r["per_setting"]} == {eps_time}
    treasures = [round(s["returns"][0], 1) for s in r["per_setting"]]
    assert 19.6 not in treasures and treasures.count(20.3) == at_20_3


@pytest.mark.skipif(not (ES.parent / "es_h1_e02_table" / "results.json").is_file(), reason="no committed table-policy window")
def test_committed_table_policy_window_lands_on_19_6() -> None:
    """The README's table-policy window: with a tabular policy and one update per step a learned run
    lands on 19.6 (c = 1.22), and every greedy return is a true Pareto point."""
    results = json.loads((ES.parent / "es_h1_e02_table" / "results.json").read_text())
    r = results["mo-mpo"]
    assert results["budget"]["learner_changes"] == {"samples_per_insert": 32.0, "policy_hidden": []}
    assert r["runs"] == 8 and r["failures"] == [] and r["agrees_with_exact"]["same_treasure"] == 1
    by_c = {round(s["setting"]["params"]["c"], 2): round(s["returns"][0], 1) for s in r["per_setting"]}
    assert by_c == {1.14: 15.1, 1.16: 15.1, 1.18: 16.1, 1.2: 20.3, 1.22: 19.6, 1.24: 20.3, 1.26: 20.3, 1.28: 20.3}
    front = dst.true_pareto_front()
    assert dst.pareto_points_found(np.array([s["returns"] for s in r["per_setting"]]), front).sum() == 4


@pytest.mark.skipif(not (ES.parent / "es_h1_table_c26" / "results.json").is_file(), reason="no committed table-policy sweep")
def test_committed_table_policy_sweeps_find_all_ten_points() -> None:
    """The README's "ten of ten": the table-policy sweep over c ∈ [0.96, 1.46] finds 9 Pareto points
    (19.6 at c = 1.22 and 1.24), and the four runs of the same settings at c = 0.50 … 0.56 the tenth
    (0.7); together every point of the true front."""
    results = json.loads((ES.parent / "es_h1_table_c26" / "results.json").read_text())
    r = results["mo-mpo"]
    assert results["budget"]["learner_changes"] == {"samples_per_insert": 32.0, "policy_hidden": []}
    assert results["budget"]["exploring_horizon"] == 1 and r["runs"] == 26 and r["failures"] == []
    assert r["pareto_points_found"] == 9 and r["hypervolume"] == pytest.approx(2177.9, abs=0.05)
    by_c = {round(s["setting"]["params"]["c"], 2): round(s["returns"][0], 1) for s in r["per_setting"]}
    assert by_c[1.22] == by_c[1.24] == 19.6
    low = json.loads((ES.parent / "es_h1_table_low_c" / "sweep_mo-mpo.json").read_text())["records"]
    assert [round(x["setting"]["params"]["c"], 2) for x in low] == [0.5, 0.52, 0.54, 0.56]
    returns = np.array([s["returns"] for s in r["per_setting"]] + [x["returns"] for x in low])
    front = dst.true_pareto_front()
    assert dst.pareto_points_found(returns, front).sum() == len(front) == 10


@pytest.mark.skipif(not (ES.parent / "es_h1_table_c51" / "results.json").is_file(), reason="no committed 51-value sweep")
def test_committed_51_value_sweep_finds_all_ten_points() -> None:
    """The README's one-sweep "ten of ten" and the paper's three ε_time values: the table-policy
    recipe over the 51-value c grid reaches every point of the true front at ε_time 0.02
    (hypervolume 2179.3, 19.6 at c = 1.22), 9 at 0.01 and 8 at 0.05; its first four runs repeat the
    stopped sweep's (``es_h1_table_low_c``) evaluation by evaluation."""
    results = json.loads((ES.parent / "es_h1_table_c51" / "results.json").read_text())
    r = results["mo-mpo"]
    assert results["budget"]["learner_changes"] == {"samples_per_insert": 32.0, "policy_hidden": []}
    assert results["budget"]["exploring_horizon"] == 1 and results["sweep"]["c_values"] == 51
    assert results["sweep"]["epsilon_time"] == [0.02, 0.01, 0.05]
    assert r["runs"] == 153 and r["failures"] == [] and r["not_run"] == [] and r["converged"] == 148
    assert r["pareto_points_found"] == 10 and r["agrees_with_exact"]["same_treasure"] == 108
    front = dst.true_pareto_front()
    exact = {(round(x["eps_time"], 6), round(x["c"], 6)): x["treasure"]
             for x in json.loads((ROOT / r["agrees_with_exact"]["reference"]).read_text())["runs"]}
    assert r["by_epsilon_time"] == dst.by_epsilon_time(r["per_setting"], front, exact)
    got = {e: (b["pareto_points_found"], round(b["hypervolume"], 1), b["converged"], b["same_treasure_as_exact"])
           for e, b in r["by_epsilon_time"].items()}
    assert got == {"0.01": (9, 2177.2, 50, 29), "0.02": (10, 2179.3, 50, 33), "0.05": (8, 2170.8, 48, 46)}
    at = {e: {round(s["setting"]["params"]["c"], 2): round(s["returns"][0], 1) for s in r["per_setting"]
              if s["setting"]["params"]["epsilon_time"] == e} for e in (0.01, 0.02, 0.05)}
    assert at[0.02][1.22] == 19.6 and at[0.02][0.5] == 0.7 and at[0.02][1.5] == 23.7
    assert 20.3 not in at[0.01].values() and 16.1 not in at[0.05].values() and 19.6 not in at[0.05].values()
    low = json.loads((ES.parent / "es_h1_table_low_c" / "sweep_mo-mpo.json").read_text())["records"]
    progress = json.loads((ES.parent / "es_h1_table_c51" / "sweep_mo-mpo.json").read_text())
    again = {json.dumps(r["setting"], sort_keys=True): r for r in progress["records"]}
    assert len(low) == 4
    for a in low:
        b = again[json.dumps(a["setting"], sort_keys=True)]
        assert a["returns"] == b["returns"] and a["extras"]["evaluations"] == b["extras"]["evaluations"]
    assert {json.dumps(x["setting"], sort_keys=True) for x in r["per_setting"]} == set(again)
    assert progress["meta"]["learner_changes"] == results["budget"]["learner_changes"]
    # scalarized MPO with the same recipe over the paper's 101 weights: all 10 points (w = 0.67 falls in
    # 20.3's window of weights, [0.666, 0.672]), on its optimum in 97 of 101 settings
    sc = results["scalarized-mpo"]
    assert results["sweep"]["scalarized_weights"] == 101 and sc["runs"] == 101 and sc["converged"] == 101
    assert sc["pareto_points_found"] == 10 and sc["failures"] == [] and sc["not_run"] == []
    optimum = dst.scalarized_optimum([x["setting"]["params"]["weights"][0] for x in sc["per_setting"]])
    same = sum(abs(o - x["returns"][0]) < 1e-3 for o, x in zip(optimum, sc["per_setting"]))
    assert sc["agrees_with_optimum"]["same_treasure"] == same == 97
    assert sc["agrees_with_optimum"]["points_reachable_on_this_grid"] == 10
    treasure = {round(x["setting"]["params"]["weights"][0], 2): round(x["returns"][0], 1) for x in sc["per_setting"]}
    assert treasure[0.67] == 20.3 and [w for w, t in treasure.items() if t == 20.3] == [0.67]
    # the earlier sitting over 51 weights stays in the progress file (its w = 0 run is the same run as
    # the 101-weight grid's, kept): 9 of 10 (no 20.3: its grid steps over the window), 48 of 51 on its optimum
    prog = json.loads((ES.parent / "es_h1_table_c51" / "sweep_scalarized-mpo.json").read_text())
    w51 = prog["records_of_other_settings"] + [x for x in prog["records"] if x["setting"]["params"]["weights"][0] == 0.0]
    assert len(w51) == 51 and len({x["setting"]["params"]["weights"][0] for x in w51}) == 51
    returns51 = np.array([x["returns"] for x in w51])
    found51 = dst.pareto_points_found(returns51, dst.true_pareto_front())
    assert found51.sum() == 9 and not found51[7]  # 20.3
    optimum51 = dst.scalarized_optimum([x["setting"]["params"]["weights"][0] for x in w51])
    assert sum(abs(o - x["returns"][0]) < 1e-3 for o, x in zip(optimum51, w51)) == 48
