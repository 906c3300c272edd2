"""Fault (issue 33, item 11): on a loaded machine every real-time deploy tripped on stale sensors
(0.25 s deadline) every 20-30 s, and nothing said that the host, not the robot, had missed its
deadlines.  The monitor now tells them apart: a watchdog check that itself ran late is the host's
scheduling delay (``host scheduling delay X ms``, cause ``monitor_late``); a stream that recovers
says whether its publisher sent late (stamps jumped) or its message was delivered late (old stamp);
the deploy summary and the safety-test report count them with the delays' p50/max."""
from __future__ import annotations

import math

import numpy as np
import pytest

from morl_robot.safety.monitor import build_monitor, summarise_misses
from morl_robot.safety.testing import RuleCheck, deadline_miss_report, write_report

PERIOD = 0.01  # s between watchdog checks (the node's check_period; coarse to keep the test short)


def _feed(m, t: float, stamp: float | None = None) -> None:
    """Every sensor stream of the Shadow Hand at monitor time ``t`` (stamped ``stamp``, default t)."""
    stamp = t if stamp is None else stamp
    names = m.spec.joint_names
    m.on_joint_state(names, np.zeros(len(names)), np.zeros(len(names)), [], stamp, t)
    labels = m.rules.tactile_labels
    m.on_tactile(np.zeros(len(labels)), labels, stamp, t)


def _running(until: float):
    """A monitor whose streams came every 50 ms and whose checks ran on time up to ``until``."""
    m = build_monitor("shadow_hand", now=0.0)
    t = 0.0
    while t < until - 1e-9:
        t = round(t + PERIOD, 6)
        if round(t / 0.05, 6).is_integer():
            _feed(m, t)
        out = m.check_watchdogs(t, PERIOD)
        assert not out.violations, out.violations
    return m, t


def _stale(violations):
    return [v for v in violations if v.rule in ("stale.joint_states", "stale.tactile")]


def test_a_late_watchdog_check_is_a_host_scheduling_delay_with_its_measured_delay():
    m, t = _running(1.0)
    # the host does not run the monitor for 0.3 s: no callback, no check; then the timer fires
    late_now = t + 0.3
    found = _stale(m.check_watchdogs(late_now, PERIOD).violations)
    assert found, "the 0.25 s deadline is missed (the monitor cannot know newer messages were waiting)"
    late_ms = (0.3 - PERIOD) * 1e3
    for v in found:
        assert v.detail.startswith(f"host scheduling delay {late_ms:.0f} ms"), v.detail
        assert f"host scheduling delay {late_ms:.0f} ms" in v.describe()
    misses = [x for x in m.deadline_misses if x.stream in ("joint_states", "tactile")]
    assert {x.cause for x in misses} == {"monitor_late"}
    assert all(x.delay == pytest.approx(0.3 - PERIOD) for x in misses)
    values = m.deadline_miss_values()
    assert values["host_deadline_misses"] >= 2 and values["deadline_misses/monitor_late"] >= 2
    assert values["host_delay_max_ms"] == pytest.approx(late_ms, abs=0.1)
    assert values["host_delay_p50_ms"] == pytest.approx(late_ms, abs=0.1)
    # the lasting violation keeps saying so (the node's status shows the active violations)
    later = _stale(m.active_violations())
    m.check_watchdogs(late_now + PERIOD, PERIOD)
    assert all(v.detail.startswith("host scheduling delay") for v in _stale(m.active_violations())) and later


def test_a_stream_that_stops_while_the_monitor_runs_on_time_is_not_the_monitors_delay():
    """The robot node publishes nothing for 0.4 s (checks on time): a plain stale sensor at the
    onset; when the stream comes back, its stamps show that its publisher was late, by how much."""
    m, t = _running(1.0)
    onset = []
    for _ in range(40):  # 0.4 s of on-time checks, no messages
        t = round(t + PERIOD, 6)
        onset += _stale(m.check_watchdogs(t, PERIOD).violations)
    assert onset and all(not v.detail for v in onset)  # "stale.<stream>", no host delay claimed
    assert {x.cause for x in m.deadline_misses} == {"unexplained"}
    _feed(m, t, stamp=t - 0.001)  # the next message, delivered in 1 ms: stamped 0.45 s after the previous
    misses = {x.stream: x for x in m.deadline_misses}
    assert misses["joint_states"].cause == "published_late"
    assert misses["joint_states"].delay == pytest.approx(t - 0.001 - 1.0)


def test_a_message_published_on_time_but_delivered_late_says_so():
    m, t = _running(1.0)
    for _ in range(30):
        t = round(t + PERIOD, 6)
        m.check_watchdogs(t, PERIOD)
    _feed(m, t, stamp=1.05)  # stamped 50 ms after the previous one, arriving 0.25 s after its stamp
    miss = next(x for x in m.deadline_misses if x.stream == "joint_states")
    assert miss.cause == "delivered_late" and miss.delay == pytest.approx(t - 1.05)


def test_the_reports_count_host_misses_with_p50_and_max(tmp_path):
    from morl_robot.cli.deploy import deadline_misses, describe_deadline_misses

    rows = [{"stream": "joint_states", "cause": "monitor_late", "delay_ms": d, "age_ms": 300.0, "at": 1.0}
            for d in (100.0, 200.0, 400.0)] + [
           {"stream": "tactile", "cause": "unexplained", "delay_ms": math.nan, "age_ms": 250.0, "at": 2.0}]
    summary = summarise_misses(rows)
    assert summary["deadline_misses"] == 4 and summary["host_deadline_misses"] == 3
    assert (summary["host_delay_p50_ms"], summary["host_delay_max_ms"]) == (200.0, 400.0)
    # deploy: from the monitor's /diagnostics values (strings) to its end-of-run line
    status = {k: f"{v:.6g}" if isinstance(v, float) else str(v) for k, v in summary.items()}
    line = describe_deadline_misses(deadline_misses(status))
    assert "3 from host scheduling delays" in line and "monitor's own check late 3" in line
    assert "p50 200 ms, max 400 ms" in line and "1 unexplained" in line
    # safety test: report.json and report.md
    check = RuleCheck("p", "tactile", "collision", "estop", 60.0, "N", latency_tolerance=math.inf)
    check.reachable, check.passed = True, True
    report = write_report([check], tmp_path, {"robot": "shadow_hand", "deadline_misses": deadline_miss_report(rows)})
    assert report["deadline_misses"]["host_deadline_misses"] == 3
    md = (tmp_path / "report.md").read_text()
    assert "3 from host scheduling delays" in md and "p50 200 ms, max 400 ms" in md
