"""The scene of a task model as markers (morl_robot/views/scene.py): every visible geom of robot,
tool and fixture, at MuJoCo's own world poses; meshes as triangles; hardware posed by joints."""
from __future__ import annotations

import mujoco
import numpy as np
import pytest

from morl_robot.errors import ConfigError
from morl_robot.resources import sim_path
from morl_robot.views import scene as sc
from morl_robot.views.named import command_field, objective_topic, task_step_view


def _wxyz_to_xyzw(q: np.ndarray) -> np.ndarray:
    return np.r_[q[1:], q[0]]


@pytest.fixture(scope="module")
def peg_scene():
    model = mujoco.MjModel.from_xml_path(str(sim_path("sawyer/peg_in_hole.xml")))
    data = mujoco.MjData(model)
    data.qpos[:7] = [0.3, -0.6, 0.2, 1.1, -0.4, 0.7, 1.5]  # a known arm configuration
    mujoco.mj_forward(model, data)
    return model, data, sc.SceneModel(model)


def _marker(scene: sc.SceneModel, name: str, part: int = 0) -> tuple[int, sc.Shape]:
    return next((i, s) for i, s in enumerate(scene.shapes) if s.name == name and s.id % sc.PARTS == part)


def test_robot_links_tool_and_fixture_are_markers_at_mujocos_world_poses(peg_scene):
    model, data, scene = peg_scene
    bodies = {s.ns for s in scene.shapes}
    assert {"right_l0", "right_l2", "right_l4", "right_l6", "tool", "fixture", "world"} <= bodies
    pos, quat = scene.poses(data)
    for name in ("peg", "right_l2", "fixture_px", "table"):
        i, _ = _marker(scene, name)
        g = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
        np.testing.assert_allclose(pos[i], data.geom_xpos[g], atol=1e-12)
        ref = np.empty(4)
        mujoco.mju_mat2Quat(ref, data.geom_xmat[g])
        assert abs(abs(quat[i] @ _wxyz_to_xyzw(ref)) - 1.0) < 1e-9, name  # the same rotation (q ≡ -q)
    # types and full sizes from the MJCF sizes
    _, peg = _marker(scene, "peg")
    g = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "peg")
    r, half = model.geom_size[g][:2]
    assert peg.kind == sc.CYLINDER and peg.scale == pytest.approx((2 * r, 2 * r, 2 * half))
    _, box = _marker(scene, "fixture_px")
    assert box.kind == sc.CUBE
    # a capsule: a cylinder and two spheres at ± the half length along the geom's z axis
    i, _ = _marker(scene, "right_l2", 1)
    g = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "right_l2")
    np.testing.assert_allclose(pos[i], data.geom_xpos[g] + data.geom_xmat[g].reshape(3, 3)[:, 2] * model.geom_size[g][1])
    assert np.allclose(np.linalg.norm(quat, axis=1), 1.0)
    assert len({(s.ns, s.id) for s in scene.shapes}) == len(scene)  # (ns, id) names each marker once


def test_the_arm_moves_its_markers_and_not_the_fixtures(peg_scene):
    model, _, scene = peg_scene
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    before, _ = scene.poses(data)
    data.qpos[0] += 0.5
    mujoco.mj_forward(model, data)
    after, _ = scene.poses(data)
    peg, fixture = _marker(scene, "peg")[0], _marker(scene, "fixture_px")[0]
    assert np.linalg.norm(after[peg] - before[peg]) > 0.05
    np.testing.assert_allclose(after[fixture], before[fixture])


MESH_XML = """<mujoco><asset><mesh name="ico" vertex="{v}" face="{f}"/></asset>
<worldbody><body name="b" pos="0.1 0.2 0.3"><joint name="j" type="hinge"/>
<geom name="m" type="mesh" mesh="ico" rgba="1 0 0 1"/></body></worldbody></mujoco>"""


