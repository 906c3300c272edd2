"""The product environment of a MOMDP and a MORM (MORM paper §3.3, Def. 5).

:class:`RewardMachineEnv` wraps a labelled environment: after every step the labelling function
gives σ = L(s, a, s'), the MORM moves u → u' = δ(u, σ) and pays λ(u, σ) (d,).  The wrapper

* appends the product machine state as a one-hot (S,) to the (flattened) observation,
* returns the MORM reward vector, or ``[task objectives (K), MORM objectives (d)]`` with
  ``keep_task_rewards=True``,
* terminates when the environment does or the MORM reaches a terminal state,
* reports in ``info``: ``rm_label`` (σ as a bit mask over the MORM's propositions), ``rm_state``
  (u'), ``rm_state_name``, ``env_terminated`` (the environment's own termination) and, when the
  machine ended the episode, ``termination = "reward_machine"``,
* names its observation components (``observation_labels``, for a labelled inner env such as
  :class:`~morl_robot.envs.mo_env.MORobotEnv`): the inner labels, then
  ``rm_state/<u_1>+…+<u_d>`` per product state (:func:`machine_state_labels`).

A reward-machine *task* (:class:`RMTaskSpec`, :func:`wrap_task_env`) puts a robot task's
environment in its product; the robot node, the vectorized actor and the learner node open it from
the ``reward_machine`` setting, in-process training from the Gymnasium id.  Its policies carry the
machine in their contract (:func:`machine_inputs`: the spec, the one-hot layout and a digest of the
product's tables and the labelling function); :func:`check_machine` compares a contract's machine
with the files of this installation before a policy is evaluated or deployed.

:meth:`RewardMachineEnv.relabeller` gives the :class:`~morl_robot.reward_machines.crm.CounterfactualRelabeller`
(the observation and reward columns of the machine) for CRM in the replay.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from morl_robot.errors import ConfigError
from morl_robot.reward_machines.crm import CounterfactualRelabeller
from morl_robot.reward_machines.product import ProductMachine
from morl_robot.serving.contract import ContractError, RewardMachineInputs

__all__ = ["Labeller", "RMTaskSpec", "RewardMachineEnv", "check_machine", "info_labels", "load_rm_task",
           "machine_inputs", "machine_state_labels", "wrap_task_env"]

#: L: (env, observation, action, next observation, info) → the set of true propositions.
Labeller = Callable[[gym.Env, Any, Any, Any, dict], "set[str] | frozenset[str]"]


def machine_state_labels(product: ProductMachine) -> tuple[str, ...]:
    """Observation labels of the product-state one-hot (S,): ``rm_state/<u_1>+…+<u_d>``."""
    return tuple("rm_state/" + "+".join(m.states[u] for m, u in zip(product.machines, state))
                 for state in product.states)


def info_labels(env: gym.Env, obs: Any, action: Any, next_obs: Any, info: dict) -> frozenset[str]:
    """The labelling function of environments that label their own transitions (``info["labels"]``)."""
    return frozenset(info["labels"])


class RewardMachineEnv(gym.Wrapper):
    """Product environment (see the module docstring); ``machine_state`` is the MORM state index."""

    def __init__(self, env: gym.Env, product: ProductMachine, labeller: Labeller = info_labels,
                 keep_task_rewards: bool = False):
        super().__init__(env)
        self.product, self.labeller, self.keep_task_rewards = product, labeller, bool(keep_task_rewards)
        inner = env.observation_space
        if not isinstance(inner, spaces.Box):
            raise TypeError(f"RewardMachineEnv needs a Box observation space, got {inner}")
        self.obs_dim_env = int(np.prod(inner.shape))
        S = product.num_states
        low = np.concatenate([np.broadcast_to(inner.low, inner.shape).reshape(-1), np.zeros(S)])
        high = np.concatenate([np.broadcast_to(inner.high, inner.shape).reshape(-1), np.ones(S)])
        self.observation_space = spaces.Box(low.astype(np.float64), high.astype(np.float64), dtype=np.float64)
        task_names = list(getattr(env.unwrapped, "objective_names", []) or [])
        self.task_objectives = len(task_names) if keep_task_rewards else 0
        self.objective_names = (task_names if keep_task_rewards else []) + list(product.objective_names)
        k = len(self.objective_names)
        self.reward_space = spaces.Box(-np.inf, np.inf, shape=(k,), dtype=np.float64)
        self.reward_dim = k
        self.machine_state = product.initial
        #: what a policy's contract records of this machine (set by :func:`wrap_task_env`; None otherwise)
        self.contract_machine: RewardMachineInputs | None = None
        self._obs = None
        inner_labels = getattr(env, "observation_labels", None)
        #: the inner env's labels + the machine one-hot's (None for an unlabelled inner env)
        self.observation_labels = (None if inner_labels is None
                                   else tuple(inner_labels) + machine_state_labels(product))

    def __getattr__(self, name: str) -> Any:
        """Robot-env attributes (``task``, ``robot``, ``state``, ``action_labels`` …) pass through, so the
        evaluation protocol and the safety shield work on the product environment too."""
        if name.startswith("_") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def relabeller(self, fraction: float = 1.0) -> CounterfactualRelabeller:
        """CRM for this env's observation/reward layout."""
        return CounterfactualRelabeller(self.product, obs_offset=self.obs_dim_env,
                                        reward_offset=self.task_objectives, fraction=fraction)

    def _augment(self, obs: Any) -> np.ndarray:
        return np.concatenate([np.asarray(obs, np.float64).reshape(-1), self.product.one_hot(self.machine_state)])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.machine_state = self.product.initial
        self._obs = obs
        return self._augment(obs), {**info, "rm_state": self.machine_state, "rm_state_name": self.product.state_name(self.machine_state)}

    def step(self, action: Any) -> tuple[np.ndarray, np.ndarray, bool, bool, dict]:
        next_obs, reward, terminated, truncated, info = self.env.step(action)
        sigma = self.product.mask(self.labeller(self.env, self._obs, action, next_obs, info))
        self.machine_state, rm_reward = self.product.step(self.machine_state, sigma)
        self._obs = next_obs
        vec = np.asarray(rm_reward, np.float64)
        if self.keep_task_rewards:
            vec = np.concatenate([np.asarray(reward, np.float64).reshape(-1), vec])
        machine_done = bool(self.product.terminal[self.machine_state])
        info = {**info, "rm_label": sigma, "rm_state": self.machine_state, "rm_state_name": self.product.state_name(self.machine_state),
                "env_terminated": bool(terminated)}
        if machine_done and not terminated:
            info["termination"] = "reward_machine"
        done = bool(terminated) or machine_done
        return self._augment(next_obs), vec, done, bool(truncated) and not done, info


