"""``morl-robot bench safety``: how fast a threshold crossing becomes a stopped command.

Trip latency = the tripping sensor sample's stamp → the hold command, timed three ways: the
in-process :class:`~morl_robot.safety.monitor.SafetyMonitor`; a ``safety_monitor`` node in its own
process (to the hold *published*, the node's ``command_published_at``, and *received back* by the
probe; its YAML without wall-clock deadlines: a paused ramp is no sensor fault; ``--baseline`` adds
a bare rclpy relay); the inner layer on the hardware backend's code path without ROS (driver
callback → held command handed to the driver).  Each trip ramps the robot's first force sensor
(wrist ‖F‖ along −z, else the first tactile sensor) through its collision level in ``--increment``
steps from a random fraction of a step below; the monitor is reset between trips.  Figures, goals
and what is not included: results/benchmarks/NOTES.md ("Safety").
"""
from __future__ import annotations

import argparse
import math
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from morl_robot.cli.options import add_set


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--robot", default="sawyer", metavar="NAME|PATH",
                        help="the robot whose safety rules trip: a name (sawyer, shadow_hand, alias shadow) or a "
                             "robot YAML path (default sawyer)")
    parser.add_argument("--trips", type=int, default=1000, help="trips across processes (and in-process, x10)")
    parser.add_argument("--increment", type=float, default=0.5, help="sensor increment per sample (N)")
    parser.add_argument("--sample-period", type=float, default=0.002, help="s between ramp samples across processes")
    parser.add_argument("--skip-processes", action="store_true", help="only the in-process measurement")
    parser.add_argument("--check-period", type=float, default=0.002, help="the node's watchdog timer period (s)")
    parser.add_argument("--baseline", action="store_true",
                        help="also time a bare rclpy relay (wrench in, command out) over the same transport")
    parser.add_argument("--seed", type=int, default=0, help="seed of the ramps' random start values")
    parser.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID of the node processes (default: random)")
    add_set(parser, ("robot", "safety"))


def _percentiles(x: list[float]) -> str:
    a = np.asarray(x) * 1e3
    return f"p50 {np.percentile(a, 50):7.3f} ms  p99 {np.percentile(a, 99):7.3f} ms  max {a.max():7.3f} ms"


def _refs(robot: str) -> tuple[str, str]:
    """(robot reference, safety reference) for ``--robot``: a name, an alias or a robot YAML path
    (its safety YAML: the robot YAML's ``safety``, default ``config/safety/<name>.yaml``)."""
    from morl_robot.robots.config import load_robot_config, resolve_robot

    ref = resolve_robot(robot)
    config = load_robot_config(ref)
    return ref, config.safety or config.name


class _Ramp:
    """The sensor samples of one trip: a force along one component growing by ``increment``:
    the wrist wrench (``kind`` wrench) if the robot has one, else its touch sensors (``tactile``)."""

    def __init__(self, spec: Any) -> None:
        kinds = {s.kind: s for s in spec.sensors}
        self.kind = "wrench" if "wrench" in kinds else "tactile"
        if self.kind == "tactile" and "tactile" not in kinds:
            raise ValueError(f"robot '{spec.name}' has neither a wrench nor a tactile sensor: nothing to ramp")
        self.labels = ("fx", "fy", "fz", "tx", "ty", "tz") if self.kind == "wrench" else kinds["tactile"].labels

    def sample(self, magnitude: float) -> np.ndarray:
        """(6,) wrench pushing down (−z), or (T,) touch forces on the first touch sensor."""
        v = np.zeros(len(self.labels))
        if self.kind == "wrench":
            v[2] = -magnitude
        else:
            v[0] = magnitude
        return v


def _ramp_force(threshold: float, increment: float, offset: float, k: int) -> float:
    """Sample k of a ramp that starts ``offset`` increments below the threshold (computed, not
    accumulated, so float rounding never moves a sample across the threshold)."""
    return threshold + (k - offset) * increment


def _feed(monitor: Any, ramp: _Ramp, values: np.ndarray, stamp: float, now: float) -> Any:
    if ramp.kind == "tactile":
        return monitor.on_tactile(values, ramp.labels, stamp, now)
    return monitor.on_wrench(values, stamp, now)


