"""Pareto filter, EUM, simplex weights, sparsity, cardinality."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from morl_robot.evaluation import (
    cardinality,
    dominates,
    expected_utility,
    pareto_front,
    pareto_mask,
    simplex_weights,
    sparsity,
)

point_sets = arrays(
    np.float64,
    st.tuples(st.integers(1, 30), st.integers(2, 4)),
    elements=st.integers(0, 6).map(float),
)


@settings(max_examples=80, deadline=None)
@given(points=point_sets)
def test_front_is_nondominated_complete_and_unique(points: np.ndarray) -> None:
    front = pareto_front(points)
    # Mutually non-dominated and distinct.
    assert len(np.unique(front, axis=0)) == len(front)
    for a in front:
        for b in front:
            assert not dominates(a, b)
    # Every input point is either on the front or dominated by a front point.
    for p in points:
        on_front = np.any(np.all(front == p, axis=1))
        assert on_front or any(dominates(f, p) for f in front)
    # Idempotent, order-independent.
    np.testing.assert_array_equal(pareto_front(front), front)
    np.testing.assert_array_equal(pareto_front(points[::-1]), front)
    assert cardinality(points) == len(front)


def test_front_small_example_and_duplicates() -> None:
    pts = np.array([[1, 3], [2, 2], [2, 2], [1, 1], [3, 1], [0, 3]], dtype=float)
    np.testing.assert_array_equal(pareto_front(pts), [[1, 3], [2, 2], [3, 1]])
    np.testing.assert_array_equal(pareto_mask(pts), [True, True, False, False, True, False])
    assert cardinality(pts) == 3


def test_expected_utility() -> None:
    pts = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert expected_utility(pts, [[1.0, 0.0], [0.0, 1.0]]) == pytest.approx(1.0)
    assert expected_utility(pts, [[0.5, 0.5]]) == pytest.approx(0.5)
    # A compromise point raises EUM only where it is the best choice.
    w = simplex_weights(2, 4)  # 0, .25, .5, .75, 1
    with_mid = np.vstack([pts, [0.6, 0.6]])
    assert expected_utility(with_mid, w) > expected_utility(pts, w)


@settings(max_examples=60, deadline=None)
@given(points=point_sets, divisions=st.integers(1, 6))
def test_eum_depends_only_on_the_front(points: np.ndarray, divisions: int) -> None:
    w = simplex_weights(points.shape[1], divisions)
    assert expected_utility(points, w) == pytest.approx(expected_utility(pareto_front(points), w))


@pytest.mark.parametrize("k,d", [(1, 3), (2, 100), (3, 4), (4, 5)])
def test_simplex_weights(k: int, d: int) -> None:
    w = simplex_weights(k, d)
    assert w.shape == (math.comb(d + k - 1, k - 1), k)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert np.all(w >= 0)
    assert len(np.unique(w, axis=0)) == len(w)
    np.testing.assert_allclose(np.round(w * d), w * d, atol=1e-9)
    if k == 2:
        np.testing.assert_allclose(w[:, 0], np.linspace(0, 1, d + 1))


def test_sparsity() -> None:
    # PGMORL: sorted gaps per objective, squared, summed, over (P − 1).
    front = np.array([[0.0, 3.0], [1.0, 2.0], [3.0, 0.0]])
    # objective 1 gaps: 1, 2; objective 2 gaps: 2, 1 -> (1 + 4 + 4 + 1) / 2 = 5.
    assert sparsity(front) == pytest.approx(5.0)
    assert sparsity(front[:1]) == 0.0
    # Adding a point in the middle of a gap makes the front denser.
    assert sparsity(np.vstack([front, [2.0, 1.0]])) < sparsity(front)
