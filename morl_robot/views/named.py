"""Named views of what travels as labelled ``Float64MultiArray`` (no ROS here): a task step's
rewards and returns per objective, its observation by label, a command by component, each in a
form standard tools plot without a decoder (the message types are chosen in ``nodes/wire.py``).

A named vector is (names, values); :func:`command_field` says which ``JointState`` field carries a
command of a control mode.  See docs/reference/topics.md (``view/…``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from morl_robot.errors import WireError

#: The JointState field a command of each control mode fills (its units' quantity).
COMMAND_FIELDS = {"position": "position", "velocity": "velocity", "cartesian_velocity": "velocity",
                  "effort": "effort"}


def command_field(control_mode: str) -> str:
    """``position``, ``velocity`` or ``effort``: where a command of ``control_mode`` goes."""
    try:
        return COMMAND_FIELDS[control_mode]
    except KeyError:
        raise WireError(f"no view for control mode {control_mode!r}; known: {sorted(COMMAND_FIELDS)}") from None


def objective_topic(kind: str, objective: str) -> str:
    """``view/<kind>/<objective>`` (kind ``reward`` or ``return``), the objective name made a valid
    ROS name token (letters, digits and underscores; a leading digit gets a ``_``)."""
    token = "".join(c if c.isalnum() or c == "_" else "_" for c in objective) or "_"
    if token[0].isdigit():
        token = "_" + token
    return f"view/{kind}/{token}"


@dataclass(frozen=True)
class TaskStepView:
    """One task step, named: per objective its reward and return so far, the observation by label."""

    stamp: float
    rewards: dict[str, float]
    returns: dict[str, float]
    observation: tuple[tuple[str, ...], np.ndarray]


def task_step_view(objectives: Sequence[str], observation_labels: Sequence[str], reward: np.ndarray,
                   returns: np.ndarray | None, observation: np.ndarray, stamp: float) -> TaskStepView:
    """The named view of a step (``returns`` None: zeros)."""
    reward = np.asarray(reward, np.float64)
    ret = np.zeros_like(reward) if returns is None else np.asarray(returns, np.float64)
    if reward.shape != (len(objectives),) or ret.shape != reward.shape:
        raise WireError(f"{len(objectives)} objectives but rewards {reward.shape}, returns {ret.shape}")
    obs = np.asarray(observation, np.float64).reshape(-1)
    if obs.size != len(observation_labels):
        raise WireError(f"{obs.size} observation values but {len(observation_labels)} labels")
    return TaskStepView(float(stamp), {o: float(r) for o, r in zip(objectives, reward)},
                        {o: float(r) for o, r in zip(objectives, ret)}, (tuple(observation_labels), obs))