def _mid_range(spec: Any) -> list[float]:
    return [0.5 * (j.lower + j.upper) for j in spec.joints]


def _command_labels(spec: Any) -> tuple[tuple[str, ...], np.ndarray]:
    """A still command: a Cartesian twist (a robot with Cartesian control: the Sawyer task's vx, vy,
    vz) or mid-range position targets."""
    if spec.cartesian is not None:
        return ("vx", "vy", "vz"), np.zeros(3)
    return spec.actuator_names, np.array([0.5 * (a.lower + a.upper) for a in spec.actuators])


def collision_threshold(robot: str) -> float:
    """The force at which the ramp's direction reaches the collision level (N)."""
    from morl_robot.safety.monitor import build_monitor

    m = build_monitor(_refs(robot)[1], watchdogs=False)
    ramp = _Ramp(m.spec)
    rows = m.describe_rules()
    if ramp.kind == "tactile":
        keys = {("tactile", ramp.labels[0])}
    else:
        keys = {("wrench.force_norm", "norm"), ("wrench.force_axis", "fz")}
    return min(r.threshold for r in rows if (r.rule, r.key) in keys and r.level == "collision")


def in_process(robot: str, trips: int, increment: float, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """(latencies s, threshold errors in increments) of ``trips`` trips of the core."""
    from morl_robot.safety.monitor import build_monitor

    safety = _refs(robot)[1]
    spec = build_monitor(safety, watchdogs=False).spec
    labels, cmd = _command_labels(spec)
    m = build_monitor(safety, watchdogs=False, action_labels=labels)  # the Sawyer task's vx, vy, vz
    ramp = _Ramp(m.spec)
    if labels != ("vx", "vy", "vz"):  # position-mode hold = the measured positions
        m.on_joint_state(m.spec.joint_names, _mid_range(m.spec), [], [], 0.0, 0.0)
    m.on_command(cmd, labels, 0.0)
    threshold = collision_threshold(robot)
    rest = ramp.sample(0.0)
    latencies, errors = [], []
    for _ in range(trips):
        _feed(m, ramp, rest, 0.0, 0.0)
        accepted, why = m.reset(0.0)
        assert accepted, why
        offset = 2.0 + rng.random()
        for k in range(1000):
            values = ramp.sample(_ramp_force(threshold, increment, offset, k))
            t0 = time.perf_counter()
            out = _feed(m, ramp, values, t0, t0)
            if out.command is not None:
                latencies.append(time.perf_counter() - t0)
                trip = next(v for v in out.violations if v.response.name == "ESTOP")
                errors.append((abs(trip.value) - trip.threshold) / increment)
                break
    return latencies, errors


class _DriverFeed:
    """Driver messages into a :class:`HardwareRobot`'s callbacks, in driver names and units."""

    def __init__(self, robot: Any, ramp: _Ramp) -> None:
        self.robot, self.ramp = robot, ramp
        q = _home(robot)
        zeros = np.zeros(len(q))
        self.joint_msg = robot.codec.encode_state(q, zeros, zeros)
        self.stamp = 1.0

    def joints(self) -> None:
        self.stamp += 1e-3
        names, pos, vel, eff = self.joint_msg
        self.robot.on_joint_state(names, pos, vel, eff, self.stamp)

    def sample(self, values: np.ndarray) -> None:
        """One sensor sample (the ramp's units, SI) through the driver callback."""
        if self.ramp.kind == "tactile":
            hw = self.robot.hardware.tactile
            self.robot.on_tactile(values / hw.scale, self.robot.codec.tactile_labels, self.stamp)
        else:
            c = self.robot.codec
            self.robot.on_wrench(values[:3] / c.force_scale, values[3:] / c.torque_scale, self.stamp,
                                 self.robot.hardware.wrench.frame)


def _home(robot: Any) -> np.ndarray:
    """The hardware section's ``home`` pose, mid-range for joints it does not name."""
    return np.array([robot.home.get(n, 0.5 * (j.lower + j.upper)) for n, j in zip(robot.spec.joint_names,
                                                                                   robot.spec.joints)])


def inner_layer(robot: str, trips: int, increment: float, rng: np.random.Generator
                ) -> tuple[list[float], list[float], int]:
    """(wall-clock latencies s from the tripping sample handed to the backend to the held command
    handed to the driver, the same intervals in this thread's CPU time s (without the time the OS
    ran other processes), trips whose hold was not at the first sample at or above the threshold)."""
    from morl_robot.envs.task_runner import TaskRunner
    from morl_robot.robots.hardware import load_hardware_robot
    from morl_robot.safety.inner import InnerSafety

    sent: list[tuple[float, float]] = []
    ref, safety = _refs(robot)
    hw = load_hardware_robot(ref, control_period=0.05,
                             sink=lambda cmd: sent.append((time.perf_counter(), time.thread_time())))
    if _command_labels(hw.spec)[0] == ("vx", "vy", "vz"):
        hw.set_control_mode("cartesian_velocity")
    runner = TaskRunner(hw, None, inner=InnerSafety.load(safety))
    ramp = _Ramp(hw.spec)
    feed = _DriverFeed(hw, ramp)
    labels = runner.command_labels
    threshold = collision_threshold(robot)
    wall, cpu, late = [], [], 0
    for _ in range(trips):
        feed.joints()
        feed.sample(ramp.sample(0.0))
        command = runner.robot.hold_command()  # a still command: only the readings can trip
        assert not runner.step(command, labels).held, "the rest sample tripped the inner layer"
        offset = 2.0 + rng.random()
        for k in range(1000):
            force = _ramp_force(threshold, increment, offset, k)
            feed.joints()
            n = len(sent)
            c0, t0 = time.thread_time(), time.perf_counter()
            feed.sample(ramp.sample(force))
            rec = runner.step(command, labels)
            if rec.held:
                assert len(sent) > n, "the hold was decided but nothing was sent to the driver"
                wall.append(sent[n][0] - t0)
                cpu.append(sent[n][1] - c0)
                late += force - threshold >= increment
                break
    return wall, cpu, late


def across_processes(robot: str, trips: int, increment: float, sample_period: float, rng: np.random.Generator,
                     work: Path, check_period: float = 0.002, domain: int | None = None
                     ) -> tuple[list[float], list[float], list[float], int]:
    """(latencies to the hold command received back, latencies to the hold command published by
    the monitor (its event's ``command_published_at``), threshold errors in increments, failed
    trips) through a monitor process."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import Trigger

    from morl_robot.nodes import wire
    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.resources import is_config_path, resolve_config
    from morl_robot.robots.config import beside
    from morl_robot.safety.monitor import build_monitor
    from morl_robot.session.processes import (
        NodeProcess,
        NodeSpec,
        pick_domain_id,
        ros_env,
    )

    safety_ref = _refs(robot)[1]
    spec = build_monitor(safety_ref, watchdogs=False).spec
    ramp = _Ramp(spec)
    labels, cmd = _command_labels(spec)
    threshold = collision_threshold(robot)
    safety_path = resolve_config("safety", safety_ref)
    cfg = yaml.safe_load(safety_path.read_text())
    if is_config_path(str(cfg.get("robot", ""))):  # a robot YAML beside the safety YAML stays found
        cfg["robot"] = beside(safety_path, str(cfg["robot"]))
    cfg["watchdogs"] = {}  # no wall-clock deadlines: the ramp pauses between trips
    cfg.setdefault("opt_out", {})["watchdogs"] = "bench safety: the sensor ramp pauses between trips"
    config = work / f"{spec.name}_no_deadlines.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True))

    ns = "/bench_safety"
    domain = pick_domain_id() if domain is None else domain
    node = NodeProcess(NodeSpec("safety_monitor", "safety_monitor", ns,
                                         {"config": str(config), "check_period": check_period,
                                          "action_labels": ",".join(labels)}),
                       ros_env(domain), work / "logs").start()
    probe = GraphProbe(domain, name="bench_safety_probe")
    got = threading.Event()
    arrivals: list[tuple[float, Any]] = []
    events: list[Any] = []

    def on_safe(msg: Any) -> None:
        arrivals.append((time.time(), msg))
        got.set()

    def on_event(msg: Any) -> None:
        events.append(msg)

    try:
        probe.node.create_subscription(Float64MultiArray, f"{ns}/command_safe", on_safe, wire.COMMAND_QOS)
        probe.node.create_subscription(DiagnosticStatus, f"{ns}/safety/violations", on_event, wire.EVENT_QOS)
        pub_cmd = probe.publisher(f"{ns}/command", Float64MultiArray, wire.COMMAND_QOS)
        if ramp.kind == "tactile":
            pub_sensor = probe.publisher(f"{ns}/tactile", Float64MultiArray, wire.SENSOR_QOS)
        else:
            pub_sensor = probe.publisher(f"{ns}/wrench", WrenchStamped, wire.SENSOR_QOS)
        probe.wait_for_subscribers(pub_cmd, timeout=60)
        probe.wait_for_subscribers(pub_sensor, timeout=60)
        reset = probe.node.create_client(Trigger, f"{ns}/safety/reset")
        if not reset.wait_for_service(timeout_sec=60):
            raise TimeoutError("safety/reset did not appear")

        def call_reset() -> Any:
            future = reset.call_async(Trigger.Request())
            probe.wait_for(future.done, 10, "safety/reset")
            return future.result()

        def send(values: np.ndarray) -> float:
            stamp = time.time()
            if ramp.kind == "tactile":
                pub_sensor.publish(wire.labelled_array(values, ramp.labels))
            else:
                w = WrenchStamped()
                sec = int(stamp)
                w.header.stamp.sec, w.header.stamp.nanosec = sec, int((stamp - sec) * 1e9)
                w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(x) for x in values[:3])
                pub_sensor.publish(w)
            return stamp

        # warm up: joint positions (the Shadow Hand's hold command), release, and one command so
        # the monitor knows the command labels
        if labels != ("vx", "vy", "vz"):  # position-mode hold = the measured positions
            pub_joints = probe.publisher(f"{ns}/joint_states", JointState, wire.SENSOR_QOS)
            probe.wait_for_subscribers(pub_joints, timeout=60)
            pub_joints.publish(JointState(name=list(spec.joint_names), position=_mid_range(spec)))
        send(ramp.sample(0.0))
        time.sleep(0.2)
        reply = call_reset()
        if not reply.success:
            raise RuntimeError(f"the monitor refused the first reset: {reply.message}")
        got.clear()
        pub_cmd.publish(wire.labelled_array(cmd, labels))
        if not got.wait(10):
            raise TimeoutError("the first command was not forwarded")
        latencies, errors, failed = [], [], 0
        published: list[float] = []
        for _ in range(trips):
            send(ramp.sample(0.0))
            reply = call_reset()
            while not reply.success:  # the rest sample may not have arrived yet
                time.sleep(0.001)
                reply = call_reset()
            got.clear()
            n_arrivals, n_events = len(arrivals), len(events)
            offset = 2.0 + rng.random()
            trip_stamp = math.nan
            for k in range(20):
                force = _ramp_force(threshold, increment, offset, k)
                stamp = send(ramp.sample(force))
                if force >= threshold and math.isnan(trip_stamp):
                    trip_stamp = stamp  # the first sample at the threshold: the one that must trip
                if got.wait(sample_period):
                    break
            if not got.wait(2.0):
                failed += 1
                continue
            received = arrivals[n_arrivals][0]
            probe.wait_for(lambda n=n_events: any(e.level == DiagnosticStatus.ERROR for e in events[n:]), 5,
                           "the violation event")
            ev = next(e for e in events[n_events:] if e.level == DiagnosticStatus.ERROR)
            kv = {x.key: x.value for x in ev.values}
            latencies.append(received - trip_stamp)
            published.append(float(kv["command_published_at"]) - trip_stamp)
            errors.append((abs(float(kv["value"])) - float(kv["threshold"])) / increment)
        return latencies, published, errors, failed
    finally:
        probe.close()
        node.stop(timeout=10)



def relay_baseline(samples: int, work: Path, domain: int | None = None) -> list[float]:
    """Round trips (s) through a bare rclpy relay process spun like ``run_node``: the floor the
    middleware and rclpy's executor set, with no monitor in the path."""
    import subprocess
    import sys

    from geometry_msgs.msg import WrenchStamped
    from std_msgs.msg import Float64MultiArray

    from morl_robot.nodes import wire
    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.session.processes import pick_domain_id, ros_env

    ns = "/bench_relay"
    domain = pick_domain_id() if domain is None else domain
    (work / "logs").mkdir(parents=True, exist_ok=True)
    with open(work / "logs" / "relay.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "morl_robot.nodes.bench_relay", ns], env=ros_env(domain), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    probe = GraphProbe(domain, name="bench_relay_probe")
    got = threading.Event()
    arrivals: list[float] = []
    try:
        probe.node.create_subscription(Float64MultiArray, f"{ns}/command_safe",
                                       lambda m: (arrivals.append(time.time()), got.set()), wire.COMMAND_QOS)
        pub = probe.publisher(f"{ns}/wrench", WrenchStamped, wire.SENSOR_QOS)
        probe.wait_for_subscribers(pub, timeout=60)
        time.sleep(0.5)
        out = []
        for _ in range(samples):
            got.clear()
            n = len(arrivals)
            t0 = time.time()
            pub.publish(WrenchStamped())
            if got.wait(2.0):
                out.append(arrivals[n] - t0)
            time.sleep(0.004)
        return out
    finally:
        probe.close()
        proc.send_signal(2)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def run(args: argparse.Namespace) -> int:
    import gc

    rng = np.random.default_rng(args.seed)
    work = Path(tempfile.mkdtemp(prefix="bench_safety_"))
    threshold = collision_threshold(args.robot)
    print(f"bench safety: robot {args.robot}, collision threshold {threshold:g} N along the ramp, "
          f"increment {args.increment:g} N/sample; logs in {work}")
    gc.collect()
    lat, err = in_process(args.robot, 10 * args.trips, args.increment, rng)
    print(f"  in-process, core ({len(lat)} trips), stamp -> hold command returned: {_percentiles(lat)}")
    print(f"      threshold error {min(err):.4f} .. {max(err):.4f} samples (goal: within one sample)")
    gc.collect()
    wall, cpu, late = inner_layer(args.robot, args.trips, args.increment, rng)
    a, c = np.asarray(wall) * 1e3, np.asarray(cpu) * 1e3
    print(f"inner layer: sample -> hold p50 {np.percentile(a, 50):.3f} ms p99 {np.percentile(a, 99):.3f} ms")
    print(f"      ({len(a)} trips, {args.robot} hardware backend + robot node core, sample handed to the backend -> "
          f"held command handed to the driver; max {a.max():.3f} ms; goal p99 < 1 ms "
          f"{'met' if np.percentile(a, 99) < 1.0 else 'NOT met'}; {late} trips held after the first sample at the "
          f"threshold)")
    print(f"      the same intervals in this thread's CPU time (without preemption by other processes): "
          f"p50 {np.percentile(c, 50):.3f} ms p99 {np.percentile(c, 99):.3f} ms")
    if args.skip_processes:
        return 0
    lat, published, err, failed = across_processes(args.robot, args.trips, args.increment, args.sample_period, rng,
                                                   work, args.check_period, args.domain_id)
    if not lat:
        print(f"  across processes: no trip measured ({failed} failed); see {work / 'logs'}")
        return 1
    p99, p99_pub = float(np.percentile(lat, 99)), float(np.percentile(published, 99))
    print(f"  across processes on loopback ({len(lat)} trips" + (f", {failed} lost" if failed else "") + "):")
    print(f"      stamp -> hold command published:          {_percentiles(published)}")
    print(f"      stamp -> hold command received back:      {_percentiles(lat)}")
    print(f"      threshold error {min(err):.4f} .. {max(err):.4f} samples")
    print(f"      goal p99 < 1 ms: stamp -> published {'met' if p99_pub < 1e-3 else 'NOT met'}, "
          f"stamp -> received back {'met' if p99 < 1e-3 else 'NOT met'}")
    if args.baseline:
        base = relay_baseline(min(args.trips, 500), work, args.domain_id)
        if base:
            print(f"  floor: bare rclpy relay round trip ({len(base)} samples):   {_percentiles(base)}")
    return 0
