"""The context YAML schema, its loader (errors name the file and the key) and sampling.

A file::

    task: sawyer_peg_in_hole
    parameters:                      # name → how it applies
      tool_mass: {kind: mass, targets: [tool], nominal: 1.0, doc: "..."}
      ...
    training:                        # the DR distribution: name → [low, high] (uniform) or a value
      tool_mass: [0.8, 1.6]
    held_out:                        # named test contexts: name → {parameter: value}
      heavy_tool: {tool_mass: 3.0}

Kinds (:data:`KINDS`): ``mass`` (scale of the targets' masses; inertia scales with it),
``friction`` (scale of the target geoms' sliding friction), ``damping`` (scale of the target
joints' damping), ``actuator_gain`` (scale of every actuator's force), ``body_offset`` (m, xyz, a
static body moved), ``wrench_bias`` (6 values N, N·m, after the reset's tare), ``wrench_noise`` /
``tactile_noise`` (N, std per reading), ``latency`` / ``jitter`` (s).  A parameter left out of a
context has its nominal value.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.configuration import load_yaml
from morl_robot.errors import ConfigError, UnknownNameError
from morl_robot.resources import config_path, is_config_path
from morl_robot.robots.context import RobotContext

#: kind → (value size: 1 scalar, 3 or 6 a vector; needs targets; nominal default)
KINDS: dict[str, tuple[int, bool, float]] = {
    "mass": (1, True, 1.0),
    "friction": (1, True, 1.0),
    "damping": (1, True, 1.0),
    "actuator_gain": (1, False, 1.0),
    "body_offset": (3, True, 0.0),
    "wrench_bias": (6, False, 0.0),
    "wrench_noise": (1, False, 0.0),
    "tactile_noise": (1, False, 0.0),
    "latency": (1, False, 0.0),
    "jitter": (1, False, 0.0),
}
_POSITIVE = {"mass", "friction", "damping", "actuator_gain"}
_NON_NEGATIVE = {"wrench_noise", "tactile_noise", "latency", "jitter"}

Value = float | tuple[float, ...]

#: The ``task_step`` / experience column of a task with contexts (after the machine columns): a
#: domain-randomised episode's draw seed (>= 0; its context is ``train#<seed>``, reproduced by
#: :meth:`ContextSet.named`), or :data:`FIXED_CONTEXT` when every episode has the one context the
#: task key ``contexts`` names.
CONTEXT_COLUMN = "context"
FIXED_CONTEXT = -1.0
_DRAW = re.compile(r"train#(\d+)$")


def draw_name(seed: int) -> str:
    """The name of the training draw from ``seed`` (``train#<seed>``)."""
    return f"train#{int(seed)}"


def context_label(code: float, fixed: str) -> str:
    """The context an experience ``context`` value stands for: ``train#<seed>`` for a draw, else
    ``fixed`` (the run's one context, the task key ``contexts``)."""
    return draw_name(int(code)) if code >= 0 else fixed


@dataclass(frozen=True)
class ParameterSpec:
    """One named context parameter: its kind, MJCF targets, nominal value and unit."""

    name: str
    kind: str
    targets: tuple[str, ...] = ()
    nominal: Value = 1.0
    doc: str = ""

    @property
    def size(self) -> int:
        return KINDS[self.kind][0]


@dataclass(frozen=True)
class Context:
    """A named context: every parameter's value (nominal where not set)."""

    name: str
    values: dict[str, Value]
    task: str = ""
    specs: dict[str, ParameterSpec] = field(default_factory=dict, repr=False, compare=False)
    outside: tuple[str, ...] = ()  # parameters outside the training ranges

    def robot_context(self, seed: int = 0) -> RobotContext:
        """The robot-side form (model names), with ``seed`` for the noise and jitter streams."""
        mass: dict[str, float] = {}
        friction: dict[str, float] = {}
        damping: dict[str, float] = {}
        offset: dict[str, tuple[float, float, float]] = {}
        scalars = {"actuator_gain": 1.0, "wrench_noise": 0.0, "tactile_noise": 0.0, "latency": 0.0, "jitter": 0.0}
        bias = np.zeros(6)
        for name, value in self.values.items():
            spec = self.specs[name]
            if spec.kind in ("mass", "friction", "damping"):
                table = {"mass": mass, "friction": friction, "damping": damping}[spec.kind]
                for t in spec.targets:
                    table[t] = table.get(t, 1.0) * float(value)  # type: ignore[arg-type]
            elif spec.kind == "body_offset":
                for t in spec.targets:
                    prev = np.asarray(offset.get(t, (0.0, 0.0, 0.0)))
                    offset[t] = tuple(map(float, prev + np.asarray(value, dtype=float)))  # type: ignore[assignment]
            elif spec.kind == "wrench_bias":
                bias += np.asarray(value, dtype=float)
            elif spec.kind == "actuator_gain":
                scalars["actuator_gain"] *= float(value)  # type: ignore[arg-type]
            else:
                scalars[spec.kind] += float(value)  # type: ignore[arg-type]
        drop = {k: v for k, v in mass.items() if v != 1.0}
        return RobotContext(
            name=self.name, body_mass=drop, geom_friction={k: v for k, v in friction.items() if v != 1.0},
            joint_damping={k: v for k, v in damping.items() if v != 1.0},
            body_offset={k: v for k, v in offset.items() if any(v)}, wrench_bias=tuple(map(float, bias)),
            seed=int(seed), **scalars)

    def to_json(self) -> dict[str, Any]:
        """``{"name", "values": {parameter: value}}`` (what every episode records)."""
        return {"name": self.name,
                "values": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.values.items()},
                **({"outside_training": list(self.outside)} if self.outside else {})}


