"""Issue 34: a safety-test report a user can act on.  A Sawyer test on a loaded machine ended FAIL
with "heartbeat stopped … latency 34.4 ms > 22.0 ms": the robot was fine, the host was late.  A check
whose only problem is its timing while the host's measured scheduling delay covers the excess is now
NOT JUDGED (machine), exit 4, with the delay and a hint; a genuine over-force stays a FAIL.  Every
value carries its unit; the exit codes are one table (``VERDICTS``) with meaning and action."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from morl_robot.safety.monitor import build_monitor
from morl_robot.safety.testing import (
    EXIT_CODES,
    VERDICTS,
    RuleCheck,
    SchedulingDelays,
    add_host_delay,
    overall_result,
    watchdog_check,
    write_report,
)

PERIOD, CHECK, TOL = 0.05, 0.002, 0.02  # command period, monitor check period, latency tolerance (s)


def _heartbeat_event(latency: float, delivered: float = 0.0, monitor_late_ms: float | None = None) -> dict:
    """The monitor's stale.heartbeat violation event: the last heartbeat stamped at 100 s, the
    e-stop decided ``latency`` s after its 0.5 s deadline; its age as the monitor saw it counts
    from its arrival, ``delivered`` s after the stamp."""
    age = 0.5 + latency
    event = {"rule": "stale.heartbeat", "key": "heartbeat", "level": "deadline", "sensor_stamp": "100.0",
             "decided_at": f"{100.0 + age:.6f}", "value": f"{age - delivered:.6f}", "threshold": "0.5"}
    if monitor_late_ms is not None:
        event["detail"] = f"host scheduling delay {monitor_late_ms:.0f} ms: this monitor's watchdog check ran late"
    return event


def _heartbeat(event: dict | None) -> RuleCheck:
    return watchdog_check("heartbeat stopped", "stale.heartbeat", 0.5, "estop", event, PERIOD, CHECK, TOL)


def test_the_loaded_machine_heartbeat_is_not_judged_not_failed(tmp_path):
    """The issue's run: 34.4 ms > 22.0 ms, the monitor's own check 30 ms late."""
    c = _heartbeat(_heartbeat_event(0.0344, monitor_late_ms=30))
    assert c.status == "not judged (machine)" and c.machine and not c.passed
    assert c.problems[0] == "latency 34.4 ms > 22.0 ms"
    assert c.host_delay_max == pytest.approx(0.030)
    assert "rerun on an idle machine or a real-time kernel" in c.summary()
    report = write_report([c], tmp_path, {"robot": "sawyer", "backend": "sim"})
    assert report["result"] == "not_judged" and report["exit_code"] == EXIT_CODES["not_judged"] == 4
    assert "idle machine" in report["verdict"]["action"]
    md = (tmp_path / "report.md").read_text()
    assert "**NOT JUDGED (machine)**" in md and "exit code 4" in md
    assert "| 30 ms / 30 ms |" in md  # the measured delay, median / max, with its unit


def test_a_late_delivery_of_the_last_heartbeat_is_the_hosts_delay_too():
    """No late check reported, but the last heartbeat reached the monitor 25 ms after its stamp."""
    c = _heartbeat(_heartbeat_event(0.0344, delivered=0.025))
    assert c.status == "not judged (machine)" and c.host_delay_max == pytest.approx(0.025)


def test_a_late_trip_on_a_punctual_machine_is_a_fail():
    c = _heartbeat(_heartbeat_event(0.0344))  # no delay measured anywhere: the monitor itself was slow
    assert c.status == "FAIL" and "not enough to explain it" in c.summary()
    assert overall_result([c]) == "fail"
    # a probe-side delay far from the check's window does not excuse it either
    delays = SchedulingDelays()
    delays.add(50.0, 0.040)
    delays.add(100.2, 0.0004)
    assert add_host_delay(c, delays).status == "FAIL"


def test_a_delay_too_small_for_the_excess_is_a_fail():
    c = _heartbeat(_heartbeat_event(0.060, monitor_late_ms=12))  # 38 ms over, 12 ms explained
    assert c.status == "FAIL"


def test_a_stalled_monitor_timer_in_the_real_monitor_core_gives_a_not_judged_check():
    """Fault injection on the real core: the heartbeat stops at t = 1 s; the host does not run the
    monitor's 2 ms watchdog timer from 1.45 s until 1.54 s (0.04 s past the 0.5 s deadline).  The
    violation it then raises carries the host delay, and the safety-test check built from it (as
    the probe builds it from the published event) is NOT JUDGED, not FAIL."""
    m = build_monitor("shadow_hand", now=0.0)
    names, labels = m.spec.joint_names, m.rules.tactile_labels
    t = 0.0
    for k in range(1, 726):  # checks every 2 ms up to 1.45 s; sensors every 10 ms; heartbeat until 1 s
        t = round(k * CHECK, 6)
        if k % 5 == 0:
            m.on_joint_state(names, np.zeros(len(names)), np.zeros(len(names)), [], t, t)
            m.on_tactile(np.zeros(len(labels)), labels, t, t)
        if t <= 1.0:
            m.on_heartbeat(t, t)
        assert not m.check_watchdogs(t, CHECK).violations
    stalled = 1.54  # the next check, 88 ms late
    m.on_joint_state(names, np.zeros(len(names)), np.zeros(len(names)), [], stalled, stalled)
    m.on_tactile(np.zeros(len(labels)), labels, stalled, stalled)
    v = next(v for v in m.check_watchdogs(stalled, CHECK).violations if v.rule == "stale.heartbeat")
    assert v.detail.startswith("host scheduling delay 88 ms")
    event = {"rule": v.rule, "key": v.key, "sensor_stamp": repr(v.sensor_stamp), "decided_at": repr(v.decided_at),
             "value": repr(v.value), "detail": v.detail}  # what the safety_monitor node publishes
    c = _heartbeat(event)
    assert c.problems[0] == "latency 40.0 ms > 22.0 ms"  # its overshoot past the deadline
    assert c.status == "not judged (machine)"
    # the same core, its timer on time throughout: the heartbeat trips at its deadline and passes
    m2 = build_monitor("shadow_hand", now=0.0)
    trip = None
    for k in range(1, 1000):
        t = round(k * CHECK, 6)
        if k % 5 == 0:
            m2.on_joint_state(names, np.zeros(len(names)), np.zeros(len(names)), [], t, t)
            m2.on_tactile(np.zeros(len(labels)), labels, t, t)
        if t <= 1.0:
            m2.on_heartbeat(t, t)
        trip = next((v for v in m2.check_watchdogs(t, CHECK).violations if v.rule == "stale.heartbeat"), None)
        if trip is not None:
            break
    ok = _heartbeat({"rule": trip.rule, "sensor_stamp": repr(trip.sensor_stamp), "decided_at": repr(trip.decided_at),
                     "value": repr(trip.value), "detail": trip.detail})
    assert ok.status == "pass", ok.summary()


def _force(tripped: float, latency: float) -> RuleCheck:
    c = RuleCheck("tool press 0.2 m/s + force gauge", "wrench.force_norm", "collision", "estop", 40.0, "N",
                  latency_tolerance=TOL)
    c.tripped, c.tripped_value, c.threshold_error, c.threshold_tolerance = True, tripped, tripped - 40.0, 0.5
    c.latency, c.window = latency, (200.0, 200.0 + latency)
    return c


def test_a_genuine_over_force_is_a_fail_however_late_the_machine():
    delays = SchedulingDelays()
    for k in range(20):
        delays.add(200.0 + 0.005 * k, 0.050)  # 50 ms late wake-ups all through the check's window
    c = add_host_delay(_force(45.0, 0.035), delays)
    assert c.status == "FAIL" and c.host_delay_max == pytest.approx(0.050)
    assert c.problems[0] == "tripped 5 N past the threshold (tolerance 0.5 N)"
    # the same late trip with the force right: the machine's
    late = add_host_delay(_force(40.2, 0.035), delays)
    assert late.status == "not judged (machine)"
    assert overall_result([late, c]) == "fail" and overall_result([late]) == "not_judged"


def test_scheduling_delays_in_a_window():
    """The window arithmetic on synthetic wake-ups (the sampler process itself: the live runs)."""
    d = SchedulingDelays(period=0.005)
    for t, late in ((1.0, 0.001), (1.01, 0.003), (1.02, 0.030), (2.0, 0.5)):
        d.add(t, late)
    assert d.window(1.0, 1.02) == (pytest.approx(0.003), pytest.approx(0.030))
    assert all(math.isnan(x) for x in d.window(3.0, 4.0))
    s = d.summary()
    assert s["samples"] == 4 and s["max_ms"] == pytest.approx(500.0)


def test_every_value_has_its_unit(tmp_path):
    c = add_host_delay(_force(40.2, 0.004), None)
    assert c.status == "pass"
    write_report([c], tmp_path, {"robot": "sawyer", "backend": "sim", "latency_tolerance_s": TOL})
    row = json.loads((tmp_path / "report.json").read_text())["checks"][0]
    assert row["units"] == {"threshold": "N", "tripped_value": "N", "threshold_error": "N",
                            "threshold_tolerance": "N", "latency": "s", "latency_tolerance": "s",
                            "host_delay_median": "s", "host_delay_max": "s"}
    line = next(x for x in (tmp_path / "report.md").read_text().splitlines() if x.startswith("| tool press"))
    assert "| 40 N | 40.2 N | 0.2 N (0.5 N) | 4 ms (20 ms) |" in line, line


def test_the_exit_code_table():
    codes = [v.code for v in VERDICTS]
    assert len(codes) == len(set(codes)) and {0, 1, 2, 3, 4} <= set(codes)
    assert all(v.meaning and v.action and v.label for v in VERDICTS)
    assert EXIT_CODES == {"pass": 0, "fail": 1, "not_judged": 4, "incomplete": 3}


@pytest.mark.parametrize("outcome, rc, says", [
    (lambda: [_heartbeat(_heartbeat_event(0.0344, monitor_late_ms=30))], 4, "NOT JUDGED (machine) (exit 4)"),
    (lambda: [_heartbeat(_heartbeat_event(0.0344))], 1, "FAIL (exit 1)"),
    (lambda: [add_host_delay(_force(40.2, 0.004), None)], 0, "PASS (exit 0)"),
    (TimeoutError("timed out waiting for the tool (tool) to touch the scene"), 5, "probe aborted: timed out"),
    (KeyError("a bug"), 5, "probe aborted: 'a bug'"),
])
def test_the_cli_exits_with_the_verdicts_code(tmp_path, monkeypatch, capsys, outcome, rc, says):
    """``morl-robot safety-test`` through the real entry point, the graph replaced by its outcome:
    checks (judged as the probes judge them) or a probe that cannot go on (never exit 1: that is FAIL)."""
    import morl_robot.cli.safety_test as st
    from morl_robot.cli import main

    def probe_graph(*args, **kwargs):
        if isinstance(outcome, Exception):
            raise outcome
        return outcome()
    monkeypatch.setattr(st, "_probe_graph", probe_graph)
    assert main(["safety-test", "--robot", "shadow", "--out", str(tmp_path)]) == rc
    assert says in capsys.readouterr().err
    if rc != 5:
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["exit_code"] == rc and report["scheduling_delays"]["samples"] >= 0
