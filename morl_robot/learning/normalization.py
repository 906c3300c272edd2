"""Running observation normalisation: per-feature mean and variance over every observation seen.

Observations of different units (rad, rad/s, N, m) differ in scale by orders of magnitude; the
policy sees ``clip((x − μ) / sqrt(σ² + ε), −c, c)`` instead (as in OpenAI baselines' and
Stable-Baselines3's ``VecNormalize``; the clip bounds the input the network sees when a sensor reads
far outside the training distribution).  The statistics are accumulated in float64 with the
parallel (batched) form of Welford's algorithm (Chan, Golub & LeVeque 1979, "Updating formulae and
a pairwise algorithm for computing sample variances"): for the running set A (n_A, μ_A, M2_A) and a
batch B (n_B, μ_B, M2_B), with δ = μ_B − μ_A and n = n_A + n_B,

    μ = μ_A + δ n_B / n,     M2 = M2_A + M2_B + δ² n_A n_B / n,     σ² = M2 / n

(population variance), which equals the statistics of the concatenated data up to rounding.
Before the first update μ = 0 and σ² = 1, so :meth:`RunningNormalizer.normalize` is then only the
clip.  The ONNX export bakes μ and sqrt(σ² + ε) into the graph
(:func:`morl_robot.serving.export.export_policy`).

Shapes: observations ``[N, O]`` for :meth:`~RunningNormalizer.update`, any ``[..., O]`` for
:meth:`~RunningNormalizer.normalize`; statistics ``(O,)``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from morl_robot.errors import MorlRobotError


class NormalizerError(MorlRobotError, ValueError):
    """Wrong-shaped or non-finite data for a :class:`RunningNormalizer`, or a bad state dict."""


class RunningNormalizer:
    """Running mean/variance of O observation features (float64).

    Args:
        dim: number of features O.
        clip: normalised values are clipped to ``[-clip, clip]``.
        epsilon: added to the variance before the square root (a constant feature maps to 0).
    """

    def __init__(self, dim: int, clip: float = 5.0, epsilon: float = 1e-6) -> None:
        if int(dim) < 1:
            raise NormalizerError(f"dim must be >= 1, got {dim}")
        if not clip > 0:
            raise NormalizerError(f"clip must be > 0, got {clip}")
        if not epsilon > 0:
            raise NormalizerError(f"epsilon must be > 0, got {epsilon}")
        self.dim = int(dim)
        self.clip = float(clip)
        self.epsilon = float(epsilon)
        self.mean = np.zeros(self.dim)  # (O,) μ
        self.var = np.ones(self.dim)  # (O,) σ², population variance
        self.count = 0.0  # n, observations seen

    @property
    def std(self) -> np.ndarray:
        """The denominator (O,) of :meth:`normalize`: sqrt(σ² + ε)."""
        return np.sqrt(self.var + self.epsilon)

    def _check(self, x: np.ndarray, what: str) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim == 0 or arr.shape[-1] != self.dim:
            raise NormalizerError(f"{what}: expected observations of width {self.dim} ([..., {self.dim}]), "
                                  f"got shape {arr.shape}")
        return arr

    def update(self, x: np.ndarray) -> None:
        """Fold a batch ``x`` [N, O] (or one observation (O,)) into the statistics."""
        batch = self._check(x, "update").reshape(-1, self.dim)
        if batch.shape[0] == 0:
            return
        bad = ~np.isfinite(batch)
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            raise NormalizerError(f"update: non-finite observation value {batch[row, col]} at row {row}, feature {col}")
        n_b = float(batch.shape[0])
        mean_b = batch.mean(axis=0)
        m2_b = ((batch - mean_b) ** 2).sum(axis=0)
        if self.count == 0:
            self.mean, self.var, self.count = mean_b, m2_b / n_b, n_b
            return
        n_a = self.count
        n = n_a + n_b
        delta = mean_b - self.mean
        m2 = self.var * n_a + m2_b + delta * delta * (n_a * n_b / n)
        self.mean = self.mean + delta * (n_b / n)
        self.var = m2 / n
        self.count = n

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """``clip((x − μ) / sqrt(σ² + ε), −clip, clip)`` for ``x`` [..., O] (float64)."""
        arr = self._check(x, "normalize")
        return np.clip((arr - self.mean) / self.std, -self.clip, self.clip)

    # --- state ---------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"dim": self.dim, "clip": self.clip, "epsilon": self.epsilon, "count": float(self.count),
                "mean": self.mean.copy(), "var": self.var.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (arrays may come back as tensors from a checkpoint)."""
        try:
            mean = np.asarray(state["mean"], dtype=np.float64).reshape(-1)
            var = np.asarray(state["var"], dtype=np.float64).reshape(-1)
            count = float(state["count"])
        except KeyError as exc:
            raise NormalizerError(f"normalizer state lacks {exc}") from None
        if mean.shape != (self.dim,) or var.shape != (self.dim,):
            raise NormalizerError(f"normalizer state has {mean.size} means and {var.size} variances, "
                                  f"this normalizer has dim {self.dim}")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var >= 0)
                and np.isfinite(count) and count >= 0):
            raise NormalizerError("normalizer state has non-finite or negative statistics")
        self.mean, self.var, self.count = mean, var, count
        self.clip = float(state.get("clip", self.clip))
        self.epsilon = float(state.get("epsilon", self.epsilon))

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> RunningNormalizer:
        """A normaliser rebuilt from :meth:`state_dict` alone (its width from the stored mean)."""
        try:
            dim = int(np.asarray(state["mean"]).size)
        except KeyError:
            raise NormalizerError("normalizer state lacks 'mean'") from None
        norm = cls(dim, clip=float(state.get("clip", 5.0)), epsilon=float(state.get("epsilon", 1e-6)))
        norm.load_state_dict(state)
        return norm
