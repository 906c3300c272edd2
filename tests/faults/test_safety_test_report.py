"""Fault: `morl-robot safety-test --robot shadow` reported overall PASS while the 60 N tactile
collision rule was never reached (and its report showed each image twice).  A rule the probes do
not exercise is not a pass: the run is INCOMPLETE (exit 3), through the real CLI and graph."""
from __future__ import annotations

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


# The graph run of `safety-test --robot shadow` (report written, exit code = result, a trace shared by two
# levels drawn once) is tests/faults/test_shadow_gauge_press.py::test_shadow_safety_test_passes_with_the_gauge.
