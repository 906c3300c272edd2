"""safety_monitor end to end on the real middleware (its own process, a private DDS domain): it
starts in e-stop until reset, latches on a collision, trips on stale and non-finite sensors, and a
restarted monitor is in e-stop again.

Timing assertions here are fault-injection acceptance checks, not benchmarks: a stale stream must
trip no earlier than its deadline and no later than deadline + one watchdog period + a scheduling
margin of 0.25 s (Python executors and DDS on a loaded 2-core machine; the measured figures come
from ``morl-robot bench safety``)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from morl_robot.nodes import wire
from morl_robot.session.processes import NodeSpec

pytestmark = pytest.mark.ros

NS = "/arm"
REPO = Path(__file__).resolve().parents[2]
HOME = [-0.27489, -0.74390, 0.04075, 1.62493, -0.04707, 0.69072, 3.12516]
JOINTS = [f"right_j{i}" for i in range(7)]
XYZ = ["vx", "vy", "vz"]
MARGIN = 0.25  # s, scheduling margin (see the module docstring)


class SensorFeed:
    """Publishes joint_states and wrench at 50 Hz from a thread; the test changes what it sends."""

    def __init__(self, probe) -> None:
        self.joints = probe.publisher(f"{NS}/joint_states", JointState, wire.SENSOR_QOS)
        self.wrench = probe.publisher(f"{NS}/wrench", WrenchStamped, wire.SENSOR_QOS)
        self.force_z = -3.4
        self.position = list(HOME)
        self.send_wrench = True
        self.last_wrench = 0.0  # monotonic time of the last wrench sent
        self.last_wrench_stamp = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, probe) -> SensorFeed:
        probe.wait_for_subscribers(self.joints)
        probe.wait_for_subscribers(self.wrench)
        self._thread.start()
        return self

    def _stamp(self, msg):
        t = time.time()
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int((t - int(t)) * 1e9)
        return t

    def _run(self) -> None:
        while not self._stop.is_set():
            js = JointState(name=JOINTS, position=self.position, velocity=[0.0] * 7, effort=[0.0] * 7)
            self._stamp(js)
            self.joints.publish(js)
            if self.send_wrench:
                w = WrenchStamped()
                w.wrench.force.z = self.force_z
                stamp = self._stamp(w)
                self.last_wrench = time.monotonic()
                self.wrench.publish(w)
                self.last_wrench_stamp = stamp
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)


def relaxed_watchdogs(tmp_path, deadline: float = 5.0) -> str:
    """config/safety/sawyer.yaml with every watchdog deadline ``deadline`` s: for the tests of the
    latch, where a 0.25 s deadline lets a starved feed thread or the pause after a command trip the
    e-stop (or hold) first on a loaded machine.  The deadlines themselves are tested with the real file."""
    cfg = yaml.safe_load((REPO / "config" / "safety" / "sawyer.yaml").read_text())
    for stream, rule in cfg["watchdogs"].items():
        if isinstance(rule, dict):
            rule["value"] = deadline
            if deadline > 1.0:  # past morl_robot.safety.weakening.MAX_DEADLINE: weakened on purpose
                cfg.setdefault("opt_out", {})[f"watchdogs.{stream}"] = "test of the latch on a loaded machine"
    path = tmp_path / "sawyer_relaxed_watchdogs.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def start_monitor(s, **params):
    params = {"robot": "sawyer", "action_labels": "vx,vy,vz", **params}  # as a session of the peg task
    proc = s.group.start(NodeSpec("safety_monitor", "safety_monitor", NS, params))
    return proc


def subscribe(s):
    estop = s.probe.subscribe(f"{NS}/safety/estop", Bool, wire.LATCHED_QOS)
    safe = s.probe.subscribe(f"{NS}/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    events = s.probe.subscribe(f"{NS}/safety/violations", DiagnosticStatus, wire.EVENT_QOS)
    cmd = s.probe.publisher(f"{NS}/command", Float64MultiArray, wire.COMMAND_QOS)
    return estop, safe, events, cmd


def send(s, cmd, safe, values):
    n = len(safe)
    cmd.publish(wire.labelled_array(values, XYZ))
    s.probe.wait_for(lambda: len(safe) > n, 10, "the checked command")
    return wire.read_labelled(safe[n][1])


def reset(s):
    return s.probe.call(f"{NS}/safety/reset", Trigger)


def latest(store):
    return store[-1][1].data if store else None


def event(events, rule):
    for _, e in reversed(events):
        if e.name == rule:
            return {kv.key: kv.value for kv in e.values}
    return None


def test_starts_in_estop_until_reset_and_latches_on_a_collision(ros_session, tmp_path):
    s = ros_session
    start_monitor(s, config=relaxed_watchdogs(tmp_path))  # the collision, not a watchdog, must trip it
    estop, safe, events, cmd = subscribe(s)
    s.probe.wait_for(lambda: latest(estop) is True, 30, "the latched e-stop at start-up")
    s.probe.wait_for_subscribers(cmd)
    feed = SensorFeed(s.probe).start(s.probe)
    try:
        values, labels = send(s, cmd, safe, [0.1, 0.0, 0.0])
        assert labels == tuple(XYZ) and np.array_equal(values, np.zeros(3))  # e-stopped: the hold command
        s.probe.wait_for(lambda: reset(s).success, 10, "a reset to be accepted with fresh sensors")
        s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false")
        values, _ = send(s, cmd, safe, [0.1, 0.0, 0.0])
        assert values == pytest.approx([0.1, 0.0, 0.0])  # forwarded
        n_safe = len(safe)
        feed.force_z = -45.0  # collision (40 N)
        s.probe.wait_for(lambda: latest(estop) is True, 5, "the e-stop after a collision-level force")
        s.probe.wait_for(lambda: len(safe) > n_safe, 5, "the hold command published on the trip")
        assert np.array_equal(wire.read_labelled(safe[n_safe][1])[0], np.zeros(3))
        def collision():  # the contact-level event of the same reading may arrive first
            return next(({kv.key: kv.value for kv in e.values} for _, e in reversed(events)
                         if e.name == "wrench.force_norm"
                         and {kv.key: kv.value for kv in e.values}.get("level") == "collision"), None)

        s.probe.wait_for(lambda: collision() is not None, 5, "the collision-level violation event")
        ev = collision()
        assert ev["level"] == "collision" and float(ev["value"]) == 45.0 and float(ev["threshold"]) == 40.0
        assert ev["response"] == "estop" and float(ev["decided_at"]) >= float(ev["sensor_stamp"]) > 0
        assert float(ev["command_published_at"]) >= float(ev["decided_at"])  # the hold went out on the trip
        refused = reset(s)
        assert not refused.success and "wrench.force_norm" in refused.message
        values, _ = send(s, cmd, safe, [0.1, 0.0, 0.0])
        assert np.array_equal(values, np.zeros(3))
        feed.force_z = -3.4  # the force is gone; the e-stop stays latched
        time.sleep(0.3)
        assert latest(estop) is True
        assert np.array_equal(send(s, cmd, safe, [0.1, 0.0, 0.0])[0], np.zeros(3))
        reply = reset(s)
        assert reply.success and "released" in reply.message
        s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false after the reset")
    finally:
        feed.stop()


def test_stale_sensor_trips_within_its_deadline_plus_one_period(ros_session):
    s = ros_session
    deadline, period = 0.25, 0.002  # config/safety/sawyer.yaml watchdogs.wrench; the node's check_period
    start_monitor(s, check_period=period)
    estop, _safe, events, _cmd = subscribe(s)
    s.probe.wait_for(lambda: latest(estop) is True, 30, "the latched e-stop at start-up")
    feed = SensorFeed(s.probe).start(s.probe)
    try:
        s.probe.wait_for(lambda: reset(s).success, 10, "a reset to be accepted with fresh sensors")
        s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false")
        time.sleep(0.5)
        assert latest(estop) is False  # fresh streams do not trip
        feed.send_wrench = False
        time.sleep(0.05)
        last = feed.last_wrench
        s.probe.wait_for(lambda: latest(estop) is True, 5, "the e-stop on the stale wrench stream")
        tripped_after = estop[-1][0] - last
        assert deadline <= tripped_after <= deadline + period + MARGIN, tripped_after
        s.probe.wait_for(lambda: event(events, "stale.wrench") is not None, 5, "the stale event")
        ev = event(events, "stale.wrench")
        assert float(ev["value"]) >= deadline and float(ev["threshold"]) == deadline
        assert float(ev["sensor_stamp"]) == pytest.approx(feed.last_wrench_stamp, abs=1e-6)
        refused = reset(s)
        assert not refused.success and "stale.wrench" in refused.message
        feed.send_wrench = True
        s.probe.wait_for(lambda: reset(s).success, 5, "a reset once the stream is fresh again")
    finally:
        feed.stop()


def test_nan_in_a_sensor_engages_the_estop(ros_session):
    s = ros_session
    start_monitor(s)
    estop, _safe, events, _cmd = subscribe(s)
    s.probe.wait_for(lambda: latest(estop) is True, 30, "the latched e-stop at start-up")
    feed = SensorFeed(s.probe).start(s.probe)
    try:
        s.probe.wait_for(lambda: reset(s).success, 10, "a reset to be accepted with fresh sensors")
        s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false")
        bad = list(HOME)
        bad[2] = float("nan")
        feed.position = bad
        s.probe.wait_for(lambda: latest(estop) is True, 5, "the e-stop on a NaN joint position")
        s.probe.wait_for(lambda: event(events, "joint_states.non_finite") is not None, 5, "the fault event")
        assert event(events, "joint_states.non_finite")["key"] == "right_j2.position"
        assert not reset(s).success
    finally:
        feed.stop()


def test_a_restarted_monitor_is_in_estop_until_reset(ros_session, tmp_path):
    s = ros_session
    spec = NodeSpec("safety_monitor", "safety_monitor", NS, {"robot": "sawyer", "action_labels": "vx,vy,vz",
                                                             "config": relaxed_watchdogs(tmp_path)})
    first = s.group.start(spec)
    estop, safe, _events, cmd = subscribe(s)
    s.probe.wait_for(lambda: latest(estop) is True, 30, "the latched e-stop at start-up")
    feed = SensorFeed(s.probe).start(s.probe)
    try:
        s.probe.wait_for(lambda: reset(s).success, 10, "a reset to be accepted with fresh sensors")
        s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false")
        first.kill()  # SIGKILL: no clean shutdown
        n = len(estop)
        s.group.start(spec)
        s.probe.wait_for(lambda: len(estop) > n, 30, "the new monitor's latched e-stop")
        assert latest(estop) is True
        s.probe.wait_for_subscribers(cmd)
        time.sleep(0.3)
        assert np.array_equal(send(s, cmd, safe, [0.1, 0.0, 0.0])[0], np.zeros(3))  # held until reset
        s.probe.wait_for(lambda: reset(s).success, 10, "the new monitor's reset")
        s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false")
        assert send(s, cmd, safe, [0.1, 0.0, 0.0])[0] == pytest.approx([0.1, 0.0, 0.0])
    finally:
        feed.stop()


def test_lockstep_profile_answers_only_commands(ros_session):
    """watchdogs:=false (simulated lockstep training): no deadlines, and a trip is enforced at the
    next command instead of by an unsolicited hold (each command_safe is one simulation step)."""
    s = ros_session
    start_monitor(s, watchdogs=False)
    estop, safe, _events, cmd = subscribe(s)
    s.probe.wait_for(lambda: latest(estop) is True, 30, "the latched e-stop at start-up")
    s.probe.wait_for_subscribers(cmd)
    assert reset(s).success  # no sensor has ever arrived, and nothing is overdue
    s.probe.wait_for(lambda: latest(estop) is False, 5, "estop false")
    assert send(s, cmd, safe, [0.1, 0.0, 0.0])[0] == pytest.approx([0.1, 0.0, 0.0])
    n = len(safe)
    wrench = s.probe.publisher(f"{NS}/wrench", WrenchStamped, wire.SENSOR_QOS)
    s.probe.wait_for_subscribers(wrench)
    w = WrenchStamped()
    w.wrench.force.z = -60.0
    wrench.publish(w)
    s.probe.wait_for(lambda: latest(estop) is True, 5, "the e-stop")
    time.sleep(0.3)
    assert len(safe) == n  # nothing unsolicited
    assert np.array_equal(send(s, cmd, safe, [0.1, 0.0, 0.0])[0], np.zeros(3))
