"""Labelling functions over the task's sensor features; the Sawyer reward-machine task and its command."""
import json

import numpy as np
import pytest

from morl_robot.cli import main
from morl_robot.configuration import from_mapping
from morl_robot.errors import ConfigError
from morl_robot.reward_machines.labelling import (
    FeatureLabeller,
    LabellingSpec,
    task_labeller,
)
from morl_robot.tasks.sawyer_peg_in_hole import TRANSITION_FEATURES


def _features(dx=0.0, dy=0.0, dz=0.05, f=(0.0, 0.0, 0.0), depth=0.03):
    return np.array([dx, dy, dz, *f, depth])


def test_sawyer_labels_from_features():
    lab = task_labeller("sawyer_peg_in_hole")
    names = TRANSITION_FEATURES
    assert lab.labels(_features(), names) == {"above_hole"}
    assert lab.labels(_features(dx=0.01), names) == frozenset()
    assert lab.labels(_features(dz=0.01, f=(0.0, 3.0, 0.0), dx=0.02), names) == {"touching_fixture"}
    assert lab.labels(_features(f=(12.0, 0.0, 10.0), dx=0.02), names) == {"touching_fixture", "force_over_limit"}
    assert lab.labels(_features(dz=-0.028, dx=0.001, f=(0.0, 0.0, 2.0)), names) == {"inserted", "touching_fixture"}
    assert lab.features(_features(f=(3.0, 4.0, 0.0)), names)["force_norm"] == pytest.approx(5.0)


def test_glob_features_and_unknown_feature_errors():
    spec = from_mapping(LabellingSpec, {"task": "t", "features": {"m": {"max": ["tactile_*"]}},
                                        "propositions": {"touch": [{"feature": "m", "op": ">", "value": 1.0}],
                                                         "far": [{"feature": "dist", "op": ">=", "value": 2.0}]}})
    lab = FeatureLabeller(spec, "lab.yaml")
    assert lab.labels(np.array([0.0, 2.0, 0.0, 5.0]), ["tactile_0", "tactile_1", "tactile_2", "dist"]) == {"touch", "far"}
    with pytest.raises(ConfigError, match=r"lab.yaml: key 'propositions.far\[0\].feature': no feature matches 'dist'"):
        lab.labels(np.array([0.0, 1.0]), ["tactile_0", "distance"])


def test_labelling_spec_validation_names_the_key():
    with pytest.raises(ConfigError, match=r"key 'features.x': give exactly one of"):
        from_mapping(LabellingSpec, {"task": "t", "features": {"x": {"norm": ["a"], "sum": ["b"]}},
                                     "propositions": {"p": [{"feature": "x", "op": ">", "value": 0}]}})
    with pytest.raises(ConfigError, match=r"allowed values: '>', '>=', '<', '<='"):
        from_mapping(LabellingSpec, {"task": "t", "propositions": {"p": [{"feature": "x", "op": "=", "value": 0}]}})


