"""Shared builders for the serving tests: task contracts and exported policies."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import torch

from morl_robot.envs.mo_env import make_sim_robot
from morl_robot.learning.networks import GaussianPolicy
from morl_robot.learning.normalization import RunningNormalizer
from morl_robot.serving.contract import PolicyContract, contract_for_task, replace
from morl_robot.serving.export import export_policy
from morl_robot.tasks.registry import load_task

SAWYER = "sawyer_peg_in_hole"
SHADOW = "shadow_touch"


@functools.cache
def task_contract(task_name: str) -> PolicyContract:
    """The contract of a policy for ``task_name`` (MuJoCo robot built once and closed)."""
    task = load_task(task_name)
    robot = make_sim_robot(task)
    try:
        return contract_for_task(task, robot, policy_version=1, run_id="test")
    finally:
        robot.close()


def make_policy(contract: PolicyContract, seed: int = 0, hidden=(64, 48), init_std: float = 0.7,
                nan: bool = False) -> GaussianPolicy:
    torch.manual_seed(seed)
    policy = GaussianPolicy(len(contract.observation_labels), len(contract.action_labels), hidden, init_std=init_std)
    with torch.no_grad():
        # spread the mean head so different observations give clearly different actions
        policy.mean_head.weight.normal_(0.0, 0.3)
        if nan:
            for p in policy.parameters():
                p.fill_(float("nan"))
    return policy


def make_normalizer(contract: PolicyContract, seed: int = 0) -> RunningNormalizer:
    rng = np.random.default_rng(seed)
    o = len(contract.observation_labels)
    norm = RunningNormalizer(o)
    norm.update(rng.normal(rng.uniform(-1, 1, o), rng.uniform(0.1, 3.0, o), size=(500, o)))
    return norm


def model_bytes(task_name: str = SAWYER, version: int = 1, seed: int = 0, nan: bool = False,
                path: Path | None = None, contract: PolicyContract | None = None, **policy_kw) -> bytes:
    c = replace(contract or task_contract(task_name), policy_version=version)
    return export_policy(make_policy(c, seed, nan=nan, **policy_kw), c, path, normalizer=make_normalizer(c, seed))


def with_metadata(data: bytes, **changes: str) -> bytes:
    """``data`` with some metadata_props replaced (a model whose contract lies about its graph)."""
    model = onnx.load_from_string(data)
    for prop in model.metadata_props:
        if prop.key in changes:
            prop.value = changes[prop.key]
    return model.SerializeToString()


def random_observations(contract: PolicyContract, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 2.0, size=(n, len(contract.observation_labels)))


# --- ε-conditioned policies -------------------------------------------------------------------------
RANGES = [[0.01, 1.0], [0.01, 1.0]]


def conditioned_contract(task_name: str = SAWYER, ranges=RANGES) -> PolicyContract:
    """``task_name``'s contract with a preference input (one ε per objective, in ``ranges``)."""
    from morl_robot.serving.contract import PreferenceInputs

    c = task_contract(task_name)
    return replace(c, preferences=PreferenceInputs(list(c.objective_names), [list(r) for r in ranges]))


def conditioned_learner(contract: PolicyContract, ranges=RANGES, seed: int = 0, strong: bool = False):
    """A tiny untrained ε-conditioned MOMPOLearner for ``contract`` whose mean action depends clearly on
    observation and preference (``strong``: the preference inputs dominate the first layer)."""
    from morl_robot.learning import ActionSpec, MOMPOLearner
    from morl_robot.learning.config import config_from_dict

    cfg = config_from_dict({"preferences": {"ranges": ranges},
                            "networks": {"policy_hidden": [32, 24], "critic_hidden": [16, 16]}})
    learner = MOMPOLearner(len(contract.observation_labels), ActionSpec.box(len(contract.action_labels)),
                           len(contract.objective_names), cfg, seed=seed)
    with torch.no_grad():
        learner.policy.mean_head.weight.normal_(0.0, 0.5)
        if strong:
            first = next(m for m in learner.policy.torso.modules() if isinstance(m, torch.nn.Linear))
            first.weight[:, -len(ranges):] *= 30.0
    return learner
