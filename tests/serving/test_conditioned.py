"""ε-conditioned policies served: export with a ``preference`` input, parity with the torch
PolicyActor under several ε, the runtime's preference checks, export from a conditioned run."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from policy_models import (
    RANGES,
    SAWYER,
    conditioned_contract,
    conditioned_learner,
    make_normalizer,
    make_policy,
    random_observations,
    task_contract,
    with_metadata,
)

from morl_robot.learning import MOMPOLearner
from morl_robot.learning.checkpoint import save_checkpoint
from morl_robot.learning.config import config_to_dict
from morl_robot.serving.contract import (
    PolicyContract,
    PreferenceError,
    PreferenceInputs,
    replace,
)
from morl_robot.serving.export import export_policy, export_run, reference_outputs
from morl_robot.serving.runtime import OnnxPolicy, PolicyLoadError, inspect_model

PREFS = [[0.01, 1.0], [1.0, 0.01], [0.1, 0.1], [0.03, 0.5], [0.9, 0.02]]


def tiny_learner(contract: PolicyContract, ranges=RANGES, seed: int = 0) -> MOMPOLearner:
    return conditioned_learner(contract, ranges, seed)


@pytest.fixture(scope="module")
def conditioned_model() -> tuple[bytes, MOMPOLearner, PolicyContract]:
    contract = conditioned_contract()
    learner = tiny_learner(contract)
    return export_policy(learner.policy, contract), learner, contract


def test_export_has_a_preference_input_and_lists_it_in_the_contract(conditioned_model) -> None:
    data, _, contract = conditioned_model
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["observation", "preference"]
    info = inspect_model(data)
    assert info.inputs["preference"][1] == 2
    assert info.contract.preferences == contract.preferences


def test_onnx_matches_the_torch_actor_under_several_preferences(conditioned_model) -> None:
    data, learner, contract = conditioned_model
    policy = OnnxPolicy.from_bytes(data)
    obs = random_observations(contract, 20, seed=5)
    low, high = np.array(contract.action_low), np.array(contract.action_high)
    means = []
    for eps in PREFS:
        actor = learner.actor().with_preference(np.array(eps))
        want = np.stack([actor(o) for o in obs]).astype(np.float64)
        got = np.stack([policy.act(o, deterministic=True, preference=np.array(eps)).action for o in obs])
        np.testing.assert_allclose(got, want, atol=1e-5)
        # the batch path (infer with [B, K] preferences) and the torch reference agree too
        _, mean, _ = policy.infer(obs.astype(np.float32), np.tile(np.float32(eps), (len(obs), 1)))
        np.testing.assert_allclose(np.clip(mean, -1, 1), want, atol=1e-5)
        ref = reference_outputs(learner.policy, contract, obs, preference=np.array(eps))
        np.testing.assert_allclose(ref["mean"], mean, atol=1e-5)
        command = np.stack([policy.act(o, deterministic=True, preference=np.array(eps)).command for o in obs])
        np.testing.assert_allclose(command, low + (want + 1) / 2 * (high - low), atol=1e-5)
        means.append(want)
    assert np.abs(means[0] - means[1]).max() > 1e-2  # the preference changes the action


def test_normalised_observation_then_features(conditioned_model) -> None:
    _, learner, contract = conditioned_model
    norm = make_normalizer(contract, seed=1)
    policy = OnnxPolicy.from_bytes(export_policy(learner.policy, contract, normalizer=norm))
    obs = random_observations(contract, 10, seed=2)
    for eps in PREFS[:3]:
        actor = learner.actor().with_preference(np.array(eps))
        want = np.stack([actor(o) for o in norm.normalize(obs)])
        got = np.stack([policy.act(o, deterministic=True, preference=np.array(eps)).action for o in obs])
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_fixed_objective_feature_is_zero() -> None:
    ranges = [[0.01, 1.0], [0.05, 0.05]]
    contract = conditioned_contract(ranges=ranges)
    learner = tiny_learner(contract, ranges)
    policy = OnnxPolicy.from_bytes(export_policy(learner.policy, contract))
    np.testing.assert_allclose(policy.preference, [0.1, 0.05])
    obs = random_observations(contract, 5, seed=3)
    for eps in ([0.01, 0.05], [0.5, 0.05]):
        actor = learner.actor().with_preference(np.array(eps))
        want = np.stack([actor(o) for o in obs])
        got = np.stack([policy.act(o, deterministic=True, preference=np.array(eps)).action for o in obs])
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_runtime_default_is_the_centre_and_preferences_are_checked(conditioned_model) -> None:
    data, learner, contract = conditioned_model
    policy = OnnxPolicy.from_bytes(data)
    assert policy.conditioned
    np.testing.assert_allclose(policy.preference, [0.1, 0.1])
    obs = random_observations(contract, 1, seed=7)[0]
    centre = learner.actor()(obs)  # PolicyActor's default is the centre too
    np.testing.assert_allclose(policy.act(obs, deterministic=True).action, centre, atol=1e-5)
    policy.set_preference([0.01, 1.0])
    np.testing.assert_allclose(policy.act(obs, deterministic=True).action,
                               learner.actor().with_preference(np.array([0.01, 1.0]))(obs), atol=1e-5)
    with pytest.raises(PreferenceError, match=r"ε for objective 'wrist_force' is 2.0, outside its range \[0.01, 1\]"):
        policy.set_preference([0.1, 2.0])
    with pytest.raises(PreferenceError, match=r"has 3 values but the policy takes 2, one per objective \(task, wrist_force\)"):
        policy.act(obs, deterministic=True, preference=np.array([0.1, 0.1, 0.1]))
    with pytest.raises(PreferenceError, match="'task' is 0.0"):
        policy.set_preference([0.0, 0.1])
    np.testing.assert_allclose(policy.preference, [0.01, 1.0])  # a refused preference changes nothing


def test_unconditioned_model_refuses_a_preference() -> None:
    contract = task_contract(SAWYER)
    policy = OnnxPolicy.from_bytes(export_policy(make_policy(contract), contract))
    assert not policy.conditioned and policy.preference is None
    obs = random_observations(contract, 1)[0]
    with pytest.raises(PreferenceError, match="not preference-conditioned"):
        policy.set_preference([0.1, 0.1])
    with pytest.raises(PreferenceError, match="not preference-conditioned"):
        policy.act(obs, deterministic=True, preference=np.array([0.1, 0.1]))


def test_contract_and_graph_must_agree_on_the_preference_input(conditioned_model) -> None:
    data, _, contract = conditioned_model
    plain_contract = task_contract(SAWYER)
    plain = export_policy(make_policy(plain_contract), plain_contract)
    model = onnx.load_from_string(plain)
    model.metadata_props.add(key="preferences", value=contract.to_metadata()["preferences"])
    claims_conditioned = model.SerializeToString()
    with pytest.raises(PolicyLoadError, match="preference-conditioned policy .* has the inputs 'observation'"):
        OnnxPolicy.from_bytes(claims_conditioned)
    model = onnx.load_from_string(data)
    for i, prop in enumerate(model.metadata_props):
        if prop.key == "preferences":
            del model.metadata_props[i]
            break
    with pytest.raises(PolicyLoadError, match="exactly one input 'observation'"):
        OnnxPolicy.from_bytes(model.SerializeToString())
    three = replace(conditioned_contract(), objective_names=["task", "wrist_force", "x"],
                    epsilons=[0.1, 0.1, 0.1], preferences=PreferenceInputs(["task", "wrist_force", "x"], RANGES + [[0.1, 1]]))
    with pytest.raises(PolicyLoadError, match="preference has width 2 but its contract names 3 preference inputs"):
        OnnxPolicy.from_bytes(with_metadata(data, **{k: v for k, v in three.to_metadata().items()
                                                     if k in ("objective_names", "epsilons", "preferences")}))


def test_unconditioned_policy_does_not_fit_a_conditioned_contract() -> None:
    contract = conditioned_contract()
    with pytest.raises(Exception, match=r"does not accept inputs of width 101 \(99 observation labels \+ 2 preference"):
        export_policy(make_policy(task_contract(SAWYER)), contract)


def test_export_run_of_a_conditioned_checkpoint(tmp_path) -> None:
    contract = task_contract(SAWYER)
    learner = tiny_learner(conditioned_contract(), seed=4)
    norm = make_normalizer(contract, seed=2)
    payload = {"learner": learner.state_dict(), "config": config_to_dict(learner.config),
               "contract": replace(contract, run_id="cond").to_metadata(),  # a contract without the box: from meta
               "normalizer": norm.state_dict(), "counters": {"policy_version": 7}}
    save_checkpoint(tmp_path / "checkpoints", 100, payload)
    written = export_run(tmp_path, tmp_path / "policy.onnx")
    assert written.preferences == PreferenceInputs(["task", "wrist_force"], RANGES) and written.policy_version == 7
    policy = OnnxPolicy.from_file(tmp_path / "policy.onnx")
    obs = random_observations(contract, 8, seed=9)
    for eps in PREFS[:3]:
        want = np.stack([learner.actor().with_preference(np.array(eps))(o) for o in norm.normalize(obs)])
        got = np.stack([policy.act(o, deterministic=True, preference=np.array(eps)).action for o in obs])
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_inspect_shows_the_preference_input(conditioned_model, tmp_path, capsys) -> None:
    import json

    from morl_robot.cli import main

    data, _, _ = conditioned_model
    (tmp_path / "c.onnx").write_bytes(data)
    assert main(["inspect", str(tmp_path / "c.onnx")]) == 0
    out = capsys.readouterr().out
    assert "preference   task ε in [0.01, 1], wrist_force ε in [0.01, 1] (input 'preference'; default task=0.1" in out
    assert main(["inspect", str(tmp_path / "c.onnx"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["contract"]["preferences"] == {"names": ["task", "wrist_force"], "ranges": RANGES}
    assert info["inputs"]["preference"] == ["batch", 2]
