"""Force as an evaluation result (`morl_robot.evaluation.protocol`: `force_summary` and the pure
functions under it): the per-episode peak force's percentiles with bootstrap CIs and the rates of
episodes above the task's force threshold and at the safety collision level with Wilson CIs; and
`morl-robot evaluate` (the real CLI parser) reporting them, with its held-out defaults."""
import json
import math

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.evaluation.protocol import (
    DEFAULT_EPISODES,
    HELD_OUT_SEED,
    EpisodeRecord,
    Evaluation,
    ForceLevels,
    evaluate_policy,
    exceedance,
    force_levels,
    force_summary,
    peak_force_percentiles,
    quantile_ci,
    wilson_interval,
)
from morl_robot.resources import resolve_config

SAWYER = "sawyer_peg_in_hole"
Z = 1.959963984540054  # the 97.5 % normal quantile


def _wilson_closed_form(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


# --- Wilson score interval -------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_contains_the_rate_and_stays_in_the_unit_interval(kn):
    k, n = kn
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert (lo, hi) == pytest.approx(_wilson_closed_form(k, n), abs=1e-9)
    # symmetric: the interval of the failures is the mirror image
    lo2, hi2 = wilson_interval(n - k, n)
    assert (lo, hi) == pytest.approx((1 - hi2, 1 - lo2), abs=1e-9)


def test_wilson_interval_of_the_issues_example_and_its_narrowing():
    # 2 episodes in 100 above the threshold: 2 % with about [0.6 %, 7 %] (the --help text's figure)
    lo, hi = wilson_interval(2, 100)
    assert lo == pytest.approx(0.0055, abs=1e-4) and hi == pytest.approx(0.0700, abs=1e-4)
    assert wilson_interval(0, 100)[0] == 0.0 and wilson_interval(0, 100)[1] == pytest.approx(0.037, abs=1e-3)
    widths = [np.subtract(*wilson_interval(n // 10, n)[::-1]) for n in (10, 100, 1000)]
    assert widths[0] > widths[1] > widths[2]
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    for k, n in ((3, 2), (-1, 5), (0, -1)):
        with pytest.raises(ValueError):
            wilson_interval(k, n)


# --- exceedance ------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=1, max_size=200), st.floats(0.0, 100.0))
def test_exceedance_counts_and_rates(peaks, level):
    strict, inclusive = exceedance(peaks, level), exceedance(peaks, level, inclusive=True)
    assert strict["count"] == sum(p > level for p in peaks) and inclusive["count"] == sum(p >= level for p in peaks)
    for b in (strict, inclusive):
        assert b["episodes"] == len(peaks) and 0.0 <= b["rate"] <= 1.0
        assert b["rate"] == b["count"] / len(peaks)
        assert 0.0 <= b["ci_low"] <= b["rate"] <= b["ci_high"] <= 1.0
    assert strict["count"] <= inclusive["count"]


def test_exceedance_at_the_level_itself():
    assert exceedance([30.0, 29.0], 30.0)["count"] == 0  # the task ends an episode *above* its threshold
    assert exceedance([40.0, 29.0], 40.0, inclusive=True)["count"] == 1  # a safety rule fires on reaching


# --- peak-force percentiles ------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1e3, allow_nan=False), min_size=1, max_size=60))
def test_peak_force_percentiles_are_monotone_and_their_cis_lie_in_the_data(peaks):
    got = peak_force_percentiles(peaks)
    values = [got["p50"]["value"], got["p90"]["value"], got["p99"]["value"], got["max"]]
    assert values == sorted(values) and got["max"] == max(peaks)
    tol = 1e-9 * max(1.0, max(peaks))
    for key in ("p50", "p90", "p99"):
        v = got[key]
        assert min(peaks) - tol <= v["ci_low"] <= v["ci_high"] <= max(peaks) + tol
    assert got == peak_force_percentiles(peaks)  # seeded: the same peaks give the same intervals


def test_quantile_ci_collapses_without_spread_and_narrows_with_more_episodes():
    assert quantile_ci([7.0], 0.9) == (7.0, 7.0) and quantile_ci([3.0, 3.0, 3.0], 0.5) == (3.0, 3.0)
    assert all(math.isnan(v) for v in quantile_ci([], 0.5))
    rng = np.random.default_rng(0)
    small, large = rng.gamma(2.0, 5.0, 20), rng.gamma(2.0, 5.0, 2000)
    width = lambda x: np.subtract(*quantile_ci(x, 0.5)[::-1])
    assert width(large) < width(small) / 3


# --- levels and the force block --------------------------------------------------------------
def _yaml(kind, name):
    return yaml.safe_load(resolve_config(kind, name).read_text())


def test_force_levels_come_from_the_task_and_the_safety_yaml():
    from morl_robot.tasks.registry import load_task

    sawyer = force_levels(load_task(SAWYER))
    assert sawyer.threshold == _yaml("tasks", SAWYER).get("force_threshold", 30.0) == load_task(SAWYER).config.force_threshold
    assert sawyer.collision == _yaml("safety", "sawyer")["wrench"]["force_norm"]["collision"]
    assert "wrench.force_norm.collision" in sawyer.collision_source and "tared" in sawyer.collision_source
    for task in ("shadow_touch", "shadow_turn", "shadow_orient"):
        shadow = force_levels(load_task(task))
        assert shadow.threshold is None  # the Shadow tasks end no episode on a force
        assert shadow.collision == _yaml("safety", "shadow_hand")["tactile"]["default"]["collision"]
        assert "tactile" in shadow.collision_source


def _record(seed, forces):
    return EpisodeRecord(seed, np.zeros(1), "time_limit", False, len(forces), np.asarray(forces, np.float64))


def test_the_force_block_of_an_evaluation():
    peaks = [5.0, 12.0, 31.0, 40.0, 8.0]
    records = [_record(i, [0.0, p, p / 2]) for i, p in enumerate(peaks)] + [_record(9, [])]  # one without readings
    levels = ForceLevels(30.0, "task", 40.0, "safety")
    ev = Evaluation("t", ("task",), records, seed=0, force_levels=levels)
    data = json.loads(json.dumps(ev.to_json(), allow_nan=False))  # plain, finite JSON
    force = data["force"]
    assert force["unit"] == "N" and force["episodes"] == 5
    assert force["peak"]["max"] == 40.0 == data["peak_force"] and force["peak"]["p50"]["value"] == 12.0
    assert force["threshold"] == {"source": "task", "level": 30.0, "inclusive": False, "count": 2, "episodes": 5,
                                  "rate": 0.4, **dict(zip(("ci_low", "ci_high"), wilson_interval(2, 5)))}
    assert force["collision"]["count"] == 1 and force["collision"]["inclusive"] is True
    text = ev.to_markdown()
    assert "| per-episode peak force (N): p90 |" in text
    assert "| episodes above the task's force threshold 30 N | 2/5 = 40.0 % | [11.8, 76.9] % |" in text
    # without levels (e.g. an Evaluation built by hand): the distribution alone; without forces: null
    bare = Evaluation("t", ("task",), records, seed=0).to_json()["force"]
    assert bare["threshold"] is None and bare["collision"] is None and bare["episodes"] == 5
    assert Evaluation("t", ("task",), [_record(0, [])], seed=0).to_json()["force"] is None
    assert force_summary([]) is None


def test_pressing_down_crosses_the_threshold_and_the_rate_counts_it():
    """Driving the peg straight down, without the safety rules and executed stiffly (contact control
    'stiff'), ends an episode above the task's 30 N threshold: the force block counts at least the
    episodes the task ended on force."""
    ev = evaluate_policy(lambda obs: np.array([0.0, 0.0, -1.0]), SAWYER, episodes=2, seed=0, safety=False,
                         contact_control="stiff")
    data = ev.to_json()
    ended = data["terminations"].get("force_threshold", 0)
    assert ended >= 1 and data["force"]["threshold"]["count"] >= ended
    assert data["force"]["peak"]["max"] > data["force"]["threshold"]["level"]


# --- morl-robot evaluate ---------------------------------------------------------------------
def _evaluate(argv, capsys):
    from morl_robot.cli import build_parser

    args = build_parser().parse_args(["evaluate", *argv])
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_evaluate_defaults_to_100_held_out_episodes():
    from morl_robot.cli import build_parser

    args = build_parser().parse_args(["evaluate", "scripted", "--task", SAWYER])
    assert (args.episodes, args.seed) == (DEFAULT_EPISODES, HELD_OUT_SEED) == (100, 50_000)
    assert args.seed >= 10 and not (10_000 <= args.seed < 10_000 + args.episodes)  # not tuning nor demo seeds


def test_evaluate_cli_reports_the_force_block(capsys):
    data = json.loads(_evaluate(["scripted", "--task", SAWYER, "--episodes", "2", "--json", "--no-progress"], capsys))
    assert data["episodes"] == 2 and data["seeds"] == [HELD_OUT_SEED, HELD_OUT_SEED + 1]
    force = data["force"]
    assert force["episodes"] == 2 and set(force["peak"]) == {"p50", "p90", "p99", "max"}
    assert force["peak"]["max"] == pytest.approx(data["peak_force"])
    for key in ("p50", "p90", "p99"):
        assert all(math.isfinite(force["peak"][key][k]) for k in ("value", "ci_low", "ci_high"))
    assert force["threshold"]["level"] == 30.0 and force["collision"]["level"] == 40.0
    for key in ("threshold", "collision"):
        b = force[key]
        assert b["episodes"] == 2 and 0 <= b["count"] <= 2 and 0.0 <= b["ci_low"] <= b["rate"] <= b["ci_high"] <= 1.0
    # the scripted insertion is gentle: no episode near the threshold
    assert force["threshold"]["count"] == 0 and force["peak"]["max"] < 30.0
    text = _evaluate(["scripted", "--task", SAWYER, "--episodes", "2", "--no-progress"], capsys)
    assert "| episodes above the task's force threshold 30 N | 0/2 = 0.0 % | [0.0, 65.8] % |" in text
    assert "| episodes reaching the collision level 40 N (safety/sawyer.yaml) | 0/2 = 0.0 % |" in text
    assert "| per-episode peak force (N): p50 |" in text


def test_evaluate_cli_a_shadow_task_has_no_force_threshold(capsys):
    data = json.loads(_evaluate(["random", "--task", "shadow_touch", "--episodes", "1", "--seed", "0", "--json",
                                 "--no-progress"], capsys))
    assert data["force"]["threshold"] is None and data["force"]["collision"]["level"] == 60.0
