"""Fault (issue 33): ``morl-robot safety-test --robot sawyer`` did not pass.  Since compliant,
force-limited Cartesian control became the default (its press stops at 20 N tared, and pressing
*lowers* the raw wrist reading, which holds the tool's weight) and the monitor gained the ``approach``
rule (the peg arrives at 5 mm/s), the old force ramp waited in vain for the peg "to touch the
fixture" (raw reading 1 N above rest) and the run died with a TimeoutError traceback (exit 1).

Now the deployed configuration is what is tested: the peg is driven down at each
``--approach-speeds`` speed (the ``approach`` rule slows it to its contact speed), and a force gauge
(sim: the robot node's ``~/external_wrench`` on the tool, ramped at ``--gauge-rate``) takes the wrist
reading through the ``wrench.force_norm`` / ``wrench.force_axis`` contact and collision levels."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from morl_robot.cli import main

#: Every rule the Sawyer safety test exercises (before issue 32's compliance: all but ``approach``
#: and ``wrench.force_axis``), as (rule, level).
SAWYER_RULES = {
    ("approach", "near"),
    ("wrench.force_norm", "contact"), ("wrench.force_norm", "collision"),
    ("wrench.force_axis", "contact"), ("wrench.force_axis", "collision"),
    ("stale.joint_states", "deadline"), ("command.non_finite", "fault"), ("command.rate", "soft"),
    ("stale.heartbeat", "deadline"), ("joints.position", "soft"),
}


@pytest.mark.parametrize("flags, says", [
    (["--approach-speeds", "fast"], "--approach-speeds: expected comma-separated numbers"),
    (["--ramp-speeds", "0.5"], "each speed must be in (0, 0.2] m/s"),  # the old name still works
    (["--approach-speeds", "0"], "each speed must be in (0, 0.2] m/s"),
    (["--gauge-rate", "-1"], "--gauge-rate must be a positive number of N/s"),
])
def test_bad_press_settings_are_usage_errors(tmp_path, capsys, flags, says):
    """Refused before any node starts: one line naming the flag, exit 2."""
    rc = main(["safety-test", "--robot", "sawyer", "--out", str(tmp_path), *flags])
    err = capsys.readouterr().err
    assert rc == 2 and says in err, err


@pytest.mark.ros
@pytest.mark.extended(reason="the same judgement of the README's two-press run (--record added) is made in the "
                             "default suite by tests/safety/test_replay.py::test_the_recorded_sawyer_safety_test_passes")
def test_sawyer_safety_test_passes_with_compliance_and_the_approach_rule(tmp_path, domain_id):
    """The real CLI and graph, the deployed Sawyer configuration (one press, at the robot's full
    0.2 m/s; the README's two-press command is judged the same way by tests/safety/test_replay.py): every
    rule trips, none is 'not reached', the run passes."""
    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "safety-test", "--robot", "sawyer", "--out", str(tmp_path),
           "--domain-id", str(domain_id), "--approach-speeds", "0.2"]
    for attempt in range(2):  # a probe aborted by a sensor-stream watchdog the loaded host tripped (exit 5): once more
        proc = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=400, check=False)
        if proc.returncode != 5:
            break
    judge_sawyer_run(tmp_path, proc, [0.2])


def judge_sawyer_run(out: Path, proc: subprocess.CompletedProcess, speeds: list[float]) -> None:
    """The pass checks of a ``safety-test --robot sawyer`` run pressed at ``speeds`` (m/s): every rule trips
    once per press, none is 'not reached', each at its threshold; a check may fail only for a latency beyond
    its tolerance on this shared 2-core machine (the tool is right to fail such a run; a latency the host's
    measured scheduling delay explains is 'not judged (machine)', exit 4); the exit code is the result's."""
    from morl_robot.safety.testing import EXIT_CODES

    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (out / "report.json").is_file(), f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    report = json.loads((out / "report.json").read_text())
    checks = report["checks"]
    assert {(c["rule"], c["level"]) for c in checks} == SAWYER_RULES, checks
    assert all(c["tripped"] and c["status"] != "not reached" for c in checks), checks
    approach = [c for c in checks if (c["rule"], c["level"]) == ("approach", "near")]
    assert len(approach) == len(speeds), approach  # one per press speed
    for c in approach:
        assert c["threshold"] == pytest.approx(0.005) and c["tripped_value"] <= 0.005 + 1e-6, c
        assert "slowed near" in c["detail"] and "fixture" in c["detail"], c
    for rule in ("wrench.force_norm", "wrench.force_axis"):
        for level, threshold in (("contact", 20.0), ("collision", 40.0)):
            trips = [c for c in checks if (c["rule"], c["level"]) == (rule, level)]
            assert len(trips) == len(speeds), trips
            for c in trips:
                assert threshold <= c["tripped_value"] <= threshold + c["threshold_tolerance"] + 1e-9, c
                assert "force gauge" in c["detail"], c
    assert report["approach_speeds_m_s"] == speeds and report["gauge_rate_n_s"] == 20.0
    assert all((out / f"tool_press_{v}.png").is_file() for v in speeds)
    failed = [c for c in checks if c["status"] == "FAIL"]
    assert all(c["detail"].startswith("latency ") for c in failed), failed
    assert proc.returncode == EXIT_CODES[report["result"]], (proc.returncode, report["result"])
    assert report["result"] == ("fail" if failed else "not_judged" if any(c["machine"] for c in checks) else "pass")
