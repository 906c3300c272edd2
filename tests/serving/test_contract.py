"""PolicyContract: metadata round trip, compatibility errors naming the field, units per label."""
from __future__ import annotations

import dataclasses
import functools
import json

import numpy as np
import pytest
from policy_models import SAWYER, SHADOW, task_contract

from morl_robot.envs.mo_env import make_sim_robot
from morl_robot.learning.config import MPOConfig
from morl_robot.serving.contract import (
    COMPATIBILITY_FIELDS,
    ContractError,
    PolicyContract,
    PreferenceError,
    PreferenceInputs,
    RewardMachineInputs,
    contract_for_env,
    contract_for_task,
    observation_unit,
    replace,
)
from morl_robot.tasks.registry import load_task


@pytest.mark.parametrize("task_name", [SAWYER, SHADOW])
def test_metadata_round_trip(task_name: str) -> None:
    c = task_contract(task_name)
    md = c.to_metadata()
    assert all(isinstance(v, str) for v in md.values())
    assert json.loads(md["action_low"]) == c.action_low  # JSON-encoded values
    assert PolicyContract.from_metadata(md) == c
    assert PolicyContract.from_metadata({**md, "producer_note": "ignored"}) == c


def test_sawyer_contract_describes_the_task() -> None:
    c = task_contract(SAWYER)
    assert (c.robot, c.task, c.control_mode, c.control_rate, c.frame_stack) == (
        "sawyer", SAWYER, "cartesian_velocity", 20.0, 3)
    assert c.action_labels == ["vx", "vy", "vz"] and c.action_units == ["m/s"] * 3
    assert len(c.observation_labels) == 99 and c.observation_labels[0] == "t-0/ee_x"
    units = dict(zip(c.observation_labels, c.observation_units))
    assert units["t-0/ee_x"] == "m" and units["t-2/ee_qw"] == "1"
    assert units["t-0/right_j0/position"] == "rad" and units["t-1/right_j6/velocity"] == "rad/s"
    assert units["t-0/wrench_fz"] == "N" and units["t-0/wrench_tx"] == "N·m"
    assert units["t-0/last_action_vx"] == "1"
    assert c.objective_names == ["task", "wrist_force"] and c.algorithm == "mo_mpo" and len(c.epsilons) == 2
    assert c.weights == [] and c.code_version.startswith("morl_robot ")
    assert all(lo < hi for lo, hi in zip(c.action_low, c.action_high))


def test_shadow_contract_units_and_scalarized_weights() -> None:
    task = load_task(SHADOW)
    robot = make_sim_robot(task)
    try:
        c = contract_for_task(task, robot, MPOConfig(algorithm="scalarized_mpo", scalarization_weights=[3.0, 1.0]),
                              policy_version=7, run_id="run-1")
        assert observation_unit("rh_ffdistal_touch", robot.spec) == "N"
        with pytest.raises(ContractError, match="no unit known for observation label 'mystery'"):
            observation_unit("mystery", robot.spec)
    finally:
        robot.close()
    assert len(c.observation_labels) == 63 and c.frame_stack == 1
    assert c.observation_units.count("rad") == 24 and c.observation_units.count("N") == 15
    assert len(c.action_labels) == 20 and c.action_units == ["rad"] * 20 and c.control_mode == "position"
    assert c.algorithm == "scalarized_mpo" and c.epsilons == [] and c.weights == [0.75, 0.25]
    assert (c.policy_version, c.run_id) == (7, "run-1")


CHANGES = {
    "robot": "shadow_hand", "task": "other_task", "control_mode": "velocity", "control_rate": 40.0,
    "frame_stack": 2, "objective_names": ["task", "force"], "action_mode": "delta",
    "preferences": PreferenceInputs(["task", "wrist_force"], [[0.01, 1.0], [0.01, 1.0]]),
}


@pytest.mark.parametrize("field", COMPATIBILITY_FIELDS)
def test_incompatibility_names_the_field(field: str) -> None:
    c = task_contract(SAWYER) if field != "reward_machine" else rm_contract()
    value = getattr(c, field)
    if field == "reward_machine":  # the same names and layout, another machine
        new = dataclasses.replace(value, digest="sha256:" + "0" * 64)
    elif field in CHANGES:
        new = CHANGES[field]
    elif field in ("action_low", "action_high"):
        new = [v * 0.5 for v in value]
    elif field == "observation_units":
        new = ["1"] + value[1:]
    else:  # label lists
        new = value[:-1] + ["renamed"]
    other = dataclasses.replace(c, **{field: new})
    with pytest.raises(ContractError, match=f"mismatch in '{field}'"):
        c.check_compatible(other)


def test_version_run_and_preferences_may_differ() -> None:
    c = task_contract(SAWYER)
    c.check_compatible(replace(c, policy_version=99, run_id="another", epsilons=[0.01, 0.5], code_version="x",
                               observation_normalizer="running"))


