"""PRISM (issue 38) with observation normalisation on: the reflection L_g acts on the raw (physical)
observation and the result is normalised, n(L_g s), not L_g n(s) (which differs by 2μ_i/σ_i on every
negated index whose running mean is not 0); the reward model reads raw observations (it was trained
on them).  Through the learner session's sampling (``Updates._sample``) and one update."""
import numpy as np
import pytest
import torch

from morl_robot.acting.experience import experience_columns, split_experience
from morl_robot.learning.config import config_from_dict
from morl_robot.learning.networks import ActionSpec
from morl_robot.training.session import LearnerSession

SMALL = {"batch_size": 16, "sequence_length": 4, "num_samples": 5,
         "networks": {"policy_hidden": [16], "critic_hidden": [16]},
         "replay": {"min_size_to_sample": 32}}


class FirstObservation(torch.nn.Module):
    """A 'reward model' predicting the raw first observation component (as r̂ of objective 0)."""

    def forward(self, obs: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
        return obs[:, :1]


def test_normalised_batches_reflect_the_raw_state_and_densify_from_it(tmp_path):
    model = tmp_path / "model.pt"
    torch.jit.script(FirstObservation()).save(str(model))
    cfg = config_from_dict({**SMALL, "training": {"observation_normalization": True},  # loads: no refusal
                            "symreg": {"weight": 0.1, "observation_negate": [0, 2], "action_negate": [1]},
                            "densify": {"objectives": [0], "model": str(model)}})
    session = LearnerSession(3, ActionSpec.box(2), 2, cfg, seed=0, run_dir=tmp_path / "run",
                             normalize_observations=True)
    obs_labels, cols = ["x", "y", "z"], None
    cols = experience_columns(obs_labels, ["a0", "a1"], ["objective_0", "objective_1"])
    session.accept_experience(cols)
    rng = np.random.default_rng(0)
    offset = np.array([50.0, -3.0, 7.0])  # running means far from 0 on the negated indices
    for episode in range(4):
        t = 20
        obs = offset + rng.normal(size=(t + 1, 3))
        table = np.column_stack([np.zeros(t), np.ones(t), np.full(t, episode), np.arange(t), obs[:-1],
                                 rng.uniform(-1, 1, (t, 2)), np.full(t, -1.0), rng.normal(size=(t, 2)), obs[1:],
                                 np.r_[np.zeros(t - 1), 1.0], np.zeros(t)])
        session.add_chunk(split_experience(table, cols), contiguous=True)
    batch = session._sample()
    raw, normalised = batch["raw_observations"], batch["observations"]
    assert np.allclose(session.normalizer.normalize(raw[..., :3]), normalised[..., :3], atol=1e-5)
    sign = np.array([-1.0, 1.0, -1.0])
    expected = session.normalizer.normalize(raw[..., :3] * sign)
    assert np.allclose(batch["reflected_observations"], expected, atol=1e-5)
    assert not np.allclose(expected, normalised[..., :3] * sign, atol=1e-2)  # L_g n(s) would be wrong
    stats = session.learner.update(batch)
    assert "loss/symreg" in stats and np.isfinite(stats["loss/symreg"])
    mask = batch["mask"] > 0
    assert stats["densify/predicted_mean/objective_0"] == pytest.approx(float(raw[:-1, :, 0].mean()), rel=1e-4)
    assert abs(stats["densify/predicted_mean/objective_0"]) > 40 and mask.any()  # raw (≈ 50), not normalised (≈ 0)
