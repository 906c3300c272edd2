"""Fronts across seeds: per-seed metrics are those of that seed's points; IQM and its CI behave."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.evaluation.front import FrontPoint, front_report, iqm_with_ci
from morl_robot.evaluation.hypervolume import hypervolume


def _points():
    rows = {0: [(10.0, -50.0), (5.0, -10.0), (4.0, -60.0)],  # the last is dominated
            1: [(12.0, -80.0), (3.0, -5.0)]}
    return [FrontPoint(f"s{i}", seed, {"wrist_force": 0.01 * i}, r) for seed, rs in rows.items()
            for i, r in enumerate(rs)]


def test_per_seed_fronts_and_hypervolumes_are_those_of_each_seed():
    report = front_report(_points(), ref=[0.0, -100.0], objective_names=["task", "wrist_force"])
    seed0 = report["per_seed"]["0"]
    assert [p["setting"] for p in seed0["front"]] == ["s0", "s1"]
    assert seed0["cardinality"] == 2
    assert seed0["hypervolume"] == pytest.approx(hypervolume([[10, -50], [5, -10]], [0, -100]))
    assert report["ideal"] == [12.0, -5.0]
    # two seeds: IQM trims nothing, equals the mean; the CI brackets it
    hv = [report["per_seed"][s]["hypervolume"] for s in ("0", "1")]
    agg = report["across_seeds"]["hypervolume"]
    assert agg["iqm"] == pytest.approx(np.mean(hv)) and agg["ci_low"] <= agg["iqm"] <= agg["ci_high"]
    assert {p["setting"] for p in report["pooled_front"]} == {"s0", "s1"}  # (12,-80) (10,-50) (5,-10) (3,-5)


def test_eum_is_scale_free_in_each_objective():
    """EUM is computed on returns normalised between ref and ideal: rescaling an objective (N → kN)
    together with its reference changes nothing."""
    pts = _points()
    scaled = [FrontPoint(p.setting, p.seed, p.preference, (p.returns[0], p.returns[1] * 1e-3)) for p in pts]
    a = front_report(pts, [0.0, -100.0], ["task", "wrist_force"])
    b = front_report(scaled, [0.0, -0.1], ["task", "wrist_force"])
    for seed in ("0", "1"):
        assert a["per_seed"][seed]["eum"] == pytest.approx(b["per_seed"][seed]["eum"])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="ref must have 2"):
        front_report(_points(), [0.0], ["task", "wrist_force"])
    with pytest.raises(ValueError, match="at least one"):
        front_report([], [0.0, 0.0], ["task", "wrist_force"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12))
def test_iqm_lies_within_the_data_and_its_interval(values):
    r = iqm_with_ci(values)
    assert min(values) - 1e-9 <= r["iqm"] <= max(values) + 1e-9
    assert r["ci_low"] - 1e-9 <= r["iqm"] <= r["ci_high"] + 1e-9
    assert r["n"] == len(values)


def test_iqm_ignores_an_outlying_quarter():
    assert iqm_with_ci([1.0, 2.0, 3.0, 1000.0])["iqm"] == pytest.approx(2.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=3, max_size=12, unique=True), st.floats(0.1, 10.0))
def test_preference_response_reads_a_monotone_measure_as_a_perfect_rank_correlation(prefs, scale):
    """ρ = +1 for a measure that rises with the setting, −1 for one that falls, whatever the
    transform (ε or log ε, any scale): the rank correlation sees order only."""
    from morl_robot.evaluation.front import preference_response

    eps = np.asarray(prefs) / 1000.0  # ε in (0, 1], distinct
    got = preference_response(eps, {"up": scale * np.log(eps), "down": -(eps ** 3)})
    assert got["up"]["rho"] == pytest.approx(1.0) and got["down"]["rho"] == pytest.approx(-1.0)
    assert got["up"]["n"] == len(prefs)


def test_preference_response_leaves_out_unknown_values_and_says_when_it_cannot_tell():
    from morl_robot.evaluation.front import preference_response

    got = preference_response([0.01, 0.02, 0.05, 0.1], {"force": [4.0, None, 2.0, float("nan")],
                                                         "flat": [1.0, 1.0, 1.0, 1.0],
                                                         "noisy": [3.0, 1.0, 4.0, 2.0]})
    assert got["force"]["n"] == 2 and np.isnan(got["force"]["rho"])  # two known values: no ρ
    assert np.isnan(got["flat"]["rho"]) and got["flat"]["n"] == 4
    assert got["noisy"]["rho"] == pytest.approx(0.0) and got["noisy"]["p"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="measure 'x' has 2 values for 3 preference settings"):
        preference_response([1, 2, 3], {"x": [1, 2]})


def test_preference_response_within_seeds_sees_a_trend_that_seed_offsets_hide():
    """Three seeds, each falling with the setting, but each a constant apart: pooled, the offsets
    swamp the trend; within seeds (settings permuted inside each seed) it is perfect and certain."""
    from morl_robot.evaluation.front import preference_response

    eps = np.tile([0.005, 0.01, 0.02, 0.05, 0.1], 3)
    seeds = np.repeat([0, 1, 2], 5)
    force = -np.log(eps) + 10.0 * seeds  # (15,)
    pooled = preference_response(eps, {"force": force})["force"]
    within = preference_response(eps, {"force": force}, groups=seeds)["force"]
    assert abs(pooled["rho"]) < 0.5 and pooled["p"] > 0.05
    assert within["rho"] == pytest.approx(-1.0) and within["p"] < 1e-3 and within["n"] == 15
    # exact when the permutations are few: one seed of three settings, 2 of its 6 orders as extreme
    small = preference_response([1, 2, 3, 1, 2], {"m": [3, 2, 1, 5, None]}, groups=[0, 0, 0, 1, 1])["m"]
    assert small == {"rho": pytest.approx(-1.0), "p": pytest.approx(1 / 3), "n": 4}
    with pytest.raises(ValueError, match="groups has 2 values for 3"):
        preference_response([1, 2, 3], {"m": [1, 2, 3]}, groups=[0, 1])


def test_format_response_says_when_it_cannot_tell():
    from morl_robot.evaluation.front import format_response

    line = format_response({"pain": {"rho": 0.5, "p": 0.25, "n": 6}, "task": {"rho": float("nan"), "p": float("nan")},
                            "read back": {"rho": None, "p": None, "n": 2}})
    assert line == "pain +0.50 (p 0.25), task —, read back —"
