"""``morl-robot safety-test --robot NAME|PATH [--backend sim|hardware] --out DIR``: scripted
probes through the full graph (the nodes of ``config/sessions/safety_test.yaml``, the graph of
``safety_test.launch.py``), one report line per rule: threshold, trip value, latency, pass/fail.

This process plays the policy (``command`` and ``heartbeat`` at the control rate) and watches
``command_safe``, ``safety/estop``, ``safety/violations`` and the sensor streams.  What runs on
which robot is data: the robot YAML's ``safety_test:`` section (:mod:`morl_robot.robots.config`).
The probes, the gauge, the report and the exit codes (:data:`morl_robot.safety.testing.VERDICTS`):
docs/tutorials/safety_test.md.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.cli.options import add_observe, add_set, deprecated
from morl_robot.cli.video import add_video, node_video_overrides
from morl_robot.errors import MorlRobotError, UsageError
from morl_robot.robots.spec import ControlMode


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("safety-test", help="force-threshold safety tests through the full graph, with a report")
    p.add_argument("--robot", required=True, metavar="NAME|PATH",
                   help="the robot whose safety rules are tested: sawyer, shadow_hand (alias shadow) or a robot YAML "
                        "path with a safety_test: section (docs/howto/add_robot.md)")
    p.add_argument("--backend", choices=("sim", "hardware"), default="sim",
                   help="the robot: MuJoCo simulation or the hardware driver")
    p.add_argument("--emulate", default=None, metavar="FAULTS",
                   help="--backend hardware without a robot: start the MuJoCo driver emulator, with faults "
                        "(latency=S,jitter=S,drop=P,reorder=P,rate=HZ,seed=N) or 'none'; no operator: the gauge "
                        "levels are 'not reached' at once (default: no emulator)")
    p.add_argument("--out", required=True, help="report directory (report.json, report.md, plots, logs/)")
    add_observe(p)
    add_video(p, "phase and probe (--backend sim: each phase's robot node renders DIR/<mode>_segment_<n>.mp4, one per reset)")
    p.add_argument("--session", default="safety_test", metavar="NAME|PATH",
                   help="session YAML, name under config/sessions/ or path (default safety_test)")
    add_set(p, ("session", "robot", "safety"))
    p.add_argument("--latency-tolerance", type=float, default=0.02, help="s, sensor stamp → held command (default 0.02)")
    p.add_argument("--approach-speeds", dest="approach_speeds", default="0.02,0.2",
                   help="Sawyer: the speeds (m/s, comma-separated) at which the peg is driven down onto the fixture, "
                        "one press each; the approach rule must slow each to its contact speed before the touch "
                        "(default 0.02,0.2; --ramp-speeds is the old name)")
    p.add_argument("--gauge-rate", type=float, default=20.0,
                   help="N/s at which the force gauge presses (sim: the simulated gauge's ramp; hardware: the rate the "
                        "operator is asked for) the Sawyer's peg / the Shadow's fingertip up to the collision level "
                        "(default 20)")
    p.add_argument("--use-sim-time", action="store_true",
                   help="every node follows /clock from the simulated robot (ROS use_sim_time; the launch argument use_sim_time:=true)")
    p.add_argument("--namespace", default=None, help="ROS namespace of the graph (default: the session YAML's)")
    p.add_argument("--attach", action="store_true",
                   help="probe the safety-test graph already running on $ROS_DOMAIN_ID (what safety_test.launch.py "
                        "starts) instead of starting its nodes")
    p.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID or random)")
    deprecated(p, "--config", "--session")
    deprecated(p, "--ramp-speeds", "--approach-speeds")
    p.set_defaults(func=run)


def _stamp(msg_stamp: Any) -> float:
    return float(msg_stamp.sec) + 1e-9 * float(msg_stamp.nanosec)


class Harness:
    """The probe's side of the graph: a stand-in policy (commands + heartbeat at ``rate``) and
    wall-clock-stamped records of everything the monitor and the robot publish."""

    def __init__(self, runner: Any, ns: str, labels: tuple[str, ...], rate: float, backend: str = "sim") -> None:
        from diagnostic_msgs.msg import DiagnosticStatus
        from geometry_msgs.msg import WrenchStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool, Float64MultiArray, Header, String

        from morl_robot.nodes import wire

        self.runner, self.ns, self.labels, self.period = runner, ns, labels, 1.0 / rate
        self.backend = backend
        self.wire = wire
        probe = runner.probe
        self.pub_cmd = probe.publisher(f"{ns}/command", Float64MultiArray, wire.COMMAND_QOS)
        self.pub_hb = probe.publisher(f"{ns}/heartbeat", Header, wire.COMMAND_QOS)
        self.Header = Header
        self.lock = threading.Lock()
        self.safe: list[tuple[float, np.ndarray]] = []  # (receive wall time, command_safe values)
        self.wrench: list[tuple[float, float, np.ndarray]] = []  # (stamp, receive, wrench)
        self.tactile: list[tuple[float, np.ndarray, tuple[str, ...]]] = []  # (receive, values, labels)
        self.joints: list[tuple[float, dict[str, float]]] = []  # (stamp, positions by name)
        self.events: list[tuple[float, dict[str, str]]] = []  # (receive, violation values)
        self.sent: list[float] = []  # wall times at which commands were published (the newest 1000)
        self.estop = True
        # wall-clock windows in which a probe stopped a stream on purpose (its missed deadlines are
        # the probe's, not the host's)
        self.deliberate: list[tuple[float, float]] = []

        def on_safe(m: Any) -> None:
            v = wire.split_command(*wire.read_labelled(m)).values
            with self.lock:
                self.safe.append((time.time(), v))

        def on_wrench(m: Any) -> None:
            f, t = m.wrench.force, m.wrench.torque
            with self.lock:
                self.wrench.append((_stamp(m.header.stamp), time.time(), np.array([f.x, f.y, f.z, t.x, t.y, t.z])))

        def on_tactile(m: Any) -> None:
            v, lab = wire.read_labelled(m)
            with self.lock:
                self.tactile.append((time.time(), v, lab))

        def on_joints(m: Any) -> None:
            with self.lock:
                self.joints.append((_stamp(m.header.stamp), dict(zip(m.name, m.position))))

        def on_event(m: Any) -> None:
            with self.lock:
                self.events.append((time.time(), {kv.key: kv.value for kv in m.values}))

        def on_estop(m: Any) -> None:
            self.estop = bool(m.data)

        self.session: float | None = None  # the graph's session id (its nodes announce it): the commands carry it

        def on_session(m: Any) -> None:
            import json

            self.session = wire.session_token(str(json.loads(m.data).get("session", "")))

        probe.subscribe(f"{ns}/session", String, wire.LATCHED_QOS, on_session)
        probe.subscribe(f"{ns}/command_safe", Float64MultiArray, wire.COMMAND_QOS, on_safe)
        probe.subscribe(f"{ns}/wrench", WrenchStamped, wire.SENSOR_QOS, on_wrench)
        probe.subscribe(f"{ns}/tactile", Float64MultiArray, wire.SENSOR_QOS, on_tactile)
        probe.subscribe(f"{ns}/joint_states", JointState, wire.SENSOR_QOS, on_joints)
        probe.subscribe(f"{ns}/safety/violations", DiagnosticStatus, wire.EVENT_QOS, on_event)
        probe.subscribe(f"{ns}/safety/estop", Bool, wire.LATCHED_QOS, on_estop)
        # the force gauge (sim), made now: creating a publisher mid-probe stalled this process's
        # heartbeat for ~0.5 s (a stale.heartbeat e-stop during the fingertip press)
        self._pub_gauge = probe.publisher(f"{ns}/robot_node/external_wrench", WrenchStamped, wire.COMMAND_QOS)
        self._gauge_matched = False
        self.command = np.zeros(len(labels))
        self.sending = False
        self.heartbeat = True
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop:
            if self.heartbeat:
                hb = self.Header()
                now = time.time()
                hb.stamp.sec, hb.stamp.nanosec = int(now), int((now % 1) * 1e9)
                hb.frame_id = "safety-test"
                self.pub_hb.publish(hb)
            if self.sending:
                self.publish(self.command)
            next_t += self.period
            time.sleep(max(0.0, next_t - time.monotonic()))

    def press(self, body: str, force: tuple[float, float, float]) -> None:
        """Sim only: the force gauge (the robot node's ``~/external_wrench``) pushes ``body`` with
        ``force`` (N, world frame) until the next call; ``(0, 0, 0)`` releases it."""
        from geometry_msgs.msg import WrenchStamped

        if not self._gauge_matched:
            self.runner.probe.wait_for_subscribers(self._pub_gauge, 1, 20.0)  # a push sent unmatched is lost
            self._gauge_matched = True
        msg = WrenchStamped()
        msg.header.frame_id = body
        now = time.time()
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(now), int((now % 1) * 1e9)
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = map(float, force)
        self._pub_gauge.publish(msg)

    def publish(self, values: np.ndarray) -> float:
        t = time.time()
        self.pub_cmd.publish(self.wire.command_message(values, self.labels, session=self.session or None))
        with self.lock:
            self.sent.append(t)
            del self.sent[:-1000]
        return t

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)

    # --- helpers -------------------------------------------------------------------------
    def call(self, service: str, srv_type: Any, request: Any = None) -> Any:
        return self.runner.probe.call(service, srv_type, request, timeout=10.0)

    def restart(self) -> None:
        """Simulation: robot back to its start configuration, simulation running; both backends:
        e-stop released (a real robot stays where it is: a reset would be a motion)."""
        from std_srvs.srv import SetBool, Trigger

        self.sending = False
        self.heartbeat = True
        if self.backend == "sim":
            self.call(f"{self.ns}/robot_node/set_pause", SetBool, SetBool.Request(data=False))
            self.call(f"{self.ns}/robot_node/reset_world", Trigger)
        time.sleep(0.5)
        deadline = time.monotonic() + 15
        while True:
            reply = self.call(f"{self.ns}/safety/reset", Trigger)
            if reply.success:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the safety monitor will not release: {reply.message}")
            time.sleep(0.3)
        self.runner.probe.wait_for(lambda: not self.estop, 5, "e-stop released")
        with self.lock:
            self.events.clear()
            self.safe.clear()

    def wait_event(self, pred: Callable[[dict[str, str]], bool], timeout: float) -> tuple[float, dict[str, str]] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for t, e in self.events:
                    if pred(e):
                        return t, e
            time.sleep(0.01)
        return None

    def first_safe_after(self, t: float, held: Callable[[np.ndarray], bool], timeout: float = 1.0) -> float | None:
        """Receive time of the first ``command_safe`` after wall time ``t`` satisfying ``held``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for rt, v in self.safe:
                    if rt >= t and held(v):
                        return rt
            time.sleep(0.01)
        return None


def _first_trip(h: Any, level: str, rules: tuple[str, ...]) -> float:
    """Sensor stamp of the earliest ``level`` violation event of any of ``rules`` (inf: none).
    Rules on the same quantity trip one sample apart at most; the first of them stops the robot."""
    with h.lock:
        stamps = [_event_float(e, "sensor_stamp") for _, e in h.events
                  if e.get("rule") in rules and e.get("level", "").startswith(level)]
    return min((s for s in stamps if not math.isnan(s)), default=math.inf)


def _event_float(e: dict[str, str], key: str) -> float:
    try:
        return float(e.get(key, "nan"))
    except ValueError:
        return math.nan


def _limit(monitor: Any, rule: str, level: str, key: str | None = None) -> tuple[float, str, str]:
    for lim in monitor.describe_rules():
        if lim.rule == rule and lim.level == level and (key is None or lim.key == key):
            return lim.threshold, lim.unit, lim.response.label
    raise UsageError(f"the safety configuration has no rule {rule} ({level}{', ' + key if key else ''})")


# --- probes ---------------------------------------------------------------------------------
#: Wrench samples in a row above 1 N (tared) that make a touch (:func:`probe_peg_press`).
TOUCH_SAMPLES = 3


def probe_peg_press(h: Harness, monitor: Any, speed: float, tol: float, out: Path, press: Any, backend: str = "sim",
                    gauge_rate: float = 20.0, gauge_timeout: float = 60.0, robot: str = "") -> list[Any]:
    """``press.kind: wrench`` (the Sawyer, as deployed: compliant force-limited control, the
    ``approach`` rule): drive the tool down onto the scene at ``speed`` m/s; the approach rule must
    slow it to its contact speed before it arrives (``approach``).  The robot's own press then
    settles at the compliant controller's force (below its limit; pressing down *lowers* the raw
    wrist reading, which holds the tool's weight), so the wrench levels are reached as on a test
    rig: a force gauge pushes the tool until ``wrench.force_norm`` (and ``wrench.force_axis`` on the
    gauge's axis) trip their contact and then their collision levels.  In simulation the gauge is
    the robot node's ``~/external_wrench`` on ``press.gauge.body`` along ``press.gauge.direction``,
    ramped at ``gauge_rate`` N/s, while the probe withdraws the tool at ``press.withdraw_speed`` (the
    contact clamp must slow that); on hardware the operator presses the tool with a gauge within
    ``gauge_timeout`` s (instructions on stderr; the probe holds the arm still), and the levels nobody
    reached are 'not reached'."""
    from morl_robot.safety.testing import RuleCheck, Trace, plot_trace

    gauge_body, gauge_dir, gauge_max = press.gauge.body, tuple(press.gauge.direction), press.gauge.max_force
    axis = int(np.argmax(np.abs(gauge_dir)))  # the per-axis rule's component: the gauge's axis
    axis_key = "f" + "xyz"[axis]
    name = f"{gauge_body} press {speed:g} m/s + force gauge"
    contact, unit, contact_resp = _limit(monitor, "wrench.force_norm", "contact", "norm")
    collision, _, collision_resp = _limit(monitor, "wrench.force_norm", "collision", "norm")
    h.restart()
    iz = h.labels.index("vz")
    with h.lock:
        rest = h.wrench[-1][2][:3].copy() if h.wrench else np.zeros(3)
    checks: list[Any] = []

    # 1. the approach and the robot's own press
    cmd = np.zeros(len(h.labels))
    cmd[iz] = -speed
    t_approach = time.time()
    h.command, h.sending = cmd.copy(), True
    touch: list[float] = []  # receive time of the first touching sample

    def touched() -> bool:
        """1 N of tared force in TOUCH_SAMPLES wrench samples in a row (the raw norm falls as the peg
        presses: it held the weight); one or two samples are the tool's inertia as the approach rule
        brakes (a 1 N spike on the hardware backend's position-stepped arm)."""
        with h.lock:
            samples = [(rt, float(np.linalg.norm(w[:3] - rest))) for stamp, rt, w in h.wrench if stamp > t_approach]
        for i in range(len(samples) - TOUCH_SAMPLES + 1):
            if all(f > 1.0 for _, f in samples[i:i + TOUCH_SAMPLES]):
                touch[:] = [samples[i][0]]
                return True
        return False
    h.runner.probe.wait_for(touched, 0.25 / speed + 30, f"the tool ({gauge_body}) to touch the scene")
    time.sleep(1.0)  # the compliant press settles
    with h.lock:
        pressed = float(np.linalg.norm(h.wrench[-1][2][:3] - rest)) if h.wrench else math.nan
        raw = float(np.linalg.norm(h.wrench[-1][2][:3])) if h.wrench else math.nan
    press_detail = (f"the robot's own press settled at {pressed:.3g} N tared ({raw:.3g} N raw: the weight "
                    f"reading {float(np.linalg.norm(rest)):.3g} N partly relieved)")
    rule = monitor.rules.approach
    if rule is not None:
        checks.append(_approach_check(h, rule, name, speed, t_approach, touch[0], tol, press_detail))
    if h.estop:
        raise RuntimeError(f"the approach at {speed:g} m/s tripped the e-stop; see {out / 'logs'}")

    # 2. the force gauge
    with h.lock:  # the wrench checks cover the gauge press only
        h.events.clear()
        h.safe.clear()
    withdraw = press.withdraw_speed if backend == "sim" else 0.0
    cmd[iz] = withdraw
    h.command = cmd.copy()

    def level_event(level: str, rule: str = "wrench.force_norm") -> Callable[[dict[str, str]], bool]:
        return lambda e: e.get("rule") == rule and e.get("level", "").startswith(level)

    hit = None
    if backend == "sim":
        t0, pushed = time.monotonic(), 0.0
        try:  # until both collision levels (‖F‖ and Fz, one sample apart at most) have tripped
            while pushed < gauge_max:
                pushed = gauge_rate * (time.monotonic() - t0)
                h.press(gauge_body, tuple(pushed * d for d in gauge_dir))
                time.sleep(h.period)
                hit = h.wait_event(level_event("collision"), 0.0)
                if hit is not None and h.wait_event(level_event("collision", "wrench.force_axis"), 0.0) is not None:
                    break  # (both collision levels: ‖F‖ and the gauge's axis, one sample apart at most)
        finally:
            h.press(gauge_body, (0.0, 0.0, 0.0))
        gauge = (f"simulated force gauge on '{gauge_body}' (world {gauge_dir}), ramped at "
                 f"{gauge_rate:g} N/s, {pushed:.3g} N applied at the end; the probe withdrew at {withdraw:g} m/s")
    elif gauge_timeout <= 0:
        gauge = "no force gauge (the driver emulator: nobody to press)"
    else:
        print(f"\n*** Press the tool ({gauge_body}) along {gauge_dir} (world frame) with a force gauge, slowly (about "
              f"{gauge_rate:g} N/s), until the e-stop trips at {collision:g} N on the wrist sensor; waiting "
              f"{gauge_timeout:g} s ***\n", file=sys.stderr, flush=True)
        hit = h.wait_event(level_event("collision"), gauge_timeout)
        gauge = "force gauge pressed by the operator (the arm held still)"
    h.sending = False
    trace = Trace("‖F‖ wrist force", unit)
    trace_z = Trace(f"|F{'xyz'[axis]}| wrist force", unit)  # the gauge's axis: the per-axis rule's quantity
    with h.lock:
        for stamp, _, w in h.wrench:
            if stamp >= t_approach - 0.2:
                trace.add(stamp, float(np.linalg.norm(w[:3])))
                trace_z.add(stamp, abs(float(w[axis])))
    scale = monitor.rules.slow_scale
    levels = [("wrench.force_norm", "norm", "contact", contact, contact_resp, trace),
              ("wrench.force_norm", "norm", "collision", collision, collision_resp, trace)]
    levels += [("wrench.force_axis", axis_key, lv, *_limit(monitor, "wrench.force_axis", lv, axis_key)[::2], trace_z)
               for lv in ("contact", "collision")]
    for rule_name, key, level, threshold, resp, tr in levels:
        c = RuleCheck(name, rule_name, level, resp, threshold, unit, latency_tolerance=tol)
        ev = h.wait_event(lambda e, r=rule_name, k=key, lv=level: (e.get("rule") == r and e.get("key") == k
                                                                  and e.get("level", "").startswith(lv)), 0.2)
        if ev is not None:
            _, e = ev
            c.tripped = True
            c.tripped_value = _event_float(e, "value")
            c.threshold = _event_float(e, "threshold")  # the level in force (accelerating levels differ)
            c.threshold_error = c.tripped_value - c.threshold
            stamp = _event_float(e, "sensor_stamp")
            c.threshold_tolerance = tr.increment_before(stamp)
            if level == "collision":
                zero = lambda v: bool(np.all(np.abs(v) < 1e-12))
                first = _first_trip(h, "collision", ("wrench.force_norm", "wrench.force_axis"))
                if first < stamp:  # the other rule latched the e-stop first: held since its command
                    held_since = h.first_safe_after(first, zero)
                    t_held = None if held_since is None else max(held_since, stamp)
                    c.detail = f"the e-stop was already latched at {first - stamp:+.3f} s; "
                else:
                    t_held = h.first_safe_after(stamp, zero)
            else:  # contact: the next command comes out slowed (clamp), one command period later at most
                c.latency_tolerance = tol + h.period
                t_held = h.first_safe_after(stamp, lambda v: v[iz] <= scale * withdraw + 1e-9)
            c.latency = (t_held - stamp) if t_held is not None else math.nan
            c.window = (stamp, t_held if t_held is not None else stamp + 1.0)
            c.detail += f"{key}, level {e.get('level')}; {gauge}"
        else:
            peak = max((v for t, v in zip(tr.times, tr.values) if t >= t_approach), default=0.0)
            c.reachable = peak >= c.threshold
            c.detail = ((f"the wrist read at most {peak:.3g} N ({gauge}); on hardware an operator presses the tool "
                         f"with a force gauge past {c.threshold:g} N within the {gauge_timeout or 60:g} s the probe waits")
                        if not c.reachable else f"no violation event although the threshold was crossed ({gauge})")
        checks.append(c.judge())
    plot = out / f"{gauge_body}_press_{speed:g}.png"
    plot_trace(trace, collision, _event_float(hit[1], "sensor_stamp") if hit else None,
               _event_float(hit[1], "value") if hit else None, f"{robot}: {name}", plot, {"contact": contact})
    for c in checks:
        c.plot = plot.name
    return checks


def _approach_check(h: Harness, rule: Any, name: str, speed: float, t_approach: float, t_touch: float,
                    tol: float, press_detail: str) -> Any:
    """The ``approach`` rule on the way down: the monitor slowed the twist near the fixture
    (its ``approach`` events) and the peg arrived no faster than the rule's contact speed (the
    reached value: ``vz`` of the last ``command_safe`` before the touch).  Latency: the probe's
    command → the first slowed ``command_safe`` (the clamp acts on the command it answers)."""
    from morl_robot.safety.testing import RuleCheck

    iz = h.labels.index("vz")
    limit = rule.contact_speed
    c = RuleCheck(name, "approach", "near", "clamp", limit, "m/s", latency_tolerance=tol)
    with h.lock:
        events = [(t, e) for t, e in h.events if t >= t_approach and e.get("rule") == "approach"]
        answers = [(t, v) for t, v in h.safe if t_approach <= t <= t_touch]
        sent = list(h.sent)
    arrival = abs(answers[-1][1][iz]) if answers else math.nan
    c.tripped_value = arrival
    c.threshold_error = max(0.0, arrival - limit)
    c.threshold_tolerance = 1e-6  # m/s: the clamp is exact
    boxes = sorted({e.get("key", "?") for _, e in events})
    if speed <= limit:  # nothing to slow down: the rule must stay out of the way
        c.tripped = not math.isnan(arrival)
        c.latency_tolerance = math.inf
        c.detail = f"requested {speed:g} m/s, within the contact speed: not limited; {press_detail}"
        return c.judge()
    c.tripped = bool(events) and not math.isnan(arrival)
    slowed = next((t for t, v in answers if abs(v[iz]) < speed - 1e-9), None)
    if slowed is not None:
        before = [t for t in sent if t <= slowed]
        c.latency = slowed - before[-1] if before else math.nan
        c.window = (before[-1] if before else slowed, slowed)
    c.detail = (f"requested {speed:g} m/s, slowed near {', '.join(boxes) or 'nothing'}; arrived at "
                f"{arrival * 1e3:.3g} mm/s; {press_detail}")
    return c.judge()


def probe_fingertip(h: Harness, monitor: Any, tol: float, out: Path, press: Any, backend: str = "sim",
                    gauge_timeout: float = 60.0, gauge_rate: float = 20.0, robot: str = "") -> list[Any]:
    """``press.kind: tactile`` (the Shadow Hand): step the ``press.reach`` actuators (the wrist and
    the first finger flex onto the block of sim/shadow_hand/touch.xml) until ``press.sensor`` reads
    its tactile contact level, then press it further with a force gauge until the collision level
    trips.  The finger's own motor presses ~23 N at most, so the 60 N level needs the gauge, as on a
    test rig: in simulation an external force on ``press.gauge.body`` (``~/external_wrench``, ramped
    at ``gauge_rate`` N/s); on hardware an operator presses the sensor with a gauge within
    ``gauge_timeout`` s (instructions on stderr), and the rule is 'not reached' if nobody does."""
    from morl_robot.safety.testing import RuleCheck, Trace, plot_trace

    name = f"{press.sensor} press + force gauge"
    sensor = press.sensor
    gauge_body, gauge_dir, gauge_max = press.gauge.body, tuple(press.gauge.direction), press.gauge.max_force
    threshold, unit, resp = _limit(monitor, "tactile", "collision", sensor)
    contact, _, contact_resp = _limit(monitor, "tactile", "contact", sensor)
    h.restart()
    with h.lock:
        q = dict(h.joints[-1][1])
    cmd = _actuator_targets(monitor, q)
    t_start = time.time()
    h.sending = True
    lo, hi = monitor.spec.command_bounds(monitor.spec.default_control_mode)
    steps = []  # (index, step, bound): each reach actuator's target moves by step until its bound
    for r in press.reach:
        i = h.labels.index(r.actuator)
        steps.append((i, r.step, r.limit if r.limit is not None else (hi[i] if r.step > 0 else lo[i])))

    def tactile_event(level: str) -> Callable[[dict[str, str]], bool]:
        return lambda e: (e.get("rule") == "tactile" and e.get("key") == sensor
                          and e.get("level", "").startswith(level))

    hit = None
    for _ in range(200):  # step by step onto the surface (soft limits clamp the last bit)
        for i, step, bound in steps:
            cmd[i] = min(cmd[i] + step, bound) if step > 0 else max(cmd[i] + step, bound)
        h.command = cmd.copy()
        hit = h.wait_event(tactile_event("collision"), 0.05)
        if hit is not None or h.wait_event(tactile_event("contact"), 0.0) is not None:
            break
    # the finger rests on the block (its targets held): the gauge presses the fingertip onto it
    gauge = ""
    if hit is None and backend == "sim":
        t0, pushed = time.monotonic(), 0.0
        try:
            while hit is None and pushed < gauge_max:
                pushed = gauge_rate * (time.monotonic() - t0)
                h.press(gauge_body, tuple(pushed * d for d in gauge_dir))
                hit = h.wait_event(tactile_event("collision"), h.period)
        finally:
            h.press(gauge_body, (0.0, 0.0, 0.0))
        gauge = (f"simulated force gauge on {gauge_body} (world {gauge_dir}), ramped at {gauge_rate:g} N/s, "
                 f"{pushed:.3g} N applied at the end")
    elif hit is None and gauge_timeout <= 0:
        gauge = "no force gauge (the driver emulator: nobody to press)"
    elif hit is None:
        print(f"\n*** Press the sensor {sensor} straight onto its pad with a force gauge, slowly "
              f"(about {gauge_rate:g} N/s), until the e-stop trips at {threshold:g} N; waiting {gauge_timeout:g} s "
              "***\n", file=sys.stderr, flush=True)
        hit = h.wait_event(tactile_event("collision"), gauge_timeout)
        gauge = "force gauge pressed by the operator"
    h.sending = False
    trace = Trace(sensor, unit)
    with h.lock:
        for rt, v, lab in h.tactile:
            if rt >= t_start - 0.5 and sensor in lab:
                trace.add(rt, float(v[lab.index(sensor)]))
    checks = []
    for level, thr, response in (("contact", contact, contact_resp), ("collision", threshold, resp)):
        c = RuleCheck(name, "tactile", level, response, thr, unit, latency_tolerance=tol)
        ev = h.wait_event(tactile_event(level), 0.2)
        if ev is not None:
            t_event, e = ev
            c.tripped, c.tripped_value = True, _event_float(e, "value")
            c.threshold_error = c.tripped_value - c.threshold
            stamp = _event_float(e, "sensor_stamp")
            c.threshold_tolerance = trace.increment_before(stamp + 0.005)
            if response == "estop":
                t_held = h.first_safe_after(stamp, lambda v: True)
            else:  # a warning's response is the violation event itself
                t_held = t_event
            c.latency = (t_held - stamp) if t_held is not None else math.nan
            c.window = (stamp, t_held if t_held is not None else stamp + 1.0)
            c.detail = gauge if level == "collision" else "the robot's own motors"
        else:
            peak = max(trace.values, default=0.0)
            c.reachable = peak >= thr
            c.detail = ((f"{sensor} read at most {peak:.3g} N ({gauge or 'its own motors'}); on hardware an "
                         f"operator presses it with a force gauge past {thr:g} N within the {gauge_timeout or 60:g} s "
                         "the probe waits")
                        if not c.reachable else "no violation event although the threshold was crossed")
        checks.append(c.judge())
    plot = out / f"{sensor}_press.png"
    plot_trace(trace, threshold, _event_float(hit[1], "sensor_stamp") if hit else None,
               _event_float(hit[1], "value") if hit else None, f"{robot}: {name}", plot, {"contact": contact})
    for c in checks:
        c.plot = plot.name
    return checks


def _actuator_targets(monitor: Any, q: dict[str, float]) -> np.ndarray:
    """Position targets (actuator order) that hold the measured joints (coupled J0 = J1 + J2)."""
    out = []
    for act in monitor.spec.actuators:
        out.append(sum(q.get(j, 0.0) for j in act.joints))
    return np.asarray(out)


def probe_joint_limit(h: Harness, monitor: Any, tol: float, joint: str, step: float = 0.05,
                      direction: int = 1) -> list[Any]:
    """Position mode: ramp one joint's target past its range (``direction`` +1: the upper limit,
    -1: the lower); the monitor clamps the targets into the soft range, so the measured joint must
    get to the soft limit and not past it (+ tracking tolerance)."""
    from morl_robot.safety.testing import RuleCheck

    spec = monitor.spec
    idx = spec.actuator_names.index(joint)
    hard = spec.actuators[idx].upper if direction > 0 else spec.actuators[idx].lower
    soft, _, response = _limit(monitor, "joints.position", "soft", f"{joint}{'>=' if direction > 0 else '<='}")
    h.restart()
    with h.lock:
        q = dict(h.joints[-1][1])
    cmd = _actuator_targets(monitor, q)
    h.sending = True
    first_over = None
    target = cmd[idx]
    while direction * (target - hard) < 0.1:
        target += direction * step
        cmd[idx] = target
        h.command = cmd.copy()
        if first_over is None and direction * (target - soft) > 0:
            first_over = time.time()
        time.sleep(h.period)
    time.sleep(1.0)
    h.sending = False
    with h.lock:
        reached = max(direction * p.get(joint, -math.inf * direction) for _, p in h.joints[-60:]) * direction
        clamped = [direction * v[idx] for rt, v in h.safe if first_over is not None and rt >= first_over]
    c = RuleCheck(f"joint limit {joint} ({'upper' if direction > 0 else 'lower'})", "joints.position", "soft",
                  f"{response} + clamp into the soft range", soft, "rad", latency_tolerance=tol + h.period)
    limit_d = direction * soft
    # tripped = the commands were clamped at the soft limit AND the joint really got there
    c.tripped = bool(clamped) and max(clamped) <= limit_d + 1e-9 and direction * reached >= limit_d - 0.05
    c.tripped_value = reached
    c.threshold_error = max(0.0, direction * (reached - soft))
    c.threshold_tolerance = 0.01  # rad of position tracking error at the clamped target
    t_clamped = h.first_safe_after(first_over or time.time(), lambda v: direction * v[idx] <= limit_d + 1e-9, 0.5)
    c.latency = (t_clamped - first_over) if (t_clamped and first_over) else math.nan
    if t_clamped and first_over:
        c.window = (first_over, t_clamped)
    c.detail = (f"commanded to {target:.3f} rad, command_safe at most {direction * max(clamped, default=math.nan):.4f}"
                f" rad, joint reached {reached:.4f} rad")
    if h.estop:
        c.detail += "; the e-stop tripped during the approach"
    return [c.judge()]


def probe_stale(h: Harness, monitor: Any, tol: float, check_period: float) -> list[Any]:
    """Pause the simulation: joint_states (and wrench/tactile) stop; e-stop after the deadline.  On
    hardware the probe cannot stop the driver's streams: 'not reached' (test it by stopping the
    driver with the robot held)."""
    from std_srvs.srv import SetBool

    from morl_robot.safety.testing import RuleCheck, watchdog_check

    deadline, _, resp = _limit(monitor, "stale.joint_states", "deadline")
    if h.backend != "sim":
        c = RuleCheck("sensor streams dropped", "stale.joint_states", "deadline", resp, deadline, "s",
                      latency_tolerance=check_period + tol, reachable=False,
                      detail="hardware: the probe cannot stop the driver's streams; stop the driver (the robot held "
                             "by its brakes) and watch the monitor e-stop within the deadline")
        return [c.judge()]
    h.restart()
    h.command, h.sending = np.zeros(len(h.labels)), False
    t_paused = time.time()
    h.call(f"{h.ns}/robot_node/set_pause", SetBool, SetBool.Request(data=True))
    hit = h.wait_event(lambda e: e.get("rule", "").startswith("stale.") and e.get("rule") != "stale.command", 5.0)
    h.call(f"{h.ns}/robot_node/set_pause", SetBool, SetBool.Request(data=False))
    h.deliberate.append((t_paused, time.time() + 0.5))
    c = watchdog_check("sensor streams dropped (simulation paused)", "stale.joint_states", deadline, resp,
                       hit[1] if hit is not None else None, h.period, check_period, tol)
    if hit is not None:
        e = hit[1]
        c.detail = f"stream {e.get('key')}" + (f"; {e['detail']}" if e.get("detail") else "")
    return [c]


def probe_nan(h: Harness, tol: float) -> list[Any]:
    from morl_robot.safety.testing import RuleCheck

    h.restart()
    values = np.zeros(len(h.labels))
    values[0] = math.nan
    t = h.publish(values)
    hit = h.wait_event(lambda e: e.get("rule") == "command.non_finite", 2.0)
    c = RuleCheck("NaN command", "command.non_finite", "fault", "estop", math.nan, "", latency_tolerance=tol)
    if hit is not None:
        c.tripped = True
        t_held = h.first_safe_after(t, lambda v: bool(np.all(np.isfinite(v))))
        c.latency = (t_held - t) if t_held is not None else math.nan
        c.window = (t, t_held if t_held is not None else t + 1.0)
        c.detail = "latency from the command's publication (commands carry no stamp)"
        if not h.estop:
            c.robot_problems.append("no e-stop after a NaN command")
    return [c.judge()]


def probe_flood(h: Harness, monitor: Any, speed: float) -> list[Any]:
    """Commands at 20x the control rate, alternating sign: every command is answered, none passes
    its limits (rate-of-change limits where configured)."""
    from morl_robot.safety.testing import RuleCheck

    h.restart()
    with h.lock:
        q = dict(h.joints[-1][1]) if h.joints else {}
    base = np.zeros(len(h.labels)) if "vx" in h.labels else _actuator_targets(monitor, q)
    before = _monitor_counts(h)
    n = 400
    sent = 0
    for k in range(n):
        v = base.copy()
        v[-1 if "vx" not in h.labels else h.labels.index("vz")] += (speed if k % 2 else -speed)
        h.publish(v)
        sent += 1
        time.sleep(h.period / 20)
    time.sleep(1.0)
    with h.lock:
        answered = list(h.safe)
    after = _monitor_counts(h)
    received = after["commands"] - before["commands"]
    answers = (after["held"] - before["held"]) + (after["forwarded"] - before["forwarded"])
    c = RuleCheck(f"command flood ({n} at {20 / h.period:.0f} Hz)", "command.rate", "soft", "clamp", math.nan,
                  "commands", latency_tolerance=math.inf)
    # Every command the monitor received was answered (held, or forwarded within its limits): none
    # passed unchecked.  A loaded machine may not deliver all of the flood: the command QoS keeps the
    # newest 10, and a command dropped there is never executed either.
    c.tripped = received > 0 and answers == received
    dropped = f"; {sent - received} dropped by the keep-last-10 command queue" if received < sent else ""
    if "vx" in h.labels:  # Cartesian: per-command change bounded by linear_acceleration × period
        i = h.labels.index("vz")
        dv = np.abs(np.diff([v[i] for _, v in answered])) if len(answered) > 1 else np.zeros(1)
        cmd_cfg = monitor.config.command
        limit = (cmd_cfg.linear_acceleration.value * cmd_cfg.period.value
                 if cmd_cfg.linear_acceleration is not None else math.inf)
        c.threshold, c.unit = limit, "m/s per command"
        c.threshold_error, c.threshold_tolerance = 0.0, 1e-9
        c.tripped_value = float(dv.max())  # the largest change that got through, next to its limit
        c.detail = f"monitor received {received} of {sent}, answered {answers}{dropped}; max |Δvz| {dv.max():.4g} m/s"
        if dv.max() > limit + 1e-9:
            c.robot_problems.append(f"a change of {dv.max():.4g} m/s per command exceeds the rate limit {limit:.4g}")
        c.judge()
    else:
        c.detail = f"monitor received {received} of {sent}, answered {answers}{dropped}"
        c.judge()
    c.latency = math.nan
    return [c]


def _monitor_counts(h: Harness) -> dict[str, int]:
    """The safety monitor's command counters, from a status published after this call."""
    values = h.runner.probe.next_diagnostics("safety")
    return {k: int(values.get(k, 0)) for k in ("commands", "held", "forwarded")}


def probe_heartbeat(h: Harness, monitor: Any, tol: float, check_period: float) -> list[Any]:
    from morl_robot.safety.testing import watchdog_check

    deadline, _, resp = _limit(monitor, "stale.heartbeat", "deadline")
    h.restart()
    h.command, h.sending = np.zeros(len(h.labels)) if "vx" in h.labels else h.command, "vx" in h.labels
    time.sleep(0.5)
    t_stopped = time.time()
    h.heartbeat = False
    hit = h.wait_event(lambda e: e.get("rule") == "stale.heartbeat", deadline + 3.0)
    h.sending = False
    h.heartbeat = True
    h.deliberate.append((t_stopped, time.time() + 0.5))
    return [watchdog_check("heartbeat stopped", "stale.heartbeat", deadline, resp, hit[1] if hit is not None else None,
                           h.period, check_period, tol)]


# --- the session ---------------------------------------------------------------------------
def _phase(probe: Any, root_ns: str, plan: Any, control_mode: str, period: float, last: bool,
           body: Callable[[Harness, Any], list[Any]], misses: list[dict[str, Any]] | None = None,
           first: bool = False, delays: Any = None, backend: str = "sim") -> list[Any]:
    """One phase on the graph: its robot node and monitor in ``root_ns/<control_mode>`` walked to
    active, the probes run, the pair walked back to unconfigured unless it is the ``last``.  The
    monitor's missed deadlines that no probe caused on purpose are added to ``misses``; each check
    gets the host's scheduling delay in its window (``delays``, a SchedulingDelays) and is judged."""
    from types import SimpleNamespace

    from morl_robot.safety.monitor import build_monitor
    from morl_robot.safety.testing import add_host_delay

    ns = f"{root_ns}/{control_mode}"
    robot = plan.config.name
    monitor = build_monitor(plan.safety, control_mode)
    labels = tuple(monitor.spec.command_labels(ControlMode(control_mode)))
    for node in ("robot_node", "safety_monitor"):
        # the first pair starts itself (autostart): a transition sent meanwhile is refused and ends
        # the node, so wait for it; drive it only if it stays down (an --attach run after an earlier
        # probe walked it back)
        if not (first and _wait_active(probe, f"{ns}/{node}")):
            probe.lifecycle(f"{ns}/{node}", "active")
    h = Harness(SimpleNamespace(probe=probe), ns, labels, 1.0 / period, backend)
    try:
        probe.wait_for(lambda: len(h.joints) > 3, 60, f"{robot} joint_states in {ns}")
        checks = [add_host_delay(c, delays) for c in body(h, monitor)]
        if misses is not None:
            misses += _unprovoked_misses(probe, h)
        return checks
    finally:
        h.close()
        if not last:  # the monitor first (it engages its e-stop), then the robot (it holds)
            for node in ("safety_monitor", "robot_node"):
                probe.lifecycle(f"{ns}/{node}", "unconfigured")


def _wait_active(probe: Any, node: str, timeout: float = 20.0) -> bool:
    """Whether the managed node ``node`` (an autostarting one: the first phase's pair, which starts
    once it has listened for another session on its names) reports itself active within ``timeout`` s."""
    from lifecycle_msgs.msg import State
    from lifecycle_msgs.srv import GetState

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe.call(f"{node}/get_state", GetState, timeout=60.0).current_state.id == State.PRIMARY_STATE_ACTIVE:
            return True
        time.sleep(0.2)
    return False


def _unprovoked_misses(probe: Any, h: Harness) -> list[dict[str, Any]]:
    """The monitor's missed deadlines (its ``/diagnostics`` ``deadline_miss_log``) that the probes
    did not cause: not a stream a probe stopped on purpose (the commands between probes, the
    paused simulation, the stopped heartbeat), unless the monitor's own check ran late."""
    import json

    try:
        log = json.loads(probe.next_diagnostics("safety", timeout=5.0).get("deadline_miss_log", "[]"))
    except (TimeoutError, ValueError):
        return []

    def provoked(m: dict[str, Any]) -> bool:
        return m["cause"] != "monitor_late" and (
            m["stream"] == "command" or any(a <= m["at"] <= b for a, b in h.deliberate))

    return [m for m in log if not provoked(m)]


def _run_phases(probe: Any, cfg: Any, plan: Any, bodies: dict[str, Callable[[Harness, Any], list[Any]]],
                misses: list[dict[str, Any]] | None = None, delays: Any = None) -> list[Any]:
    phases = plan.modes
    period = cfg.robot_node.control_period
    root = "/" + cfg.namespace.strip("/")
    checks: list[Any] = []
    for i, mode in enumerate(phases):
        checks += _phase(probe, root, plan, mode, period, i == len(phases) - 1, bodies[mode], misses,
                         first=i == 0, delays=delays, backend=cfg.backend)
    return checks


def _probe_graph(args: argparse.Namespace, cfg: Any, plan: Any, out: Path,
                 bodies: dict[str, Callable[[Harness, Any], list[Any]]],
                 misses: list[dict[str, Any]] | None = None, delays: Any = None) -> list[Any]:
    """Start the safety-test graph and probe it, or (``--attach``) probe the graph that is already
    running on ``$ROS_DOMAIN_ID`` (``ros2 launch morl_robot safety_test.launch.py``)."""
    if args.attach:
        if getattr(args, "record", False) or getattr(args, "foxglove", None) is not None:
            raise UsageError("--record / --foxglove start observer nodes: with --attach the launch starts them "
                             "(record:=true, foxglove:=true)")
        from morl_robot.cli.release import domain_of
        from morl_robot.nodes.probe import GraphProbe

        domain = domain_of(args.domain_id)
        print(f"attached to the safety-test graph in /{cfg.namespace.strip('/')} on ROS_DOMAIN_ID={domain}",
              file=sys.stderr)
        probe = GraphProbe(domain, name=f"morl_robot_safety_test_{os.getpid()}")
        try:
            return _run_phases(probe, cfg, plan, bodies, misses, delays)
        finally:
            probe.close()
    from morl_robot.session.graph import observer_specs, safety_test_nodes
    from morl_robot.session.runner import SessionRunner

    specs = safety_test_nodes(cfg)
    if getattr(args, "emulate", None) is not None:  # the driver, played from MuJoCo (as deploy --emulate)
        from morl_robot.cli.deploy import _faults
        from morl_robot.session.config import node_parameters
        from morl_robot.session.processes import NodeSpec

        emulator = node_parameters(cfg.driver_emulator, {"robot": plan.robot})  # the session YAML's section
        specs.insert(0, NodeSpec("driver_emulator", "driver_emulator", "/", {**emulator, **_faults(args.emulate)}))
    specs = observer_specs(cfg.namespace, out, getattr(args, "record", False), getattr(args, "foxglove", None)) + specs  # first up, last down
    runner = SessionRunner(specs, out / "logs", args.domain_id)
    try:
        runner.start()
        if getattr(args, "record", False):  # the recorder has the first phase's streams before the probes
            from morl_robot.recording.live import wait_recording

            first = next(s.namespace for s in specs if s.executable == "robot_node")
            wait_recording(runner.probe, [f"{first}/wrench", f"{first}/joint_states"], check=runner.check_failed)
        return _run_phases(runner.probe, cfg, plan, bodies, misses, delays)
    finally:
        runner.stop()
        if getattr(args, "record", False):
            from morl_robot.recording.reader import summary_line

            print(summary_line(out) or f"recording: none written in {out}", file=sys.stderr)


def _bodies(plan: Any, speeds: list[float], tol: float, out: Path, backend: str, gauge_rate: float,
            check_period: float, gauge_timeout: float = 60.0) -> dict[str, Callable[[Harness, Any], list[Any]]]:
    """Per phase (control mode) the probes the robot YAML's ``safety_test.phases`` name, in order
    (``gauge_timeout``: s an operator has to press the gauge on hardware)."""
    st, robot = plan.test, plan.config.name

    def run_probe(name: str, h: Harness, monitor: Any) -> list[Any]:
        if name == "press":
            if st.press.kind == "wrench":
                return [c for speed in speeds for c in probe_peg_press(h, monitor, speed, tol, out, st.press, backend,
                                                                       gauge_rate, gauge_timeout, robot=robot)]
            return probe_fingertip(h, monitor, tol, out, st.press, backend, gauge_timeout, gauge_rate, robot=robot)
        if name == "joint_limit":
            j = st.joint_limit
            return probe_joint_limit(h, monitor, tol, j.joint, step=j.step, direction=1 if j.side == "upper" else -1)
        if name == "stale":
            return probe_stale(h, monitor, tol, check_period)
        if name == "nan":
            return probe_nan(h, tol)
        if name == "flood":
            return probe_flood(h, monitor, st.flood_step)
        return probe_heartbeat(h, monitor, tol, check_period)

    return {phase.mode: (lambda h, m, probes=tuple(phase.probes): [c for n in probes for c in run_probe(n, h, m)])
            for phase in st.phases}


def run(args: argparse.Namespace) -> int:
    from morl_robot.safety.testing import (
        EXIT_CODES,
        SchedulingDelays,
        check_scene,
        deadline_miss_report,
        safety_test_plan,
        write_report,
    )

    plan = safety_test_plan(args.robot)  # a robot name, alias or YAML path; its safety_test: section
    if args.backend == "sim":
        check_scene(plan)
    robot = plan.config.name
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tol = float(args.latency_tolerance)
    if tol <= 0:
        raise UsageError(f"--latency-tolerance must be positive, got {tol}")
    try:
        speeds = [float(s) for s in args.approach_speeds.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--approach-speeds: expected comma-separated numbers (m/s), got {args.approach_speeds!r}") from None
    top = plan.config.cartesian.max_linear_velocity if plan.config.cartesian is not None else math.inf
    if not speeds or not all(0 < s <= top for s in speeds):
        raise UsageError(f"--approach-speeds: each speed must be in (0, {top:g}] m/s ({robot}'s linear speed limit), "
                         f"got {args.approach_speeds!r}")
    gauge_rate = float(args.gauge_rate)
    if not (math.isfinite(gauge_rate) and gauge_rate > 0):
        raise UsageError(f"--gauge-rate must be a positive number of N/s, got {args.gauge_rate}")
    from morl_robot.session.config import load_session_config

    session = getattr(args, "session", None) or getattr(args, "config", None) or "safety_test"
    cfg = load_session_config(session, {"robot": plan.robot, "task": "", "backend": args.backend,
                                        "namespace": args.namespace, "use_sim_time": args.use_sim_time or None,
                                        "robot_node": node_video_overrides(args)})
    emulate = getattr(args, "emulate", None)
    if emulate is not None and (args.backend != "hardware" or args.attach):
        raise UsageError("--emulate stands in for the robot's driver: use it with --backend hardware (not --attach)")
    check_period = 0.002
    bodies = _bodies(plan, speeds, tol, out, args.backend, gauge_rate, check_period,
                     gauge_timeout=0.0 if emulate is not None else 60.0)  # an emulator has no operator
    misses: list[dict[str, Any]] = []
    delays = SchedulingDelays().start()  # how late this host runs a timer, in each check's window
    try:
        checks = _probe_graph(args, cfg, plan, out, bodies, misses, delays)
    except MorlRobotError:
        raise  # a configuration error: rc 2, one line
    except Exception as exc:  # noqa: BLE001 - a probe could not go on: nothing judged, and not a FAIL (1)
        if not isinstance(exc, (RuntimeError, TimeoutError)):  # not a probe's own refusal: show where
            traceback.print_exc()
        print(f"morl-robot safety-test: probe aborted: {exc} (node logs: {out / 'logs'}); exit 5", file=sys.stderr)
        return 5
    finally:
        delays.stop()
    report = write_report(checks, out, {"robot": robot, "robot_config": plan.robot, "backend": args.backend,
                                        "latency_tolerance_s": tol, "approach_speeds_m_s": speeds,
                                        "gauge_rate_n_s": gauge_rate,
                                        "deadline_misses": deadline_miss_report(misses),
                                        "scheduling_delays": delays.summary(),
                                        "load_average": os.getloadavg()[0], "cpus": os.cpu_count()})
    for c in checks:
        unit = f" {c.unit}" if c.unit else ""
        lat = "" if math.isnan(c.latency) else f" latency {c.latency * 1e3:.1f} ms"
        val = "" if math.isnan(c.tripped_value) else f" tripped at {c.tripped_value:.4g}{unit}"
        print(f"{c.status.upper():11s}  {c.probe:40s} {c.rule:22s}{val}{lat}"
              + ("" if c.passed else f"  ({c.summary()})"))
    print(f"report: {out / 'report.md'}; result {report['verdict']['label']} (exit {EXIT_CODES[report['result']]}): "
          f"{report['verdict']['action']}", file=sys.stderr)
    return EXIT_CODES[report["result"]]
