"""The morl-robot command line, run as a real subprocess (the installed console script)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "morl-robot"


def cli(*args, check=True):
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "morl_robot.cli"]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300, env={**os.environ},
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


def test_tasks_lists_every_task():
    rows = json.loads(cli("tasks", "--json").stdout)
    by = {r["task"]: r for r in rows}
    assert set(by) == {"sawyer_peg_in_hole", "shadow_touch", "shadow_turn", "shadow_orient"}
    assert by["sawyer_peg_in_hole"]["robot"] == "sawyer" and by["sawyer_peg_in_hole"]["objectives"] == ["task", "wrist_force"]
    assert by["shadow_orient"]["observation_size"] == 63 and by["shadow_orient"]["action_size"] == 20
    assert all(r["control_rate_hz"] > 0 for r in rows)
    table = cli("tasks").stdout
    assert "shadow_touch" in table and "Hz" in table


def test_rollout_prints_one_json_object():
    out = cli("rollout", "--task", "sawyer_peg_in_hole", "--steps", "200", "--seed", "3", "zero").stdout
    summary = json.loads(out)
    assert set(summary) == {"task", "steps", "episodes", "returns", "terminations", "steps_per_second"}
    assert summary["task"] == "sawyer_peg_in_hole" and summary["steps"] == 200
    assert set(summary["returns"]) == {"task", "wrist_force"}
    # zero twist holds the peg tip still above the hole: one full 8 s (160-step) episode, no contact
    # (the task turns the peg onto the hole's axis in the first second: the sensor-frame tare then
    # reads a fraction of the tool's 3.4 N weight, ~0.1 N a step)
    assert summary["episodes"] == 1 and summary["terminations"] == {"time_limit": 1}
    assert -30.0 < summary["returns"]["wrist_force"] <= 0.0


@pytest.mark.parametrize(
    "args, words",
    [
        (["rollout", "--task", "nope", "--steps", "5"], "unknown task 'nope'; known tasks:"),
        (["rollout", "--task", "shadow_touch", "--steps", "5", "clever"], "unknown policy 'clever'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, words):
    proc = cli(*args, check=False)
    assert proc.returncode == 2 and words in proc.stderr


def test_malformed_task_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot: sawyer\nscene: [unclosed\n")
    proc = cli("rollout", "--task", "sawyer_peg_in_hole", "--steps", "5", "--task-config", str(bad), check=False)
    assert proc.returncode == 2 and "bad.yaml: malformed YAML" in proc.stderr
