"""The PRISM YAML (``config/prism/*.yaml``): ReSymNet and refinement (the paper's Table 8 as the
defaults), the sparse channels, the densified critic and SymReg.  Load with :func:`load_prism_config`
(errors name the file and the key)."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail, load_config
from morl_robot.resources import resolve_config


@dataclass
class ReSymNetConfig:
    """ReSymNet and its training (PRISM Table 8; Appendix B)."""

    hidden: int = 256
    residual_blocks: int = 2
    #: false: the same blocks without the skip connection (the paper's "w/o residual" ablation)
    residual: bool = True
    dropout: float = 0.3
    ensemble: int = 3
    epochs: int = 1000
    learning_rate: float = 5e-3
    lr_decay: float = 0.99  # exponential, per epoch
    weight_decay: float = 1e-2  # AdamW's default
    grad_clip: float = 1.0
    validation_split: float = 0.2
    patience: int = 20
    batch_size: int = 32  # segments per minibatch

    def validate(self) -> None:
        for key in ("hidden", "ensemble", "epochs", "patience", "batch_size"):
            if getattr(self, key) < 1:
                fail("", f"resymnet.{key}", f"must be >= 1, got {getattr(self, key)}")
        if self.residual_blocks < 0:
            fail("", "resymnet.residual_blocks", f"must be >= 0, got {self.residual_blocks}")
        if not 0.0 <= self.dropout < 1.0:
            fail("", "resymnet.dropout", f"must be in [0, 1), got {self.dropout}")
        if not 0.0 < self.validation_split < 1.0:
            fail("", "resymnet.validation_split", f"must be in (0, 1), got {self.validation_split}")
        if not 0.0 < self.lr_decay <= 1.0:
            fail("", "resymnet.lr_decay", f"must be in (0, 1], got {self.lr_decay}")
        for key in ("learning_rate", "grad_clip"):
            if not (getattr(self, key) > 0 and math.isfinite(getattr(self, key))):
                fail("", f"resymnet.{key}", f"must be a finite number > 0, got {getattr(self, key)}")
        if self.weight_decay < 0:
            fail("", "resymnet.weight_decay", f"must be >= 0, got {self.weight_decay}")


@dataclass
class RefinementConfig:
    """Algorithm 1: N random episodes → train → RL for M steps → E policy episodes → retrain, IR times."""

    initial_episodes: int = 1000  # N
    policy_episodes: int = 1000  # E
    refinements: int = 2  # IR
    steps_per_cycle: int = 100_000  # M

    def validate(self) -> None:
        for key in ("initial_episodes", "steps_per_cycle"):
            if getattr(self, key) < 1:
                fail("", f"refinement.{key}", f"must be >= 1, got {getattr(self, key)}")
        for key in ("policy_episodes", "refinements"):
            if getattr(self, key) < 0:
                fail("", f"refinement.{key}", f"must be >= 0, got {getattr(self, key)}")


@dataclass
class PrismConfig:
    """One PRISM setup: which objectives are sparse, the reward model, the critic and SymReg."""

    #: release probability per objective (1: dense, 0: only at episode end); empty: the env's
    #: first objective at 0, the rest dense (the paper: the forward-velocity channel sparse)
    p_rel: list[float] = field(default_factory=list)
    resymnet: ReSymNetConfig = field(default_factory=ReSymNetConfig)
    refinement: RefinementConfig = field(default_factory=RefinementConfig)
    densify_mode: Literal["replace", "mix"] = "replace"
    mix_weight: float = 0.5
    #: SymReg weight λ (0: off); the map: config/prism/mirror/<mirror>.yaml
    symreg_weight: float = 0.01
    mirror: str = ""

    def validate(self) -> None:
        self.resymnet.validate()
        self.refinement.validate()
        for i, p in enumerate(self.p_rel):
            if not 0.0 <= p <= 1.0:
                fail("", f"p_rel[{i}]", f"a release probability must be in [0, 1], got {p}")
        if self.p_rel and all(p == 1.0 for p in self.p_rel):
            fail("", "p_rel", "no objective is sparse (every p_rel is 1): nothing to densify")
        if not 0.0 <= self.mix_weight <= 1.0:
            fail("", "mix_weight", f"must be in [0, 1], got {self.mix_weight}")
        if not (self.symreg_weight >= 0 and math.isfinite(self.symreg_weight)):
            fail("", "symreg_weight", f"must be a finite number >= 0, got {self.symreg_weight}")
        if self.symreg_weight > 0 and not self.mirror:
            fail("", "mirror", "symreg_weight > 0 needs a mirror map (a name under config/prism/mirror/)")

    def release_probabilities(self, num_objectives: int) -> list[float]:
        if not self.p_rel:
            return [0.0] + [1.0] * (num_objectives - 1)
        if len(self.p_rel) != num_objectives:
            fail("", "p_rel", f"expected {num_objectives} values (one per objective), got {self.p_rel}")
        return list(self.p_rel)


def load_prism_config(name_or_path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> PrismConfig:
    """Load ``config/prism/<name>.yaml`` (or a path) into :class:`PrismConfig`."""
    return load_config(PrismConfig, resolve_config("prism", name_or_path), overrides, kind="prism")