def test_rm_task_rejects_a_labelling_without_the_machines_propositions(tmp_path):
    from morl_robot.reward_machines.env import load_rm_task

    labels = tmp_path / "labels.yaml"
    labels.write_text("task: sawyer_peg_in_hole\npropositions:\n  touching_fixture: [{feature: force_x, op: '>', value: 1}]\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"task: sawyer_peg_in_hole\nlabelling: {labels}\nmachines: [sawyer/force_budget]\n")
    with pytest.raises(ConfigError, match=r"read proposition\(s\) \['force_over_limit'\] that the labelling function"):
        load_rm_task(spec)


def test_sawyer_rm_env_labels_the_simulated_robot():
    from morl_robot.envs.registration import make_rm_task_env

    env = make_rm_task_env()
    obs, _ = env.reset(seed=0)
    assert env.objective_names == ["task", "wrist_force", "touch_then_insert", "force_budget"]
    assert obs.shape == (env.observation_space.shape[0],)
    seen = set()
    for _ in range(160):  # drive the peg down onto the fixture at 20 mm/s (the compliant arm presses ~4 N)
        obs, r, term, trunc, info = env.step(np.array([0.0, 0.0, -0.1]))
        seen.add(info["rm_state_name"])
        assert r.shape == (4,)
        if term or trunc:
            break
    assert "(touched, clean)" in seen  # a light touch registered from the wrist F/T reading


def test_sawyer_rm_command_trains_with_crm_and_evaluates(tmp_path, capsys):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text("batch_size: 8\nnum_samples: 4\nsequence_length: 3\nnetworks: {policy_hidden: [16], critic_hidden: [16]}\n"
                   "replay: {capacity: 2000, samples_per_insert: 2.0, min_size_to_sample: 40, error_buffer: 64.0}\n"
                   "training: {eval_every: 0, eval_episodes: 1, checkpoint_every: 0, tensorboard: false}\n")
    out = tmp_path / "srm"
    assert main(["experiment", "sawyer-rm", "--out", str(out), "--steps", "120", "--eval-episodes", "2",
                 "--learner", str(cfg), "--no-progress"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["crm"] is True and res["budget"]["updates"] > 0 and res["budget"]["env_steps"] == 120
    assert set(res["evaluation"]["objectives"]) == {"task", "wrist_force", "touch_then_insert", "force_budget"}
    out_text = capsys.readouterr().out
    assert "return: touch_then_insert" in out_text and "scripted insertion controller (reference)" in out_text
    assert res["scripted_reference"]["episodes"] == 2 and res["scripted_reference"]["seeds"] == res["evaluation"]["seeds"]
    # the trained policy is exported with its reward machine in the contract, and the figures are the
    # ONNX policy's: `morl-robot evaluate OUT/policy.onnx` rebuilds the product and reproduces them
    from morl_robot.serving.runtime import OnnxPolicy

    assert res["policy"] == "policy.onnx"
    contract = OnnxPolicy.from_file(out / "policy.onnx").contract
    assert contract.reward_machine is not None and contract.reward_machine.spec == "sawyer/peg_touch_then_insert"
    assert contract.objective_names == res["objectives"] and contract.policy_version == 120
    assert main(["evaluate", str(out / "policy.onnx"), "--episodes", "2", "--seed", "10000", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["per_episode"] == res["evaluation"]["per_episode"]


def test_sawyer_rm_learns_from_demonstrations_with_the_baselines_update_budget(tmp_path, capsys):
    """``--config`` with ``training.demonstrations``: the scripted controller acts the first episode
    on the product observation (it reads the task part), the policy is cloned; ``--crm-updates same``."""
    from morl_robot.cli import main

    cfg = tmp_path / "tiny_demos.yaml"
    cfg.write_text("batch_size: 8\nnum_samples: 4\nsequence_length: 3\nnetworks: {policy_hidden: [16], critic_hidden: [16]}\n"
                   "replay: {capacity: 2000, samples_per_insert: 2.0, min_size_to_sample: 40, error_buffer: 64.0}\n"
                   "training: {eval_every: 0, eval_episodes: 1, checkpoint_every: 0, tensorboard: false,\n"
                   "           demonstrations: {episodes: 1, action_noise: 0.05, pretrain_updates: 5}}\n")
    out = tmp_path / "srm"
    assert main(["experiment", "sawyer-rm", "--out", str(out), "--steps", "200", "--eval-episodes", "1",
                 "--learner", str(cfg), "--crm-updates", "same", "--no-progress"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["demonstrations"] == 1 and res["crm"] is True and res["crm_scale_updates"] is False
    episodes = (out / "run" / "episodes.csv").read_text().splitlines()
    assert len(episodes) >= 2  # the demonstration episode (160 steps) was logged
    with pytest.raises(SystemExit) as exit_:  # argparse: an unknown choice
        main(["experiment", "sawyer-rm", "--out", str(tmp_path / "x"), "--crm-updates", "twice"])
    assert exit_.value.code == 2 and "--crm-updates" in capsys.readouterr().err


def test_the_contract_digest_follows_the_machines_content_not_their_files(tmp_path):
    """A policy's contract names its reward machine by spec and by a digest of its content: copies
    of the files (other names, no comments) give the same digest; a changed threshold in the
    labelling function or a changed reward does not."""
    import yaml

    from morl_robot.resources import config_path
    from morl_robot.reward_machines.env import machine_inputs

    shipped = machine_inputs("sawyer/peg_touch_then_insert")
    spec = yaml.safe_load(config_path("reward_machines/sawyer/peg_touch_then_insert.yaml").read_text())
    machines = []
    for name in spec["machines"]:
        copy = tmp_path / (name.replace("/", "_") + ".yaml")
        copy.write_text(yaml.safe_dump(yaml.safe_load(config_path(f"reward_machines/{name}.yaml").read_text())))
        machines.append(str(copy))
    labels = yaml.safe_load(config_path("reward_machines/labels/sawyer_peg_in_hole.yaml").read_text())
    (tmp_path / "labels.yaml").write_text(yaml.safe_dump(labels))
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({**spec, "machines": machines,
                                                        "labelling": str(tmp_path / "labels.yaml")}))
    copied = machine_inputs(tmp_path / "spec.yaml")
    assert copied.digest == shipped.digest and copied.states == shipped.states and copied.spec != shipped.spec
    labels["propositions"]["force_over_limit"][0]["value"] = 20.0
    (tmp_path / "labels.yaml").write_text(yaml.safe_dump(labels))
    assert machine_inputs(tmp_path / "spec.yaml").digest != shipped.digest