# --- reward-machine tasks: a robot task + its labelling function + one machine per objective ----

@dataclass
class RMTaskSpec:
    """YAML (``config/reward_machines/<robot>/<name>.yaml`` with ``task:`` at the top level)::

        task: sawyer_peg_in_hole
        labelling: sawyer_peg_in_hole            # config/reward_machines/labels/<name>.yaml or a path
        machines: [sawyer/touch_then_insert, sawyer/force_budget]
        keep_task_rewards: true                  # reward = [task objectives, MORM objectives]
    """

    task: str
    labelling: str
    machines: list[str]
    keep_task_rewards: bool = True
    description: str = ""


def load_rm_task(path: str | os.PathLike[str]) -> tuple[RMTaskSpec, ProductMachine, Any]:
    """Spec, MORM and labeller of a reward-machine task; checks that the labelling function is for
    the same task and defines every proposition the machines read."""
    from morl_robot.configuration import from_mapping, load_yaml
    from morl_robot.reward_machines.labelling import task_labeller
    from morl_robot.reward_machines.machine import load_machine, machine_path
    from morl_robot.reward_machines.product import build_product

    path = machine_path(path)
    spec = from_mapping(RMTaskSpec, load_yaml(path), source=str(path))
    labeller = task_labeller(spec.labelling)
    if labeller.spec.task != spec.task:
        raise ConfigError(f"{path}: key 'labelling': {labeller.source} labels task '{labeller.spec.task}', "
                          f"not '{spec.task}'")
    if not spec.machines:
        raise ConfigError(f"{path}: key 'machines': at least one reward machine is needed")
    product = build_product([load_machine(m) for m in spec.machines])
    missing = sorted(set(product.propositions) - set(labeller.propositions))
    if missing:
        raise ConfigError(f"{path}: the machines read proposition(s) {missing} that the labelling function "
                          f"{labeller.source} does not define; it defines {', '.join(labeller.propositions)}")
    return spec, product, labeller


