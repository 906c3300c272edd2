"""Training recipes (issue 34): each task YAML names the learner profile and session that learn it
(:mod:`morl_robot.tasks.recipes`), learner profiles ``extends:`` their parent and state only what
they change (:func:`morl_robot.configuration.load_layers`), and ``morl-robot tasks --recipes``
lists each task's profiles."""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from morl_robot.cli import main
from morl_robot.configuration import load_yaml
from morl_robot.errors import ConfigError
from morl_robot.resources import config_names, config_path, resolve_config

ROOT = Path(__file__).resolve().parents[1]
#: the commit before the profiles were rewritten with ``extends:`` (every profile a full copy)
BEFORE = "886cbe5"
#: profiles moved under config/learner/archive/ since (old name -> new name)
MOVED = {"demo": "archive/demo"}
TASKS = ("sawyer_peg_in_hole", "shadow_touch", "shadow_turn", "shadow_orient")


def _profiles_before() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return []
    try:
        out = subprocess.run(["git", "ls-tree", "--name-only", BEFORE, "config/learner/"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
    except subprocess.CalledProcessError:
        return []
    return [Path(line).stem for line in out.split()]


@pytest.mark.parametrize("name", _profiles_before() or [pytest.param("none", marks=pytest.mark.skip("no git history"))])
def test_every_rewritten_profile_loads_to_the_same_config_as_before(tmp_path, name):
    from morl_robot.learning.config import load_learner_config

    old = tmp_path / f"{name}.yaml"
    old.write_text(subprocess.run(["git", "show", f"{BEFORE}:config/learner/{name}.yaml"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout)
    assert load_learner_config(MOVED.get(name, name)) == load_learner_config(old)


def _layer(name: str) -> dict:
    return load_yaml(resolve_config("learner", name))


def _leaves(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("name", config_names("learner"))
def test_no_profile_is_a_copy_a_child_states_only_what_it_changes(name):
    from morl_robot.configuration import load_layers
    from morl_robot.learning.config import LEARNER_METADATA, MPOConfig

    own = _layer(name)
    assert own.get("about"), f"{name}: say what the profile is for (about:)"
    if name == "mo_mpo":  # the root: the paper's reference values, stated in full
        assert "extends" not in own
        return
    parent = own["extends"]
    inherited = _leaves(load_layers(MPOConfig, resolve_config("learner", parent), "learner", LEARNER_METADATA))
    mine = _leaves({k: v for k, v in own.items() if k not in ("extends", *LEARNER_METADATA)})
    assert mine, f"{name} changes nothing of {parent}"
    same = [k for k, v in mine.items() if k in inherited and inherited[k] == v]
    assert not same, f"{name} restates {parent}'s values: {same}"


def test_no_profile_cites_a_file_outside_the_repository():
    for path in config_path("learner").rglob("*.yaml"):
        text = path.read_text()
        assert "shared/papers" not in text and "NOTES.md §" not in text, path
        for cited in [w.strip("(),.:;`") for w in text.split() if w.strip("(),.:;`").startswith("results/")]:
            base = cited.split("{")[0]
            assert (ROOT / base).exists() or list(ROOT.glob(base + "*")), f"{path.name} cites {cited}"


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_extends_chains_merge_deeply_and_about_is_not_a_setting(tmp_path):
    from morl_robot.learning.config import load_learner_config

    _write(tmp_path / "base.yaml", {"extends": "demo_demos", "about": "mine", "replay": {"samples_per_insert": 8.0}})
    child = _write(tmp_path / "child.yaml", {"extends": "base", "training": {"demonstrations": {"episodes": 7}}})
    cfg = load_learner_config(child)
    parent = load_learner_config("demo_demos")
    assert cfg.replay.samples_per_insert == 8.0 and cfg.replay.capacity == parent.replay.capacity
    assert cfg.training.demonstrations.episodes == 7
    assert cfg.training.demonstrations.pretrain_lr == parent.training.demonstrations.pretrain_lr == 1e-3
    assert load_learner_config("archive/demo").replay.samples_per_insert == 32.0  # an archived profile by name


def test_extends_errors_name_the_file_and_key(tmp_path):
    from morl_robot.learning.config import load_learner_config

    missing = _write(tmp_path / "missing.yaml", {"extends": "no_such_profile"})
    with pytest.raises(ConfigError, match=rf"{missing}: key 'extends': unknown learner config 'no_such_profile'; "
                                          "available: "):
        load_learner_config(missing)
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    _write(a, {"extends": "b", "batch_size": 64})
    _write(b, {"extends": "a.yaml"})
    with pytest.raises(ConfigError, match=rf"{b}: key 'extends': 'a.yaml' makes a cycle: {a} -> {b} -> "):
        load_learner_config(a)
    bad_parent = _write(tmp_path / "bad_parent.yaml", {"extends": "demo_demos", "replay": {"samples_per_insrt": 4}})
    child = _write(tmp_path / "child.yaml", {"extends": "bad_parent", "batch_size": 64})
    with pytest.raises(ConfigError, match=rf"^{bad_parent}: key 'replay.samples_per_insrt': unknown key; allowed keys: "):
        load_learner_config(child)
    with pytest.raises(ConfigError, match=rf"{child}: key 'extends': expected the name or path"):
        load_learner_config(_write(child, {"extends": 3}))
    about_elsewhere = _write(tmp_path / "s.yaml", {**load_yaml(config_path("sessions/train.yaml")), "about": "x"})
    from morl_robot.session.config import load_session_config

    with pytest.raises(ConfigError, match="key 'about': unknown key"):  # metadata is the learner profiles' only
        load_session_config(about_elsewhere)


@pytest.mark.parametrize("task", TASKS)
def test_every_task_names_a_recipe_that_loads(task):
    from morl_robot.learning.config import load_learner_config
    from morl_robot.session.config import load_session_config
    from morl_robot.tasks.recipes import default_recipe, recipes
    from morl_robot.tasks.registry import load_task

    r = default_recipe(task)
    assert r.task == task and r.default and r.about and r.command == f"morl-robot train --task {task}"
    assert load_task(task).config.recipe.learner == r.learner
    load_learner_config(r.learner)
    session = load_session_config(r.session)
    assert session.task == task and session.learner_node.config == r.learner
    listed = recipes(task)
    assert listed[0] == r and all(x.task == task and x.about and x.command for x in listed)
    for x in listed[1:]:
        load_learner_config(x.learner)
        assert x.result and (ROOT / x.result).is_file(), x


def test_sawyer_recipe_is_the_demo_and_shadow_recipes_train_delta_actions():
    from morl_robot.session.config import load_session_config
    from morl_robot.tasks.recipes import default_recipe
    from morl_robot.tasks.registry import load_task

    r = default_recipe("sawyer_peg_in_hole")
    assert (r.learner, r.session) == ("demo_demos", "demo")
    assert load_session_config("demo").total_steps == 12000
    for task in TASKS[1:]:
        r = default_recipe(task)
        assert r.learner == "shadow_front_demos"
        s = load_session_config(r.session)
        assert s.robot_node.task_config == s.learner_node.task_config == f"delta/{task}"
        assert s.learner_node.observation_normalization is False  # as experiment shadow-front trains it
        assert load_task(task, s.robot_node.task_config).action_mode == "delta"


@pytest.mark.parametrize("task", TASKS[1:])
def test_a_delta_task_yaml_is_its_task_yaml_with_delta_actions(task):
    from morl_robot.tasks.registry import load_task

    base, delta = load_task(task).config, load_task(task, f"delta/{task}").config
    assert dataclasses.replace(base, recipe=None, action_mode="delta") == delta


def test_the_demonstrator_acts_in_the_task_action_mode():
    import numpy as np

    from morl_robot.acting.demonstrator import task_demonstrator
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv("shadow_touch", overrides={"action_mode": "delta"})
    try:
        obs, _ = env.reset(seed=0)
        delta, absolute = task_demonstrator("shadow_touch", "delta")(obs), task_demonstrator("shadow_touch")(obs)
    finally:
        env.close()
    # a delta action holds a motor at 0 (most motors); an absolute one is its target position
    assert np.mean(np.abs(delta) < 1e-6) > 0.5 and not np.allclose(delta, absolute)


def test_an_unknown_recipe_name_names_the_file_and_key(tmp_path):
    from morl_robot.tasks.recipes import task_recipe
    from morl_robot.tasks.registry import load_task

    data = load_yaml(config_path("tasks/sawyer_peg_in_hole.yaml"))
    bad = _write(tmp_path / "task.yaml", {**data, "recipe": {**data["recipe"], "learner": "demo_demoz"}})
    with pytest.raises(ConfigError, match=rf"{bad}: key 'recipe.learner': unknown learner config 'demo_demoz'"):
        load_task("sawyer_peg_in_hole", bad)
    with pytest.raises(ConfigError, match=rf"{bad}: key 'recipe.learner': unknown learner config 'demo_demoz'"):
        task_recipe(str(bad))
    _write(bad, {**data, "recipe": {**data["recipe"], "session": "dmo"}})
    with pytest.raises(ConfigError, match=rf"{bad}: key 'recipe.session': unknown session 'dmo'"):
        load_task("sawyer_peg_in_hole", bad)
    profile = {"learner": "sawyer_front_clone_lr", "goal": "front"}
    _write(bad, {**data, "recipe": {**data["recipe"], "profiles": [profile]}})
    with pytest.raises(ConfigError, match=rf"{bad}: key 'recipe.profiles\[0\].command': give the command"):
        task_recipe(str(bad))
    del data["recipe"]
    _write(bad, data)
    with pytest.raises(ConfigError, match=rf"{bad}: key 'recipe': missing"):
        task_recipe(str(bad))
    assert load_task("sawyer_peg_in_hole", bad).config.recipe is None  # a task YAML of one's own may name none


def test_tasks_recipes_lists_each_task_profiles_and_results(capsys):
    assert main(["tasks", "--recipes"]) == 0
    out = capsys.readouterr().out
    for task in TASKS:
        assert f"{task}:\n  learn (default)" in out
        assert f"train:    morl-robot train --task {task}\n" in out
    assert "demo_demos + session demo" in out and "results/sawyer_front_compliant/results.json" in out
    assert main(["tasks", "--recipes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["task"] for r in rows if r["default"]} == set(TASKS)
    assert {r["goal"] for r in rows} == {"learn", "front", "every-preference", "worst-case"}


@pytest.mark.parametrize("task", ["sawyer_peg_in_hole", "shadow_touch", "shadow_turn", "shadow_orient"])
def test_the_committed_recipe_results_agree_with_their_seeds_and_record_provenance(task):
    from morl_robot.evaluation.protocol import wilson_interval
    from morl_robot.tasks.recipes import default_recipe

    folder = ROOT / "results" / "recipes" / task
    summary = json.loads((folder / "results.json").read_text())
    recipe = default_recipe(task)
    assert recipe.result == f"results/recipes/{task}/results.json"
    assert summary["recipe"] == {"learner": recipe.learner, "session": recipe.session}
    prov = summary["provenance"]
    assert prov["command"].startswith(f"morl-robot train --task {task} --seed S --out ") and prov["commit"]
    assert prov["date"] and prov["machine"]["cpu_count"]
    total = success = 0
    for seed, row in summary["seeds"].items():
        episodes = json.loads((folder / f"seed{seed}" / "eval.json").read_text())["per_episode"]
        assert (folder / f"seed{seed}" / "policy.onnx").is_file()
        k = sum(e["success"] for e in episodes)
        assert (row["success"]["count"], row["success"]["episodes"]) == (k, len(episodes)) and len(episodes) >= 50
        assert row["success"]["ci95_wilson"] == pytest.approx(list(wilson_interval(k, len(episodes))))
        assert row["train"]["command"] == f"morl-robot train --task {task} --seed {seed} --out " + \
            row["train"]["run_dir"]  # no other flag: the recipe
        total, success = total + len(episodes), success + k
    assert (summary["pooled"]["success"]["count"], summary["pooled"]["success"]["episodes"]) == (success, total)


def test_the_orient_recipe_result_is_checked_against_its_random_references():
    folder = ROOT / "results" / "recipes" / "shadow_orient"
    check = json.loads((folder / "results.json").read_text())["orient_check"]
    bound = {k: max(json.loads((folder / f).read_text())["objectives"][k]["ci_high"]
                    for f in check["random_references"]) for k in ("touch", "lift", "orient")}
    assert check["random_upper_ci95"] == pytest.approx(bound)
    assert check["improves_all"] == all(check["mean_of_seeds"][k] > bound[k] for k in bound)
