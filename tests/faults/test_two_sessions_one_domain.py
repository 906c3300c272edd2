"""Fault (issue 33, item 1): two deploys on one ROS domain drove each other's robots.  Session 2's
monitor was never released, yet its commands were approved by session 1's monitor and published on
the shared ``command_safe``, which both robot nodes executed.

Now sessions are isolated by construction: every node of a session carries its id; a monitor
checks only its own session's commands and stamps ``command_safe`` with it; a robot node executes
only its own session's ``command_safe``; and a second session on names another session uses gives
way at start, naming the first (``nodes.base.SessionGuard``)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from morl_robot.node_settings import new_session_id
from morl_robot.nodes import wire
from morl_robot.nodes.base import SessionGuard

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "results" / "demo" / "seed0" / "policy.onnx"


@given(st.lists(st.floats(-10, 10), min_size=1, max_size=8), st.booleans(), st.booleans())
def test_a_command_keeps_its_values_key_and_session_through_the_wire(values, keyed, in_session):
    labels = tuple(f"a{i}" for i in range(len(values)))
    key = wire.step_key(3, 17) if keyed else None
    session = wire.session_token(new_session_id()) if in_session else None
    cmd = wire.split_command(*wire.read_labelled(wire.command_message(values, labels, key, session)))
    assert np.array_equal(cmd.values, values) and cmd.labels == labels
    assert cmd.key == key and cmd.session == session
    if session is not None:
        assert wire.session_token(wire.session_name(session)) == session  # 48 bits: exact as a float
    other = wire.session_token(new_session_id())
    assert wire.foreign_sender(cmd, None) == ""  # a node outside any session takes every command
    if session is not None:
        assert wire.foreign_sender(cmd, session) == ""  # its own session's
    assert wire.foreign_sender(cmd, other) == ("no session id" if session is None else
                                                f"session {wire.session_name(session)}") or other == session


def test_the_earlier_session_keeps_the_names():
    first = {"session": "aaaaaaaaaaaa", "started": 100.0}
    second = {"session": "000000000000", "started": 101.0}
    assert SessionGuard.gives_way(second, first) and not SessionGuard.gives_way(first, second)
    tie = {"session": "bbbbbbbbbbbb", "started": 100.0}
    assert SessionGuard.gives_way(tie, first) != SessionGuard.gives_way(first, tie)  # exactly one gives way


def _popen(argv: list[str], env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "morl_robot.cli", *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=log.open("w"))


@pytest.mark.ros
def test_a_robot_executes_only_its_own_sessions_commands(ros_session, tmp_path):
    """Another session's commands on this session's names (as if its start-up check had raced):
    the monitor does not check them, the robot does not execute them, both count them."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import deploy_nodes, session_of

    s = ros_session
    cfg = load_session_config("deploy", {"namespace": "iso", "policy": str(DEMO), "task": "sawyer_peg_in_hole"})
    specs = deploy_nodes(cfg)
    own = wire.session_token(session_of(specs))
    for spec in specs:
        if spec.executable != "policy_server":  # no policy of its own: only the foreign commands arrive
            s.group.start(spec)
    joints = s.probe.subscribe("/iso/joint_states", JointState, wire.SENSOR_QOS)
    safe = s.probe.subscribe("/iso/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    diags = s.probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)
    s.probe.wait_for(lambda: len(joints) > 5, 90, "the robot's joint states")
    foreign = wire.session_token(new_session_id())
    pub_safe = s.probe.publisher("/iso/command_safe", Float64MultiArray, wire.COMMAND_QOS)
    pub_cmd = s.probe.publisher("/iso/command", Float64MultiArray, wire.COMMAND_QOS)
    s.probe.wait_for(lambda: pub_safe.get_subscription_count() >= 1 and pub_cmd.get_subscription_count() >= 1, 30,
                     "the robot node and the monitor")
    start = np.array(joints[-1][1].position)
    fast = [0.0, 0.0, -0.2]  # full speed down

    def counters(part: str) -> dict[str, str]:
        for _, msg in reversed(diags):
            for status in msg.status:
                if status.name.startswith("safety_monitor" if part == "safety" else "robot_node"):
                    return {kv.key: kv.value for kv in status.values}
        return {}

    def counted() -> bool:  # publish at 20 Hz, to the robot (command_safe) and the monitor (command)
        pub_safe.publish(wire.command_message(fast, ("vx", "vy", "vz"), session=foreign))
        pub_cmd.publish(wire.command_message(fast, ("vx", "vy", "vz"), session=foreign))
        pub_cmd.publish(wire.command_message(fast, ("vx", "vy", "vz")))  # no session id at all
        time.sleep(0.05)
        return (int(counters("robot").get("foreign_commands", 0)) >= 40
                and int(counters("safety").get("foreign_commands", 0)) >= 80)

    s.probe.wait_for(counted, 60, "both nodes counting another session's commands")
    moved = np.abs(np.array(joints[-1][1].position) - start).max()
    assert moved < 1e-3, f"the robot moved {moved:.4f} rad under another session's commands"
    for _, msg in safe:  # the monitor's own messages carry its session and never the foreign command
        cmd = wire.split_command(*wire.read_labelled(msg))
        if cmd.session != foreign:
            assert cmd.session == own and not np.allclose(cmd.values, fast)


@pytest.mark.ros
def test_a_second_deploy_on_the_same_names_gives_way_naming_the_first(domain_id, tmp_path):
    """The issue's case: session 1 (the demo policy) deploys; session 2 (another policy) starts on
    the same domain and namespace: it is refused at start, naming session 1, and session 1 runs on
    released, its robot never stopped by session 2."""
    from diagnostic_msgs.msg import DiagnosticStatus
    from std_msgs.msg import Bool

    from morl_robot.bench.graph import _export_policy
    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.session.processes import ros_env

    env = ros_env(domain_id)
    other = tmp_path / "other.onnx"
    _export_policy("sawyer_peg_in_hole", other)
    probe = GraphProbe(domain_id, name="two_deploys_probe")
    first = _popen(["deploy", str(DEMO), "--duration", "45", "--out", str(tmp_path / "one"),
                    "--domain-id", str(domain_id)], env, tmp_path / "one.err")
    try:
        estop = probe.subscribe("/morl/safety/estop", Bool, wire.LATCHED_QOS)  # (may hear session 2's too)
        violations = probe.subscribe("/morl/safety/violations", DiagnosticStatus, wire.EVENT_QOS)
        def released_or_dead() -> bool:
            assert first.poll() is None, (tmp_path / "one.err").read_text()[-3000:]
            return any(not m.data for _, m in estop)

        probe.wait_for(released_or_dead, 120, "session 1's monitor to be released")
        t0 = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "morl_robot.cli", "deploy", str(other),
                                 "--duration", "20", "--out", str(tmp_path / "two"), "--domain-id", str(domain_id)],
                                env=env, capture_output=True, text=True, timeout=180, check=False)
        took = time.monotonic() - t0
        assert second.returncode != 0, second.stderr
        assert "is already used by session" in second.stderr, second.stderr[-3000:]
        assert took < 60, f"the refusal took {took:.0f} s"
        time.sleep(2.0)
        # session 1's monitor is still released: a fresh subscription hears the latched state of the
        # live monitor alone (session 2's nodes are gone; one that configured before it heard session
        # 1 may have published its own start-up e-stop on the shared topic meanwhile)
        now: list[bool] = []
        probe.node.create_subscription(Bool, "/morl/safety/estop", lambda m: now.append(m.data), wire.LATCHED_QOS)
        probe.wait_for(lambda: bool(now), 30, "session 1's monitor's latched e-stop state")
        if now != [False]:
            # Session 2's nodes publish nothing but their announcement before giving way: what it could
            # do to session 1 is a reading or a command (a wrench, joint or command rule). Starting its
            # processes loads the host, though, and a sensor stream late past its watchdog is the
            # host's scheduling, named by its rule (as the soak counts it, bench/soak.py).
            stops = [{kv.key: kv.value for kv in m.values} for _, m in violations]
            rules = sorted({e["rule"] for e in stops if e.get("response") == "estop"})
            assert rules and all(r.startswith("stale.") for r in rules), \
                f"session 2 stopped session 1's robot (e-stop rules: {rules})"
        assert first.poll() is None, (tmp_path / "one.err").read_text()[-3000:]
    finally:
        first.terminate()
        first.wait(timeout=60)
        probe.close()


