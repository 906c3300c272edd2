"""The preference box of ε-conditioned MO-MPO: config, sampling, features, validation, grid."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.errors import ConfigError
from morl_robot.learning.config import MPOConfig, config_from_dict
from morl_robot.learning.preferences import PreferenceConfig, PreferenceSpace

BOX = [[0.01, 1.0], [0.002, 0.2]]


def test_features_put_the_box_on_minus_one_to_one_in_log_space():
    space = PreferenceSpace(BOX)
    f = space.features(np.array([[0.01, 0.002], [1.0, 0.2], [0.1, 0.02]]))
    np.testing.assert_allclose(f, [[-1, -1], [1, 1], [0, 0]], atol=1e-6)
    np.testing.assert_allclose(space.features(space.centre), [0, 0], atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_features_invert_in_torch(u, v):
    space = PreferenceSpace(BOX)
    eps = torch.tensor([[0.01 * 100.0 ** u, 0.002 * 100.0 ** v]], dtype=torch.float64)
    back = space.from_features(space.features(eps))
    torch.testing.assert_close(back, eps, rtol=1e-9, atol=0)
    np.testing.assert_allclose(space.features(eps.numpy()), space.features(eps).numpy(), atol=1e-6)


def test_a_fixed_objective_has_a_zero_feature_and_never_moves():
    space = PreferenceSpace([[0.05, 0.05], [0.01, 1.0]])
    samples = space.sample(200, np.random.default_rng(0))
    assert np.all(samples[:, 0] == pytest.approx(0.05))
    assert np.all(space.features(samples)[:, 0] == 0)
    grid = space.grid(11)
    assert grid.shape == (11, 2) and np.allclose(grid[:, 0], 0.05)
    np.testing.assert_allclose(grid[[0, -1], 1], [1.0, 0.01])


def test_samples_are_log_uniform_inside_the_box():
    space = PreferenceSpace(BOX)
    s = space.sample(20_000, np.random.default_rng(1))
    assert np.all(s >= np.array([0.01, 0.002]) - 1e-12) and np.all(s <= np.array([1.0, 0.2]) + 1e-12)
    u = (np.log(s) - np.log([0.01, 0.002])) / np.log(100.0)  # uniform on [0, 1] per objective
    assert np.all(np.abs(u.mean(0) - 0.5) < 0.01) and np.all(np.abs(u.var(0) - 1 / 12) < 0.005)
    t = space.sample_torch(20_000, torch.Generator().manual_seed(2)).numpy()
    assert np.all(np.abs(((np.log(t) - np.log([0.01, 0.002])) / np.log(100.0)).mean(0) - 0.5) < 0.01)


def test_check_names_the_objective_and_its_range():
    space = PreferenceSpace(BOX, names=["task", "force"])
    np.testing.assert_allclose(space.check([0.1, 0.1]), [0.1, 0.1])
    with pytest.raises(ValueError, match=r"force is 0\.5, outside its range \[0\.002, 0\.2\]"):
        space.check([0.1, 0.5])
    with pytest.raises(ValueError, match="3 values but the policy takes 2 \\(task, force\\)"):
        space.check([0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="task is nan"):
        space.check([float("nan"), 0.1])


def test_the_two_objective_grid_sweeps_the_ratio_across_the_box():
    grid = PreferenceSpace(BOX).grid(11)
    assert grid.shape == (11, 2)
    np.testing.assert_allclose(grid[0], [1.0, 0.002])
    np.testing.assert_allclose(grid[-1], [0.01, 0.2])
    ratio = np.log(grid[:, 0] / grid[:, 1])
    assert np.all(np.diff(ratio) < 0)  # monotone from "objective 0 matters" to "objective 1 matters"
    three = PreferenceSpace([[0.01, 1.0]] * 3).grid(11)
    assert len(three) >= 11 and len(np.unique(three, axis=0)) == len(three)


def test_config_section_default_range_and_errors():
    cfg = config_from_dict({"preferences": {"default_range": [0.02, 0.4]}})
    assert cfg.conditioned and cfg.preferences.ranges_for(3) == [[0.02, 0.4]] * 3
    assert not MPOConfig().conditioned
    with pytest.raises(ConfigError, match=r"preferences\.ranges\[1\] must satisfy 0 < low <= high"):
        config_from_dict({"preferences": {"ranges": [[0.1, 0.2], [0.0, 0.2]]}})
    with pytest.raises(ConfigError, match="not scalarized MPO"):
        config_from_dict({"algorithm": "scalarized_mpo", "preferences": {}})
    with pytest.raises(ConfigError, match="temperature_solver: exact"):
        config_from_dict({"temperature_solver": "gradient", "preferences": {}})
    with pytest.raises(ConfigError, match=r"expected 2 \[low, high\] ranges"):
        config_from_dict({"preferences": {"ranges": [[0.1, 0.2]] * 3}}).check_objectives(2)
    with pytest.raises(ConfigError, match="eval_points must be >= 2"):
        PreferenceConfig(eval_points=1).validate()


def test_the_shipped_config_is_conditioned():
    from morl_robot.learning.config import load_learner_config

    cfg = load_learner_config("conditioned")
    assert cfg.conditioned and cfg.preferences.relabel and cfg.preferences.eval_points >= 11
