"""Fault (issue 33, item 12): the Shadow Hand safety test ended INCOMPLETE — its 60 N tactile
collision rule was "not reached: the finger pressed at most 22.8 N: its own motor cannot reach 60 N
in simulation".  A test rig presses the fingertip with a force gauge; the simulated robot now takes
one too: an external force on a body (``Robot.apply_external_force``: MuJoCo ``xfrc_applied``), on
the graph the robot node's sim-only ``~/external_wrench`` topic, and the safety test's fingertip
probe ramps it until the collision level trips."""
from __future__ import annotations

import numpy as np
import pytest

from morl_robot.errors import CommandError, UnknownNameError
from morl_robot.robots.config import load_robot_config
from morl_robot.robots.mujoco_robot import MujocoRobot

TOUCH = "rh_ffdistal_touch"


def _finger_on_block(robot: MujocoRobot) -> tuple[np.ndarray, int]:
    """Flex wrist and first finger onto the block (as the safety test's probe does) until the
    fingertip presses 20 N (the contact level); returns the held command and the sensor's index."""
    labels = robot.spec.actuator_names
    i3, i0, iw = labels.index("rh_FFJ3"), labels.index("rh_FFJ0"), labels.index("rh_WRJ1")
    hi = robot.model.actuator_ctrlrange[robot._act, 1]
    ti = next(s for s in robot.spec.sensors if s.kind == "tactile").labels.index(TOUCH)
    cmd = robot.hold_command().copy()
    for _ in range(200):
        cmd[iw], cmd[i3], cmd[i0] = min(cmd[iw] + 0.01, hi[iw]), min(cmd[i3] + 0.02, hi[i3]), min(cmd[i0] + 0.01, 0.3)
        if robot.step(cmd).tactile[ti] > 20.0:
            return cmd, ti
    raise AssertionError("the fingertip never reached the block")


def test_a_gauge_on_the_fingertip_reaches_the_collision_level_and_a_reset_releases_it():
    robot = MujocoRobot(load_robot_config("shadow_hand"), scene="shadow_hand/touch.xml", control_period=0.05)
    robot.reset()
    cmd, ti = _finger_on_block(robot)
    own = max(robot.step(cmd).tactile[ti] for _ in range(20))  # the finger's own motor: ~20-23 N
    assert own < 30.0
    robot.apply_external_force("rh_ffdistal", [0.0, 0.0, -60.0])  # down onto the block
    pressed = max(robot.step(cmd).tactile[ti] for _ in range(10))
    assert pressed > 60.0  # the 60 N collision level is now within reach
    robot.reset()
    assert not robot.data.xfrc_applied.any()  # a reset ends the push
    with pytest.raises(UnknownNameError, match="no body named 'nope'"):
        robot.apply_external_force("nope", [0.0, 0.0, 1.0])
    with pytest.raises(CommandError, match="finite"):
        robot.apply_external_force("rh_ffdistal", [np.nan, 0.0, 0.0])


def test_a_backend_without_a_gauge_says_to_press_by_hand():
    from morl_robot.robots.base import Robot

    class Bare(Robot):  # the interface's default, as the hardware backend has it
        _apply = advance = read_state = hold_command = reset = lambda *a, **k: None

    bare = Bare.__new__(Bare)
    with pytest.raises(CommandError, match="force gauge by hand"):
        bare.apply_external_force("rh_ffdistal", [0.0, 0.0, -1.0])


@pytest.mark.ros
def test_the_robot_node_takes_the_gauge_on_its_external_wrench_topic(ros_session):
    """The real robot node in its own process: a WrenchStamped on ``~/external_wrench`` (frame_id =
    the body, force in the world frame) pushes that body until zeros release it.  (The press
    past 60 N on the graph: test_shadow_safety_test_passes_with_the_gauge.)"""
    import time

    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState

    from morl_robot.nodes import wire
    from morl_robot.session.processes import NodeSpec

    s, ns = ros_session, "/hand"
    s.group.start(NodeSpec("robot_node", "robot_node", ns, {
        "robot": "shadow_hand", "scene": "shadow_hand/touch.xml", "timing": "realtime"}))
    joints = s.probe.subscribe(f"{ns}/joint_states", JointState, wire.SENSOR_QOS)
    s.probe.wait_for(lambda: len(joints) > 5, 60, "joint_states")
    gauge = s.probe.publisher(f"{ns}/robot_node/external_wrench", WrenchStamped, wire.COMMAND_QOS)
    s.probe.wait_for_subscribers(gauge)

    def ffj4() -> float:
        msg = joints[-1][1]
        return float(msg.position[list(msg.name).index("rh_FFJ4")])

    def push(fy: float) -> None:
        msg = WrenchStamped()
        msg.header.frame_id = "rh_ffdistal"
        msg.wrench.force.y = fy
        gauge.publish(msg)

    before = ffj4()
    push(20.0)  # sideways on the first finger's tip: it abducts (rh_FFJ4) against its servo
    s.probe.wait_for(lambda: ffj4() < before - 0.05, 20, "the pushed finger to give way")
    push(0.0)
    time.sleep(0.5)
    released = ffj4()
    time.sleep(0.5)
    assert abs(ffj4() - released) < 0.01  # no push any more: the (held) finger stays put


@pytest.mark.ros
def test_shadow_safety_test_passes_with_the_gauge(tmp_path, domain_id):
    """``morl-robot safety-test --robot shadow`` (as docs/tutorials/safety_test.md and
    docs/howto/connect_shadow.md show it; they run it through this test) through the real CLI and graph: the tactile
    collision rule is reached with the simulated gauge, so no rule is left 'not reached'."""
    import json
    import subprocess
    import sys

    from morl_robot.session.processes import ros_env

    cmd = [sys.executable, "-m", "morl_robot.cli", "safety-test", "--robot", "shadow", "--out", str(tmp_path),
           "--domain-id", str(domain_id)]
    rc = subprocess.run(cmd, env=ros_env(domain_id), capture_output=True, text=True, timeout=300, check=False).returncode
    report = json.loads((tmp_path / "report.json").read_text())
    collision = next(c for c in report["checks"] if (c["rule"], c["level"]) == ("tactile", "collision"))
    assert collision["tripped"] and collision["status"] != "not reached", collision
    assert 60.0 <= collision["tripped_value"] <= 60.0 + collision["threshold_tolerance"] + 1e-9
    assert "force gauge" in collision["detail"]
    assert all(c["status"] != "not reached" for c in report["checks"]), report["checks"]
    # a check may fail only for a latency beyond 20 ms on this shared 2-core machine (the tool is right
    # to fail such a run); anything else is a real failure
    # (a latency the host's measured scheduling delay explains is 'not judged (machine)', exit 4)
    from morl_robot.safety.testing import EXIT_CODES

    failed = [c for c in report["checks"] if c["status"] == "FAIL"]
    assert all(c["detail"].startswith("latency ") for c in failed), failed
    assert rc == EXIT_CODES[report["result"]], (rc, report["result"])
    assert report["result"] == ("fail" if failed else "not_judged" if any(c["machine"] for c in report["checks"])
                                else "pass")
    assert "deadline_misses" in report  # host deadline misses counted (item 11)
    # the contact and the collision level share one trace, drawn once in report.md
    assert (tmp_path / "report.md").read_text().count("(rh_ffdistal_touch_press.png)") == 1