@dataclass(frozen=True)
class ContextSet:
    """A task's context file: parameters, the training distribution and the held-out contexts."""

    task: str
    parameters: dict[str, ParameterSpec]
    training: dict[str, tuple[Value, Value]]  # name → (low, high); low == high: fixed
    held_out: dict[str, dict[str, Value]]
    source: str = ""

    @property
    def nominal(self) -> Context:
        return self._context("nominal", {})

    def _context(self, name: str, overrides: dict[str, Value]) -> Context:
        values = {k: overrides.get(k, p.nominal) for k, p in self.parameters.items()}
        outside = tuple(k for k in overrides if not self._inside(k, overrides[k]))
        return Context(name, values, self.task, self.parameters, outside)

    def normalised(self, context: Context) -> np.ndarray:
        """``context``'s values as an observation (:attr:`observation_labels`): each component
        mapped so the training range is [-1, 1] (a parameter without a range: its offset from
        nominal, 0 at nominal)."""
        out: list[float] = []
        for k, p in self.parameters.items():
            v = np.atleast_1d(np.asarray(context.values.get(k, p.nominal), dtype=float))
            nom = np.atleast_1d(np.asarray(p.nominal, dtype=float))
            lo, hi = (np.atleast_1d(np.asarray(x, dtype=float)) for x in self.training.get(k, (p.nominal, p.nominal)))
            span = hi - lo
            out.extend(np.where(span > 0, 2.0 * (v - lo) / np.where(span > 0, span, 1.0) - 1.0, v - nom).tolist())
        return np.asarray(out, dtype=np.float64)

    @property
    def observation_labels(self) -> tuple[str, ...]:
        """``context/<parameter>`` (``context/<parameter>/<i>`` per component of a vector)."""
        return tuple(f"context/{k}" if p.size == 1 else f"context/{k}/{i}"
                     for k, p in self.parameters.items() for i in range(p.size))

    def _inside(self, name: str, value: Value) -> bool:
        lo, hi = self.training.get(name, (self.parameters[name].nominal,) * 2)
        v, lo_a, hi_a = (np.atleast_1d(np.asarray(x, dtype=float)) for x in (value, lo, hi))
        return bool(np.all(v >= lo_a - 1e-12) and np.all(v <= hi_a + 1e-12))

    def named(self, name: str) -> Context:
        """A held-out context by name (``nominal``: every parameter nominal; ``train#<seed>``: the
        training draw from that seed, as an episode reset with that seed drew it)."""
        if name == "nominal":
            return self.nominal
        draw = _DRAW.match(name)
        if draw:
            return self.sample(np.random.default_rng(int(draw.group(1))), name)
        if name not in self.held_out:
            raise UnknownNameError(f"{self.source}: no context '{name}'; held_out: {', '.join(self.held_out)} "
                                   "(and 'nominal')")
        return self._context(name, self.held_out[name])

    def sample(self, rng: np.random.Generator, name: str = "train") -> Context:
        """One draw of the training distribution (uniform per parameter and component); the
        environment names it ``train#<seed>`` (:func:`draw_name`)."""
        values: dict[str, Value] = {}
        for k in self.parameters:  # file order: the same seed gives the same context
            if k not in self.training:
                continue
            lo, hi = (np.atleast_1d(np.asarray(x, dtype=float)) for x in self.training[k])
            v = rng.uniform(lo, hi)
            values[k] = float(v[0]) if self.parameters[k].size == 1 else tuple(map(float, v))
        return self._context(name, values)


