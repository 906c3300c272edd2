"""Which headless OpenGL MuJoCo renders with: ``MUJOCO_GL`` when set (egl, osmesa, glfw), else EGL
(GPU or Mesa's software EGL), falling back to OSMesa when EGL cannot make a context.  The choice is
made once per process and logged by the caller (:func:`gl_backend` returns it)."""
from __future__ import annotations

import os
import sys
from typing import Any

from morl_robot.errors import MorlRobotError


class RenderingError(MorlRobotError, RuntimeError):
    """No OpenGL context for offscreen rendering (the message names each backend tried and why)."""


_CHOSEN: tuple[Any, str] | None = None


def _load(name: str) -> Any:
    if name == "egl":
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
        from mujoco.egl import GLContext
    elif name == "osmesa":
        os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
        from mujoco.osmesa import GLContext
    else:
        from mujoco.glfw import GLContext
    return GLContext


def _forget_opengl() -> None:
    """Drop a half-initialised PyOpenGL (its platform is fixed at import) before the next backend."""
    for mod in [m for m in sys.modules if m == "OpenGL" or m.startswith("OpenGL.")
                or m in ("mujoco.egl", "mujoco.osmesa", "mujoco.egl.egl_ext")]:
        del sys.modules[mod]
    os.environ.pop("PYOPENGL_PLATFORM", None)


def gl_backend() -> tuple[Any, str]:
    """``(GLContext class, name)`` of a backend that made a context in this process (cached).

    Raises :class:`RenderingError` naming every backend tried and its error."""
    global _CHOSEN
    if _CHOSEN is not None:
        return _CHOSEN
    requested = os.environ.get("MUJOCO_GL", "").lower().strip()
    order = [requested] if requested in ("egl", "osmesa", "glfw") else ["egl", "osmesa"]
    errors = []
    for name in order:
        try:
            cls = _load(name)
            ctx = cls(8, 8)
            ctx.make_current()
            ctx.free()
        except Exception as e:  # noqa: BLE001 - any failure means: try the next backend
            errors.append(f"{name}: {type(e).__name__}: {e}")
            _forget_opengl()
            continue
        if not requested:
            os.environ["MUJOCO_GL"] = name  # child processes (the robot node) take the same one
        _CHOSEN = (cls, name)
        return _CHOSEN
    raise RenderingError("no OpenGL context for offscreen rendering (" + "; ".join(errors) + "). Install EGL "
                         "(libegl1 with a GPU driver or Mesa) or OSMesa (libosmesa6), or set MUJOCO_GL to a "
                         "backend that works here")
