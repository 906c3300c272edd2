"""The policy contract: what an exported policy expects and produces, carried inside the model.

A trained policy only makes sense together with the exact observation it was trained on (names,
order, units, frame stacking), the action it outputs (names, units, the robot-unit bounds the
normalised action maps to, the control mode and rate), and where it came from (robot, task,
objectives and the ε_k of MO-MPO — Abdolmaleki et al. 2020, "A Distributional View on
Multi-Objective Policy Optimization", section 4 — or the weights of scalarized MPO, the run and
the code version).  :class:`PolicyContract` holds all of it; it travels as ONNX ``metadata_props``
(one key per field, JSON-encoded values, see :meth:`PolicyContract.to_metadata`), so a model file
is self-describing (``morl-robot inspect policy.onnx``) and a server can refuse a model that does
not fit the running one (:meth:`PolicyContract.check_compatible`).

An ε-conditioned MO-MPO policy π(a | s, ε) (:mod:`morl_robot.learning.preferences`) takes the
preference ε = (ε_1 … ε_K) as a second input; its contract lists that input in
:class:`PreferenceInputs` (objective names and the ``[low, high]`` box it was trained on), which
also validates a preference and computes the network's features from it with numpy only (the
policy server must not import torch).

A policy trained in the product of a task and a multi-objective reward machine (MORM paper §3.3:
the observation ends with the product-state one-hot, the reward ends with one entry per machine)
lists that machine in :class:`RewardMachineInputs` (contract field ``reward_machine``): the
reward-machine task spec by its resolvable reference, the labelling function and machines it
names, the MORM objectives, the one-hot layout (the ``rm_state/…`` observation labels, in order)
and a digest of the machine's content, so an evaluator or a robot rebuilds the same product and a
different machine behind the same name is refused (:func:`morl_robot.reward_machines.env.machine_inputs`
computes it, :func:`morl_robot.reward_machines.env.check_machine` compares).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from morl_robot.errors import MorlRobotError
from morl_robot.robots.base import Robot
from morl_robot.robots.spec import (
    CARTESIAN_LABELS,
    ControlMode,
    RobotSpec,
    delta_actuator,
)
from morl_robot.tasks.base import Task

#: Value of the ``contract_format`` metadata key written with every contract.
CONTRACT_FORMAT = "1"
ALGORITHMS = ("mo_mpo", "scalarized_mpo")
#: ``absolute``: the action is the control mode's command; ``delta``: its change from the measured
#: state, labelled ``<actuator>/delta`` (position mode; :data:`morl_robot.robots.spec.DELTA_SUFFIX`)
ACTION_MODES = ("absolute", "delta")
NORMALIZERS = ("none", "running")


class ContractError(MorlRobotError, ValueError):
    """A model/contract mismatch or an invalid contract; the message names the field."""


class PreferenceError(ContractError):
    """A preference ε that the policy cannot take: wrong length, not finite, outside its range, or
    given to a policy without a preference input.  The message names the objective and its range."""


@dataclass
class PreferenceInputs:
    """The preference input of an ε-conditioned policy: one ε_k per objective, in the box
    ``ranges[k] = [low_k, high_k]`` (0 < low ≤ high; ``low == high`` fixes that objective) it was
    trained on.  Mirrors :class:`morl_robot.learning.preferences.PreferenceSpace` (same features,
    same checks) without torch.  Stored in the contract's ``preferences`` metadata key as
    ``{"names": […], "ranges": [[low, high], …]}`` (``PreferenceSpace.to_dict()``)."""

    names: list[str]  # objective names, in the contract's objective order
    ranges: list[list[float]]  # [[low, high], …] per objective

    def validate(self, objective_names: Sequence[str] | None = None) -> None:
        """Raise :class:`ContractError` naming the first bad entry."""
        if not self.names:
            raise ContractError("contract field 'preferences' lists no objectives (omit it for an unconditioned policy)")
        if len(self.ranges) != len(self.names):
            raise ContractError(f"contract field 'preferences' has {len(self.ranges)} ranges for "
                                f"{len(self.names)} objectives {self.names}: one [low, high] per objective")
        if objective_names is not None and list(self.names) != list(objective_names):
            raise ContractError(f"contract field 'preferences' names {self.names} but the objectives are "
                                f"{list(objective_names)} (one preference input per objective, same order)")
        for name, r in zip(self.names, self.ranges):
            if len(r) != 2:
                raise ContractError(f"contract field 'preferences': range of '{name}' must be [low, high], got {r!r}")
            lo, hi = float(r[0]), float(r[1])
            if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
                raise ContractError(f"contract field 'preferences': range of '{name}' must satisfy 0 < low <= high "
                                    f"(finite), got [{lo}, {hi}]")

    @property
    def dim(self) -> int:
        """K: one preference input per objective."""
        return len(self.names)

    @property
    def low(self) -> np.ndarray:
        return np.array([r[0] for r in self.ranges], np.float64)  # [K]

    @property
    def high(self) -> np.ndarray:
        return np.array([r[1] for r in self.ranges], np.float64)  # [K]

    @property
    def centre(self) -> np.ndarray:
        """The box's geometric centre ``[K]``: the default preference."""
        return np.exp(0.5 * (np.log(self.low) + np.log(self.high)))

    @property
    def feature_labels(self) -> list[str]:
        """Labels of the K preference features in an experience row (``preference/<objective>``)."""
        return [f"preference/{n}" for n in self.names]

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One preference ``[K]``, log-uniform per objective in its range (a fixed one at its value):
        what an exploring actor acts under for an episode (as ``PreferenceSpace.sample``)."""
        log_low, log_high = np.log(self.low), np.log(self.high)
        return np.clip(np.exp(log_low + rng.random(self.dim) * (log_high - log_low)), self.low, self.high)

    def check(self, eps: Sequence[float] | np.ndarray, what: str = "preference", rtol: float = 1e-6) -> np.ndarray:
        """``eps`` as a ``[K]`` float64 array (clipped onto the box) if it has K finite entries inside
        the ranges (to ``rtol``); otherwise :class:`PreferenceError` naming the objective and its range."""
        try:
            e = np.asarray(eps, np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise PreferenceError(f"{what} must be {self.dim} numbers ({', '.join(self.names)}), got {eps!r}") from None
        if e.shape != (self.dim,):
            raise PreferenceError(f"{what} has {e.size} values but the policy takes {self.dim}, one per objective "
                                  f"({', '.join(self.names)})")
        low, high = self.low, self.high
        for name, v, lo, hi in zip(self.names, e, low, high):
            if not (math.isfinite(v) and lo * (1 - rtol) <= v <= hi * (1 + rtol)):
                raise PreferenceError(f"{what}: ε for objective '{name}' is {float(v)!r}, outside its range [{lo:g}, {hi:g}]")
        return np.clip(e, low, high)

    def check_labelled(self, values: Sequence[float], labels: Sequence[str], what: str = "preference") -> np.ndarray:
        """As :meth:`check` for a labelled vector (a ``preference`` message): ``labels`` empty, or the
        objective names in any order (the values are reordered to the contract's order)."""
        labels = [lab.strip() for lab in labels]
        if not labels:
            return self.check(values, what)
        if sorted(labels) != sorted(self.names) or len(labels) != len(values):
            raise PreferenceError(f"{what} is labelled {labels} but the policy's preference inputs are "
                                  f"{self.names} (label each value with its objective, or leave the labels empty)")
        by_name = dict(zip(labels, values))
        return self.check([by_name[n] for n in self.names], what)

    def describe(self, eps: Sequence[float] | np.ndarray) -> str:
        """``task=0.1, wrist_force=0.01`` (for logs)."""
        return ", ".join(f"{n}={float(v):.6g}" for n, v in zip(self.names, np.asarray(eps).reshape(-1)))

    def features(self, eps: np.ndarray) -> np.ndarray:
        """The network input for preferences ``[..., K]`` (float32): ``2 (log ε − log low) /
        (log high − log low) − 1`` per free objective, 0 for a fixed one (what the exported graph computes)."""
        scale, offset = self.feature_affine()
        return (np.log(np.asarray(eps, np.float64)) * scale + offset).astype(np.float32)

    def feature_affine(self) -> tuple[np.ndarray, np.ndarray]:
        """``(scale [K], offset [K])`` with features = ``scale · log ε + offset`` (0 and 0 for a fixed objective)."""
        log_low, log_high = np.log(self.low), np.log(self.high)
        free = log_high > log_low
        span = np.where(free, log_high - log_low, 1.0)
        scale = np.where(free, 2.0 / span, 0.0)
        return scale, np.where(free, -2.0 * log_low / span - 1.0, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "ranges": [[float(a), float(b)] for a, b in self.ranges]}

    @classmethod
    def from_value(cls, value: Any) -> PreferenceInputs | None:
        """From the decoded ``preferences`` metadata value (``None`` or ``{"names", "ranges"}``)."""
        if value is None:
            return None
        bad = ContractError(f"contract field 'preferences' must be null or {{\"names\": [str, …], "
                            f"\"ranges\": [[low, high], …]}}, got {value!r}")
        if not isinstance(value, dict) or set(value) != {"names", "ranges"}:
            raise bad
        names, ranges = value["names"], value["ranges"]
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names) and isinstance(ranges, list)
                and all(isinstance(r, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
                        for r in ranges)):
            raise bad
        return cls(list(names), [[float(x) for x in r] for r in ranges])


