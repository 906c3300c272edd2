"""Labelling functions over the robot's state, declared per task in YAML.

A labelling function L(s, a, s') → σ ⊆ P (MORM paper §2.3) turns a transition into the events a
reward machine reads.  Here each proposition is a conjunction of threshold conditions on the
task's *transition features* of s' (``Task.transition_features``: task-frame quantities computed
from the robot's sensor readings — wrist F/T, end-effector pose, tactile array, scene sensors —
the same on the MuJoCo backend and on hardware, where the same ``RobotState`` fields are filled by
the drivers).  Derived features combine named ones.

YAML (``config/reward_machines/labels/<task>.yaml``)::

    task: sawyer_peg_in_hole
    features:                              # derived features (optional)
      force_norm: {norm: [force_x, force_y, force_z]}       # Euclidean norm
      lateral_error: {norm: [tip_dx, tip_dy]}
      depth_fraction: {ratio: [tip_dz, hole_depth], scale: -1.0}   # scale · a / b
      max_touch: {max: ["tactile_*"]}                      # max / sum / min over names (glob patterns)
    propositions:                          # each: every condition must hold
      touching_fixture: [{feature: force_norm, op: ">", value: 1.0}]
      inserted: [{feature: depth_fraction, op: ">=", value: 0.9}, {feature: lateral_error, op: "<", value: 0.004}]

Operators: ``>``, ``>=``, ``<``, ``<=``.  Unknown feature names are reported (with the task's
feature names) when the labeller first sees the task's features, i.e. at the first step.
"""
from __future__ import annotations

import fnmatch
import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from morl_robot.configuration import fail, from_mapping, load_yaml
from morl_robot.errors import ConfigError
from morl_robot.resources import resolve_config

__all__ = ["FeatureLabeller", "LabellingSpec", "load_labelling", "task_labeller"]

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


@dataclass
class DerivedFeature:
    """Exactly one of ``norm``, ``sum``, ``max``, ``min`` (over names or glob patterns) or ``ratio``
    ([numerator, denominator]); the result times ``scale``."""

    norm: list[str] = field(default_factory=list)
    sum: list[str] = field(default_factory=list)
    max: list[str] = field(default_factory=list)
    min: list[str] = field(default_factory=list)
    ratio: list[str] = field(default_factory=list)
    scale: float = 1.0

    def kind(self) -> str:
        kinds = [k for k in ("norm", "sum", "max", "min", "ratio") if getattr(self, k)]
        if len(kinds) != 1:
            raise ConfigError(f"give exactly one of norm, sum, max, min, ratio; got {kinds or 'none'}")
        if kinds[0] == "ratio" and len(self.ratio) != 2:
            raise ConfigError(f"ratio needs [numerator, denominator], got {self.ratio}")
        return kinds[0]


@dataclass
class Condition:
    feature: str
    op: Literal[">", ">=", "<", "<="]
    value: float


@dataclass
class LabellingSpec:
    task: str
    propositions: dict[str, list[Condition]]
    features: dict[str, DerivedFeature] = field(default_factory=dict)
    description: str = ""

    def validate(self) -> None:
        if not self.propositions:
            fail("", "propositions", "at least one proposition is needed")
        for name, conds in self.propositions.items():
            if not conds:
                fail("", f"propositions.{name}", "needs at least one condition")
        for name, feat in self.features.items():
            try:
                feat.kind()
            except ConfigError as exc:
                fail("", f"features.{name}", str(exc))


def load_labelling(path_or_task: str | os.PathLike[str]) -> tuple[LabellingSpec, str]:
    """Load a labelling YAML (a task name under ``config/reward_machines/labels`` or a path:
    :func:`~morl_robot.resources.resolve_config`)."""
    path = resolve_config("reward_machines/labels", path_or_task)
    return from_mapping(LabellingSpec, load_yaml(path), source=str(path)), str(path)


class FeatureLabeller:
    """σ = the propositions whose conditions all hold on the features of s' (see the module docstring).

    Call as a :data:`~morl_robot.reward_machines.env.Labeller` (env, obs, action, next_obs, info),
    or :meth:`labels` on a feature vector and its names.
    """

    def __init__(self, spec: LabellingSpec, source: str = ""):
        self.spec, self.source = spec, source
        self.propositions = tuple(spec.propositions)
        self._plan: Any = None
        self._names: tuple[str, ...] | None = None

    def _compile(self, names: Sequence[str]) -> None:
        index = {n: i for i, n in enumerate(names)}
        where = f"{self.source}: " if self.source else ""

        def resolve(pattern: str, key: str) -> list[int]:
            hits = [index[n] for n in names if fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                raise ConfigError(f"{where}key '{key}': no feature matches {pattern!r}; task '{self.spec.task}' "
                                  f"features: {', '.join(names)}; derived: {', '.join(self.spec.features) or '-'}")
            return hits

        derived = {}
        for name, feat in self.spec.features.items():
            kind = feat.kind()
            idx = [i for p in getattr(feat, kind) for i in resolve(p, f"features.{name}")]
            derived[name] = (kind, idx, feat.scale)
        conds = {}
        for prop, cs in self.spec.propositions.items():
            plan = []
            for j, c in enumerate(cs):
                if c.feature in derived:
                    plan.append(("derived", c.feature, _OPS[c.op], c.value))
                else:
                    i = resolve(c.feature, f"propositions.{prop}[{j}].feature")
                    if len(i) != 1:
                        raise ConfigError(f"{where}key 'propositions.{prop}[{j}].feature': {c.feature!r} matches "
                                          f"{len(i)} features; use a derived max/sum/norm for several")
                    plan.append(("raw", i[0], _OPS[c.op], c.value))
            conds[prop] = plan
        self._plan, self._derived, self._names = conds, derived, tuple(names)

    def features(self, values: np.ndarray, names: Sequence[str]) -> dict[str, float]:
        """The derived features of one reading (for logs and tests)."""
        if self._names != tuple(names):
            self._compile(names)
        out = {}
        for name, (kind, idx, scale) in self._derived.items():
            v = values[idx]
            if kind == "norm":
                x = float(np.sqrt(np.dot(v, v)))
            elif kind == "sum":
                x = float(v.sum())
            elif kind == "max":
                x = float(v.max())
            elif kind == "min":
                x = float(v.min())
            else:
                x = float(v[0] / v[1]) if v[1] != 0 else float("inf") * np.sign(v[0])
            out[name] = scale * x
        return out

    def labels(self, values: np.ndarray, names: Sequence[str]) -> frozenset[str]:
        values = np.asarray(values, np.float64)
        derived = self.features(values, names)
        true = []
        for prop, plan in self._plan.items():
            if all(op(derived[ref] if kind == "derived" else values[ref], v) for kind, ref, op, v in plan):
                true.append(prop)
        return frozenset(true)

    def __call__(self, env: Any, obs: Any, action: Any, next_obs: Any, info: dict) -> frozenset[str]:
        inner = env.unwrapped
        task = inner.task
        return self.labels(task.transition_features(inner.state), task.transition_feature_labels())


def task_labeller(path_or_task: str | os.PathLike[str]) -> FeatureLabeller:
    spec, source = load_labelling(path_or_task)
    return FeatureLabeller(spec, source)
