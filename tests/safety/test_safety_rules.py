"""The rule pieces and the command-shaping maths: each rule trips at its threshold and never below."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from morl_robot.safety.rules import (
    Level,
    MagnitudeRule,
    RangeLevel,
    RangeRule,
    Response,
    WrenchRule,
    away_from_limits,
    clamp,
    non_finite,
    rate_limit,
    slow_down,
    staleness,
)

finite = st.floats(-1e3, 1e3, allow_nan=False)
positive = st.floats(1e-3, 1e3, allow_nan=False)


@st.composite
def thresholds_and_trace(draw, n_max=6):
    n = draw(st.integers(1, n_max))
    contact = draw(arrays(np.float64, n, elements=positive))
    extra = draw(arrays(np.float64, n, elements=st.floats(0.0, 1e3)))
    collision = contact + extra
    trace = draw(st.lists(arrays(np.float64, n, elements=finite), min_size=1, max_size=30))
    # put some samples exactly at a threshold and just below it
    i = draw(st.integers(0, n - 1))
    sign = draw(st.sampled_from([-1.0, 1.0]))
    trace.append(np.where(np.arange(n) == i, sign * collision[i], 0.0))
    trace.append(np.where(np.arange(n) == i, sign * np.nextafter(contact[i], 0.0), 0.0))
    return contact, collision, trace


@settings(max_examples=150, deadline=None)
@given(thresholds_and_trace())
def test_magnitude_rule_trips_exactly_at_or_above_each_threshold(case):
    contact, collision, trace = case
    n = len(contact)
    rule = MagnitudeRule("r", [f"k{i}" for i in range(n)], "N", [
        Level("contact", contact, Response.CLAMP), Level("collision", collision, Response.ESTOP)])
    for x in trace:
        got = {(v.key, v.level) for v in rule.evaluate(x, 1.0, 2.0)}
        want = {(f"k{i}", "contact") for i in range(n) if abs(x[i]) >= contact[i]}
        want |= {(f"k{i}", "collision") for i in range(n) if abs(x[i]) >= collision[i]}
        assert got == want
    v = rule.evaluate(np.where(np.arange(n) == 0, collision[0], 0.0), 1.5, 2.5)[-1]
    assert (v.value, v.threshold, v.response, v.sensor_stamp, v.decided_at) == (
        collision[0], collision[0], Response.ESTOP, 1.5, 2.5)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_range_rule_trips_at_either_bound_and_never_inside(data):
    n = data.draw(st.integers(1, 5))
    lower = data.draw(arrays(np.float64, n, elements=st.floats(-10, 0)))
    width = data.draw(arrays(np.float64, n, elements=st.floats(0.01, 10)))
    upper = lower + width
    rule = RangeRule("joints.position", [f"j{i}" for i in range(n)], "rad",
                     [RangeLevel("hard", lower, upper, Response.ESTOP)])
    trace = data.draw(st.lists(arrays(np.float64, n, elements=st.floats(-25, 25)), min_size=1, max_size=20))
    trace += [lower.copy(), upper.copy(), np.nextafter(lower, upper), np.nextafter(upper, lower)]
    for x in trace:
        got = {v.key for v in rule.evaluate(x, 0.0, 0.0)}
        assert got == {f"j{i}" for i in range(n) if x[i] <= lower[i] or x[i] >= upper[i]}
        for v in rule.evaluate(x, 0.0, 0.0):  # the threshold reported is the bound crossed
            i = int(v.key[1:])
            assert v.threshold == (lower[i] if x[i] <= lower[i] else upper[i])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_nested_range_levels_each_trip_at_their_own_bounds(data):
    """Soft range inside the hard range (joint limits, a workspace box with a margin): a reading
    strictly inside the soft range trips nothing, one at or past a level's bound trips that level."""
    n = data.draw(st.integers(1, 5))
    hard_lo = data.draw(arrays(np.float64, n, elements=st.floats(-10, 0)))
    width = data.draw(arrays(np.float64, n, elements=st.floats(0.1, 10)))
    margin = data.draw(arrays(np.float64, n, elements=st.floats(0.0, 0.049)))
    hard_hi = hard_lo + width
    soft_lo, soft_hi = hard_lo + margin * width, hard_hi - margin * width
    rule = RangeRule("workspace", [f"x{i}" for i in range(n)], "m", [
        RangeLevel("soft", soft_lo, soft_hi, Response.CLAMP), RangeLevel("hard", hard_lo, hard_hi, Response.ESTOP)])
    trace = data.draw(st.lists(arrays(np.float64, n, elements=st.floats(-25, 25)), min_size=1, max_size=20))
    trace += [soft_lo.copy(), soft_hi.copy(), np.nextafter(soft_lo, soft_hi), np.nextafter(soft_hi, soft_lo),
              hard_lo.copy(), hard_hi.copy(), np.nextafter(hard_lo, -np.inf), 0.5 * (soft_lo + soft_hi)]
    for x in trace:
        got = {(v.key, v.level) for v in rule.evaluate(x, 0.0, 0.0)}
        want = {(f"x{i}", name) for name, lo, hi in (("soft", soft_lo, soft_hi), ("hard", hard_lo, hard_hi))
                for i in range(n) if x[i] <= lo[i] or x[i] >= hi[i]}
        assert got == want