#: Prefix of the observation labels of a reward-machine product state one-hot.
MACHINE_STATE_PREFIX = "rm_state/"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_MACHINE_KEYS = ("spec", "labelling", "machines", "objectives", "keep_task_rewards", "states", "digest")


@dataclass
class RewardMachineInputs:
    """The reward machine a policy acts under (contract field ``reward_machine``, see the module doc).

    Stored as a JSON object with these keys.  The product-state one-hot is the last
    ``len(states)`` observation entries (labels ``rm_state/<u_1>+…+<u_d>``, in the product's
    breadth-first state order), the MORM objectives the last ``len(objectives)`` objectives."""

    spec: str  # reward-machine task spec: a name under config/reward_machines/ (or a path) as trained
    labelling: str  # the labelling function the spec names
    machines: list[str]  # the reward machines the spec names, one per MORM objective
    objectives: list[str]  # the MORM objective names (the machines' names), in reward order
    keep_task_rewards: bool  # the reward is [task objectives, MORM objectives] (else MORM objectives only)
    states: list[str]  # the one-hot layout: its observation labels rm_state/…, in order
    digest: str  # "sha256:<hex>" of the product machine's tables and the labelling function

    def validate(self, contract: PolicyContract | None = None) -> None:
        """Raise :class:`ContractError` naming the first bad entry; with ``contract``, also that its
        observation labels end with ``states`` and its objectives with ``objectives``."""
        where = "contract field 'reward_machine'"
        for key in ("spec", "labelling"):
            if not getattr(self, key):
                raise ContractError(f"{where}: '{key}' is empty")
        if not self.machines or len(self.machines) != len(self.objectives):
            raise ContractError(f"{where}: 'machines' {self.machines} and 'objectives' {self.objectives} must name "
                                "one reward machine per MORM objective")
        bad = [x for x in self.states if not x.startswith(MACHINE_STATE_PREFIX)]
        if not self.states or bad:
            raise ContractError(f"{where}: 'states' must be the one-hot's observation labels "
                                f"'{MACHINE_STATE_PREFIX}…', got {bad or 'none'}")
        if not _DIGEST.match(self.digest):
            raise ContractError(f"{where}: 'digest' must be 'sha256:' and 64 hex digits, got {self.digest!r}")
        if contract is None:
            return
        obs, s = list(contract.observation_labels), len(self.states)
        if obs[-s:] != list(self.states) or any(x.startswith(MACHINE_STATE_PREFIX) for x in obs[:-s]):
            raise ContractError(f"{where}: the observation labels must end with its {s} product states "
                                f"{self.states[:2]}… (the one-hot), and only there; they end with {obs[-s:][:2]}…")
        k, d = len(contract.objective_names), len(self.objectives)
        if list(contract.objective_names[-d:]) != list(self.objectives) or (k > d) != self.keep_task_rewards:
            raise ContractError(f"{where}: the objectives {contract.objective_names} must be "
                                f"{'the task objectives, then ' if self.keep_task_rewards else ''}the MORM "
                                f"objectives {self.objectives}")

    def to_dict(self) -> dict[str, Any]:
        return {key: (list(v) if isinstance(v := getattr(self, key), list) else v) for key in _MACHINE_KEYS}

    @classmethod
    def from_value(cls, value: Any) -> RewardMachineInputs | None:
        """From the decoded ``reward_machine`` metadata value (``None`` or the object of :meth:`to_dict`)."""
        if value is None:
            return None
        if not isinstance(value, dict) or set(value) != set(_MACHINE_KEYS):
            raise ContractError(f"contract field 'reward_machine' must be null or an object with keys "
                                f"{', '.join(_MACHINE_KEYS)}, got {value!r}")
        for key in ("spec", "labelling", "digest"):
            if not isinstance(value[key], str):
                raise ContractError(f"contract field 'reward_machine': '{key}' must be a string, got {value[key]!r}")
        for key in ("machines", "objectives", "states"):
            if not (isinstance(value[key], list) and all(isinstance(x, str) for x in value[key])):
                raise ContractError(f"contract field 'reward_machine': '{key}' must be a list of strings, "
                                    f"got {value[key]!r}")
        if not isinstance(value["keep_task_rewards"], bool):
            raise ContractError(f"contract field 'reward_machine': 'keep_task_rewards' must be true or false, "
                                f"got {value['keep_task_rewards']!r}")
        return cls(**{key: value[key] for key in _MACHINE_KEYS})

    def check_same(self, other: RewardMachineInputs, what: str) -> None:
        """:class:`ContractError` naming the first entry in which ``other`` (the machine ``what``
        found, e.g. this installation's files) differs from this one (the policy's); ``spec`` may
        differ (the same machine may be named by a path on one side and a name on the other)."""
        for key in _MACHINE_KEYS[1:]:
            a, b = getattr(self, key), getattr(other, key)
            if a != b:
                hint = (" (the machines or the labelling function changed since the policy was trained)"
                        if key == "digest" else "")
                raise ContractError(f"contract field 'reward_machine': '{key}' of the policy is {a!r} but {what} "
                                    f"has {b!r}{hint}")


