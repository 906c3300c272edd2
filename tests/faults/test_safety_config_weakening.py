"""Fault (issue 33 item 7): a safety YAML could be weakened silently: a 1e9 N collision level, a
1e9 s heartbeat deadline, ``on_stale_sensor: warn``, a 100 m/s twist limit on a 0.2 m/s arm all
loaded without a word.  Now every setting weaker than the robot's own limits (or a bound where the
robot model states none, or the default stopping response) is a ConfigError naming the key, the
value, the limit and how to opt out; with ``opt_out: {<key>: reason}`` it loads, and the monitor
reports it (the node logs it at configure)."""
from __future__ import annotations

import time

import pytest
import yaml

from morl_robot.errors import ConfigError
from morl_robot.resources import config_path
from morl_robot.safety.monitor import build_monitor


def _config(tmp_path, robot: str, change, opt_out: dict | None = None):
    data = yaml.safe_load(config_path(f"safety/{robot}.yaml").read_text())
    change(data)
    if opt_out:
        data.setdefault("opt_out", {}).update(opt_out)
    path = tmp_path / f"{robot}_weakened.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def _set(*path_value):
    *keys, value = path_value

    def change(data):
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return change


# (robot, change, opt-out key, words of the value, words of the limit)
WEAKENINGS = [
    ("sawyer", _set("wrench", "force_norm", "collision", 1e9), "wrench.force_norm.collision", "1e+09 N", "140 N"),
    ("sawyer", _set("wrench", "torque_norm", "collision", 50.0), "wrench.torque_norm.collision", "50 N·m", "10 N·m"),
    ("sawyer", _set("wrench", "accelerating", "force_norm", "collision", 500.0),
     "wrench.accelerating.force_norm.collision", "500 N", "140 N"),
    ("sawyer", _set("wrench", "force_norm", "on_collision", "hold"), "wrench.force_norm.on_collision", "hold",
     "'estop'"),
    ("sawyer", _set("watchdogs", "heartbeat", {"value": 1e9, "unit": "s"}), "watchdogs.heartbeat", "1e+09 s", "1 s"),
    ("sawyer", _set("watchdogs", "heartbeat", None), "watchdogs.heartbeat", "not watched", "1 s"),
    ("sawyer", _set("watchdogs", "wrench", {"value": 5000, "unit": "ms"}), "watchdogs.wrench", "5000 ms", "1 s"),
    ("sawyer", _set("watchdogs", "on_stale_sensor", "warn"), "watchdogs.on_stale_sensor", "warn", "'estop'"),
    ("sawyer", _set("watchdogs", "on_stale_command", "clamp"), "watchdogs.on_stale_command", "clamp", "'hold'"),
    ("sawyer", _set("command", "linear_velocity", {"value": 100.0, "unit": "m/s"}), "command.linear_velocity",
     "100 m/s", "0.2 m/s"),
    ("sawyer", _set("command", "angular_velocity", {"value": 2.0, "unit": "rad/s"}), "command.angular_velocity",
     "2 rad/s", "0.5 rad/s"),
    ("sawyer", _set("command", "position_rate", {"value": 3.0, "unit": "fraction"}), "command.position_rate",
     "3 fraction", "1 fraction"),
    ("sawyer", _set("joints", "effort", "hard", 3.0), "joints.effort.hard", "3 fraction", "1 fraction"),
    ("sawyer", _set("joints", "position", "hard_tolerance", 0.5), "joints.position.hard_tolerance", "0.5 rad",
     "0.05 rad"),
    ("sawyer", _set("joints", "position", "on_hard", "clamp"), "joints.position.on_hard", "clamp", "'estop'"),
    ("sawyer", _set("workspace", "on_hard", "hold"), "workspace.on_hard", "hold", "'estop'"),
    ("shadow_hand", _set("tactile", "default", "collision", 1000.0), "tactile.default.collision", "1000 N", "140 N"),
    ("shadow_hand", _set("watchdogs", "tactile", {"value": 30, "unit": "s"}), "watchdogs.tactile", "30 s", "1 s"),
    ("shadow_hand", _set("command", "position_rate", {"value": 50.0, "unit": "rad/s"}), "command.position_rate",
     "50 rad/s", "rad/s (velocity limit of actuator"),
]
IDS = [f"{w[0]}:{w[2]}={w[3]}" for w in WEAKENINGS]


@pytest.mark.parametrize("robot, change, key, value, limit", WEAKENINGS, ids=IDS)
def test_a_weakened_setting_is_refused_naming_key_value_limit_and_the_opt_out(tmp_path, robot, change, key, value,
                                                                             limit):
    with pytest.raises(ConfigError) as info:
        build_monitor(_config(tmp_path, robot, change))
    text = str(info.value)
    assert f"key '{key}'" in text and value in text and limit in text and "opt_out" in text, text
    assert f"{key}: \"reason\"" in text, text  # how to opt out, for this key


@pytest.mark.parametrize("robot, change, key, value, limit", WEAKENINGS, ids=IDS)
def test_a_weakened_setting_with_an_opt_out_loads_and_is_reported_with_its_reason(tmp_path, robot, change, key,
                                                                                value, limit):
    why = f"bench rig without people: {key} relaxed for a test"
    m = build_monitor(_config(tmp_path, robot, change, {key: why}))
    reported = {w.key: w for w in m.weakened}
    assert reported[key].reason == why
    assert value in reported[key].describe() and limit in reported[key].describe()
    assert key not in m.opted_out  # (required rules left out are listed apart)


def test_an_opt_out_of_a_setting_that_is_not_weakened_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"opt_out.watchdogs.heartbeat.*names no weakened setting"):
        build_monitor(_config(tmp_path, "sawyer", lambda d: None, {"watchdogs.heartbeat": "why not"}))


def test_an_opt_out_key_outside_the_safety_sections_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"opt_out.brakes.force.*not a required rule nor a weakened setting"):
        build_monitor(_config(tmp_path, "sawyer", lambda d: None, {"brakes.force": "x"}))


def test_the_shipped_configs_weaken_only_what_they_say_why():
    for robot in ("sawyer", "shadow_hand"):
        m = build_monitor(robot)
        assert [w.key for w in m.weakened] == ["joints.velocity.hard"], robot
        assert all(len(w.reason) > 20 for w in m.weakened)
        assert m.opted_out == {}


@pytest.mark.ros
def test_the_monitor_node_logs_every_accepted_weakening_at_configure(ros_session, tmp_path):
    from morl_robot.session.processes import NodeSpec

    why = "bench rig without people: heartbeat relaxed"
    path = _config(tmp_path, "sawyer", _set("watchdogs", "heartbeat", {"value": 30, "unit": "s"}),
                   {"watchdogs.heartbeat": why})
    proc = ros_session.group.start(NodeSpec("safety_monitor", "safety_monitor", "/weak", {"config": str(path)}))
    deadline = time.monotonic() + 60
    while "thresholds from" not in proc.log_text() and proc.alive and time.monotonic() < deadline:
        time.sleep(0.2)
    log = proc.log_text()
    assert proc.alive, log
    lines = [ln for ln in log.splitlines() if "weakened on purpose" in ln]
    assert len(lines) == 2, log  # the test's heartbeat and the shipped joints.velocity.hard, once each
    assert any("watchdogs.heartbeat = 30 s" in ln and why in ln for ln in lines), log
    assert any("joints.velocity.hard = 1.2 fraction" in ln for ln in lines), log
