"""`morl-robot bench soak` through the real CLI on a tiny budget: faults are injected into a live
deploy graph, detected, and no command reaches the robot while the e-stop is engaged."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.extended]  # make test-extended (47 s)


def test_a_short_soak_detects_its_faults_and_lets_no_unsafe_command_through(tmp_path, domain_id):
    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "bench", "soak", "--minutes", "0.4", "--gap", "1.5",
           "--seed", "3", "--out", str(tmp_path), "--domain-id", str(domain_id)]
    done = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "soak_report.json").read_text())
    assert report["faults_injected"] >= 5
    assert report["unsafe_commands"] == 0 and report["full_reversals_on_command_safe"] == 0
    for kind, row in report["by_fault"].items():
        if kind != "latency_spike":
            assert row["detected"] == row["injected"], (kind, row)
    assert report["by_fault"]["latency_spike"].get("false_trips", 0) == 0
    # once per soak: another session on the same names gives way without tripping this one's monitor,
    # and a resume as another task is refused with the run directory untouched
    assert report["by_fault"]["second_session"] == {**report["by_fault"]["second_session"], "injected": 1, "detected": 1}
    assert report["by_fault"]["refused_resume"] == {**report["by_fault"]["refused_resume"], "injected": 1, "detected": 1}
    second = next(r for r in report["records"] if r["fault"] == "second_session")
    assert not second["false_trip"] and second["exit_codes"] == [2]