def _fail(source: str, key: str, why: str) -> ConfigError:
    return ConfigError(f"{source}: '{key}': {why}")


def _value(source: str, key: str, raw: Any, size: int) -> Value:
    arr = np.atleast_1d(np.asarray(raw, dtype=object))
    try:
        vals = np.asarray(arr, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise _fail(source, key, f"expected a number or {size} numbers, got {raw!r}") from None
    if vals.size != size or not np.all(np.isfinite(vals)):
        raise _fail(source, key, f"expected {'a finite number' if size == 1 else f'{size} finite numbers'}, got {raw!r}")
    return float(vals[0]) if size == 1 else tuple(map(float, vals))


def _check_value(source: str, key: str, kind: str, value: Value) -> None:
    v = np.atleast_1d(np.asarray(value, dtype=float))
    if kind in _POSITIVE and not np.all(v > 0):
        raise _fail(source, key, f"a {kind} scale must be > 0, got {value}")
    if kind in _NON_NEGATIVE and not np.all(v >= 0):
        raise _fail(source, key, f"{kind} must be >= 0, got {value}")


def parse_contexts(data: dict[str, Any], source: str) -> ContextSet:
    """Validate a context mapping (see the module docstring); every error names ``source`` and the key."""
    unknown = sorted(set(data) - {"task", "parameters", "training", "held_out"})
    if unknown:
        raise _fail(source, unknown[0], "unknown key; allowed: task, parameters, training, held_out")
    task = data.get("task")
    if not isinstance(task, str) or not task:
        raise _fail(source, "task", "the task these contexts are for (a task name) is required")
    params_raw = data.get("parameters")
    if not isinstance(params_raw, dict) or not params_raw:
        raise _fail(source, "parameters", "a mapping of parameter name → {kind, targets, nominal} is required")
    params: dict[str, ParameterSpec] = {}
    for name, spec in params_raw.items():
        key = f"parameters.{name}"
        if not isinstance(spec, dict):
            raise _fail(source, key, "expected a mapping {kind, targets, nominal, doc}")
        bad = sorted(set(spec) - {"kind", "targets", "nominal", "doc"})
        if bad:
            raise _fail(source, f"{key}.{bad[0]}", "unknown key; allowed: kind, targets, nominal, doc")
        kind = spec.get("kind")
        if kind not in KINDS:
            raise _fail(source, f"{key}.kind", f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        size, needs_targets, default = KINDS[kind]
        targets = spec.get("targets", [])
        if isinstance(targets, str):
            targets = [targets]
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise _fail(source, f"{key}.targets", f"expected a list of MJCF names, got {targets!r}")
        if needs_targets and not targets:
            raise _fail(source, f"{key}.targets", f"a {kind} parameter needs the MJCF names it applies to")
        if not needs_targets and targets:
            raise _fail(source, f"{key}.targets", f"a {kind} parameter applies to the whole robot; remove targets")
        nominal = _value(source, f"{key}.nominal", spec.get("nominal", [default] * size if size > 1 else default), size)
        _check_value(source, f"{key}.nominal", kind, nominal)
        params[name] = ParameterSpec(name, kind, tuple(targets), nominal, str(spec.get("doc", "")))
    training: dict[str, tuple[Value, Value]] = {}
    for name, rng in (data.get("training") or {}).items():
        key = f"training.{name}"
        if name not in params:
            raise _fail(source, key, f"not a parameter; parameters: {', '.join(params)}")
        p = params[name]
        if isinstance(rng, list) and len(rng) == 2 and (p.size == 1 or isinstance(rng[0], list)):
            lo, hi = _value(source, key, rng[0], p.size), _value(source, key, rng[1], p.size)
        else:
            lo = hi = _value(source, key, rng, p.size)
        if np.any(np.asarray(lo, dtype=float) > np.asarray(hi, dtype=float)):
            raise _fail(source, key, f"range [low, high] with low > high: {rng!r}")
        _check_value(source, key, p.kind, lo)
        training[name] = (lo, hi)
    held: dict[str, dict[str, Value]] = {}
    for cname, values in (data.get("held_out") or {}).items():
        key = f"held_out.{cname}"
        if cname == "nominal":
            raise _fail(source, key, "'nominal' is built in (every parameter at its nominal value)")
        if not isinstance(values, dict):
            raise _fail(source, key, "expected a mapping parameter → value")
        held[cname] = {}
        for name, raw in values.items():
            if name not in params:
                raise _fail(source, f"{key}.{name}", f"not a parameter; parameters: {', '.join(params)}")
            v = _value(source, f"{key}.{name}", raw, params[name].size)
            _check_value(source, f"{key}.{name}", params[name].kind, v)
            held[cname][name] = v
    return ContextSet(task, params, training, held, source)


def context_names() -> tuple[str, ...]:
    """The tasks with a shipped context file (``config/contexts/<task>.yaml``)."""
    folder = config_path("contexts")
    return tuple(sorted(p.stem for p in folder.glob("*.yaml"))) if folder.is_dir() else ()


def load_contexts(ref: str | os.PathLike[str]) -> ContextSet:
    """A context file by task name (``config/contexts/<task>.yaml``) or path."""
    if is_config_path(ref):
        path = Path(ref).expanduser()
    else:
        path = config_path("contexts") / f"{ref}.yaml"
        if not path.is_file():
            raise UnknownNameError(f"no context file for '{ref}'; shipped: {', '.join(context_names()) or 'none'} "
                                   "(config/contexts/<task>.yaml), or a path to a .yaml file")
    return parse_contexts(load_yaml(path), str(path))


def resolve_contexts(spec: str, task: str, file: str | os.PathLike[str] | None = None) -> list[Context]:
    """The contexts ``spec`` names for ``task``: ``held_out`` (nominal + every held-out one),
    ``nominal``, or comma-separated names; from ``file`` (default the task's shipped file)."""
    cs = load_contexts(file if file else task)
    if cs.task != task:
        raise ConfigError(f"{cs.source}: 'task': these contexts are for '{cs.task}', not '{task}'")
    names = ["nominal", *cs.held_out] if spec == "held_out" else [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise UnknownNameError(f"no contexts named in {spec!r}; held_out: {', '.join(cs.held_out)}")
    return [cs.named(n) for n in names]


def context_by_reference(ref: str) -> Context:
    """``TASK_OR_FILE:NAME`` (e.g. ``sawyer_peg_in_hole:laggy_link``) → that context (the driver
    emulator's ``context`` parameter)."""
    where, sep, name = ref.rpartition(":")
    if not sep or not where or not name:
        raise ConfigError(f"context {ref!r}: expected TASK_OR_FILE:NAME, e.g. sawyer_peg_in_hole:laggy_link")
    return load_contexts(where).named(name)
