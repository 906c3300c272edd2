"""Hypervolume: agreement with pymoo's exact HV, invariances, hand-computed values."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from pymoo.indicators.hv import HV

from morl_robot.evaluation import hypervolume, hypervolume_contributions


def pymoo_hv(points: np.ndarray, ref: np.ndarray) -> float:
    """pymoo minimises: negate points and reference; it also counts only points better than ref."""
    inside = points[np.all(points > ref, axis=1)]
    if len(inside) == 0:
        return 0.0
    return float(HV(ref_point=-ref)(-inside))


def point_sets(k: int, max_points: int):
    # Coordinates on a coarse grid so ties and duplicates happen often.
    return arrays(
        np.float64,
        st.tuples(st.integers(1, max_points), st.just(k)),
        elements=st.integers(-3, 12).map(lambda v: v / 2.0),
    )


@pytest.mark.parametrize("k,max_points", [(2, 40), (3, 25), (4, 12)])
def test_matches_pymoo(k: int, max_points: int) -> None:
    @settings(max_examples=60 if k < 4 else 30, deadline=None)
    @given(points=point_sets(k, max_points), ref=arrays(np.float64, (k,), elements=st.sampled_from([-1.0, 0.0, 0.5])))
    def check(points: np.ndarray, ref: np.ndarray) -> None:
        assert hypervolume(points, ref) == pytest.approx(pymoo_hv(points, ref), rel=1e-9, abs=1e-9)

    check()


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_random_continuous_fronts_match_pymoo(k: int) -> None:
    rng = np.random.default_rng(k)
    for n in (1, 7, 40):
        pts = rng.random((n, k))
        assert hypervolume(pts, np.zeros(k)) == pytest.approx(pymoo_hv(pts, np.zeros(k)), rel=1e-10)


@settings(max_examples=50, deadline=None)
@given(points=point_sets(3, 15), data=st.data())
def test_dominated_points_do_not_change_it(points: np.ndarray, data: st.DataObject) -> None:
    ref = np.full(3, -2.0)
    base = hypervolume(points, ref)
    # Each extra point is some existing point minus a non-negative shift: dominated or a copy.
    idx = data.draw(st.lists(st.integers(0, len(points) - 1), min_size=1, max_size=10))
    shifts = data.draw(arrays(np.float64, (len(idx), 3), elements=st.sampled_from([0.0, 0.5, 1.0, 3.0])))
    extra = points[idx] - shifts
    assert hypervolume(np.vstack([points, extra]), ref) == pytest.approx(base, rel=1e-12, abs=1e-12)


def test_points_not_strictly_dominating_ref_contribute_nothing() -> None:
    ref = np.array([0.0, 0.0, 0.0])
    inside = np.array([[1.0, 2.0, 3.0]])
    outside = np.array([[0.0, 5.0, 5.0], [9.0, -1.0, 9.0], [-4.0, -4.0, -4.0]])
    assert hypervolume(inside, ref) == pytest.approx(6.0)
    assert hypervolume(np.vstack([inside, outside]), ref) == pytest.approx(6.0)
    assert hypervolume(outside, ref) == 0.0
    assert hypervolume(np.zeros((0, 3)), ref) == 0.0


def test_hand_computed_values() -> None:
    # 2-D staircase: boxes [0,1]x[0,3], [0,2]x[0,2], [0,3]x[0,1] -> 3 + 2 + 1 = 6.
    assert hypervolume([[1, 3], [2, 2], [3, 1]], [0, 0]) == pytest.approx(6.0)
    # Reference (−1, −1): gains (2, 4), (3, 3), (4, 2) -> strips 4·2 + 3·1 + 2·1 = 13.
    assert hypervolume([[1, 3], [2, 2], [3, 1]], [-1, -1]) == pytest.approx(13.0)
    # 3-D: two unit-overlap boxes [0,2]x[0,1]x[0,1] and [0,1]x[0,2]x[0,1] -> 2 + 2 − 1 = 3.
    assert hypervolume([[2, 1, 1], [1, 2, 1]], [0, 0, 0]) == pytest.approx(3.0)
    # 3-D: the three unit-axis boxes of size 2x1x1 along each axis: 3*2 − 3*1 + 1 = 4.
    assert hypervolume([[2, 1, 1], [1, 2, 1], [1, 1, 2]], [0, 0, 0]) == pytest.approx(4.0)
    # 4-D single box and K = 1.
    assert hypervolume([[1, 2, 3, 4]], [0, 0, 0, 0]) == pytest.approx(24.0)
    assert hypervolume([[3.0], [5.0]], [1.0]) == pytest.approx(4.0)
    # MO-MPO Table 1 style reference point [0, 20] with a penalty objective.
    assert hypervolume([[10.0, 25.0], [5.0, 30.0]], [0.0, 20.0]) == pytest.approx(10 * 5 + 5 * 5)


def test_contributions() -> None:
    pts = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0], [1.0, 1.0]])
    contrib = hypervolume_contributions(pts, [0.0, 0.0])
    np.testing.assert_allclose(contrib, [1.0, 1.0, 1.0, 0.0])


def test_shape_errors() -> None:
    with pytest.raises(ValueError):
        hypervolume(np.ones((3, 2)), [0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        hypervolume([[np.nan, 1.0]], [0.0, 0.0])