@pytest.mark.ros
def test_a_second_training_session_on_the_same_names_gives_way(domain_id, tmp_path):
    """Two training sessions on one domain and namespace: the second gives way at start, naming
    the first; the first trains on, its actor's robot moving under its own monitor only."""
    from diagnostic_msgs.msg import DiagnosticArray

    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.session.processes import ros_env

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import tiny_learner_yaml

    env = ros_env(domain_id)
    learner = tmp_path / "tiny.yaml"
    learner.write_text(tiny_learner_yaml(4.0))
    argv = ["train", "--task", "sawyer_peg_in_hole", "--learner", str(learner), "--no-progress",
            "--domain-id", str(domain_id), "--actors-kind", "per-step"]  # the robot node's guard
    probe = GraphProbe(domain_id, name="two_trainings_probe")
    diags = probe.subscribe("/diagnostics", DiagnosticArray, wire.EVENT_QOS)

    def robot_steps() -> int:
        for _, msg in reversed(diags):
            for status in msg.status:
                if status.name.startswith("robot_node"):
                    return int({kv.key: kv.value for kv in status.values}.get("steps", 0))
        return 0

    first = _popen([*argv, "--out", str(tmp_path / "one")], env, tmp_path / "one.err")
    try:
        def stepping() -> bool:
            assert first.poll() is None, (tmp_path / "one.err").read_text()[-3000:]
            return robot_steps() > 20

        probe.wait_for(stepping, 180, "session 1's robot to step")
        second = subprocess.run([sys.executable, "-m", "morl_robot.cli", *argv, "--steps", "100",
                                 "--out", str(tmp_path / "two")],
                                env=env, capture_output=True, text=True, timeout=180, check=False)
        assert second.returncode != 0, second.stderr
        assert "is already used by session" in second.stderr, second.stderr[-3000:]
        before = robot_steps()
        probe.wait_for(lambda: robot_steps() > before + 20, 60, "session 1's robot to step on")
        assert first.poll() is None, (tmp_path / "one.err").read_text()[-3000:]
    finally:
        first.terminate()
        first.wait(timeout=90)
        probe.close()
