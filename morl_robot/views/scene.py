"""The scene as markers: every visible MuJoCo geom of a model (robot, tool, fixture, object) as a
shape with a fixed size and colour, and its world pose from an ``MjData``.

Shapes are computed once per model (:class:`SceneModel`); a frame is only the poses
(:meth:`SceneModel.poses`), so the node re-sends pre-built markers with new poses.  Geom types map
to RViz marker types: box → cube, sphere and ellipsoid → sphere, cylinder → cylinder, capsule →
a cylinder and two end spheres, plane → a thin cube, mesh → a triangle list (in the geom frame,
decimated by vertex clustering to ``max_triangles``).  Height fields are skipped.

Where the poses come from (:class:`SceneSource`): in simulation the robot's own, full ``MjData``
(objects included); on hardware the task's scene model posed by the measured joint positions, every
other joint (objects) at its nominal value (``qpos0``).  See docs/reference/topics.md (``scene``).

Why every frame carries every marker (meshes too) at a modest rate rather than meshes once and poses
after: RViz moves a marker only when it is re-sent whole (a pose-only update needs ``frame_locked``
markers on TF frames, and tf2_msgs is not installable here), so the node serializes the markers once
and writes only poses and stamps into the bytes per frame (``nodes/views.py``: ~0.1 ms a frame
whatever the mesh size); the budget per mesh bounds the message size (~72 KB per 1000 triangles).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from morl_robot.errors import ConfigError

#: Marker kinds (visualization_msgs/Marker type constants).
CUBE, SPHERE, CYLINDER, TRIANGLE_LIST = 1, 2, 3, 11
#: Geom groups shown (MuJoCo's viewer shows 0–2 by default; 3+ hold collision-only copies).
VISIBLE_GROUPS = (0, 1, 2)
#: Size of a plane whose MJCF size is 0 (infinite), m.
PLANE_EXTENT = 4.0
PLANE_THICKNESS = 0.002
#: Markers per geom: the id of a geom's main marker is ``PARTS * geom id`` (a capsule's caps + 1, + 2).
PARTS = 3

_G = mujoco.mjtGeom


@dataclass(frozen=True)
class Shape:
    """One marker: which geom it draws, how (``kind``, full sizes ``scale`` in m, ``rgba``) and the
    offset of its centre along the geom's z axis (a capsule's end spheres)."""

    ns: str  # the geom's body name
    id: int  # PARTS * geom id + part
    geom: int
    name: str  # the geom's name ('' if unnamed)
    kind: int  # CUBE, SPHERE, CYLINDER or TRIANGLE_LIST
    scale: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    offset: float = 0.0
    triangles: np.ndarray | None = None  # (3T, 3) vertices in the geom frame (TRIANGLE_LIST)


def decimate(vertices: np.ndarray, faces: np.ndarray, max_triangles: int) -> np.ndarray:
    """The triangles (3T, 3) of a mesh, at most ``max_triangles`` of them: vertex clustering on a
    grid that coarsens until the budget is met (degenerate and repeated triangles dropped)."""
    vertices, faces = np.asarray(vertices, np.float64), np.asarray(faces, np.int64)
    if len(faces) <= max_triangles:
        return vertices[faces].reshape(-1, 3)
    lo = vertices.min(axis=0)
    extent = float(np.max(vertices.max(axis=0) - lo)) or 1.0
    cells = max(2, int(np.sqrt(max_triangles)))
    while cells >= 2:
        q = np.minimum(((vertices - lo) / extent * cells).astype(np.int64), cells - 1)
        _, cluster, counts = np.unique(q[:, 0] * cells * cells + q[:, 1] * cells + q[:, 2],
                                       return_inverse=True, return_counts=True)
        cluster = cluster.reshape(-1)
        centre = np.zeros((len(counts), 3))
        np.add.at(centre, cluster, vertices)
        centre /= counts[:, None]
        f = cluster[faces]
        f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
        _, first = np.unique(np.sort(f, axis=1), axis=0, return_index=True)
        f = f[np.sort(first)]
        if len(f) <= max_triangles:
            return centre[f].reshape(-1, 3)
        cells = int(cells * 0.75)
    return vertices[faces[:: int(np.ceil(len(faces) / max_triangles))]].reshape(-1, 3)


def _rgba(model: mujoco.MjModel, g: int) -> tuple[float, float, float, float]:
    mat = int(model.geom_matid[g])
    rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
    return tuple(float(x) for x in rgba)  # type: ignore[return-value]


def geom_shapes(model: mujoco.MjModel, g: int, max_triangles: int) -> list[Shape]:
    """The markers of geom ``g`` (none for a height field)."""
    t, s = int(model.geom_type[g]), model.geom_size[g]
    ns = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.geom_bodyid[g])) or f"body{model.geom_bodyid[g]}"
    base: dict[str, Any] = {"ns": ns, "geom": g, "rgba": _rgba(model, g),
                            "name": mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or ""}
    i = PARTS * g
    if t == _G.mjGEOM_BOX:
        return [Shape(id=i, kind=CUBE, scale=(2 * s[0], 2 * s[1], 2 * s[2]), **base)]
    if t == _G.mjGEOM_SPHERE:
        return [Shape(id=i, kind=SPHERE, scale=(2 * s[0],) * 3, **base)]
    if t == _G.mjGEOM_ELLIPSOID:
        return [Shape(id=i, kind=SPHERE, scale=(2 * s[0], 2 * s[1], 2 * s[2]), **base)]
    if t == _G.mjGEOM_CYLINDER:
        return [Shape(id=i, kind=CYLINDER, scale=(2 * s[0], 2 * s[0], 2 * s[1]), **base)]
    if t == _G.mjGEOM_CAPSULE:
        ball = (2 * s[0],) * 3
        return [Shape(id=i, kind=CYLINDER, scale=(2 * s[0], 2 * s[0], 2 * s[1]), **base),
                Shape(id=i + 1, kind=SPHERE, scale=ball, offset=float(s[1]), **base),
                Shape(id=i + 2, kind=SPHERE, scale=ball, offset=-float(s[1]), **base)]
    if t == _G.mjGEOM_PLANE:
        sx, sy = (2 * s[0] if s[0] > 0 else PLANE_EXTENT), (2 * s[1] if s[1] > 0 else PLANE_EXTENT)
        return [Shape(id=i, kind=CUBE, scale=(sx, sy, PLANE_THICKNESS), offset=-PLANE_THICKNESS / 2, **base)]
    if t == _G.mjGEOM_MESH:
        m = int(model.geom_dataid[g])
        va, vn = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
        fa, fn = int(model.mesh_faceadr[m]), int(model.mesh_facenum[m])
        tris = decimate(model.mesh_vert[va:va + vn], model.mesh_face[fa:fa + fn], max_triangles)
        return [Shape(id=i, kind=TRIANGLE_LIST, scale=(1.0, 1.0, 1.0), triangles=tris, **base)]
    return []


class SceneModel:
    """The markers of a model's visible geoms (groups :data:`VISIBLE_GROUPS`, alpha > 0) and
    their poses from an ``MjData`` of that model.

    Args:
        model: the compiled MJCF (a task scene: robot, tool, fixture, objects).
        max_triangles: budget per mesh (a mesh's points are in every message: see the module doc).
    """

    def __init__(self, model: mujoco.MjModel, max_triangles: int = 1000,
                 groups: Sequence[int] = VISIBLE_GROUPS) -> None:
        if max_triangles < 1:
            raise ConfigError(f"max_triangles must be >= 1, got {max_triangles}")
        self.model = model
        shown = [g for g in range(model.ngeom)
                 if int(model.geom_group[g]) in groups and _rgba(model, g)[3] > 0]
        self.shapes: tuple[Shape, ...] = tuple(s for g in shown for s in geom_shapes(model, g, max_triangles))
        self._geoms = np.array([s.geom for s in self.shapes], dtype=np.int64)
        self._offsets = np.array([s.offset for s in self.shapes])

    def __len__(self) -> int:
        return len(self.shapes)

    @property
    def triangles(self) -> int:
        """Triangles over all mesh markers."""
        return sum(len(s.triangles) // 3 for s in self.shapes if s.triangles is not None)

    def poses(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """(positions (N, 3) m, orientations (N, 4) as x, y, z, w) of every shape, world frame,
        from ``data``'s geom poses (current after ``mj_step``/``mj_kinematics``)."""
        xmat = np.asarray(data.geom_xmat)[self._geoms].reshape(-1, 3, 3)
        pos = np.asarray(data.geom_xpos)[self._geoms] + xmat[:, :, 2] * self._offsets[:, None]
        return pos, _quat_xyzw(xmat)


def _quat_xyzw(r: np.ndarray) -> np.ndarray:
    """Unit quaternions (N, 4) x, y, z, w of rotation matrices (N, 3, 3) (Shepperd's method)."""
    n = len(r)
    q = np.empty((n, 4))
    tr = r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2]
    diag = np.stack([r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]], axis=1)
    case = np.where(tr > diag.max(axis=1), 3, diag.argmax(axis=1))
    for c in range(4):
        k = case == c
        if not k.any():
            continue
        m = r[k]
        if c == 3:
            s = 2.0 * np.sqrt(1.0 + tr[k])
            q[k] = np.stack([(m[:, 2, 1] - m[:, 1, 2]) / s, (m[:, 0, 2] - m[:, 2, 0]) / s,
                             (m[:, 1, 0] - m[:, 0, 1]) / s, 0.25 * s], axis=1)
            continue
        i, j, l = c, (c + 1) % 3, (c + 2) % 3
        s = 2.0 * np.sqrt(np.maximum(1.0 + m[:, i, i] - m[:, j, j] - m[:, l, l], 1e-300))
        out = np.empty((len(m), 4))
        out[:, i] = 0.25 * s
        out[:, j] = (m[:, j, i] + m[:, i, j]) / s
        out[:, l] = (m[:, l, i] + m[:, i, l]) / s
        out[:, 3] = (m[:, l, j] - m[:, j, l]) / s
        q[k] = out
    return q / np.linalg.norm(q, axis=1, keepdims=True)


