"""The scene of a hardware deploy (against the driver emulator): the task scene posed by the
measured joints, the fixture at its nominal pose, the arm moving."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

pytest.importorskip("rclpy")

from morl_robot.nodes import wire
from morl_robot.session.processes import ros_env
from tests.conftest import _next_domain

POLICY = Path(__file__).resolve().parents[2] / "results" / "demo" / "seed0" / "policy.onnx"


def test_hardware_scene_follows_the_measured_arm(tmp_path):
    from visualization_msgs.msg import MarkerArray

    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.resources import sim_path
    from morl_robot.robots.model import load_model

    domain = _next_domain()
    probe = GraphProbe(domain, "hw_scene_probe")
    got = probe.subscribe("/morl/scene", MarkerArray, wire.VIEW_QOS)
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", str(POLICY), "--backend", "hardware", "--emulate", "none",
           "--duration", "8", "--out", str(tmp_path)]
    try:
        done = subprocess.run(cmd, env=ros_env(domain), capture_output=True, text=True, timeout=150, check=False)
    finally:
        probe.close()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    scenes = [m for _, m in got]
    assert len(scenes) >= 2, f"{len(scenes)} scene messages"
    assert {"right_l2", "tool", "fixture"} <= {m.ns for m in scenes[0].markers}

    def where(msg, name):
        m = next(m for m in msg.markers if m.text == name)
        return np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z])

    assert max(np.linalg.norm(where(m, "peg") - where(scenes[0], "peg")) for m in scenes) > 1e-3
    model = load_model(sim_path("sawyer/peg_in_hole.xml"))  # the fixture: nominal, never measured
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    g = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "fixture_px")
    for msg in scenes:
        np.testing.assert_allclose(where(msg, "fixture_px"), data.geom_xpos[g], atol=1e-9)