def test_list_mismatch_reports_sizes_and_first_difference() -> None:
    c = task_contract(SAWYER)
    other = dataclasses.replace(c, observation_labels=c.observation_labels[:-1],
                                observation_units=c.observation_units[:-1])
    with pytest.raises(ContractError, match=r"99 entries .* 98 entries .*index 98: 't-2/hole_offset_z' vs '\(none\)'"):
        c.check_compatible(other)


@pytest.mark.parametrize("key,value,message", [
    ("task", None, "lacks contract field 'task'"),
    ("action_low", "[1, 2", "'action_low' is not valid JSON"),
    ("frame_stack", '"3"', "'frame_stack' must be int"),
    ("observation_units", '["m"]', "'observation_units' has 1 entries but 'observation_labels' has 99"),
    ("algorithm", '"ppo"', "'algorithm' is 'ppo'"),
    ("contract_format", "9", "contract_format '9' is not supported"),
])
def test_bad_metadata_names_the_field(key: str, value: str | None, message: str) -> None:
    md = task_contract(SAWYER).to_metadata()
    if value is None:
        del md[key]
    else:
        md[key] = value
    with pytest.raises(ContractError, match=message):
        PolicyContract.from_metadata(md)


def test_invalid_bounds_are_rejected() -> None:
    c = task_contract(SAWYER)
    with pytest.raises(ContractError, match=r"index 1 \('vy'\)"):
        replace(c, action_low=[0.0, 1.0, 0.0], action_high=[0.1, 0.5, 0.1])


# --- the preference input of an ε-conditioned policy ----------------------------------------------
RANGES = [[0.01, 1.0], [0.001, 0.1]]


def conditioned(c: PolicyContract | None = None, ranges=RANGES) -> PolicyContract:
    c = c or task_contract(SAWYER)
    return replace(c, preferences=PreferenceInputs(list(c.objective_names), [list(r) for r in ranges]))


def test_conditioned_contract_round_trips_and_unconditioned_metadata_is_unchanged() -> None:
    plain = task_contract(SAWYER)
    assert "preferences" not in plain.to_metadata()  # the keys models had before conditioning existed
    c = conditioned()
    md = c.to_metadata()
    assert json.loads(md["preferences"]) == {"names": ["task", "wrist_force"], "ranges": RANGES}
    back = PolicyContract.from_metadata(md)
    assert back == c and back.preferences.dim == 2
    assert "+ 2 preferences" in back.summary()


def test_contract_for_task_lists_the_learner_preference_box() -> None:
    from morl_robot.learning.config import config_from_dict

    task = load_task(SAWYER)
    robot = make_sim_robot(task)
    try:
        c = contract_for_task(task, robot, config_from_dict({"preferences": {"ranges": RANGES}}))
    finally:
        robot.close()
    assert c.preferences == PreferenceInputs(["task", "wrist_force"], RANGES)


@pytest.mark.parametrize("prefs,message", [
    (PreferenceInputs(["task"], [[0.1, 1.0]]), r"names \['task'\] but the objectives are \['task', 'wrist_force'\]"),
    (PreferenceInputs(["task", "wrist_force"], [[0.1, 1.0]]), "1 ranges for 2 objectives"),
    (PreferenceInputs(["task", "wrist_force"], [[0.1, 1.0], [0.0, 1.0]]), "range of 'wrist_force' must satisfy 0 < low"),
    (PreferenceInputs(["task", "wrist_force"], [[0.5, 0.1], [0.1, 1.0]]), "range of 'task' must satisfy 0 < low <= high"),
    (PreferenceInputs(["task", "wrist_force"], [[0.1, 1.0], [0.1]]), r"range of 'wrist_force' must be \[low, high\]"),
    (PreferenceInputs(["wrist_force", "task"], [[0.1, 1.0], [0.1, 1.0]]), "same order"),
])
def test_invalid_preference_inputs_are_refused(prefs: PreferenceInputs, message: str) -> None:
    with pytest.raises(ContractError, match=message):
        replace(task_contract(SAWYER), preferences=prefs)


@pytest.mark.parametrize("value,message", [
    ('{"names": ["task", "wrist_force"]}', "must be null or"),
    ('{"names": ["task", "wrist_force"], "ranges": [[0.1, "x"], [0.1, 1]]}', "must be null or"),
    ('{"names": ["task", "wrist_force"], "ranges": [[0.1, 1], [-1, 1]]}', "range of 'wrist_force'"),
])
def test_bad_preference_metadata_names_the_field(value: str, message: str) -> None:
    md = conditioned().to_metadata()
    md["preferences"] = value
    with pytest.raises(ContractError, match=message):
        PolicyContract.from_metadata(md)


def test_conditioned_and_unconditioned_models_cannot_replace_each_other() -> None:
    plain, c = task_contract(SAWYER), conditioned()
    with pytest.raises(ContractError, match="mismatch in 'preferences': running model has none"):
        plain.check_compatible(c)
    with pytest.raises(ContractError, match="mismatch in 'preferences'.*new model has none"):
        c.check_compatible(plain)
    with pytest.raises(ContractError, match="mismatch in 'preferences'"):
        c.check_compatible(conditioned(ranges=[[0.01, 1.0], [0.001, 0.2]]))
    c.check_compatible(conditioned())


