"""config/safety/*.yaml: the shipped files load and match the robots; bad files name the key."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml

from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.resources import config_path
from morl_robot.safety.config import load_safety_config, to_si
from morl_robot.safety.monitor import build_monitor


@pytest.mark.parametrize("robot", ["sawyer", "shadow_hand"])
def test_shipped_configs_build_on_the_real_robot_models(robot):
    m = build_monitor(robot)
    assert m.estopped  # starts in e-stop
    rows = m.describe_rules()
    assert rows and all(math.isfinite(r.threshold) for r in rows)
    # joint limits come from the robot model, not from the YAML: hard position limit of the first
    # joint = its MJCF range widened by the YAML's tolerance
    j0 = m.spec.joints[0]
    hard = {r.key: r.threshold for r in rows if r.rule == "joints.position" and r.level == "hard"}
    cfg = m.config.joints.position
    assert hard[f"{j0.name}>="] == pytest.approx(j0.upper + to_si(cfg.hard_tolerance, cfg.unit, ("angle",)))


def test_sawyer_values_are_the_documented_ones():
    rows = {(r.rule, r.key, r.level): r for r in build_monitor("sawyer").describe_rules()}
    assert rows[("wrench.force_norm", "norm", "contact")].threshold == 20.0
    assert rows[("wrench.force_norm", "norm", "collision")].threshold == 40.0
    assert rows[("wrench.force_norm", "norm", "collision/accelerating")].threshold == 45.0
    assert rows[("joints.velocity", "right_j0", "hard")].threshold == pytest.approx(1.2 * 1.74)  # URDF limit
    assert rows[("joints.effort", "right_j4", "hard")].threshold == pytest.approx(9.0)  # MJCF actuator limit
    assert rows[("stale.wrench", "wrench", "deadline")].threshold == 0.25


def test_units_are_converted(tmp_path):
    data = _data("sawyer")
    data["wrench"]["force_norm"] = {"contact": 0.02, "collision": 0.04, "unit": "kN"}
    data["watchdogs"]["wrench"] = {"value": 250, "unit": "ms"}
    data["joints"]["position"]["unit"] = "deg"
    data["joints"]["position"]["soft_margin"] = 3.0
    data["joints"]["position"]["hard_tolerance"] = 0.5
    m = build_monitor(_write(tmp_path, data))
    rows = {(r.rule, r.key, r.level): r.threshold for r in m.describe_rules()}
    assert rows[("wrench.force_norm", "norm", "collision")] == pytest.approx(40.0)
    assert rows[("stale.wrench", "wrench", "deadline")] == pytest.approx(0.25)
    j0 = m.spec.joints[0]
    assert rows[("joints.position", "right_j0>=", "soft")] == pytest.approx(j0.upper - 3.0 * 3.141592653589793 / 180)


def _data(robot: str) -> dict:
    return yaml.safe_load(Path(config_path(f"safety/{robot}.yaml")).read_text())


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "safety.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def _mutate(path: str, value) -> dict:
    data = copy.deepcopy(_data("sawyer"))
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    node[last] = value
    return data


@pytest.mark.parametrize("path, value, key, words", [
    ("wrench.force_norm.unit", "lbf", "wrench.force_norm.unit", "unknown unit"),
    ("wrench.force_norm.contact", 50.0, "wrench.force_norm.contact", "exceeds the collision level"),
    ("wrench.force_norm.collision", -1.0, "wrench.force_norm.collision", "positive"),
    ("wrench.force_axis.collision", [30.0, 30.0], "wrench.force_axis.collision", "3 values"),
    ("wrench.force_axis.contact", [15.0, 45.0, 20.0], "wrench.force_axis.contact[1]", "exceeds"),
    ("wrench.force_norm.on_collision", "warn", "wrench.force_norm.on_collision", "milder"),
    ("wrench.force_norm.on_contact", "stop", "wrench.force_norm.on_contact", "allowed values"),
    ("wrench.torque_norm.unit", "N", "wrench.torque_norm.unit", "unknown unit"),
    ("wrench.frocе_norm", {"contact": 1.0, "unit": "N"}, "wrench.frocе_norm", "unknown key"),
    ("joints.velocity.soft", 1.5, "joints.velocity.soft", "outside the hard limit"),
    ("joints.velocity.unit", "rad/s", "joints.velocity.unit", "unknown unit"),
    ("joints.position.soft_margin", -0.1, "joints.position.soft_margin", "non-negative"),
    ("joints.effort.hard", 0.0, "joints.effort.hard", "positive"),
    ("workspace.lower", [0.35, 0.5, -0.17], "workspace.lower[1]", "below upper"),
    ("workspace.margin", 0.5, "workspace.margin", "no room"),
    ("watchdogs.wrench", {"value": 0.25, "unit": "Hz"}, "watchdogs.wrench.unit", "unknown unit"),
    ("watchdogs.joint_states", {"value": 0.0, "unit": "s"}, "watchdogs.joint_states.value", "positive"),
    ("command.period", {"value": 0.05}, "command.period.unit", "missing required key"),
    ("command.slow_scale", {"value": 2.0, "unit": "fraction"}, "command.slow_scale.value", "within [0, 1]"),
    ("command.linear_acceleration", {"value": 4.0, "unit": "m/s"}, "command.linear_acceleration.unit",
     "unknown unit"),
    ("tactile", {"default": {"contact": 1.0, "unit": "N"}}, "tactile", "no tactile sensors"),
    ("workspace.site", "no_such_site", "workspace.site", "has no site"),
    ("robot", "ur5", "robot", "unknown robot"),
])
def test_bad_yaml_names_the_file_and_the_key(tmp_path, path, value, key, words):
    bad = _write(tmp_path, _mutate(path, value))
    with pytest.raises(ConfigError) as err:
        build_monitor(bad)
    msg = str(err.value)
    assert str(bad) in msg and f"'{key}'" in msg and words in msg, msg


def test_unknown_tactile_sensor_is_named(tmp_path):
    data = _data("shadow_hand")
    data["tactile"]["sensors"] = {"rh_ffdistal_tuoch": {"contact": 5.0, "unit": "N"}}
    with pytest.raises(ConfigError, match=r"tactile\.sensors\.rh_ffdistal_tuoch.*unknown touch sensor"):
        build_monitor(_write(tmp_path, data))


def test_unknown_robot_name_lists_the_known_configs():
    with pytest.raises(UnknownNameError, match="sawyer, shadow_hand"):
        load_safety_config("ur5")