def _sphere_mesh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A UV sphere of radius 0.05: vertices and (many) triangles."""
    th, ph = np.meshgrid(np.linspace(0.1, np.pi - 0.1, n), np.linspace(0, 2 * np.pi, n, endpoint=False), indexing="ij")
    v = 0.05 * np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1).reshape(-1, 3)
    faces = []
    for i in range(n - 1):
        for j in range(n):
            a, b, c, d = i * n + j, i * n + (j + 1) % n, (i + 1) * n + j, (i + 1) * n + (j + 1) % n
            faces += [(a, c, b), (b, c, d)]
    return v, np.array(faces)


def test_meshes_are_triangle_lists_within_the_budget():
    v, f = _sphere_mesh(40)
    xml = MESH_XML.format(v=" ".join(map(str, v.ravel())), f=" ".join(map(str, f.ravel())))
    model = mujoco.MjModel.from_xml_string(xml)
    full = sc.SceneModel(model, max_triangles=100_000)
    small = sc.SceneModel(model, max_triangles=300)
    (shape,) = full.shapes
    assert shape.kind == sc.TRIANGLE_LIST and shape.triangles is not None
    assert len(shape.triangles) % 3 == 0 and full.triangles == model.mesh_facenum[0]
    assert 50 < small.triangles <= 300
    # the triangles are in the geom frame: posed by the geom, they lie on the sphere around the body
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    pos, _ = full.poses(data)
    world = shape.triangles @ data.geom_xmat[0].reshape(3, 3).T + pos[0]
    r = np.linalg.norm(world - [0.1, 0.2, 0.3], axis=1)
    assert np.allclose(r, 0.05, atol=1e-3)
    with pytest.raises(ConfigError, match="max_triangles"):
        sc.SceneModel(model, max_triangles=0)


def test_hardware_scene_is_posed_by_the_measured_joints(peg_scene):
    """A robot that is not simulated: the task's scene MJCF, its robot joints set from the measured
    positions (objects at their nominal pose); no frame before the first measurement."""
    from types import SimpleNamespace

    from morl_robot.robots.model import load_robot_model

    robot = load_robot_model("sawyer")
    hw = SimpleNamespace(model=robot.model, spec=robot.spec)
    source = sc.SceneSource.for_robot(hw, "sawyer/peg_in_hole.xml")
    assert source.measured and source.poses(None) is None
    _, data, scene = peg_scene
    pos, quat = source.poses(np.array(data.qpos[:7]))
    ref_pos, ref_quat = scene.poses(data)  # the simulated scene at the same joints
    np.testing.assert_allclose(pos, ref_pos, atol=1e-9)
    assert np.allclose(np.abs(np.sum(quat * ref_quat, axis=1)), 1.0)
    bad = SimpleNamespace(model=robot.model, spec=SimpleNamespace(joint_names=("nope",), name="x"))
    with pytest.raises(ConfigError, match="nope"):
        sc.SceneSource.for_robot(bad, "sawyer/peg_in_hole.xml")


def test_quaternions_of_many_random_rotations():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(200, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    mats = np.empty((200, 9))
    for i, qi in enumerate(q):
        mujoco.mju_quat2Mat(mats[i], qi)
    out = sc._quat_xyzw(mats.reshape(-1, 3, 3))
    assert np.allclose(np.abs(np.sum(out * np.c_[q[:, 1:], q[:, 0]], axis=1)), 1.0)


def test_named_views():
    view = task_step_view(("task", "wrist_force"), ("x", "y"), np.array([1.0, -2.0]), None, np.array([3.0, 4.0]), 1.5)
    assert view.rewards == {"task": 1.0, "wrist_force": -2.0} and view.returns == {"task": 0.0, "wrist_force": 0.0}
    assert view.observation[0] == ("x", "y")
    assert objective_topic("reward", "wrist-force") == "view/reward/wrist_force"
    assert objective_topic("return", "2nd") == "view/return/_2nd"
    assert command_field("cartesian_velocity") == "velocity" and command_field("position") == "position"