def test_preference_check_names_the_objective_and_range() -> None:
    p = conditioned().preferences
    np.testing.assert_allclose(p.centre, [0.1, 0.01])
    np.testing.assert_array_equal(p.check([0.5, 0.05]), [0.5, 0.05])
    with pytest.raises(PreferenceError, match=r"ε for objective 'wrist_force' is 0.5, outside its range \[0.001, 0.1\]"):
        p.check([0.5, 0.5])
    with pytest.raises(PreferenceError, match=r"has 3 values but the policy takes 2, one per objective \(task, wrist_force\)"):
        p.check([0.1, 0.01, 0.1])
    with pytest.raises(PreferenceError, match="'task' is nan"):
        p.check([float("nan"), 0.01])


def test_preference_features_match_the_learner_preference_space() -> None:
    from morl_robot.learning.preferences import PreferenceSpace

    ranges = [[0.01, 1.0], [0.05, 0.05], [0.001, 0.1]]
    mine = PreferenceInputs(["a", "b", "c"], ranges)
    space = PreferenceSpace(ranges, ["a", "b", "c"])
    eps = space.sample(50, np.random.default_rng(0))
    np.testing.assert_allclose(mine.features(eps), space.features(eps), atol=1e-6)
    np.testing.assert_allclose(mine.centre, space.centre)
    assert mine.to_dict() == space.to_dict()


# --- the reward machine of a reward-machine task's policy ---------------------------------------
@functools.lru_cache(maxsize=1)
def _rm_contract() -> PolicyContract:
    from morl_robot.envs.registration import make_rm_task_env

    env = make_rm_task_env("sawyer/peg_touch_then_insert")
    try:
        return contract_for_env(env, None, policy_version=3, run_id="rm")
    finally:
        env.close()


def rm_contract() -> PolicyContract:
    return dataclasses.replace(_rm_contract())


def test_reward_machine_contract_round_trips_and_other_metadata_is_unchanged() -> None:
    assert "reward_machine" not in task_contract(SAWYER).to_metadata()  # the keys models had before
    c = rm_contract()
    rm = c.reward_machine
    assert isinstance(rm, RewardMachineInputs) and rm.spec == "sawyer/peg_touch_then_insert"
    assert rm.machines == ["sawyer/touch_then_insert", "sawyer/force_budget"] and rm.labelling == "sawyer_peg_in_hole"
    assert c.objective_names == ["task", "wrist_force", "touch_then_insert", "force_budget"]
    assert c.observation_labels[-12:] == rm.states == c.machine_state_labels and c.observation_units[-1] == "1"
    md = c.to_metadata()
    assert json.loads(md["reward_machine"])["digest"] == rm.digest
    back = PolicyContract.from_metadata(md)
    assert back == c and "reward machine sawyer/peg_touch_then_insert" in back.summary()


def test_a_contract_written_before_the_field_loads_and_stays_compatible() -> None:
    c = rm_contract()
    md = c.to_metadata()
    del md["reward_machine"]
    old = PolicyContract.from_metadata(md)
    assert old.reward_machine is None and len(old.machine_state_labels) == 12  # its one-hot, unnamed
    old.check_compatible(c)  # the same labels: a learner resumed from an old checkpoint keeps going
    c.check_compatible(old)


@pytest.mark.parametrize("change, message", [
    ({"digest": "md5:abc"}, "'digest' must be 'sha256:' and 64 hex digits"),
    ({"spec": ""}, "'spec' is empty"),
    ({"machines": ["sawyer/touch_then_insert"]}, "one reward machine per MORM objective"),
    ({"states": ["approach+clean"] * 12}, "'states' must be the one-hot's observation labels"),
    ({"states": ["rm_state/x"] * 12}, "the observation labels must end with its 12 product states"),
    ({"objectives": ["force_budget", "touch_then_insert"]}, "must be the task objectives, then the MORM objectives"),
    ({"keep_task_rewards": False}, "must be the MORM objectives"),
])
def test_invalid_reward_machine_inputs_name_the_entry(change: dict, message: str) -> None:
    c = rm_contract()
    with pytest.raises(ContractError, match=f"contract field 'reward_machine'.*{message}"):
        replace(c, reward_machine=dataclasses.replace(c.reward_machine, **change))


@pytest.mark.parametrize("value, message", [
    ('{"spec": "x"}', "must be null or an object with keys spec, labelling"),
    ("[1]", "must be null or an object"),
])
def test_bad_reward_machine_metadata_names_the_field(value: str, message: str) -> None:
    md = rm_contract().to_metadata()
    with pytest.raises(ContractError, match=f"contract field 'reward_machine' {message}"):
        PolicyContract.from_metadata({**md, "reward_machine": value})
    rm = json.loads(md["reward_machine"])
    with pytest.raises(ContractError, match="'keep_task_rewards' must be true or false"):
        PolicyContract.from_metadata({**md, "reward_machine": json.dumps({**rm, "keep_task_rewards": 1})})
