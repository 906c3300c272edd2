"""OnnxPolicy: rejects truncated/corrupt/wrong-shaped models with a clear message, acts like the
torch policy, and its exploring log-probability is the learner's."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from policy_models import (
    SAWYER,
    SHADOW,
    make_policy,
    model_bytes,
    random_observations,
    task_contract,
    with_metadata,
)

from morl_robot.learning.mpo import gaussian_log_prob
from morl_robot.serving.contract import ContractError, replace
from morl_robot.serving.export import reference_outputs
from morl_robot.serving.runtime import (
    NonFiniteInput,
    NonFiniteOutput,
    OnnxPolicy,
    PolicyLoadError,
    inspect_model,
)
from morl_robot.tasks.base import scale_action


@pytest.fixture(scope="module")
def sawyer_model() -> bytes:
    return model_bytes(SAWYER, version=4, seed=1)


def test_loads_with_its_contract(sawyer_model: bytes) -> None:
    policy = OnnxPolicy.from_bytes(sawyer_model, expected=task_contract(SAWYER))
    assert policy.version == 4 and policy.contract.task == SAWYER and policy.contract.observation_normalizer == "running"
    info = inspect_model(sawyer_model)
    assert info.opset == 17 and info.inputs == {"observation": ["batch", 99]}
    assert info.outputs["action"] == ["batch", 3] and info.size_bytes == len(sawyer_model)


@pytest.mark.parametrize("damage,message", [
    (lambda d: b"", "empty model"),
    (lambda d: d[: len(d) // 2], "truncated/corrupt"),
    (lambda d: d[:200], "truncated/corrupt"),
    (lambda d: b"\x00\xff garbage " * 40, "truncated/corrupt"),
])
def test_truncated_or_corrupt_model_is_rejected(sawyer_model: bytes, damage, message: str) -> None:
    with pytest.raises(PolicyLoadError, match=message):
        OnnxPolicy.from_bytes(damage(sawyer_model))


def test_model_without_contract_is_rejected(sawyer_model: bytes) -> None:
    model = onnx.load_from_string(sawyer_model)
    del model.metadata_props[:]
    with pytest.raises(PolicyLoadError, match="no valid policy contract.*contract_format"):
        OnnxPolicy.from_bytes(model.SerializeToString())


def test_contract_that_lies_about_the_graph_is_rejected(sawyer_model: bytes) -> None:
    c = task_contract(SAWYER)
    wider = replace(c, observation_labels=c.observation_labels + ["extra"], observation_units=c.observation_units + ["1"])
    md = wider.to_metadata()
    bad = with_metadata(sawyer_model, observation_labels=md["observation_labels"], observation_units=md["observation_units"])
    with pytest.raises(PolicyLoadError, match="observation has width 99 but its contract names 100 observation labels"):
        OnnxPolicy.from_bytes(bad)


def test_incompatible_model_names_the_field(sawyer_model: bytes) -> None:
    with pytest.raises(ContractError, match="mismatch in 'robot'"):
        OnnxPolicy.from_bytes(model_bytes(SHADOW), expected=task_contract(SAWYER))


def test_missing_file(tmp_path) -> None:
    with pytest.raises(PolicyLoadError, match="model file not found"):
        OnnxPolicy.from_file(tmp_path / "nope.onnx")


def test_deterministic_act_matches_torch(sawyer_model: bytes) -> None:
    policy = OnnxPolicy.from_bytes(sawyer_model)
    c = policy.contract
    obs = random_observations(c, 20, seed=2)
    from policy_models import make_normalizer

    ref = reference_outputs(make_policy(c, 1), c, obs, make_normalizer(c, 1))
    for i, o in enumerate(obs):
        out = policy.act(o, deterministic=True)
        assert out.command.dtype == np.float64 and out.log_prob == 0.0
        np.testing.assert_allclose(out.command, ref["action"][i], atol=1e-6)
        np.testing.assert_allclose(out.action, np.clip(ref["mean"][i], -1, 1), atol=1e-6)


@pytest.mark.parametrize("task_name", [SAWYER, SHADOW])
def test_exploring_log_prob_is_gaussian_log_prob_of_the_clipped_sample(task_name: str) -> None:
    # init_std 1.5: many samples fall outside [-1, 1] and are clipped
    policy = OnnxPolicy.from_bytes(model_bytes(task_name, seed=5, init_std=1.5))
    c = policy.contract
    rng = np.random.default_rng(0)
    clipped = 0
    for o in random_observations(c, 50, seed=6):
        out = policy.act(o, deterministic=False, rng=rng)
        _, mean, log_std = policy.infer(o[None].astype(np.float32))
        assert np.all(np.abs(out.action) <= 1.0)
        clipped += int(np.sum(np.abs(out.action) == 1.0))
        want = gaussian_log_prob(torch.as_tensor(out.action, dtype=torch.float32)[None], torch.as_tensor(mean[0]),
                                 torch.as_tensor(np.exp(log_std[0]))).sum()
        assert out.log_prob == pytest.approx(float(want), rel=1e-5, abs=1e-4)
        np.testing.assert_allclose(out.command, scale_action(out.action, np.array(c.action_low), np.array(c.action_high)))
    assert clipped > 0


def test_exploring_is_reproducible_with_a_seeded_generator(sawyer_model: bytes) -> None:
    policy = OnnxPolicy.from_bytes(sawyer_model)
    obs = random_observations(policy.contract, 1)[0]
    a = [policy.act(obs, False, np.random.default_rng(3)).action for _ in range(2)]
    np.testing.assert_array_equal(a[0], a[1])
    assert not np.allclose(a[0], policy.act(obs, True).action)


def test_bad_observations_and_nan_models(sawyer_model: bytes) -> None:
    policy = OnnxPolicy.from_bytes(sawyer_model)
    with pytest.raises(ContractError, match="observation has 98 values but the policy's contract names 99"):
        policy.act(np.zeros(98), deterministic=True)
    obs = np.zeros(99)
    obs[5] = np.nan
    with pytest.raises(NonFiniteInput, match=r"index 5 \('t-0/ee_qy'\)"):
        policy.act(obs, deterministic=True)
    nan_policy = OnnxPolicy.from_bytes(model_bytes(SAWYER, nan=True))
    for deterministic in (True, False):
        with pytest.raises(NonFiniteOutput, match="model output '(action|mean)' is not finite"):
            nan_policy.act(np.zeros(99), deterministic=deterministic)
