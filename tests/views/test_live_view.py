"""The Foxglove live view: a real ``morl-robot deploy … --backend sim --foxglove PORT`` read by a real
WebSocket client (subprotocol foxglove.sdk.v1: serverInfo, advertise, subscribe, binary message
frames) while it runs (one session for the file); the core's conversions without ROS."""
from __future__ import annotations

import base64
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("foxglove")
pytest.importorskip("websockets")

from morl_robot.views.foxglove import CHANNELS, Objectives, SceneConverter
from morl_robot.views.foxglove_client import decode_protobuf, read_live_view
from tests.conftest import _next_domain

#: docs/howto/rviz_foxglove.md's command deploys it (its fence is parse-only, run by this module's session)
POLICY = Path(__file__).resolve().parents[2] / "results/demo/seed0/policy.onnx"
JOINTS = [f"right_j{i}" for i in range(7)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from morl_robot.session.processes import ros_env

    out = tmp_path_factory.mktemp("deploy")
    port = _free_port()
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", str(POLICY), "--backend", "sim", "--duration", "6",
           "--out", str(out), "--foxglove", str(port)]
    proc = subprocess.Popen(cmd, env=ros_env(_next_domain()), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        def enough(got):
            return all(len(got.messages.get(t, ())) >= 5 for t in ("/objectives", "/joint_states", "/scene"))
        got = read_live_view(f"ws://127.0.0.1:{port}", seconds=40, connect_timeout=40, until=enough)
        log, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, log[-3000:]
    got.server["cli_output"], got.server["port"] = log, port
    return got


def test_every_channel_is_advertised(live):
    assert live.server.get("op") == "serverInfo"
    assert set(CHANNELS) <= set(live.channels), sorted(live.channels)
    assert live.channels["/scene"]["schemaName"] == "foxglove.SceneUpdate"
    assert live.channels["/objectives"]["encoding"] == "json"
    assert live.channels["/objectives"]["metadata"]["source"] == "/morl"
    assert f"open ws://localhost:{live.server['port']} in Foxglove" in live.server["cli_output"]


def test_objectives_and_joint_states_arrive_with_named_fields(live):
    objectives = [m for _, m in live.messages["/objectives"]]
    assert len(objectives) >= 5
    assert all(set(m["reward"]) == {"task", "wrist_force"} == set(m["return"]) for m in objectives)
    keys = [(m["episode"], m["step"]) for m in objectives]
    assert keys == sorted(keys)  # (a lockstep re-send repeats a step)
    joints = [m for _, m in live.messages["/joint_states"]]
    assert all(list(m["position"]) == JOINTS for m in joints)
    moved = np.ptp([[m["position"][j] for j in JOINTS] for m in joints], axis=0).max()
    assert moved > 1e-3, "the arm never moved"
    times = [t for t, _ in live.messages["/joint_states"]]
    assert times == sorted(times)


def test_the_scene_is_a_foxglove_scene_update_of_the_robot(live):
    _, data = live.messages["/scene"][-1]
    scene = decode_protobuf(live.channels["/scene"], data)
    bodies = {e.id for e in scene.entities}
    assert {"right_l0", "right_l4", "fixture"} <= bodies, sorted(bodies)
    assert all(e.frame_id == "world" for e in scene.entities)
    assert sum(len(e.cubes) + len(e.spheres) + len(e.cylinders) + len(e.triangles) for e in scene.entities) > 10


def test_returns_accumulate_per_episode():
    from morl_robot.acting.experience import TaskStep

    obj = Objectives()

    def step(ep, k, r):
        return TaskStep(episode=ep, step=k, terminated=False, truncated=False, stamp=0.0, reward=np.array(r),
                        observation=np.zeros(1), objectives=("task", "force"), observation_labels=("x",))

    obj.update(step(0, 0, [0.0, 0.0]))
    obj.update(step(0, 1, [1.0, -0.5]))
    obj.update(step(0, 1, [1.0, -0.5]))  # a lockstep re-send: counted once
    assert obj.update(step(0, 2, [2.0, -0.5]))["return"] == {"task": 3.0, "force": -1.0}
    assert obj.update(step(1, 0, [0.0, 0.0]))["return"] == {"task": 0.0, "force": 0.0}


def test_markers_become_primitives_per_body():
    from geometry_msgs.msg import Point
    from visualization_msgs.msg import Marker, MarkerArray

    msg = MarkerArray()
    for i, (ns, kind) in enumerate([("base", Marker.CUBE), ("base", Marker.SPHERE), ("peg", Marker.CYLINDER),
                                    ("mesh", Marker.TRIANGLE_LIST), ("text", Marker.TEXT_VIEW_FACING)]):
        m = Marker(ns=ns, id=i, type=kind)
        m.header.frame_id = "world"
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = m.scale.z = 1.0
        if kind == Marker.TRIANGLE_LIST:
            m.points = [Point(x=0.0), Point(x=1.0), Point(y=1.0)]
        msg.markers.append(m)
    update = SceneConverter()(msg)
    schema = {"schemaName": "foxglove.SceneUpdate", "schema": base64.b64encode(update.get_schema().data).decode()}
    decoded = decode_protobuf(schema, update.encode())
    by_id = {e.id: e for e in decoded.entities}
    assert (len(by_id["base"].cubes), len(by_id["base"].spheres)) == (1, 1)
    assert len(by_id["peg"].cylinders) == 1
    assert len(by_id["mesh"].triangles[0].points) == 3
    assert "text" not in by_id  # a marker kind without a primitive is left out


def test_the_committed_layout_is_the_generated_one_and_names_served_channels():
    from morl_robot.views.foxglove_layout import LAYOUT_PATH, layout_json

    assert LAYOUT_PATH.read_text() == layout_json(), "regenerate: python -m morl_robot.views.foxglove_layout"
    text = LAYOUT_PATH.read_text()
    for topic in ("/scene", "/objectives.return.task", "/wrench.force.norm", "/safety/estop.engaged",
                  "/safety/violations"):
        assert f'"{topic}' in text
        assert topic.split(".")[0] in CHANNELS


def test_a_taken_port_is_an_error_naming_it():
    from morl_robot.errors import ConfigError
    from morl_robot.views.foxglove import LiveView

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}.*--foxglove PORT"):
            LiveView(port=port)


def test_the_viewed_robot_is_the_namespace_itself_else_actor0_first():
    from morl_robot.nodes.live_view import robot_namespaces

    train = ["/morl/actor10/task_step", "/morl/actor2/joint_states", "/morl/actor0/task_step", "/morl/policy_snapshot",
             "/other/task_step", "/diagnostics"]
    assert robot_namespaces(train, "/morl") == ["/morl/actor0", "/morl/actor2", "/morl/actor10"]
    assert robot_namespaces(["/morl/task_step", "/morl/actor0/task_step"], "/morl")[0] == "/morl"


def test_the_dashboard_frame_draws_the_received_channels(live, tmp_path):
    from PIL import Image

    from morl_robot.views.foxglove_frame import draw, scene_polygons

    scene = decode_protobuf(live.channels["/scene"], live.messages["/scene"][-1][1])
    assert len(scene_polygons(scene)) > 50
    draw(live, str(tmp_path / "frame.png"))
    png = np.asarray(Image.open(tmp_path / "frame.png").convert("RGB"), dtype=float)
    assert png.shape[:2] == (700, 1300) and png.std() > 10.0
