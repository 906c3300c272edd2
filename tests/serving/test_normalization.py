"""RunningNormalizer: batched (Chan) updates equal the statistics of the concatenated data."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from morl_robot.learning.normalization import NormalizerError, RunningNormalizer

DIM = 3
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
batch = st.integers(1, 12).flatmap(lambda n: arrays(np.float64, (n, DIM), elements=finite))


@settings(max_examples=200, deadline=None)
@given(st.lists(batch, min_size=1, max_size=6))
def test_batched_updates_match_numpy_on_the_concatenation(batches: list[np.ndarray]) -> None:
    norm = RunningNormalizer(DIM)
    for b in batches:
        norm.update(b)
    data = np.concatenate(batches)
    assert norm.count == data.shape[0]
    scale = 1.0 + np.abs(data).max()
    np.testing.assert_allclose(norm.mean, data.mean(axis=0), rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(norm.var, data.var(axis=0), rtol=1e-7, atol=1e-7 * scale * scale)
    np.testing.assert_allclose(norm.std, np.sqrt(data.var(axis=0) + norm.epsilon), rtol=1e-6, atol=1e-6 * scale)


@settings(max_examples=100, deadline=None)
@given(st.lists(batch, min_size=1, max_size=4), arrays(np.float64, (5, DIM), elements=finite))
def test_normalize_is_the_clipped_standard_score(batches: list[np.ndarray], x: np.ndarray) -> None:
    norm = RunningNormalizer(DIM, clip=2.5)
    for b in batches:
        norm.update(b)
    data = np.concatenate(batches)
    expected = np.clip((x - data.mean(0)) / np.sqrt(data.var(0) + norm.epsilon), -2.5, 2.5)
    np.testing.assert_allclose(norm.normalize(x), expected, rtol=1e-6, atol=1e-6)
    assert np.all(np.abs(norm.normalize(x)) <= 2.5)


def test_before_any_update_only_the_clip_applies() -> None:
    norm = RunningNormalizer(2, clip=5.0)
    np.testing.assert_allclose(norm.normalize(np.array([[0.5, -7.0]])), [[0.5 / np.sqrt(1 + 1e-6), -5.0]])


def test_state_round_trip_and_leading_shapes() -> None:
    rng = np.random.default_rng(1)
    norm = RunningNormalizer(4)
    norm.update(rng.normal(3.0, 2.0, size=(50, 4)))
    copy = RunningNormalizer.from_state_dict(norm.state_dict())
    x = rng.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(copy.normalize(x), norm.normalize(x))
    assert copy.count == 50 and norm.normalize(x).shape == (2, 3, 4)


def test_bad_input_names_the_problem() -> None:
    norm = RunningNormalizer(3)
    with pytest.raises(NormalizerError, match="width 3"):
        norm.update(np.zeros((4, 2)))
    with pytest.raises(NormalizerError, match="non-finite observation value nan at row 1, feature 2"):
        norm.update(np.array([[0.0, 0.0, 0.0], [0.0, 0.0, np.nan]]))
    assert norm.count == 0  # a rejected batch changes nothing
    with pytest.raises(NormalizerError, match="dim 3"):
        norm.load_state_dict(RunningNormalizer(2).state_dict())
