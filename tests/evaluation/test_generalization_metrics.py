"""The MORL-generalisation metrics (issue 37): HV at a raw point (moocore, checked against the
project's own exact HV), normalised HV, NHGR, EUM/EUGR, and rliable's IQM / optimality gap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.evaluation import generalization as g
from morl_robot.evaluation.hypervolume import hypervolume

REF = [(0.0, 10.0), (4.0, 6.0), (10.0, 0.0)]  # a reference front F*
fronts = st.lists(st.tuples(st.floats(-5, 15), st.floats(-5, 15)), min_size=1, max_size=8)


def test_golden_values_by_hand():
    # normalised by F*'s min/max (0..10 on both): points (0,1), (0.4,0.6), (1,0) at the origin → 0.24
    assert g.normalised_hypervolume(REF, REF) == pytest.approx(0.24)
    assert g.nhgr(REF, REF) == pytest.approx(1.0)
    assert g.nhgr([(4.0, 6.0)], REF) == pytest.approx(1.0)  # the only point of F* with volume
    assert g.nhgr([(2.0, 3.0)], REF) == pytest.approx(0.06 / 0.24)
    assert g.hypervolume_raw(REF, (-1.0, -1.0)) == pytest.approx(1 * 11 + 4 * 7 + 6 * 1)
    # EUM at the raw point 0: weights w, 1−w on a fine grid → ∫ max(10(1−w), 4w + 6(1−w), 10w) dw
    w = np.linspace(0, 1, 100_001)
    exact = np.mean(np.max([10 * (1 - w), 4 * w + 6 * (1 - w), 10 * w], axis=0))
    assert exact == pytest.approx(7.5, rel=1e-4)  # the integral, by hand
    assert g.eum(REF, (0.0, 0.0), np.stack([w, 1 - w], axis=1)) == pytest.approx(exact, rel=1e-9)
    assert g.eum(REF, (0.0, 0.0)) == pytest.approx(7.5, rel=0.01)  # the default 101 weights
    assert g.eugr(REF, REF) == pytest.approx(1.0)
    assert g.eugr([(4.0, 6.0)], REF) == pytest.approx(g.eum([(0.4, 0.6)], (0, 0)) / g.eum([(0, 1), (0.4, 0.6), (1, 0)], (0, 0)))
    # the paper's Table 1 (MO-HalfCheetah, GPI-LS): NHGR = HV_norm / HV_norm(F*) = 0.20 / 0.26 → HV_norm(F*) ≈ 0.77
    assert 0.20 / 0.26 == pytest.approx(0.769, abs=1e-3)


@settings(max_examples=60, deadline=None)
@given(fronts, st.tuples(st.floats(-6, -5.5), st.floats(-6, -5.5)))
def test_raw_hv_is_the_projects_exact_hv(points, ref):
    assert g.hypervolume_raw(points, ref) == pytest.approx(hypervolume(points, ref), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(fronts, st.tuples(st.floats(-5, 15), st.floats(-5, 15)))
def test_nhgr_is_monotone_and_one_on_the_reference(points, extra):
    reference = g.reference_front([REF, points])
    if not g.normalised_hypervolume(reference, reference) > 0:  # only the extremes: nothing to compare to
        assert np.isnan(g.nhgr(points, reference))
        return
    assert g.nhgr(reference, reference) == pytest.approx(1.0)
    assert 0.0 <= g.normalised_hypervolume(reference, reference) <= 1.0 + 1e-12
    before = g.nhgr(points, reference)
    after = g.nhgr([*points, extra], reference)  # adding a point never lowers it
    assert after >= before - 1e-12
    assert before <= 1.0 + 1e-9  # nothing beats the union it belongs to


def test_degenerate_reference_is_nan():
    assert np.isnan(g.nhgr([(1.0, 1.0)], [(1.0, 1.0)]))


def test_aggregate_iqm_and_optimality_gap_with_cis():
    perfect = np.ones((3, 4))
    out = g.aggregate({"perfect": perfect, "half": np.full((3, 4), 0.5),
                       "mixed": np.array([[1.0, 0.2, 0.6, 0.9], [0.8, 0.1, 0.5, 1.0], [0.9, 0.3, 0.7, 0.95]])},
                      reps=300)
    assert out["perfect"]["iqm"]["value"] == pytest.approx(1.0)
    assert out["perfect"]["optimality_gap"]["value"] == pytest.approx(0.0)
    assert out["half"]["optimality_gap"]["value"] == pytest.approx(0.5)
    m = out["mixed"]
    assert m["iqm"]["ci_low"] <= m["iqm"]["value"] <= m["iqm"]["ci_high"]
    assert m["iqm"]["ci_low"] < m["iqm"]["ci_high"]
    assert (m["runs"], m["contexts"], m["excluded"]) == (3, 4, [])
    nan_col = {"a": np.array([[1.0, np.nan], [0.5, np.nan]]), "b": np.array([[0.2, np.nan]])}
    out = g.aggregate(nan_col, reps=100)  # a context without a reference spread is left out, named
    assert out["a"]["excluded"] == [1] and out["a"]["contexts"] == 1
    assert out["b"]["iqm"]["value"] == pytest.approx(0.2)
