"""A context on a Gymnasium MuJoCo environment (MO-Gymnasium's ``mo-hopper-v5`` …), not a robot task.

:class:`MujocoContextWrapper` puts ``env.unwrapped.model`` in a :class:`~morl_robot.contexts.Context`
at every reset, from the nominal model, with the robot backend's meaning of each kind
(:meth:`morl_robot.robots.mujoco_robot.MujocoRobot.apply_context`): ``mass`` scales the body's mass
**and inertia**, ``friction`` the geoms' sliding friction, ``damping`` the joints' damping.  Sensor,
link and placement kinds have no meaning here and are refused.  docs/howto/generalization.md.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from morl_robot.contexts.schema import Context
from morl_robot.errors import ConfigError, UnknownNameError

#: the context kinds a plain MuJoCo model takes
MODEL_KINDS = ("mass", "friction", "damping")


class MujocoContextWrapper(gym.Wrapper):
    """Episodes of ``env`` (a Gymnasium MuJoCo env) in ``context`` (None: the nominal model)."""

    def __init__(self, env: gym.Env, context: Context | None) -> None:
        super().__init__(env)
        model = getattr(env.unwrapped, "model", None)
        if model is None or not hasattr(model, "body_mass"):
            raise ConfigError(f"context '{getattr(context, 'name', None)}': {env.unwrapped} has no MuJoCo model")
        self.model = model
        self._nominal = {k: np.array(getattr(model, k)) for k in
                         ("body_mass", "body_inertia", "geom_friction", "dof_damping")}
        if context is not None:
            bad = sorted({context.specs[k].kind for k, v in context.values.items()
                          if context.specs[k].kind not in MODEL_KINDS and v != context.specs[k].nominal})
            if bad:
                raise ConfigError(f"context '{context.name}': kind {bad[0]} cannot apply to a plain MuJoCo "
                                  f"model (kinds here: {', '.join(MODEL_KINDS)})")
        self.context = context

    def apply(self) -> None:
        """The model in the context, from the nominal one (contexts never accumulate)."""
        import mujoco

        m, nom = self.model, self._nominal
        for k, v in nom.items():
            getattr(m, k)[:] = v
        if self.context is None:
            return
        rc = self.context.robot_context()

        def ident(kind: Any, name: str, what: str) -> int:
            i = mujoco.mj_name2id(m, kind, name)
            if i < 0:
                raise UnknownNameError(f"context '{self.context.name}': the model has no {what} named '{name}'")  # type: ignore[union-attr]
            return int(i)

        for body, s in rc.body_mass.items():
            b = ident(mujoco.mjtObj.mjOBJ_BODY, body, "body")
            m.body_mass[b] = nom["body_mass"][b] * s
            m.body_inertia[b] = nom["body_inertia"][b] * s  # same geometry: inertia scales with mass
        for geom, s in rc.geom_friction.items():
            g = ident(mujoco.mjtObj.mjOBJ_GEOM, geom, "geom")
            m.geom_friction[g, 0] = nom["geom_friction"][g, 0] * s
        for joint, s in rc.joint_damping.items():
            j = ident(mujoco.mjtObj.mjOBJ_JOINT, joint, "joint")
            adr, n = int(m.jnt_dofadr[j]), {0: 6, 1: 3}.get(int(m.jnt_type[j]), 1)
            m.dof_damping[adr: adr + n] = nom["dof_damping"][adr: adr + n] * s

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.apply()
        obs, info = self.env.reset(**kwargs)
        info["context"] = self.context.name if self.context is not None else "nominal"
        return obs, info
