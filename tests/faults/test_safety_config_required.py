"""Fault: a safety config could silently lose its rules (every section but `command` was
optional: a Sawyer config without `wrench` loaded with fewer thresholds and deploy proceeded).
Each robot must declare the rules its sensors make possible; leaving one out needs `opt_out`
with a reason, which the monitor logs and reports."""
from __future__ import annotations

import pytest
import yaml

from morl_robot.errors import ConfigError
from morl_robot.resources import config_path
from morl_robot.safety.monitor import build_monitor


def _without(tmp_path, robot: str, section: str, opt_out: dict | None = None, watchdog: str | None = None):
    data = yaml.safe_load(config_path(f"safety/{robot}.yaml").read_text())
    if section:
        data.pop(section)
    if watchdog:
        data["watchdogs"].pop(watchdog)
    if opt_out is not None:  # (added to the shipped opt-outs of weakened settings)
        data.setdefault("opt_out", {}).update(opt_out)
    path = tmp_path / f"{robot}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("robot, section", [("sawyer", "wrench"), ("sawyer", "joints"), ("sawyer", "watchdogs"),
                                            ("shadow_hand", "tactile"), ("shadow_hand", "joints")])
def test_a_missing_required_section_is_refused_with_its_name(tmp_path, robot, section):
    with pytest.raises(ConfigError, match=rf"{section}.*needs this section.*opt_out"):
        build_monitor(_without(tmp_path, robot, section))


def test_a_missing_stale_deadline_for_a_sensor_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="watchdogs"):
        build_monitor(_without(tmp_path, "sawyer", "", watchdog="wrench"))


def test_an_explicit_opt_out_with_a_reason_is_accepted_and_reported(tmp_path):
    m = build_monitor(_without(tmp_path, "sawyer", "wrench", {"wrench": "F/T sensor off for calibration"}))
    assert m.opted_out == {"wrench": "F/T sensor off for calibration"}
    assert not any(r.rule.startswith("wrench") for r in m.describe_rules())


@pytest.mark.parametrize("opt_out, words", [({"wrench": ""}, "reason"), ({"brakes": "x"}, "not a required rule")])
def test_an_opt_out_needs_a_known_rule_and_a_reason(tmp_path, opt_out, words):
    with pytest.raises(ConfigError, match=words):
        build_monitor(_without(tmp_path, "sawyer", "wrench", opt_out))


def test_the_shipped_configs_declare_every_required_rule():
    for robot in ("sawyer", "shadow_hand"):
        assert build_monitor(robot).opted_out == {}
