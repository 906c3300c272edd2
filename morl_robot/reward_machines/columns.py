"""The machine columns a reward-machine task adds to an experience row (after ``truncated``;
:mod:`morl_robot.acting.experience`): ``env_terminated`` (the environment's own termination, not
the machine's), then ``label/<proposition>`` per proposition of the MORM, from the ``info`` the
product environment (:class:`~morl_robot.reward_machines.env.RewardMachineEnv`) writes.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The first machine column; then ``label/<proposition>``… (:func:`machine_columns`).
ENV_TERMINATED = "env_terminated"
LABEL_PREFIX = "label/"


def machine_columns(propositions: Sequence[str]) -> tuple[str, ...]:
    """The machine columns of a reward-machine task over ``propositions`` (none without one)."""
    return (ENV_TERMINATED, *(f"{LABEL_PREFIX}{p}" for p in propositions)) if propositions else ()


def machine_values(info: dict, num_propositions: int, terminated: bool) -> np.ndarray:
    """The machine columns' values (1 + P,) of a step whose ``info`` a
    :class:`~morl_robot.reward_machines.env.RewardMachineEnv` wrote (``rm_label`` bit mask,
    ``env_terminated``); a step it did not write (an episode ended from outside the task: safety
    stop, reset) has no true proposition and its termination is the environment's."""
    mask = int(info.get("rm_label", 0))
    bits = [(mask >> i) & 1 for i in range(num_propositions)]
    return np.asarray([float(info.get("env_terminated", terminated)), *bits], np.float64)
