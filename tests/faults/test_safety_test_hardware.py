"""Fault (issue 34): ``morl-robot safety-test --backend hardware`` could not run at all: every probe
began by calling the simulated robot node's ``~/set_pause`` and ``~/reset_world`` services, which a
hardware robot node does not offer (a TimeoutError traceback, exit 1).  Through the driver emulator
(``--emulate``) the Sawyer then showed a second fault: on the hardware backend's position-stepped
arm the approach rule's braking gives a one-sample 1 N inertial spike at the wrist 0.8 s above the
fixture, which the probe took for the touch (the approach check read a 173 mm/s "arrival" and
failed).  A touch is now 1 N (tared) in three samples in a row."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.ros
def test_sawyer_safety_test_through_the_driver_emulator(tmp_path, domain_id):
    from morl_robot.safety.testing import EXIT_CODES
    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "safety-test", "--robot", "sawyer", "--backend", "hardware",
           "--emulate", "none", "--approach-speeds", "0.2", "--out", str(tmp_path), "--domain-id", str(domain_id)]
    proc = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=400, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    by = {(c["rule"], c["level"]): c for c in report["checks"]}
    approach = by[("approach", "near")]
    assert approach["tripped_value"] <= 0.005 + 1e-6, approach  # arrived at the contact speed
    # nobody presses an emulator's gauge, and the probe cannot stop a driver's streams
    assert {k for k, c in by.items() if c["status"] == "not reached"} == {
        ("wrench.force_norm", "contact"), ("wrench.force_norm", "collision"),
        ("wrench.force_axis", "contact"), ("wrench.force_axis", "collision"), ("stale.joint_states", "deadline")}
    failed = [c for c in report["checks"] if c["status"] == "FAIL"]
    assert all(c["detail"].startswith("latency ") for c in failed), failed  # only a loaded machine's timing
    assert proc.returncode == EXIT_CODES[report["result"]] and report["result"] in ("incomplete", "not_judged", "fail")
