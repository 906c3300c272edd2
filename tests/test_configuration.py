"""YAML → dataclass loading: bad input gives errors that name the file, the key and what is allowed."""
from dataclasses import dataclass, field
from typing import Literal

import pytest

from morl_robot.configuration import from_mapping, load_config, load_yaml
from morl_robot.errors import ConfigError
from morl_robot.robots.config import RobotConfig, load_robot_config
from morl_robot.tasks.registry import TASKS, load_task


@dataclass
class Inner:
    gain: float
    mode: Literal["a", "b"] = "a"


@dataclass
class Outer:
    name: str
    count: int = 1
    inner: Inner = field(default_factory=lambda: Inner(1.0))
    values: list[float] = field(default_factory=list)
    maybe: float | None = None


def test_valid_mapping_round_trips():
    cfg = from_mapping(Outer, {"name": "x", "count": 3, "inner": {"gain": 2, "mode": "b"}, "values": [1, 2.5]})
    assert cfg.count == 3 and cfg.inner.gain == 2.0 and cfg.inner.mode == "b" and cfg.values == [1.0, 2.5]


@pytest.mark.parametrize(
    "data, key, words",
    [
        ({"name": "x", "cuont": 3}, "cuont", "allowed keys"),
        ({"name": "x", "count": "3"}, "count", "integer"),
        ({"name": "x", "count": True}, "count", "integer"),
        ({"name": "x", "inner": {"gain": "high"}}, "inner.gain", "number"),
        ({"name": "x", "inner": {"gain": 1, "mode": "c"}}, "inner.mode", "allowed values"),
        ({"name": "x", "values": [1, "a"]}, "values[1]", "number"),
        ({"name": "x", "inner": {"gain": float("nan")}}, "inner.gain", "finite"),
        ({}, "name", "missing"),
    ],
)
def test_errors_name_the_key(data, key, words):
    with pytest.raises(ConfigError) as err:
        from_mapping(Outer, data, source="cfg.yaml")
    msg = str(err.value)
    assert "cfg.yaml" in msg and f"'{key}'" in msg and words in msg


def test_malformed_yaml_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncount: [1, 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: malformed YAML \(line \d+"):
        load_yaml(bad)


def test_top_level_must_be_mapping(tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(Outer, bad)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml: file not found"):
        load_yaml(tmp_path / "nope.yaml")


@pytest.mark.parametrize("robot", ["sawyer", "shadow_hand"])
def test_shipped_robot_configs_load(robot):
    cfg = load_robot_config(robot)
    assert isinstance(cfg, RobotConfig) and cfg.name == robot


@pytest.mark.parametrize("task", list(TASKS))
def test_shipped_task_configs_load(task):
    assert load_task(task).name == task


def test_wrong_typed_task_key(tmp_path):
    path = tmp_path / "peg.yaml"
    path.write_text("robot: sawyer\nscene: sawyer/peg_in_hole.xml\ncontrol_period: 0.05\nepisode_duration: 8\nforce_threshold: lots\n")
    with pytest.raises(ConfigError, match=r"peg.yaml: key 'force_threshold': expected a number"):
        load_task("sawyer_peg_in_hole", config_file=path)


def test_task_validate_names_key(tmp_path):
    path = tmp_path / "peg.yaml"
    path.write_text("robot: sawyer\nscene: sawyer/peg_in_hole.xml\ncontrol_period: 0.05\nepisode_duration: 8\naction_axes: [vx, vq]\n")
    with pytest.raises(ConfigError, match=r"peg.yaml: key 'action_axes\[1\]': got 'vq'; allowed values"):
        load_task("sawyer_peg_in_hole", config_file=path)


def test_unknown_task_lists_known():
    from morl_robot.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown task 'shadow_wave'; known tasks: sawyer_peg_in_hole"):
        load_task("shadow_wave")