def _wrench_rule():
    def fam(rule, keys, contact, collision):
        return MagnitudeRule(rule, keys, "N", [Level("contact", np.full(len(keys), contact), Response.CLAMP),
                                               Level("collision", np.full(len(keys), collision), Response.ESTOP)])
    nominal = {"force_norm": fam("wrench.force_norm", ("norm",), 20.0, 40.0),
               "force_axis": fam("wrench.force_axis", ("fx", "fy", "fz"), 15.0, 30.0),
               "torque_norm": fam("wrench.torque_norm", ("norm",), 2.5, 5.0)}
    accel = {"force_norm": fam("wrench.force_norm", ("norm",), 25.0, 45.0)}
    return WrenchRule(nominal, accel)


@settings(max_examples=150, deadline=None)
@given(arrays(np.float64, 6, elements=st.floats(-60, 60)), st.booleans())
def test_wrench_rule_checks_norms_axes_and_the_acceleration_phase(w, accelerating):
    got = {(v.rule, v.key, v.level) for v in _wrench_rule().evaluate(w, accelerating, 0.0, 0.0)}
    fn, tn = float(np.linalg.norm(w[:3])), float(np.linalg.norm(w[3:]))
    want = set()
    levels = (25.0, 45.0, "/accelerating") if accelerating else (20.0, 40.0, "")
    for t, name in ((levels[0], "contact"), (levels[1], "collision")):
        if fn >= t:
            want.add(("wrench.force_norm", "norm", name + levels[2]))
    for i, k in enumerate(("fx", "fy", "fz")):
        want |= {("wrench.force_axis", k, lv) for t, lv in ((15.0, "contact"), (30.0, "collision")) if abs(w[i]) >= t}
    want |= {("wrench.torque_norm", "norm", lv) for t, lv in ((2.5, "contact"), (5.0, "collision")) if tn >= t}
    assert got == want


@given(st.floats(0, 10), st.floats(1e-3, 10))
def test_staleness_trips_at_the_deadline(age, deadline):
    v = staleness("wrench", age, deadline, Response.ESTOP, 1.0, 2.0)
    assert (v is not None) == (age >= deadline)
    assert staleness("wrench", deadline, deadline, Response.ESTOP, 0, 0) is not None
    assert staleness("wrench", math.nextafter(deadline, 0), deadline, Response.ESTOP, 0, 0) is None


@given(arrays(np.float64, 5, elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_non_finite_names_the_first_bad_component(x):
    v = non_finite("tactile.non_finite", ["a", "b", "c", "d", "e"], x, 0.0, 0.0)
    bad = [i for i in range(5) if not math.isfinite(x[i])]
    assert (v is None) == (not bad)
    if bad:
        assert v.key == "abcde"[bad[0]] and v.response == Response.ESTOP


# --- command shaping ---------------------------------------------------------------------------
vectors = arrays(np.float64, 4, elements=st.floats(-10, 10))


@given(vectors, arrays(np.float64, 4, elements=st.floats(0, 5)))
def test_clamp_keeps_inside_values_and_bounds_the_rest(x, half):
    out, changed = clamp(x, -half, half)
    assert np.all(np.abs(out) <= half)
    assert np.array_equal(out[~changed], x[~changed])
    assert np.array_equal(clamp(out, -half, half)[0], out)  # idempotent


@given(vectors, vectors, arrays(np.float64, 4, elements=st.floats(0, 3)))
def test_rate_limit_bounds_the_change_per_command(x, prev, step):
    out, limited = rate_limit(x, prev, step)
    assert np.all(np.abs(out - prev) <= step + 1e-12)
    assert np.allclose(out[~limited], x[~limited])
    assert np.all(np.sign(out - prev) * np.sign(x - prev) >= 0)  # same direction as asked


@given(vectors, vectors, st.floats(0, 1))
def test_slow_down_scales_velocities_and_shortens_position_moves(x, prev, scale):
    assert np.allclose(slow_down(x, prev, scale, absolute=True), scale * x)
    out = slow_down(x, prev, scale, absolute=False)
    assert np.all(np.abs(out - prev) <= np.abs(x - prev) + 1e-12)
    assert np.array_equal(slow_down(x, None, scale, absolute=False), x)


@given(vectors, vectors)
def test_away_from_limits_only_removes_outward_motion(v, p):
    lower, upper = np.full(4, -1.0), np.full(4, 1.0)
    out, zeroed = away_from_limits(v, p, lower, upper)
    outward = ((p >= upper) & (v > 0)) | ((p <= lower) & (v < 0))
    assert np.array_equal(zeroed, outward)
    assert np.all(out[outward] == 0) and np.array_equal(out[~outward], v[~outward])
