"""The scene as a MarkerArray (morl_robot/nodes/views.py): the bytes patched per frame are the
message built field by field, for primitive shapes and meshes."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

pytest.importorskip("rclpy")
from rclpy.serialization import deserialize_message
from visualization_msgs.msg import Marker, MarkerArray

from morl_robot.nodes.views import SerializedScene, pose_markers, scene_markers
from morl_robot.resources import sim_path
from morl_robot.views.scene import SceneModel
from tests.views.test_scene import MESH_XML, _sphere_mesh


def _scenes():
    peg = mujoco.MjModel.from_xml_path(str(sim_path("sawyer/peg_in_hole.xml")))
    v, f = _sphere_mesh(20)
    mesh = mujoco.MjModel.from_xml_string(MESH_XML.format(v=" ".join(map(str, v.ravel())),
                                                          f=" ".join(map(str, f.ravel()))))
    hand = mujoco.MjModel.from_xml_path(str(sim_path("shadow_hand/orient.xml")))
    return [peg, mesh, hand]


@pytest.mark.parametrize("model", _scenes(), ids=["peg_in_hole", "mesh", "shadow_orient"])
def test_patched_bytes_are_the_built_message(model):
    data = mujoco.MjData(model)
    data.qpos[:] = np.random.default_rng(1).uniform(-0.5, 0.5, model.nq)
    mujoco.mj_forward(model, data)
    scene = SceneModel(model)
    fast = SerializedScene(scene_markers(scene))
    assert fast.ok
    pos, quat = scene.poses(data)
    got = deserialize_message(fast.frame(pos, quat, 12, 345), MarkerArray)
    built = scene_markers(scene)
    stamp = built.markers[0].header.stamp.__class__(sec=12, nanosec=345)
    assert got == pose_markers(built, pos, quat, stamp)
    m = got.markers[0]
    assert m.header.frame_id == "world" and m.action == Marker.ADD
    if model.nmesh:
        assert m.type == Marker.TRIANGLE_LIST and len(m.points) % 3 == 0 and len(m.points) > 0