class SceneSource:
    """Where a robot node's scene poses come from (see the module doc).

    Args:
        scene: the markers of ``data``'s model.
        data: simulation: the robot's live ``MjData``; hardware: a kinematics-only ``MjData``.
        joints: hardware: the ``qpos`` addresses of the robot's joints (spec order), set from the
            measured positions before each frame; None in simulation.
    """

    def __init__(self, scene: SceneModel, data: Any, joints: np.ndarray | None = None) -> None:
        self.scene, self.data, self._joints = scene, data, joints

    @property
    def measured(self) -> bool:
        """Poses from measured joint positions (hardware) rather than a simulation."""
        return self._joints is not None

    def poses(self, position: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """The frame's poses; on hardware from joint ``position`` (spec order), None without one."""
        if self._joints is not None:
            if position is None:
                return None
            self.data.qpos[self._joints] = position
            mujoco.mj_kinematics(self.scene.model, self.data)
        return self.scene.poses(self.data)

    @classmethod
    def for_robot(cls, robot: Any, scene_mjcf: str = "", max_triangles: int = 1000) -> SceneSource:
        """The source for ``robot``: a MuJoCo robot's own model and data; any other backend (hardware)
        the MJCF ``scene_mjcf`` (relative to ``sim/``; "" = the robot's ``model``) posed by its joints."""
        from morl_robot.robots.mujoco_robot import MujocoRobot

        if isinstance(robot, MujocoRobot):
            return cls(SceneModel(robot.model, max_triangles), robot.data)
        if scene_mjcf:
            from morl_robot.resources import sim_path
            from morl_robot.robots.model import load_model

            model = load_model(sim_path(scene_mjcf))
        else:
            model = robot.model
        data = mujoco.MjData(model)
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in robot.spec.joint_names]
        missing = [n for n, j in zip(robot.spec.joint_names, jids) if j < 0]
        if missing:
            raise ConfigError(f"scene {scene_mjcf or 'model'}: has no joints {missing} of robot {robot.spec.name}")
        mujoco.mj_kinematics(model, data)
        return cls(SceneModel(model, max_triangles), data, model.jnt_qposadr[jids].copy())
