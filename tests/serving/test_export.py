"""ONNX export: onnx.checker passes, the graph agrees with the torch policy to 1e-5, the contract
is in the metadata, and a policy that does not fit its contract is refused."""
from __future__ import annotations

import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from policy_models import (
    SAWYER,
    SHADOW,
    make_normalizer,
    make_policy,
    random_observations,
    task_contract,
)

from morl_robot.serving.contract import ContractError, PolicyContract
from morl_robot.serving.export import export_policy
from morl_robot.tasks.base import scale_action

N = 10_000


@pytest.mark.parametrize("task_name", [SAWYER, SHADOW])
def test_onnx_matches_torch_on_10000_observations(task_name: str, tmp_path) -> None:
    contract = task_contract(task_name)
    policy = make_policy(contract, seed=3, hidden=(300, 200))  # the paper's policy size
    norm = make_normalizer(contract, seed=3)
    path = tmp_path / "policy.onnx"
    t0 = time.perf_counter()
    data = export_policy(policy, contract, path, normalizer=norm)
    print(f"\nexport {task_name}: {1e3 * (time.perf_counter() - t0):.1f} ms, {len(data) / 1e3:.0f} kB")
    assert path.read_bytes() == data
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["observation"]
    assert [o.name for o in model.graph.output] == ["action", "mean", "log_std"]
    assert PolicyContract.from_metadata({p.key: p.value for p in model.metadata_props}) == \
        PolicyContract(**{**contract.__dict__, "observation_normalizer": "running"})

    obs = random_observations(contract, N, seed=4)
    obs[:50] *= 100.0  # far outside the normaliser's range: the in-graph clip must agree too
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    action, mean, log_std = session.run(None, {"observation": obs.astype(np.float32)})  # one batch of 10 000
    with torch.no_grad():
        ref_mean, ref_std = policy(torch.as_tensor(norm.normalize(obs), dtype=torch.float32))
    ref_mean, ref_log_std = ref_mean.numpy(), torch.log(ref_std).numpy()
    ref_action = scale_action(ref_mean.astype(np.float64), np.array(contract.action_low), np.array(contract.action_high))
    assert action.shape == mean.shape == log_std.shape == (N, len(contract.action_labels))
    for name, got, want in (("mean", mean, ref_mean), ("log_std", log_std, ref_log_std), ("action", action, ref_action)):
        err = float(np.max(np.abs(got - want)))
        print(f"{task_name} {name}: max |onnx - torch| = {err:.2e}")
        assert err <= 1e-5, name
    assert np.ptp(ref_action, axis=0).min() > 1e-3  # the comparison is not between constants
    # single-row batches give the same numbers as the big batch (the batch dimension is dynamic)
    one = session.run(None, {"observation": obs[:1].astype(np.float32)})[0]
    np.testing.assert_allclose(one[0], action[0], atol=1e-6)


def test_export_without_normalizer_records_none() -> None:
    contract = task_contract(SAWYER)
    data = export_policy(make_policy(contract), contract)
    md = {p.key: p.value for p in onnx.load_from_string(data).metadata_props}
    assert PolicyContract.from_metadata(md).observation_normalizer == "none"


def test_export_leaves_the_training_policy_untouched() -> None:
    contract = task_contract(SAWYER)
    policy = make_policy(contract).train()
    before = [p.detach().clone() for p in policy.parameters()]
    export_policy(policy, contract)
    assert policy.training and all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))


def test_policy_that_does_not_fit_the_contract_is_refused() -> None:
    sawyer, shadow = task_contract(SAWYER), task_contract(SHADOW)
    with pytest.raises(ContractError, match="does not accept observations of width 63"):
        export_policy(make_policy(sawyer), shadow)
    wrong_actions = make_policy(PolicyContract(**{**sawyer.__dict__, "action_labels": ["vx", "vy"],
                                                  "action_units": ["m/s"] * 2, "action_low": [-1.0] * 2,
                                                  "action_high": [1.0] * 2}))
    with pytest.raises(ContractError, match=r"mean has shape \(2, 2\) .* 3 action labels"):
        export_policy(wrong_actions, sawyer)
    with pytest.raises(ContractError, match="normalizer has dim 63"):
        export_policy(make_policy(sawyer), sawyer, normalizer=make_normalizer(shadow))