@dataclass
class PolicyContract:
    """Everything a policy server must know to feed a policy and use its output (see module doc)."""

    robot: str  # "sawyer" | "shadow_hand"
    task: str  # task name, e.g. "sawyer_peg_in_hole"
    control_mode: str  # ControlMode value of the task
    control_rate: float  # Hz (1 / task.config.control_period)
    observation_labels: list[str]
    observation_units: list[str]  # one per observation label
    frame_stack: int  # 1 if the task does not stack frames
    action_labels: list[str]
    action_units: list[str]  # one per action label (robot units of the control mode)
    action_low: list[float]  # robot units; normalised action -1 maps here
    action_high: list[float]  # normalised +1 maps here
    objective_names: list[str]
    algorithm: str  # "mo_mpo" | "scalarized_mpo"
    epsilons: list[float]  # ε_k per objective (MO-MPO); [] if scalarized
    weights: list[float]  # scalarization weights (scalarized MPO); [] for MO-MPO
    observation_normalizer: str = "none"  # "none" | "running" (mean/std baked into the graph)
    policy_version: int = 0
    run_id: str = ""
    code_version: str = ""  # morl_robot version + git commit if available
    #: ε-conditioned policy: its preference input (objective names, ranges); None = unconditioned
    preferences: PreferenceInputs | None = field(default=None)
    #: policy of a reward-machine task: the machine and its one-hot layout; None = the task alone
    reward_machine: RewardMachineInputs | None = field(default=None)
    #: "absolute" or "delta" (ACTION_MODES); models from before the field read as absolute
    action_mode: str = "absolute"

    # --- validation ----------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise :class:`ContractError` naming the first field that is inconsistent."""
        for name in ("robot", "task"):
            if not getattr(self, name):
                raise ContractError(f"contract field '{name}' is empty")
        modes = [m.value for m in ControlMode]
        if self.control_mode not in modes:
            raise ContractError(f"contract field 'control_mode' is '{self.control_mode}'; allowed: {', '.join(modes)}")
        if not (math.isfinite(self.control_rate) and self.control_rate > 0):
            raise ContractError(f"contract field 'control_rate' must be a positive number of Hz, got {self.control_rate}")
        if self.frame_stack < 1:
            raise ContractError(f"contract field 'frame_stack' must be >= 1, got {self.frame_stack}")
        for name in ("observation_labels", "action_labels", "objective_names"):
            labels = getattr(self, name)
            if not labels:
                raise ContractError(f"contract field '{name}' is empty")
            if len(set(labels)) != len(labels):
                dup = sorted({x for x in labels if labels.count(x) > 1})
                raise ContractError(f"contract field '{name}' repeats {dup}")
            bad = [x for x in labels if "," in x or not x]
            if bad:
                raise ContractError(f"contract field '{name}' has empty labels or labels with commas: {bad}")
        self._same_length("observation_units", "observation_labels")
        for name in ("action_units", "action_low", "action_high"):
            self._same_length(name, "action_labels")
        for i, (lo, hi) in enumerate(zip(self.action_low, self.action_high)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise ContractError(f"contract fields 'action_low'/'action_high' at index {i} "
                                    f"('{self.action_labels[i]}'): need finite low <= high, got [{lo}, {hi}]")
        if self.action_mode not in ACTION_MODES:
            raise ContractError(f"contract field 'action_mode' is '{self.action_mode}'; allowed: {', '.join(ACTION_MODES)}")
        relative = [lab for lab in self.action_labels if delta_actuator(lab) is not None]
        if self.action_mode == "delta" and (len(relative) != len(self.action_labels)
                                            or self.control_mode != ControlMode.POSITION.value):
            raise ContractError("contract field 'action_mode' is 'delta': every action label must be "
                                f"'<actuator>/delta' in position control, got {self.action_labels} in "
                                f"'{self.control_mode}'")
        if self.action_mode == "absolute" and relative:
            raise ContractError(f"contract field 'action_mode' is 'absolute' but action labels {relative} "
                                "are changes ('/delta'): set action_mode 'delta'")
        if self.algorithm not in ALGORITHMS:
            raise ContractError(f"contract field 'algorithm' is '{self.algorithm}'; allowed: {', '.join(ALGORITHMS)}")
        for name in ("epsilons", "weights"):
            values = getattr(self, name)
            if values and len(values) != len(self.objective_names):
                raise ContractError(f"contract field '{name}' has {len(values)} values for "
                                    f"{len(self.objective_names)} objectives {self.objective_names}")
            if any(not (math.isfinite(v) and v >= 0) for v in values):
                raise ContractError(f"contract field '{name}' must hold finite values >= 0, got {values}")
        if self.observation_normalizer not in NORMALIZERS:
            raise ContractError(f"contract field 'observation_normalizer' is '{self.observation_normalizer}'; "
                                f"allowed: {', '.join(NORMALIZERS)}")
        if self.policy_version < 0:
            raise ContractError(f"contract field 'policy_version' must be >= 0, got {self.policy_version}")
        if self.preferences is not None:
            if not isinstance(self.preferences, PreferenceInputs):
                raise ContractError(f"contract field 'preferences' must be PreferenceInputs or None, "
                                    f"got {type(self.preferences).__name__}")
            self.preferences.validate(self.objective_names)
        if self.reward_machine is not None:
            if not isinstance(self.reward_machine, RewardMachineInputs):
                raise ContractError(f"contract field 'reward_machine' must be RewardMachineInputs or None, "
                                    f"got {type(self.reward_machine).__name__}")
            self.reward_machine.validate(self)

    @property
    def machine_state_labels(self) -> list[str]:
        """The observation labels of a reward-machine one-hot (``rm_state/…``), whether or not the
        contract records the machine (one exported before contracts carried it does not)."""
        return [x for x in self.observation_labels if x.startswith(MACHINE_STATE_PREFIX)]

    def _same_length(self, name: str, of: str) -> None:
        a, b = getattr(self, name), getattr(self, of)
        if len(a) != len(b):
            raise ContractError(f"contract field '{name}' has {len(a)} entries but '{of}' has {len(b)}")

    # --- ONNX metadata ---------------------------------------------------------------------------
    def to_metadata(self) -> dict[str, str]:
        """ONNX ``metadata_props``: one key per field, JSON-encoded value, plus ``contract_format``
        (``preferences`` only for an ε-conditioned policy, ``reward_machine`` only for a policy of a
        reward-machine task and ``action_mode`` only for delta actions, so other models carry the same
        keys as before these existed)."""
        self.validate()
        md = {f.name: json.dumps(_plain(getattr(self, f.name)), ensure_ascii=False) for f in dataclasses.fields(self)
              if not (f.name in OPTIONAL_FIELDS and getattr(self, f.name) is None)
              and not (f.name == "action_mode" and self.action_mode == "absolute")}
        md["contract_format"] = CONTRACT_FORMAT
        return md

    @classmethod
    def from_metadata(cls, md: dict[str, str]) -> PolicyContract:
        """Parse :meth:`to_metadata` output (extra keys are ignored); :class:`ContractError` names
        a missing, undecodable or mistyped field."""
        if "contract_format" not in md:
            raise ContractError("model metadata carries no morl_robot policy contract (no 'contract_format' key)")
        if md["contract_format"] != CONTRACT_FORMAT:
            raise ContractError(f"contract_format {md['contract_format']!r} is not supported (expected {CONTRACT_FORMAT!r})")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in md:
                if f.default is dataclasses.MISSING:
                    raise ContractError(f"model metadata lacks contract field '{f.name}'")
                continue
            try:
                value = json.loads(md[f.name])
            except (TypeError, ValueError) as exc:
                raise ContractError(f"contract field '{f.name}' is not valid JSON ({exc}): {md[f.name]!r}") from None
            values[f.name] = _typed(f.name, _FIELD_TYPES[f.name], value)
        contract = cls(**values)
        contract.validate()
        return contract

    # --- compatibility ---------------------------------------------------------------------------
    def check_compatible(self, other: PolicyContract) -> None:
        """Raise :class:`ContractError` naming the first field in which ``other`` (a new model)
        cannot replace ``self`` (the running one): robot, task, control mode, rate, observation
        and action labels, units, frame stack, bounds, objectives, the preference input (present or
        not, and its ranges), the reward machine (when both record one: a contract written before
        the field existed is taken on its observation labels, which include the one-hot).  Version,
        run id, code version, algorithm, ε_k/weights and the normaliser may differ."""
        for name in COMPATIBILITY_FIELDS:
            a, b = getattr(self, name), getattr(other, name)
            if _equal(a, b) or (name == "reward_machine" and (a is None or b is None)):
                continue
            raise ContractError(f"policy contract mismatch in '{name}': running model has {_describe(a)}, "
                                f"new model has {_describe(b)}{_first_difference(a, b)}")

    # --- the task and robot it runs on ------------------------------------------------------------
    def check_task(self, task: Task, source: str = "") -> None:
        """Raise :class:`ContractError` naming the first of ``task``, ``robot``, ``control_mode`` and
        ``control_rate`` in which this contract does not describe ``task`` (a built
        :class:`~morl_robot.tasks.base.Task`, read from ``source``, its YAML): a policy runs in its
        task's own mode and rate, so a contract that says otherwise is refused, not reinterpreted."""
        where = f" ({source})" if source else ""
        mode = ControlMode(task.control_mode).value
        for name, want, have in (("task", task.name, self.task), ("robot", task.robot_name, self.robot),
                                 ("control_mode", mode, self.control_mode)):
            if have != want:
                raise ContractError(f"contract field '{name}' is '{have}' but task '{task.name}'{where} has "
                                    f"{name} '{want}'")
        rate = float(task.control_rate)
        if not math.isclose(self.control_rate, rate, rel_tol=1e-9):
            raise ContractError(f"contract field 'control_rate' is {self.control_rate:g} Hz but task '{task.name}'"
                                f"{where} runs at {rate:g} Hz (control_period {task.config.control_period:g} s)")

    def check_runs_on(self, task_config: str | os.PathLike[str] | None = None) -> None:
        """:meth:`check_task` against the task this contract names as it is run here (its YAML under
        ``config/tasks/``, or ``task_config``, with :meth:`task_overrides`), then that its robot's
        YAML (``config/robots/<robot>.yaml``) has its control mode.  :class:`ContractError` naming
        the field, both values and the YAML (an unknown task or robot: the known ones)."""
        from morl_robot.errors import UnknownNameError
        from morl_robot.resources import resolve_config
        from morl_robot.tasks.registry import TASKS, load_task, task_config_file

        if self.task not in TASKS:
            raise ContractError(f"contract field 'task' is '{self.task}': no such task here; known tasks: "
                                f"{', '.join(TASKS)}")
        source = resolve_config("tasks", task_config) if task_config is not None else task_config_file(self.task)
        self.check_task(load_task(self.task, source, self.task_overrides() or None), str(source))
        from morl_robot.robots.config import load_robot_config

        try:
            robot_source = resolve_config("robots", self.robot)
        except UnknownNameError as exc:  # pragma: no cover - the task check names the robot first
            raise ContractError(f"contract field 'robot' is '{self.robot}': {exc}") from None
        modes = [str(m) for m in load_robot_config(robot_source).control_modes]
        if self.control_mode not in modes:
            raise ContractError(f"contract field 'control_mode' is '{self.control_mode}' but robot '{self.robot}' "
                                f"({robot_source}) has control modes {', '.join(modes)}")

    @property
    def input_labels(self) -> list[str]:
        """What the policy network sees, in order: the observation labels, then (ε-conditioned) the
        preference features ``preference/<objective>`` — the ``obs/…`` columns of its experience."""
        return list(self.observation_labels) + (self.preferences.feature_labels if self.preferences else [])

    def check_preference(self, eps: Any, what: str = "preference") -> np.ndarray:
        """``eps`` as ``[K]`` float64 if the policy can act under it; otherwise
        :class:`PreferenceError` naming the objective and its range, the wrong length, or that the
        policy has no preference input."""
        if self.preferences is None:
            raise PreferenceError(f"{what}: this policy is not preference-conditioned (its contract lists no "
                                  "preference inputs); it takes no preference")
        return self.preferences.check(eps, what)

    def task_overrides(self) -> dict[str, Any]:
        """Task-config keys that make a task's environment read actions as this policy writes them
        (``{}`` for absolute actions, the task YAML's default; delta: ``action_mode`` and
        ``max_delta``, the bound action +1 maps to)."""
        if self.action_mode == "absolute":
            return {}
        return {"action_mode": self.action_mode, "max_delta": float(max(self.action_high))}

    def summary(self) -> str:
        """One line: task, robot, sizes, version."""
        conditioned = "" if self.preferences is None else f" + {self.preferences.dim} preferences"
        machine = "" if self.reward_machine is None else f" (reward machine {self.reward_machine.spec})"
        return (f"{self.task}{machine} on {self.robot} ({self.control_mode} @ {self.control_rate:g} Hz): "
                f"{len(self.observation_labels)} observations{conditioned} -> {len(self.action_labels)} actions, "
                f"{self.algorithm}, version {self.policy_version}, run '{self.run_id}'")


#: Fields that must agree for one model to replace another (see :meth:`PolicyContract.check_compatible`).
COMPATIBILITY_FIELDS = ("robot", "task", "control_mode", "control_rate", "observation_labels", "observation_units",
                        "frame_stack", "action_mode", "action_labels", "action_units", "action_low", "action_high",
                        "objective_names", "preferences", "reward_machine")
#: Fields written to the metadata only when set (older models lack them; they load as None).
OPTIONAL_FIELDS = ("preferences", "reward_machine")

_FIELD_TYPES: dict[str, str] = {
    "robot": "str", "task": "str", "control_mode": "str", "control_rate": "float",
    "observation_labels": "list[str]", "observation_units": "list[str]", "frame_stack": "int",
    "action_labels": "list[str]", "action_units": "list[str]", "action_low": "list[float]",
    "action_high": "list[float]", "objective_names": "list[str]", "algorithm": "str",
    "epsilons": "list[float]", "weights": "list[float]", "observation_normalizer": "str", "action_mode": "str",
    "policy_version": "int", "run_id": "str", "code_version": "str", "preferences": "preferences",
    "reward_machine": "reward_machine",
}


def _plain(value: Any) -> Any:
    return value.to_dict() if isinstance(value, (PreferenceInputs, RewardMachineInputs)) else value


def _typed(name: str, kind: str, value: Any) -> Any:
    def bad() -> ContractError:
        return ContractError(f"contract field '{name}' must be {kind}, got {value!r}")

    def number(x: Any) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise bad()
        return float(x)

    if kind == "preferences":
        return PreferenceInputs.from_value(value)
    if kind == "reward_machine":
        return RewardMachineInputs.from_value(value)
    if kind == "str":
        if not isinstance(value, str):
            raise bad()
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
        return value
    if kind == "float":
        return number(value)
    if not isinstance(value, list):
        raise bad()
    if kind == "list[str]":
        if not all(isinstance(x, str) for x in value):
            raise bad()
        return list(value)
    return [number(x) for x in value]


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (PreferenceInputs, RewardMachineInputs)) or isinstance(b, (PreferenceInputs, RewardMachineInputs)):
        return _equal(_plain(a), _plain(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _describe(x: Any) -> str:
    if x is None:
        return "none (not preference-conditioned)"
    if isinstance(x, RewardMachineInputs):
        return f"reward machine {x.spec} ({', '.join(x.objectives)}; {len(x.states)} product states, {x.digest[:19]}…)"
    if isinstance(x, PreferenceInputs):
        return "preference input " + ", ".join(f"{n} in [{lo:g}, {hi:g}]" for n, (lo, hi) in zip(x.names, x.ranges))
    if isinstance(x, list):
        shown = ", ".join(repr(v) for v in x[:6]) + (", …" if len(x) > 6 else "")
        return f"{len(x)} entries [{shown}]"
    return repr(x)


def _first_difference(a: Any, b: Any) -> str:
    if not (isinstance(a, list) and isinstance(b, list)):
        return ""
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(none)"
        y = b[i] if i < len(b) else "(none)"
        if not _equal(x, y):
            return f"; first difference at index {i}: {x!r} vs {y!r}"
    return ""


# --- building a contract for a task --------------------------------------------------------------
_FRAME_PREFIX = re.compile(r"^t-\d+/")


def observation_unit(label: str, spec: RobotSpec) -> str:
    """The unit of one observation component, from its label (the one place this mapping lives).

    A frame-stack prefix ``t-<k>/`` is ignored.  Rules, in order:

    * a label of one of the robot's sensors (tactile sensor names, scene sensors): the unit the
      robot spec declares for it (tactile: N);
    * ``<joint>/position`` rad, ``<joint>/velocity`` rad/s, ``<joint>/effort`` N·m;
    * ``wrench_fx|fy|fz`` N, ``wrench_tx|ty|tz`` N·m (the wrench sensor's declared units);
    * ``ee_x|y|z`` m (end-effector position), ``ee_qw|qx|qy|qz`` 1 (unit quaternion);
    * ``last_action_<component>`` 1 (the previous normalised action in [-1, 1]);
    * ``hole_offset_x|y|z`` mm (peg tip relative to the hole opening);
    * ``rm_state/<state>`` 1 (a reward-machine task's product-state one-hot);
    * ``context/<parameter>`` 1 (the episode's context, normalised to its training range: the task
      key ``contexts_observed``, issue 37).

    Raises :class:`ContractError` for a label no rule covers (a task states the units of its own
    labels in :attr:`~morl_robot.tasks.base.Task.observation_units`).
    """
    base = _FRAME_PREFIX.sub("", label)
    for sensor in spec.sensors:
        if base in sensor.labels and sensor.kind != "wrench":
            return sensor.units[sensor.labels.index(base)]
    if "/" in base:
        joint, quantity = base.rsplit("/", 1)
        units = {"position": "rad", "velocity": "rad/s", "effort": "N·m"}
        if joint in spec.joint_names and quantity in units:
            return units[quantity]
    if base.startswith("wrench_"):
        component = base[len("wrench_"):]
        for sensor in spec.sensors:
            if sensor.kind == "wrench" and component in sensor.labels:
                return sensor.units[sensor.labels.index(component)]
    if base in ("ee_x", "ee_y", "ee_z"):
        return "m"
    if base in ("ee_qw", "ee_qx", "ee_qy", "ee_qz"):
        return "1"
    if base.startswith("last_action_"):
        return "1"
    if base in ("hole_offset_x", "hole_offset_y", "hole_offset_z"):
        return "mm"
    if base.startswith(("rm_state/", "context/")):
        return "1"
    raise ContractError(f"no unit known for observation label '{label}' of robot '{spec.name}' "
                        "(a task states the units of its own labels in its class attribute observation_units)")


def action_unit(label: str, mode: ControlMode) -> str:
    """Unit of one action component in robot units: the control mode's unit; Cartesian velocity
    splits into m/s (vx, vy, vz) and rad/s (wx, wy, wz)."""
    if mode == ControlMode.CARTESIAN_VELOCITY:
        if label not in CARTESIAN_LABELS:
            raise ContractError(f"action label '{label}' is not a Cartesian component {CARTESIAN_LABELS}")
        return "m/s" if label in CARTESIAN_LABELS[:3] else "rad/s"
    from morl_robot.tasks.base import CONTROL_MODE_UNITS

    return CONTROL_MODE_UNITS[mode]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``morl_robot <version>`` plus ``+g<short commit>`` when the package sits in a git checkout
    (never fails when git is absent)."""
    try:
        from morl_robot import __version__ as version
    except ImportError:  # pragma: no cover - always defined in this package
        from importlib.metadata import version as _v

        version = _v("morl_robot")
    text = f"morl_robot {version}"
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return text
    commit = out.stdout.strip()
    if out.returncode == 0 and commit:
        text += f"+g{commit}"
    return text


def contract_for_task(task: Task, robot: Robot, config: Any | None = None, *, policy_version: int = 0,
                      run_id: str = "", observation_labels: Sequence[str] | None = None,
                      objective_names: Sequence[str] | None = None,
                      reward_machine: RewardMachineInputs | None = None) -> PolicyContract:
    """The contract of a policy for ``task`` on ``robot`` trained with ``config``
    (:class:`~morl_robot.learning.config.MPOConfig`; None: MO-MPO with the default ε).
    ``observation_labels`` / ``objective_names``: those of the environment the policy acts in,
    where it is not the task's own (a reward-machine task: + the machine one-hot, + the MORM
    objectives), and then ``reward_machine``: that machine (see :func:`contract_for_env`)."""
    mode = ControlMode(task.control_mode)
    low, high = task.action_bounds(robot)  # also binds hand tasks to the robot's actuator names
    obs_labels = list(task.observation_labels(robot) if observation_labels is None else observation_labels)
    objectives = list(task.objective_names if objective_names is None else objective_names)
    if config is None:
        from morl_robot.learning.config import MPOConfig

        config = MPOConfig()
    algorithm = config.algorithm
    k = len(objectives)
    if algorithm == "mo_mpo":
        epsilons, weights = [float(e) for e in config.epsilons_for(k)], []
    else:
        epsilons, weights = [], [float(w) for w in config.weights_for(k)]
    prefs = getattr(config, "preferences", None)
    preferences = None if prefs is None else PreferenceInputs(objectives, [[float(a), float(b)] for a, b in prefs.ranges])
    contract = PolicyContract(
        robot=task.robot_name,
        task=task.name,
        control_mode=mode.value,
        control_rate=float(task.control_rate),
        observation_labels=obs_labels,
        observation_units=[task.observation_units.get(_FRAME_PREFIX.sub("", lab)) or observation_unit(lab, robot.spec)
                           for lab in obs_labels],  # a task's own labels first (Task.observation_units)
        frame_stack=int(getattr(task.config, "frame_stack", 1)),
        action_labels=list(task.action_labels),
        action_units=[action_unit(a, mode) for a in task.action_labels],
        action_low=[float(x) for x in low],
        action_high=[float(x) for x in high],
        objective_names=objectives,
        algorithm=algorithm,
        epsilons=epsilons,
        weights=weights,
        policy_version=int(policy_version),
        run_id=run_id,
        code_version=code_version(),
        preferences=preferences,
        reward_machine=reward_machine,
        action_mode=task.action_mode,
    )
    contract.validate()
    return contract


def contract_for_env(env: Any, config: Any | None = None, **kwargs: Any) -> PolicyContract:
    """The contract of a policy acting in ``env``: a task's environment
    (:class:`~morl_robot.envs.mo_env.MORobotEnv`) or a reward-machine task's product of it
    (:class:`~morl_robot.reward_machines.env.RewardMachineEnv` from ``wrap_task_env``, whose
    ``contract_machine`` is the contract's ``reward_machine``): its task, robot, observation labels
    and objectives.  ``kwargs``: ``policy_version``, ``run_id`` (see :func:`contract_for_task`)."""
    inner = env.unwrapped
    return contract_for_task(inner.task, inner.robot, config, observation_labels=env.observation_labels,
                             objective_names=env.objective_names,
                             reward_machine=getattr(env, "contract_machine", None), **kwargs)


def replace(contract: PolicyContract, **changes: Any) -> PolicyContract:
    """A validated copy with ``changes`` (e.g. ``policy_version``)."""
    new = dataclasses.replace(contract, **changes)
    new.validate()
    return new


__all__ = [
    "COMPATIBILITY_FIELDS",
    "ContractError",
    "PolicyContract",
    "PreferenceError",
    "PreferenceInputs",
    "RewardMachineInputs",
    "action_unit",
    "code_version",
    "contract_for_env",
    "contract_for_task",
    "observation_unit",
    "replace",
]
