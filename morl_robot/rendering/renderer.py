"""One offscreen MuJoCo renderer: a headless GL context (:func:`~morl_robot.rendering.gl.gl_backend`),
a scene and a camera; :meth:`OffscreenRenderer.render` gives an HxWx3 uint8 frame of a model's data.
The context is made current on every call, so a node may render from any one thread at a time."""
from __future__ import annotations

from typing import Any, Self

import numpy as np

from morl_robot.rendering.camera import mjv_camera
from morl_robot.rendering.gl import RenderingError, gl_backend
from morl_robot.tasks.base import CameraView

#: alpha of a :attr:`CameraView.translucent` material
TRANSLUCENT_ALPHA = 0.35


class OffscreenRenderer:
    """Renders ``model``'s data through ``view`` at ``width`` x ``height`` pixels (the model's
    offscreen buffer is enlarged when smaller).  ``shadows``: shadows and reflections, ~30x the
    cost of a frame under a software EGL (Mesa llvmpipe: ~1 s instead of ~30 ms at 640 x 480)."""

    def __init__(self, model: Any, view: CameraView, width: int = 640, height: int = 480,
                 shadows: bool = False) -> None:
        import mujoco

        if width < 8 or height < 8:
            raise RenderingError(f"a frame needs at least 8 x 8 pixels, got {width} x {height}")
        cls, self.backend = gl_backend()
        self.width, self.height = int(width), int(height)
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), self.width)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), self.height)
        self._model = model
        self._gl = cls(self.width, self.height)
        self._gl.make_current()
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._scene = mujoco.MjvScene(model, maxgeom=10_000)
        self._option = mujoco.MjvOption()
        if not shadows:
            self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        for name in view.translucent:  # drawing only: physics does not read material colours
            mat = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MATERIAL, name)
            if mat >= 0:
                model.mat_rgba[mat, 3] = TRANSLUCENT_ALPHA
        self._camera = mjv_camera(view)
        self._viewport = mujoco.MjrRect(0, 0, self.width, self.height)
        self._pixels = np.empty((self.height, self.width, 3), dtype=np.uint8)

    def render(self, data: Any) -> np.ndarray:
        """A new HxWx3 uint8 frame of ``data`` (top row first)."""
        import mujoco

        self._gl.make_current()
        mujoco.mjv_updateScene(self._model, data, self._option, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL,
                               self._scene)
        mujoco.mjr_render(self._viewport, self._scene, self._context)
        mujoco.mjr_readPixels(self._pixels, None, self._viewport, self._context)
        return np.flipud(self._pixels).copy()

    def close(self) -> None:
        if self._gl is not None:
            self._gl.make_current()
            self._context.free()
            self._gl.free()
            self._gl = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
