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
from morl_robot.errors import ConfigError
from morl_robot.robots.context import SCALED_FIELDS, scale_model

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
        self._nominal = {k: np.array(getattr(model, k)) for k in SCALED_FIELDS}
        if context is not None:
            bad = sorted({context.specs[k].kind for k, v in context.values.items()
                          if context.specs[k].kind not in MODEL_KINDS and v != context.specs[k].nominal})
            if bad:
                raise ConfigError(f"context '{context.name}': kind {bad[0]} cannot apply to a plain MuJoCo "
                                  f"model (kinds here: {', '.join(MODEL_KINDS)})")
        self.context = context

    def apply(self) -> None:
        """The model in the context, from the nominal one (contexts never accumulate)."""
        if self.context is None:
            for k, v in self._nominal.items():
                getattr(self.model, k)[:] = v
            return
        scale_model(self.model, self._nominal, self.context.robot_context(), "the model")

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.apply()
        obs, info = self.env.reset(**kwargs)
        info["context"] = self.context.name if self.context is not None else "nominal"
        return obs, info
