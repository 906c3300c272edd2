"""A session YAML's node sections are typed (``session/config.py``: one settings dataclass per
node): a typo or a wrong type in a node's settings is refused, naming the file and the key."""
from __future__ import annotations

import pytest
import yaml

from morl_robot.errors import ConfigError
from morl_robot.resources import config_path
from morl_robot.session.config import (
    LearnerNodeSettings,
    PolicyServerSettings,
    RobotNodeSettings,
    load_session_config,
    node_parameters,
)


def _session(tmp_path, node: str, **params):
    data = yaml.safe_load(config_path("sessions/train.yaml").read_text())
    data.setdefault(node, {}).update(params)
    path = tmp_path / "session.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("node, params, words", [
    ("robot_node", {"timng": "realtime"}, "key 'robot_node.timng': unknown key; allowed keys: autostart, backend, "),
    ("safety_monitor", {"watchdog": False}, "key 'safety_monitor.watchdog': unknown key; allowed keys: "),
    ("driver_emulator", {"latncy": 0.1}, "key 'driver_emulator.latncy': unknown key; allowed keys: "),
    ("policy_server", {"chunk_size": "64"}, "key 'policy_server.chunk_size': expected an integer, got str '64'"),
    ("robot_node", {"timing": "fast"}, "key 'robot_node.timing': got 'fast'; allowed values: 'lockstep', 'realtime'"),
    ("learner_node", {"observation_normalization": "yes"},
     "key 'learner_node.observation_normalization': expected true or false"),
    # the node's own checks (validate) name the key under its section
    ("learner_node", {"snapshot_every": 0}, "key 'learner_node.snapshot_every': must be a whole number in [1, 2^53]"),
    ("policy_server", {"realtime_priority": 100}, "key 'policy_server.realtime_priority': must be in 0..99"),
    ("policy_server", {"preference": [0.1]}, "key 'policy_server.preference': mode train samples a preference"),
])
def test_a_bad_node_setting_is_refused_naming_file_and_key(tmp_path, node, params, words):
    path = _session(tmp_path, node, **params)
    with pytest.raises(ConfigError) as err:
        load_session_config(path)
    assert str(err.value).startswith(f"{path}: "), err.value
    assert words in str(err.value), err.value


def test_sections_are_typed_and_defaulted():
    cfg = load_session_config("train")
    assert isinstance(cfg.robot_node, RobotNodeSettings) and cfg.robot_node.timing == "lockstep"
    assert isinstance(cfg.learner_node, LearnerNodeSettings) and cfg.learner_node.snapshot_every == 50
    assert load_session_config("deploy").learner_node == LearnerNodeSettings()


def test_node_parameters_give_the_session_values_unless_the_section_changes_them():
    settings = RobotNodeSettings(timing="realtime", seed=7)
    params = node_parameters(settings, {"task": "shadow_touch", "seed": 3})
    assert params["task"] == "shadow_touch"  # the section left it at its default: the session's value
    assert params["seed"] == 7  # the section set it: its value wins, as in a session YAML
    assert params["timing"] == "realtime" and params["command_timeout"] == 0.2  # every field is a parameter
    # an empty list has no ROS type on the command line: left out (it is the node's default)
    assert "preference" not in node_parameters(PolicyServerSettings())
    assert node_parameters(PolicyServerSettings(preference=[0.1, 1.0]))["preference"] == [0.1, 1.0]


STRING_PARAMETERS = ["792757145550", "0123", "true", "1e5", "0e5123", "12e4", ".5", "0x1f", "nan", "null", "[a]", "",
                     "a: b", "x y", "plain", "abc1e5"]


@pytest.mark.parametrize("text", STRING_PARAMETERS)
def test_a_string_parameter_arrives_as_that_string(text):
    """``-p name:=value`` is YAML: a string that reads as a number or a boolean (a session id of
    decimal digits only, seen once in `make test`) is quoted, so the node gets the string."""
    import yaml

    from morl_robot.session.processes import format_parameter

    assert yaml.safe_load(format_parameter(text)) == text


def test_ros_own_parameter_reader_gets_each_string_as_that_string():
    """The same through rcl's parser, the one a node reads ``-p`` with: it takes ``0e5123`` (a hex
    session id; PyYAML keeps it a string) as the float 0.0 unless quoted — a CI run failed so."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.context import Context
    from rclpy.node import Node

    from morl_robot.session.processes import format_parameter

    args = ["x", "--ros-args"]
    for i, text in enumerate(STRING_PARAMETERS):
        args += ["-p", f"p{i}:={format_parameter(text)}"]
    ctx = Context()
    rclpy.init(args=args, context=ctx)
    try:
        node = Node("parameter_reader", context=ctx, automatically_declare_parameters_from_overrides=True)
        got = [node.get_parameter(f"p{i}").value for i in range(len(STRING_PARAMETERS))]
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
    assert got == STRING_PARAMETERS


def test_a_session_id_is_never_one_a_number_reader_takes(monkeypatch):
    """``new_session_id`` draws again when the hex digits read as a number (``0e5123``, ``123456789012``),
    so a launch file's parameter file, which PyYAML writes unquoted, gives every node a string."""
    import secrets

    from morl_robot.node_settings import looks_numeric, new_session_id

    draws = iter(["0e5123000000", "123456789012", "00ff00aa11bb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(draws))
    assert new_session_id() == "00ff00aa11bb"
    assert looks_numeric("0e5123000000") and looks_numeric("12e4") and not looks_numeric("00ff00aa11bb")
