"""One resolver for every config kind (``resources.resolve_config``): a bare name is
``config/<kind>/<name>.yaml``, a path is a path, and a wrong reference is an error naming the kind,
the reference and the available names.  And every YAML kind refuses an unknown key, naming the
file and the key."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.resources import CONFIG_KINDS, config_names, config_path, resolve_config


@pytest.mark.parametrize("kind", sorted(CONFIG_KINDS))
def test_every_shipped_name_resolves_to_its_file(kind):
    names = config_names(kind)
    assert names, kind
    for name in names:
        assert resolve_config(kind, name) == config_path(kind) / f"{name}.yaml"


def test_a_kind_lists_no_files_of_a_nested_kind():
    assert "labels/sawyer_peg_in_hole" not in config_names("reward_machines")
    assert "sawyer/force_budget" in config_names("reward_machines")
    assert "sawyer_peg_in_hole" in config_names("reward_machines/labels")


def test_paths_are_paths(tmp_path, monkeypatch):
    own = tmp_path / "mine.yaml"
    own.write_text("name: x\n")
    assert resolve_config("robots", str(own)) == own  # absolute text
    assert resolve_config("robots", own) == own  # a Path object
    monkeypatch.chdir(tmp_path)
    assert resolve_config("robots", "mine.yaml") == Path("mine.yaml")  # relative, found here
    # a relative path that is not here names a shipped file under config/ (as the CLI documents)
    assert resolve_config("learner", "learner/sawyer_front_demos.yaml") == config_path("learner/sawyer_front_demos.yaml")


def test_unknown_name_names_the_kind_and_lists_the_available_names():
    with pytest.raises(UnknownNameError) as err:
        resolve_config("safety", "sawyr")
    assert "unknown safety config 'sawyr'; available: sawyer, shadow_hand" in str(err.value)
    with pytest.raises(UnknownNameError) as err:
        resolve_config("learner", "nope")
    names = config_names("learner")  # every shipped learner YAML, in order
    assert {"conditioned", "demo_demos", "mo_mpo", "archive/demo"} <= set(names) and list(names) == sorted(names)
    assert f"unknown learner config 'nope'; available: {', '.join(names)} (config/learner/<name>.yaml)" in str(err.value)
    with pytest.raises(UnknownNameError, match=r"unknown reward machine 'sawyer/nope'; available: button_world/abb_cycle"):
        resolve_config("reward_machines", "sawyer/nope")
    with pytest.raises(UnknownNameError, match="no session given; available: demo, deploy, safety_test, shadow_orient, shadow_touch, shadow_turn, train"):
        resolve_config("sessions", "")


def test_missing_file_names_the_kind_and_where_it_looked(tmp_path):
    missing = tmp_path / "gone.yaml"
    with pytest.raises(ConfigError, match=f"task file '{missing}' not found \\(looked in: {missing}\\)"):
        resolve_config("tasks", str(missing))
    with pytest.raises(ConfigError, match=r"robot file 'nowhere/x.yaml' not found \(looked in: nowhere/x.yaml, "):
        resolve_config("robots", "nowhere/x.yaml")


def test_an_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown config kind 'robot'; kinds: robots, tasks"):
        resolve_config("robot", "sawyer")


def test_the_loaders_share_the_resolver_contract(tmp_path):
    from morl_robot.learning.config import load_learner_config
    from morl_robot.reward_machines.labelling import load_labelling
    from morl_robot.reward_machines.machine import load_machine
    from morl_robot.robots.config import load_robot_config
    from morl_robot.safety.config import load_safety_config
    from morl_robot.session.config import load_session_config
    from morl_robot.tasks.registry import load_task

    loaders = {"robots": load_robot_config, "learner": load_learner_config, "sessions": load_session_config,
               "safety": load_safety_config, "reward_machines": load_machine,
               "reward_machines/labels": load_labelling, "tasks": lambda ref: load_task("shadow_touch", ref)}
    for kind, load in loaders.items():
        with pytest.raises(UnknownNameError, match=f"unknown {CONFIG_KINDS[kind]} 'no_such'; available: "):
            load("no_such")
        with pytest.raises(ConfigError, match="not found"):
            load(str(tmp_path / "no_such.yaml"))


# --- unknown keys: every YAML kind ------------------------------------------------------------

def _with_unknown_key(tmp_path: Path, shipped: Path, where: tuple[str, ...] = ()) -> Path:
    data = yaml.safe_load(shipped.read_text())
    section = data
    for key in where:
        section = section[key]
    section["not_a_key"] = 1
    path = tmp_path / shipped.name
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def _load_rm_task(path):
    from morl_robot.reward_machines.env import load_rm_task

    return load_rm_task(path)


def _loader(kind: str):
    from morl_robot.learning.config import load_learner_config
    from morl_robot.reward_machines.labelling import load_labelling
    from morl_robot.reward_machines.machine import load_machine
    from morl_robot.robots.config import load_robot_config
    from morl_robot.safety.config import load_safety_config
    from morl_robot.session.config import load_session_config
    from morl_robot.tasks.registry import load_task

    return {"robots": load_robot_config, "learner": load_learner_config, "sessions": load_session_config,
            "safety": load_safety_config, "reward_machines": load_machine, "rm_task": _load_rm_task,
            "reward_machines/labels": load_labelling, "tasks": lambda p: load_task("sawyer_peg_in_hole", p)}[kind]


@pytest.mark.parametrize("kind, name, where, key", [
    ("robots", "robots/sawyer.yaml", (), "not_a_key"),
    ("robots", "robots/sawyer.yaml", ("hardware",), "hardware.not_a_key"),
    ("tasks", "tasks/sawyer_peg_in_hole.yaml", (), "not_a_key"),
    ("learner", "learner/mo_mpo_cpu_small.yaml", (), "not_a_key"),
    ("learner", "learner/mo_mpo_cpu_small.yaml", ("replay",), "replay.not_a_key"),
    ("safety", "safety/sawyer.yaml", (), "not_a_key"),
    ("sessions", "sessions/train.yaml", (), "not_a_key"),
    ("sessions", "sessions/train.yaml", ("robot_node",), "robot_node.not_a_key"),
    ("reward_machines", "reward_machines/sawyer/force_budget.yaml", (), "not_a_key"),
    ("rm_task", "reward_machines/sawyer/peg_touch_then_insert.yaml", (), "not_a_key"),
    ("reward_machines/labels", "reward_machines/labels/sawyer_peg_in_hole.yaml", (), "not_a_key"),
])
def test_every_yaml_kind_refuses_an_unknown_key_naming_file_and_key(tmp_path, kind, name, where, key):
    path = _with_unknown_key(tmp_path, config_path(name), where)
    with pytest.raises(ConfigError) as err:
        _loader(kind)(str(path))
    assert f"{path}: key '{key}': unknown key; allowed keys: " in str(err.value)
