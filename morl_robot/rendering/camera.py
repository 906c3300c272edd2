"""The camera a video of a task looks through: the task's own :class:`~morl_robot.tasks.base.CameraView`
(a free camera that frames the work: the peg and hole, the whole hand and its object), else one that
frames the whole model (its bounding sphere)."""
from __future__ import annotations

from typing import Any

from morl_robot.tasks.base import CameraView


def task_camera(task: Any, model: Any) -> CameraView:
    """``task``'s :attr:`~morl_robot.tasks.base.Task.camera` (None: no task, a bare robot), else a
    view of the whole ``model`` from the front left."""
    view = getattr(task, "camera", None) if task is not None else None
    if view is not None:
        return view
    centre = tuple(float(x) for x in model.stat.center)
    return CameraView(lookat=centre, distance=float(2.2 * model.stat.extent), azimuth=140.0, elevation=-20.0)


def mjv_camera(view: CameraView) -> Any:
    """``view`` as a free ``mujoco.MjvCamera``."""
    import mujoco

    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = view.lookat
    cam.distance = view.distance
    cam.azimuth = view.azimuth
    cam.elevation = view.elevation
    return cam
