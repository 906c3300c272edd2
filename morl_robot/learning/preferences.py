"""Preferences as inputs: the ε-conditioned MO-MPO's preference space.

MO-MPO (Abdolmaleki et al. 2020) encodes a preference over K objectives as the KL bounds ε_k of the
per-objective E-steps (eq. 3-4): a larger ε_k lets objective k move the policy further.  The
paper trains one policy per setting and names conditioning on the preference as future work.  The
conditioned learner here trains one policy π(a | s, ε) and critics Q_k(s, a, ε) for a whole box of
settings; this module is the box:

* :class:`PreferenceConfig` — the YAML ``preferences:`` section of a learner config (ranges per
  objective; a range ``[x, x]`` fixes that objective's ε, so a sweep "over ratios" is a box with one
  objective fixed);
* :class:`PreferenceSpace` — sampling (log-uniform per objective, per episode for the actors and
  per batch element for the learner), the network features (log ε scaled to [-1, 1] over its
  range: ε spans orders of magnitude, and the E-step KL is what ε bounds, so equal ratios of ε are
  equal steps of the input), validation, and the evaluation grid.

Shapes: a preference is ``[K]`` (ε_1 … ε_K, positive, in the configured ranges); batches are
``[B, K]``; features have the same shape.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from morl_robot.errors import ConfigError

Tensor = torch.Tensor


@dataclass
class PreferenceConfig:
    """``preferences:`` in a learner YAML: when present, MO-MPO is ε-conditioned.

    ``ranges``: one ``[low, high]`` per objective (0 < low ≤ high; ``low == high`` fixes that ε);
    empty: ``default_range`` for every objective.
    ``distribution``: ``log_uniform`` (each free ε_k independently, uniform in log ε).
    ``relabel``: the learner samples a fresh ε per batch element at every update (the rewards do not
    depend on ε, so every transition is experience for every preference; Retrace corrects for the
    behaviour having acted under another ε); false: learn each sequence under the ε it was
    collected with.
    ``eval_points``: preferences on the evaluation grid (:meth:`PreferenceSpace.grid`, ≥ 2).
    """

    ranges: list[list[float]] = field(default_factory=list)
    #: the range of every objective when ``ranges`` is empty
    default_range: list[float] = field(default_factory=lambda: [0.01, 0.5])
    distribution: Literal["log_uniform"] = "log_uniform"
    relabel: bool = True
    eval_points: int = 11

    def ranges_for(self, num_objectives: int) -> list[list[float]]:
        """One ``[low, high]`` per objective (``default_range`` repeated when ``ranges`` is empty)."""
        self.validate(num_objectives)
        return [list(map(float, r)) for r in (self.ranges or [self.default_range] * num_objectives)]

    def validate(self, num_objectives: int | None = None) -> None:
        for i, r in enumerate([*self.ranges, self.default_range]):
            key = f"ranges[{i}]" if i < len(self.ranges) else "default_range"
            if not isinstance(r, (list, tuple)) or len(r) != 2:
                raise ConfigError(f"preferences.{key} must be [low, high], got {r!r}")
            lo, hi = (float(v) for v in r)
            if not (math.isfinite(lo) and math.isfinite(hi)) or not 0 < lo <= hi:
                raise ConfigError(f"preferences.{key} must satisfy 0 < low <= high (finite), got {r!r}")
        if num_objectives is not None and self.ranges and len(self.ranges) != num_objectives:
            raise ConfigError(f"preferences.ranges has {len(self.ranges)} entries but the environment has "
                              f"{num_objectives} objectives")
        if self.distribution != "log_uniform":
            raise ConfigError(f"preferences.distribution must be 'log_uniform', got {self.distribution!r}")
        if int(self.eval_points) < 2:
            raise ConfigError(f"preferences.eval_points must be >= 2, got {self.eval_points}")


class PreferenceSpace:
    """The box of preferences ε ∈ Π_k [low_k, high_k] with its sampling, features and grid."""

    def __init__(self, ranges: Sequence[Sequence[float]], names: Sequence[str] | None = None):
        if len(ranges) == 0:
            raise ConfigError("a preference space needs one [low, high] range per objective, got none")
        cfg = PreferenceConfig(ranges=[[float(a), float(b)] for a, b in ranges])
        cfg.validate()
        self.low = np.array([r[0] for r in cfg.ranges], np.float64)  # [K]
        self.high = np.array([r[1] for r in cfg.ranges], np.float64)  # [K]
        self.log_low, self.log_high = np.log(self.low), np.log(self.high)
        self.free = self.high > self.low  # [K] objectives whose ε varies
        self.names = list(names) if names else [f"objective_{i}" for i in range(len(self.low))]
        if len(self.names) != len(self.low):
            raise ConfigError(f"{len(self.names)} objective names for {len(self.low)} preference ranges")

    @staticmethod
    def from_config(cfg: PreferenceConfig, names: Sequence[str]) -> PreferenceSpace:
        return PreferenceSpace(cfg.ranges_for(len(names)), names)

    @property
    def dim(self) -> int:
        """K: one input per objective."""
        return len(self.low)

    @property
    def centre(self) -> np.ndarray:
        """The geometric centre of the box ``[K]`` (the default preference)."""
        return np.exp(0.5 * (self.log_low + self.log_high))

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "ranges": [[float(a), float(b)] for a, b in zip(self.low, self.high)]}

    # -- sampling -------------------------------------------------------------------------------

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``[n, K]`` preferences, log-uniform per free objective (fixed ones at their value)."""
        u = rng.random((int(n), self.dim))
        return np.exp(self.log_low + u * (self.log_high - self.log_low))

    def sample_torch(self, n: int, generator: torch.Generator) -> Tensor:
        """As :meth:`sample` with a torch generator: ``[n, K]`` float32."""
        u = torch.rand((int(n), self.dim), generator=generator, dtype=torch.float64)
        lo, hi = torch.as_tensor(self.log_low), torch.as_tensor(self.log_high)
        return torch.exp(lo + u * (hi - lo)).float()

    # -- features -------------------------------------------------------------------------------

    def features(self, eps: np.ndarray | Tensor) -> Any:
        """Network input for preferences ``[..., K]``: ``2 (log ε − log low) / (log high − log low) − 1``
        per free objective (in [-1, 1] inside the box), 0 for a fixed one.  numpy in, numpy out
        (float32); torch in, torch out."""
        span = np.where(self.free, self.log_high - self.log_low, 1.0)
        if isinstance(eps, torch.Tensor):
            lo = torch.as_tensor(self.log_low, dtype=eps.dtype)
            sp = torch.as_tensor(span, dtype=eps.dtype)
            fr = torch.as_tensor(self.free)
            f = 2.0 * (torch.log(eps) - lo) / sp - 1.0
            return torch.where(fr, f, torch.zeros_like(f))
        e = np.asarray(eps, np.float64)
        f = 2.0 * (np.log(e) - self.log_low) / span - 1.0
        return np.where(self.free, f, 0.0).astype(np.float32)

    def from_features(self, features: Tensor) -> Tensor:
        """Inverse of :meth:`features` (torch): ``[..., K]`` features → ε ``[..., K]`` (a fixed
        objective's ε is its value)."""
        lo = torch.as_tensor(self.log_low, dtype=features.dtype)
        span = torch.as_tensor(self.log_high - self.log_low, dtype=features.dtype)
        return torch.exp(lo + (features + 1.0) * 0.5 * span)

    # -- validation -----------------------------------------------------------------------------

    def check(self, eps: Sequence[float] | np.ndarray, what: str = "preference", rtol: float = 1e-6) -> np.ndarray:
        """``eps`` as a ``[K]`` float64 array if it has K finite entries inside the box (to ``rtol``);
        otherwise a :class:`ValueError` naming the entry and its range."""
        e = np.asarray(eps, np.float64).reshape(-1)
        if e.shape != (self.dim,):
            raise ValueError(f"{what} has {e.size} values but the policy takes {self.dim} "
                             f"({', '.join(self.names)})")
        for i, (v, lo, hi) in enumerate(zip(e, self.low, self.high)):
            if not math.isfinite(v) or not lo * (1 - rtol) <= v <= hi * (1 + rtol):
                raise ValueError(f"{what}: ε for {self.names[i]} is {float(v)!r}, outside its range [{lo:g}, {hi:g}]")
        return np.clip(e, self.low, self.high)

    # -- evaluation grid --------------------------------------------------------------------------

    def grid(self, points: int) -> np.ndarray:
        """``[M, K]`` preferences for evaluating a conditioned policy's front.

        One free objective: ``points`` log-spaced values.  Two free objectives: the trade-off
        diagonal, ``points`` log-spaced steps from (high_i, low_j) to (low_i, high_j) (the ratio
        ε_i/ε_j sweeps its whole range at the box's geometric-mean product).  More: the log-spaced
        Cartesian grid with the fewest levels per objective giving at least ``points`` points.
        Fixed objectives stay at their value.
        """
        points = max(int(points), 2)
        free = np.flatnonzero(self.free)
        base = np.tile(self.centre, (1, 1))
        if free.size == 0:
            return base
        t = np.linspace(0.0, 1.0, points)
        if free.size <= 2:
            out = np.repeat(base, points, axis=0)
            i = free[0]
            out[:, i] = np.exp(self.log_high[i] + t * (self.log_low[i] - self.log_high[i]))
            if free.size == 2:
                j = free[1]
                out[:, j] = np.exp(self.log_low[j] + t * (self.log_high[j] - self.log_low[j]))
            return out
        levels = math.ceil(points ** (1.0 / free.size))
        axes = [np.exp(np.linspace(self.log_low[i], self.log_high[i], levels)) for i in free]
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, free.size)
        out = np.repeat(base, len(mesh), axis=0)
        out[:, free] = mesh
        return out
