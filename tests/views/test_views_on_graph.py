"""The scene and the named views on a real graph: `morl-robot deploy … --backend sim --duration 5`
through the CLI, and a probe subscribed to `scene`, `view/observation`, `view/reward/<objective>`,
`view/command` and `task_step` (one session for the whole file)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")

from morl_robot.nodes import wire
from morl_robot.session.processes import ros_env
from tests.conftest import _next_domain

#: docs/tutorials/deploy_sim.md's command deploys it (its fence is parse-only, run by this module's session)
POLICY = Path(__file__).resolve().parents[2] / "results/demo/seed0/policy.onnx"
TOPICS = ("scene", "view/observation", "view/reward/task", "view/return/task", "view/command")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64, Float64MultiArray
    from visualization_msgs.msg import MarkerArray

    from morl_robot.nodes.probe import GraphProbe

    out = tmp_path_factory.mktemp("deploy")
    domain = _next_domain()
    probe = GraphProbe(domain, "views_probe")
    types = {"scene": MarkerArray, "view/observation": JointState, "view/reward/task": Float64,
             "view/return/task": Float64, "view/command": JointState}
    got = {t: probe.subscribe(f"/morl/{t}", types[t], wire.VIEW_QOS) for t in TOPICS}
    got["task_step"] = probe.subscribe("/morl/task_step", Float64MultiArray, wire.SENSOR_QOS)
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", str(POLICY), "--backend", "sim", "--duration", "5",
           "--out", str(out)]
    try:
        done = subprocess.run(cmd, env=ros_env(domain), capture_output=True, text=True, timeout=120, check=False)
        time.sleep(0.2)
    finally:
        probe.close()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return {t: [m for _, m in v] for t, v in got.items()}


def test_the_scene_shows_the_arm_moving(session):
    scenes = session["scene"]
    assert len(scenes) >= 2, f"{len(scenes)} scene messages"
    first = scenes[0]
    assert all(m.header.frame_id == "world" for m in first.markers)
    assert {"right_l0", "right_l4", "tool", "fixture"} <= {m.ns for m in first.markers}
    assert len({(m.ns, m.id) for m in first.markers}) == len(first.markers)

    def peg(msg):
        m = next(m for m in msg.markers if m.text == "peg")
        return np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z])

    moved = max(np.linalg.norm(peg(m) - peg(first)) for m in scenes)
    assert moved > 1e-3, "the peg marker never moved: the arm should"
    fixture = [next(m for m in msg.markers if m.text == "fixture_px").pose.position.z for msg in scenes]
    assert np.ptp(fixture) < 1e-9  # the fixture stays put


def test_named_views_carry_task_steps_values_by_name(session):
    steps = [wire.split_task_step(*wire.read_labelled(m)) for m in session["task_step"]]
    assert steps, "no task_step"
    views = session["view/observation"]
    assert views, "no view/observation"
    assert all(tuple(v.name) == steps[0].observation_labels for v in views)
    observed = {tuple(np.round(s.observation, 9)) for s in steps}
    matched = sum(tuple(np.round(np.asarray(v.position), 9)) in observed for v in views)
    assert matched >= 0.9 * len(views), f"{matched} of {len(views)} observation views equal a task_step's"
    assert steps[0].objectives == ("task", "wrist_force")
    rewards = {round(float(s.reward[0]), 9) for s in steps}
    got = [round(m.data, 9) for m in session["view/reward/task"]]
    assert got and sum(r in rewards for r in got) >= 0.9 * len(got)
    assert session["view/return/task"]


def test_the_command_view_names_the_components(session):
    commands = session["view/command"]
    assert commands, "no view/command"
    last = commands[-1]
    assert tuple(last.name) == ("vx", "vy", "vz")  # the peg task's action components (m/s)
    assert len(last.velocity) == 3 and not last.position and not last.effort  # cartesian velocity: velocity