def _machine_inputs(spec: str | os.PathLike[str], task_spec: RMTaskSpec, product: ProductMachine,
                    labeller: Any) -> RewardMachineInputs:
    """The contract's ``reward_machine`` of a loaded reward-machine task.  The digest is the SHA-256
    of canonical JSON of what decides the policy's inputs and rewards: the task, the product's
    propositions, state labels, tables δ (S, M), λ (S, M, d) and F (S,), the objectives, whether
    the task's rewards are kept, and the labelling function's features and propositions (names
    of files, comments, guard order and descriptions do not enter it)."""
    states = machine_state_labels(product)
    labelling = dataclasses.asdict(labeller.spec)
    labelling.pop("description", None)
    content = {
        "task": task_spec.task, "keep_task_rewards": bool(task_spec.keep_task_rewards),
        "objectives": list(product.objective_names), "propositions": list(product.propositions),
        "states": list(states), "next_state": product.next_state.tolist(), "reward": product.reward.tolist(),
        "terminal": product.terminal.tolist(), "labelling": labelling,
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return RewardMachineInputs(
        spec=str(spec), labelling=str(task_spec.labelling), machines=[str(m) for m in task_spec.machines],
        objectives=list(product.objective_names), keep_task_rewards=bool(task_spec.keep_task_rewards),
        states=list(states), digest="sha256:" + hashlib.sha256(text.encode()).hexdigest())


def machine_inputs(spec: str | os.PathLike[str]) -> RewardMachineInputs:
    """The contract field ``reward_machine`` of a policy trained on the reward-machine task ``spec``
    (a name under ``config/reward_machines/`` or a path), from this installation's files."""
    return _machine_inputs(spec, *load_rm_task(spec))


def check_machine(recorded: RewardMachineInputs, task: str) -> RewardMachineInputs:
    """This installation's version of the machine a policy's contract records (loaded by its
    ``spec`` reference), checked: :class:`~morl_robot.serving.contract.ContractError` naming the
    contract field if the spec cannot be loaded, is for another task, or differs from the one the
    policy was trained with (labelling, machines, objectives, one-hot layout, digest)."""
    try:
        task_spec, product, labeller = load_rm_task(recorded.spec)
    except (ConfigError, OSError) as exc:
        raise ContractError(f"contract field 'reward_machine': its spec {recorded.spec!r} cannot be loaded here: "
                            f"{exc}") from None
    if task_spec.task != task:
        raise ContractError(f"contract field 'reward_machine': spec {recorded.spec!r} is written for task "
                            f"'{task_spec.task}' but the policy's task is '{task}'")
    local = _machine_inputs(recorded.spec, task_spec, product, labeller)
    recorded.check_same(local, f"this installation's {recorded.spec}")
    return local


def wrap_task_env(env: gym.Env, spec: str | os.PathLike[str]) -> RewardMachineEnv:
    """A robot task's environment (:class:`~morl_robot.envs.mo_env.MORobotEnv`) in the product of
    the reward-machine task ``spec`` (a name under ``config/reward_machines/`` or a path); a
    :class:`ConfigError` if the spec is written for another task.  Its ``contract_machine`` is the
    :class:`~morl_robot.serving.contract.RewardMachineInputs` its policies' contracts record."""
    task_spec, product, labeller = load_rm_task(spec)
    name = env.unwrapped.task.name
    if task_spec.task != name:
        raise ConfigError(f"reward machine {spec}: it is written for task '{task_spec.task}', not '{name}'")
    wrapped = RewardMachineEnv(env, product, labeller, keep_task_rewards=task_spec.keep_task_rewards)
    wrapped.contract_machine = _machine_inputs(spec, task_spec, product, labeller)
    return wrapped
