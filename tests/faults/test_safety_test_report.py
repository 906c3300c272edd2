"""Fault: `morl-robot safety-test --robot shadow` reported overall PASS while the 60 N tactile
collision rule was never reached (and its report showed each image twice).  A rule the probes do
not exercise is not a pass: the run is INCOMPLETE (exit 3), through the real CLI and graph."""
from __future__ import annotations

import json
import math

import pytest

from morl_robot.safety.testing import RuleCheck, write_report


def _check(reachable=True, passed=True, plot="") -> RuleCheck:
    c = RuleCheck("probe", "tactile", "collision", "estop", 60.0, "N", latency_tolerance=math.inf, plot=plot)
    c.reachable, c.passed = reachable, passed
    return c


@pytest.mark.parametrize("checks, result", [
    ([_check(), _check()], "pass"),
    ([_check(), _check(reachable=False, passed=False)], "incomplete"),
    ([_check(passed=False), _check(reachable=False, passed=False)], "fail"),
    ([_check(reachable=False, passed=False)], "fail"),  # nothing exercised at all
])
def test_the_overall_result(tmp_path, checks, result):
    report = write_report(checks, tmp_path, {"robot": "shadow_hand"})
    assert report["result"] == result and report["passed"] == (result == "pass")
    assert f"**{result.upper()}**" in (tmp_path / "report.md").read_text()


def test_a_shared_trace_appears_once(tmp_path):
    write_report([_check(plot="press.png"), _check(plot="press.png")], tmp_path, {})
    assert (tmp_path / "report.md").read_text().count("(press.png)") == 1


@pytest.mark.ros
def test_shadow_safety_test_is_incomplete_when_the_collision_level_is_not_reached(tmp_path, domain_id):
    import subprocess
    import sys

    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "safety-test", "--robot", "shadow", "--out", str(tmp_path),
           "--domain-id", str(domain_id)]
    rc = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=300, check=False).returncode
    report = json.loads((tmp_path / "report.json").read_text())
    statuses = {(c["rule"], c["level"]): c["status"] for c in report["checks"]}
    assert rc == {"pass": 0, "fail": 1, "incomplete": 3, "not_judged": 4}[report["result"]], report
    failed = [c for c in report["checks"] if c["status"] == "FAIL"]
    # A check may fail for one reason that is the machine's, not the tool's: a trip answered later
    # than the latency tolerance (20 ms) while this 2-core machine runs a second test worker. The
    # tool is right to fail such a run; any other failure is a real one.
    assert all(c["detail"].startswith("latency ") for c in failed), failed
    if statuses.get(("tactile", "collision")) == "not reached":
        assert report["result"] in (("fail",) if failed else ("incomplete", "not_judged")), report
    else:  # a probe that reaches 60 N makes it a real pass or fail (or the machine too late to judge)
        assert report["result"] in ("pass", "fail", "not_judged")
    assert (tmp_path / "report.md").read_text().count("(rh_ffdistal_touch_press.png)") == 1
