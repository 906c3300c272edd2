"""Contact under command latency (issue 37): a command that arrives late passes the robot's own
approach-speed limit on the newest reading (``MORobotEnv._arrival_limit``), as the robot node's inner
layer limits what it receives.  Before, the monitor's limit was decided on a reading 1-3 periods old:
under 50 ms + U[0, 20] ms the scripted demonstrator hit the rim at 0.07-0.15 m/s (137-318 N for 2-14 ms)
or the hole's bottom at 0.015 m/s (35-39 N for 2 ms) in 19 of 20 diagnosis episodes
(results/generalization/sawyer_dr_contact/NOTES.md)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from morl_robot.cli import main
from morl_robot.envs.mo_env import MORobotEnv, set_contact_control

TASK = "sawyer_peg_in_hole"
CONTEXTS = """\
task: sawyer_peg_in_hole
parameters:
  latency: {kind: latency, nominal: 0.0}
  jitter: {kind: jitter, nominal: 0.0}
held_out:
  lat50j20: {latency: 0.05, jitter: 0.02}
"""


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("latency") / "latency.yaml"
    path.write_text(CONTEXTS)
    return path


def test_under_50ms_plus_20ms_latency_the_scripted_demonstrators_peak_force_stays_below_30N(
        contexts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # seeds 90000-90002 peaked at 138, 36 and 319 N before (the last one ended at the force threshold)
    rc = main(["evaluate", "scripted", "--task", TASK, "--set", f"task.contexts={contexts}:lat50j20",
               "--episodes", "3", "--seed", "90000", "--json", "--no-progress"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    peaks = [e["peak_force"] for e in out["per_episode"]]
    assert max(peaks) <= 30.0, f"peak contact force per episode {peaks} N under 50 + 20 ms of latency"
    assert [e["termination"] for e in out["per_episode"]] == ["time_limit"] * 3
    assert all(e["success"] for e in out["per_episode"]) and out["per_episode"][0]["context"] == "lat50j20"


def test_no_safety_means_no_approach_limit_where_a_late_command_arrives_either(
        contexts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--no-safety`` acts without the robot's safety rules, the arrival limit (the safety YAML's
    approach rule) included: the same seeds meet the fixture as hard as before the limit existed."""
    rc = main(["evaluate", "scripted", "--task", TASK, "--set", f"task.contexts={contexts}:lat50j20",
               "--episodes", "3", "--seed", "90000", "--json", "--no-progress", "--no-safety"])
    assert rc == 0
    peaks = [e["peak_force"] for e in json.loads(capsys.readouterr().out)["per_episode"]]
    assert max(peaks) > 30.0, peaks


def test_a_late_command_is_limited_at_the_robots_newest_reading_without_a_shield(contexts: Path) -> None:
    """The limit sits at the link's robot end: an actor without the monitor (a bare env.step) gets it
    too; 'stiff' contact control (no approach limit anywhere) does not."""
    def press_peak(stiff: bool) -> float:
        env = MORobotEnv(TASK, overrides={"contexts": f"{contexts}:lat50j20", "episode_duration": 1.5})
        try:
            if stiff:
                set_contact_control(env, "stiff")
            env.reset(seed=90002)
            peak = 0.0
            for _ in range(30):  # full speed down, every step ('press')
                _, _, term, trunc, info = env.step(np.array([0.0, 0.0, -1.0]))
                peak = max(peak, env.task.contact_force(info) or 0.0)
                if term or trunc:
                    break
            return peak
        finally:
            env.close()

    compliant, stiff = press_peak(False), press_peak(True)
    assert stiff > 40.0, f"stiff, no approach limit: a late full-speed push should hit hard, got {stiff:.1f} N"
    assert compliant <= 30.0, f"a full-speed push arriving late hit at {compliant:.1f} N"
