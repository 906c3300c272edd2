"""Learner configuration: typed dataclasses loaded from ``config/learner/*.yaml``.

Defaults are the MO-MPO reference values (Abdolmaleki et al. 2020, appendix; config/learner/mo_mpo.yaml): N=20
sampled actions, batch 512, Adam 1e-4 (policy, critic) and 1e-2 (duals), grad-norm clip 40,
ε_k = 0.1, ε_mean = 1e-3, ε_stddev = 1e-5, discount 0.99, hard target copies every 200 updates,
Retrace on sequences of 8 (or n-step TD with n = 5), policy MLP (300, 200), critic MLP (400, 300).

Load with :func:`load_learner_config` (errors name the file and the key).  The number of
objectives is only known when the learner is built; :meth:`MPOConfig.check_objectives` then
checks the per-objective lists (``epsilons``, ``scalarization_weights``, ``objective_names``).
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from morl_robot.configuration import fail, from_mapping, load_config, to_mapping
from morl_robot.errors import ConfigError
from morl_robot.learning.preferences import PreferenceConfig
from morl_robot.resources import resolve_config


@dataclass
class NetworkConfig:
    """Network sizes (the paper's appendix: policy (300, 200), critic (400, 300))."""

    #: ``[]``: no hidden layers, a policy linear in the observation (categorical: a table on one-hot states)
    policy_hidden: list[int] = field(default_factory=lambda: [300, 200])
    critic_hidden: list[int] = field(default_factory=lambda: [400, 300])
    #: ``separate``: K independent critics (one batched kernel per layer); ``shared``: one torso
    #: with K output heads.  See :mod:`morl_robot.learning.networks`.
    critic_architecture: Literal["separate", "shared"] = "separate"
    #: the critics' output layer starts at this fraction of the default init (acme's near-zero
    #: output, 0.01).  Near zero, the hidden layers learn the action-dependence of Q slowly: on
    #: Q = −|a|² (6-D actions, 1500 Adam steps) the fitted slope reaches −0.09 of the true −1 at
    #: 0.01 and −0.65 at 1.0 (``config/learner/conditioned.yaml`` uses 1.0).
    critic_output_scale: float = 1e-2
    #: ``layernorm``: acme's LayerNorm → tanh first layer, ELU after; ``relu``: a plain ReLU MLP
    #: (learns Q's action-dependence under bootstrapped targets; see :mod:`morl_robot.learning.networks`).
    critic_torso: Literal["layernorm", "relu"] = "layernorm"
    min_std: float = 1e-4
    init_std: float = 0.7

    def validate(self) -> None:
        if any(s <= 0 for s in self.policy_hidden):
            fail("", "networks.policy_hidden", f"expected a list of positive layer sizes, got {self.policy_hidden}")
        if not self.critic_hidden or any(s <= 0 for s in self.critic_hidden):
            fail("", "networks.critic_hidden",
                 f"expected a non-empty list of positive layer sizes, got {self.critic_hidden}")
        if self.min_std <= 0:
            fail("", "networks.min_std", f"must be > 0, got {self.min_std}")
        if self.init_std <= self.min_std:
            fail("", "networks.init_std", f"must be > min_std ({self.min_std}), got {self.init_std}")
        if not self.critic_output_scale > 0:
            fail("", "networks.critic_output_scale", f"must be > 0, got {self.critic_output_scale}")


@dataclass
class ReplayConfig:
    """Sequence replay (see :mod:`morl_robot.learning.replay`)."""

    capacity: int = 1_000_000
    #: sampled sequences per inserted transition (reverb's SampleToInsertRatio, in items).
    samples_per_insert: float = 32.0
    #: transitions in the replay before the first update.
    min_size_to_sample: int = 1000
    #: how far (in sampled items) the ratio may drift before collection or learning waits.
    error_buffer: float = 2048.0
    #: counterfactual experience for reward machines (CRM, MORM paper eq. 4): sampled sequences
    #: restart from counterfactual machine states (needs a reward-machine environment; see
    #: :mod:`morl_robot.reward_machines.crm`).
    crm: bool = False
    #: share of sampled sequences that start in a counterfactual machine state (1.0: all).
    crm_fraction: float = 1.0
    #: count each real step as |U \\ F| inserts (one per counterfactual experience, as eq. 4 adds
    #: them all), so the learner does |U \\ F| times the updates per environment step (the paper's
    #: CRM); false: the update budget of the run without CRM.
    crm_scale_updates: bool = True

    def validate(self) -> None:
        if not 0.0 <= self.crm_fraction <= 1.0:
            fail("", "replay.crm_fraction", f"must be in [0, 1], got {self.crm_fraction}")
        if self.capacity < 2:
            fail("", "replay.capacity", f"must be >= 2, got {self.capacity}")
        if self.samples_per_insert <= 0:
            fail("", "replay.samples_per_insert", f"must be > 0, got {self.samples_per_insert}")
        if self.min_size_to_sample < 1:
            fail("", "replay.min_size_to_sample", f"must be >= 1, got {self.min_size_to_sample}")
        if self.error_buffer < 0:
            fail("", "replay.error_buffer", f"must be >= 0, got {self.error_buffer}")


@dataclass
class DemonstrationConfig:
    """Demonstrations in the replay (off-policy data from a hand-written controller, as in
    learning-from-demonstration variants of off-policy actor-critics): the first ``episodes``
    training episodes are acted by the demonstrator that :func:`~morl_robot.training.loop.train`
    is given, with Gaussian noise of std ``action_noise`` (normalised action units) so the behaviour
    log-probability log μ(a|s) that Retrace needs is defined.  They count as environment steps.
    With ``pretrain_updates`` > 0 the policy is then pre-trained by maximum likelihood on the
    demonstrator's noise-free actions (behaviour cloning, ``pretrain_updates`` minibatches of
    ``batch_size``) before it acts, and MO-MPO fine-tunes it from there.  With
    ``critic_warmup_updates`` > 0 the critics are then fitted to that policy first: as many
    policy-evaluation-only updates on the replay (the demonstrations), the policy frozen (see
    :meth:`~morl_robot.learning.learner.MOMPOLearner.update` with ``improve_policy=False``), so the
    first E-steps weigh actions by learned values instead of a critic's initial noise."""

    episodes: int = 0
    action_noise: float = 0.2
    pretrain_updates: int = 0
    #: the cloning's Adam learning rate; None: ``policy_lr``.  A clone that must be precise (the
    #: Shadow Hand's position targets lead the joints by 0.01 rad) wants a larger step than the
    #: fine-tuning: Adam moves every weight by about the learning rate per step whatever the
    #: loss's scale, which at 3e-4 shifts the cloned mean by more than the M-step's trust region.
    pretrain_lr: float | None = None
    critic_warmup_updates: int = 0

    def validate(self) -> None:
        if self.episodes < 0:
            fail("", "training.demonstrations.episodes", f"must be >= 0, got {self.episodes}")
        if not self.action_noise > 0:
            fail("", "training.demonstrations.action_noise", f"must be > 0, got {self.action_noise}")
        if self.pretrain_updates < 0:
            fail("", "training.demonstrations.pretrain_updates", f"must be >= 0, got {self.pretrain_updates}")
        if self.pretrain_lr is not None and not (self.pretrain_lr > 0 and math.isfinite(self.pretrain_lr)):
            fail("", "training.demonstrations.pretrain_lr", f"must be a finite number > 0 (or null), got {self.pretrain_lr}")
        if self.critic_warmup_updates < 0:
            fail("", "training.demonstrations.critic_warmup_updates", f"must be >= 0, got {self.critic_warmup_updates}")


@dataclass
class TrainingConfig:
    """The training loop of :func:`morl_robot.training.loop.train`."""

    eval_every: int = 10_000  # environment steps between evaluations (0: only at the end)
    eval_episodes: int = 5
    #: environment steps between checkpoints (0: only at the end); the one checkpoint cadence of
    #: both drivers of :class:`~morl_robot.training.session.LearnerSession` (train() and learner_node)
    checkpoint_every: int = 10_000
    keep_checkpoints: int = 2
    checkpoint_replay: bool = False
    log_every: int = 100  # learner updates between metric rows
    tensorboard: bool = True
    demonstrations: DemonstrationConfig = field(default_factory=DemonstrationConfig)
    #: convergence: stop once this many consecutive evaluations (every ``eval_every`` steps) gave
    #: the same deterministic return vector (to ``1e-9``); 0: train for the whole budget.  For a
    #: deterministic environment (Deep Sea Treasure) this is "the greedy path no longer changes".
    stop_when_stable: int = 0
    #: normalise observations by their running mean/std before the networks see them
    #: (:class:`~morl_robot.learning.normalization.RunningNormalizer`; the replay keeps raw
    #: observations, batches are normalised with the current statistics, an exported policy carries
    #: them in its graph).  What the learner node's ``observation_normalization`` does.
    observation_normalization: bool = False
    #: learn a termination (not a time-limit truncation) as if every objective then got its worst
    #: per-step reward (the environment's ``reward_space.low``) for the rest of the episode (up to
    #: its step limit), added to the terminating step's reward: an objective that only ever costs
    #: (the Sawyer peg's wrist_force) can no longer gain by ending the episode early, e.g. by
    #: crashing into the fixture to stop the force cost.  What is reported (episodes.csv, the
    #: evaluations, the protocol) stays the task's own returns.  In-process training and the
    #: learner node alike (:mod:`morl_robot.training.termination`; on the graph t is the experience
    #: row's ``step`` + 1).
    worst_case_termination: bool = False
    #: torch intra-op threads of the in-process loop (0: torch's default, one per core).  1 by
    #: default: on a shared 2-core host an update with 2 threads ran ~10x slower than with 1 (an
    #: OpenMP team waits for its descheduled thread; docs/results/benchmarks.md)
    threads: int = 1

    def validate(self) -> None:
        if self.threads < 0:
            fail("", "training.threads", f"must be >= 0 (0: torch's default), got {self.threads}")
        for key in ("eval_every", "checkpoint_every", "stop_when_stable"):
            if getattr(self, key) < 0:
                fail("", f"training.{key}", f"must be >= 0, got {getattr(self, key)}")
        if self.eval_episodes < 1:
            fail("", "training.eval_episodes", f"must be >= 1, got {self.eval_episodes}")
        if self.keep_checkpoints < 1:
            fail("", "training.keep_checkpoints", f"must be >= 1, got {self.keep_checkpoints}")
        if self.log_every < 1:
            fail("", "training.log_every", f"must be >= 1, got {self.log_every}")
        if self.stop_when_stable == 1 or (self.stop_when_stable and not self.eval_every):
            fail("", "training.stop_when_stable", "needs at least 2 evaluations to compare and "
                 f"training.eval_every > 0, got {self.stop_when_stable} (eval_every {self.eval_every})")
        self.demonstrations.validate()


@dataclass
class SymRegConfig:
    """SymReg (PRISM paper §4.2, issue 38): the M-step adds ``weight`` · E_s ‖μ(L_g s) − K_g μ(s)‖²
    (the paper's ‖·‖₁², or ‖·‖₂²) beside the weighted log-likelihood; ``L_g`` negates the observation
    indices ``observation_negate``, ``K_g`` the action indices ``action_negate`` (maps per task:
    config/prism/mirror/*.yaml, :mod:`morl_robot.prism.mirror`).  Gaussian policies only."""

    weight: float = 0.01  # λ (the paper's Table 9: 0.005 … 1)
    observation_negate: list[int] = field(default_factory=list)
    action_negate: list[int] = field(default_factory=list)
    norm: Literal["l1_squared", "l2_squared"] = "l1_squared"
    #: also penalise ‖log σ(L_g s) − log σ(s)‖² (σ is a magnitude: invariant under the reflection)
    invariant_log_std: bool = True

    def validate(self) -> None:
        if not (self.weight >= 0 and math.isfinite(self.weight)):
            fail("", "symreg.weight", f"must be a finite number >= 0, got {self.weight}")
        for key in ("observation_negate", "action_negate"):
            idx = getattr(self, key)
            if any(i < 0 for i in idx) or len(set(idx)) != len(idx):
                fail("", f"symreg.{key}", f"must be distinct indices >= 0, got {idx}")


@dataclass
class DensifyConfig:
    """Densified critics (PRISM paper §4.1, issue 38): the critics of the sparse ``objectives``
    learn from a reward model's per-step prediction r̂_t instead of (``replace``) or mixed with
    (``mix``: ``mix_weight`` · r̂ + (1 − ``mix_weight``) · released) the released reward; the replay
    keeps the released rewards, so a retrained model relabels every later sample.  ``model``: a
    TorchScript file (:func:`morl_robot.prism.resymnet.export_densifier`), re-read when it
    changes; missing: the released rewards are learned as they are."""

    objectives: list[int] = field(default_factory=list)
    model: str = ""
    mode: Literal["replace", "mix"] = "replace"
    mix_weight: float = 0.5

    def validate(self) -> None:
        if not self.objectives or any(i < 0 for i in self.objectives) or len(set(self.objectives)) != len(self.objectives):
            fail("", "densify.objectives", f"must be a non-empty list of distinct objective indices, got {self.objectives}")
        if not 0.0 <= self.mix_weight <= 1.0:
            fail("", "densify.mix_weight", f"must be in [0, 1], got {self.mix_weight}")


@dataclass
class MPOConfig:
    """MO-MPO (``algorithm: mo_mpo``) or scalarized MPO (``algorithm: scalarized_mpo``)."""

    algorithm: Literal["mo_mpo", "scalarized_mpo"] = "mo_mpo"
    #: objective names (log keys ``temperature/{name}`` …); empty: ``objective_0`` …
    objective_names: list[str] = field(default_factory=list)
    #: ε_k per objective (MO-MPO); empty: ``default_epsilon`` for every objective.
    epsilons: list[float] = field(default_factory=list)
    default_epsilon: float = 0.1
    #: scalarized MPO: weights w_k (empty: uniform 1/K) and its single ε.
    scalarization_weights: list[float] = field(default_factory=list)
    epsilon: float = 0.1
    #: M-step trust region (decoupled mean / covariance; categorical: ``epsilon_categorical``).
    epsilon_mean: float = 1e-3
    epsilon_stddev: float = 1e-5
    epsilon_categorical: float = 1e-3
    per_dim_constraining: bool = True
    #: E-step temperature: an exact solve of eq. 4 per update (default: follows any rescale of an
    #: objective at once; ``morl-robot bench scale-invariance``) or Adam steps on the dual
    #: (warm-started; needs many updates to follow a rescale).
    temperature_solver: Literal["gradient", "exact"] = "exact"
    initial_temperature: float = 10.0
    initial_alpha_mean: float = 10.0
    initial_alpha_stddev: float = 1000.0
    num_samples: int = 20
    #: discrete actions: enumerate all actions in the E-step (exact) instead of sampling N.
    enumerate_discrete: bool = True
    batch_size: int = 512
    critic_target: Literal["retrace", "n_step"] = "retrace"
    sequence_length: int = 8
    n_step: int = 5
    retrace_lambda: float = 1.0
    discount: float = 0.99
    policy_lr: float = 1e-4
    critic_lr: float = 1e-4
    dual_lr: float = 1e-2
    grad_clip: float = 40.0
    target_update_period: int = 200
    networks: NetworkConfig = field(default_factory=NetworkConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    #: ε-conditioned MO-MPO (one policy π(a|s, ε) for a box of preferences; see
    #: :mod:`morl_robot.learning.preferences`); None: one policy for ``epsilons``.
    preferences: PreferenceConfig | None = None
    #: PRISM (issue 38): mirror-symmetry regulariser in the M-step; None: off
    symreg: SymRegConfig | None = None
    #: PRISM (issue 38): sparse objectives' critics learn from a reward model; None: off
    densify: DensifyConfig | None = None

    @property
    def conditioned(self) -> bool:
        return self.preferences is not None

    def validate(self) -> None:
        for key, value in dataclasses.asdict(self).items():  # NaN or inf anywhere is an error
            for k, v in (value.items() if isinstance(value, dict) else [("", value)]):
                for x in (v if isinstance(v, list) else [v]):
                    if isinstance(x, float) and not math.isfinite(x):
                        fail("", f"{key}.{k}" if k else key, f"must be a finite number, got {x}")
        for i, e in enumerate(self.epsilons):
            if e < 0:
                fail("", f"epsilons[{i}]", f"ε_k must be >= 0 (0 ignores the objective), got {e}")
        positive = ("default_epsilon", "epsilon", "epsilon_mean", "epsilon_stddev", "epsilon_categorical",
                    "initial_temperature", "initial_alpha_mean", "initial_alpha_stddev",
                    "policy_lr", "critic_lr", "dual_lr", "grad_clip")
        for key in positive:
            if getattr(self, key) <= 0:
                fail("", key, f"must be > 0, got {getattr(self, key)}")
        for i, w in enumerate(self.scalarization_weights):
            if w < 0:
                fail("", f"scalarization_weights[{i}]", f"weights must be >= 0, got {w}")
        if self.scalarization_weights and sum(self.scalarization_weights) <= 0:
            fail("", "scalarization_weights", "at least one weight must be > 0")
        for key in ("num_samples", "batch_size", "sequence_length", "n_step", "target_update_period"):
            if getattr(self, key) < 1:
                fail("", key, f"must be >= 1, got {getattr(self, key)}")
        if self.critic_target == "n_step" and self.n_step > self.sequence_length:
            fail("", "n_step", f"must be <= sequence_length ({self.sequence_length}), got {self.n_step}")
        if not 0.0 <= self.discount <= 1.0:
            fail("", "discount", f"must be in [0, 1], got {self.discount}")
        if not 0.0 <= self.retrace_lambda <= 1.0:
            fail("", "retrace_lambda", f"must be in [0, 1], got {self.retrace_lambda}")
        if len(set(self.objective_names)) != len(self.objective_names):
            fail("", "objective_names", f"names must be unique, got {self.objective_names}")
        if self.preferences is not None:
            try:
                self.preferences.validate()
            except ConfigError as e:
                fail("", "preferences", str(e))
            if self.algorithm != "mo_mpo":
                fail("", "preferences", "ε-conditioning is for MO-MPO (algorithm: mo_mpo), not scalarized MPO")
            if self.temperature_solver != "exact":
                fail("", "preferences", "ε-conditioning solves the temperatures exactly per sequence "
                     "(temperature_solver: exact)")
        if self.training.worst_case_termination and self.replay.crm:
            fail("", "training.worst_case_termination", "cannot be combined with replay.crm: counterfactual "
                 "experience relabels rewards and terminations per machine state, so the worst-case charge "
                 "of the real step would land on relabelled steps that do not terminate")
        for key in ("symreg", "densify"):  # PRISM: both act on raw observations (normalised batches carry them)
            section = getattr(self, key)
            if section is not None:
                section.validate()
        slack = (self.batch_size + self.replay.samples_per_insert) / 2
        if self.replay.error_buffer < slack:  # else back-pressured actors and the learner can wait on each other
            fail("", "replay.error_buffer", f"must be >= (batch_size + samples_per_insert) / 2 = {slack:g}, "
                 f"got {self.replay.error_buffer:g}")

    # -- per-objective lists, checked once K is known ------------------------------------------

    def check_objectives(self, num_objectives: int, source: str = "") -> None:
        """Raise :class:`~morl_robot.errors.ConfigError` if a per-objective list has the wrong length."""
        if num_objectives < 1:
            fail(source, "objective_names", f"need at least one objective, got {num_objectives}")
        if self.preferences is not None and self.preferences.ranges and len(self.preferences.ranges) != num_objectives:
            fail(source, "preferences.ranges", f"expected {num_objectives} [low, high] ranges (one per objective), "
                 f"got {len(self.preferences.ranges)}")
        if self.densify is not None and max(self.densify.objectives) >= num_objectives:
            fail(source, "densify.objectives", f"indices must be < {num_objectives}, got {self.densify.objectives}")
        for key in ("objective_names", "epsilons", "scalarization_weights"):
            values = getattr(self, key)
            if values and len(values) != num_objectives:
                fail(source, key, f"expected {num_objectives} values (one per objective), got {len(values)}: {values}")

    def names(self, num_objectives: int) -> list[str]:
        self.check_objectives(num_objectives)
        return list(self.objective_names) or [f"objective_{k}" for k in range(num_objectives)]

    def epsilons_for(self, num_objectives: int) -> list[float]:
        self.check_objectives(num_objectives)
        return list(self.epsilons) or [self.default_epsilon] * num_objectives

    def weights_for(self, num_objectives: int) -> list[float]:
        self.check_objectives(num_objectives)
        w = list(self.scalarization_weights) or [1.0] * num_objectives
        total = sum(w)
        return [x / total for x in w]

    def replace(self, **changes: Any) -> MPOConfig:
        """A copy with top-level fields changed (validated)."""
        new = dataclasses.replace(self, **changes)
        new.validate()
        return new


#: Keys a learner profile may carry that are about it, not settings (not inherited by ``extends``).
LEARNER_METADATA: tuple[str, ...] = ("about",)


def load_learner_config(name_or_path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> MPOConfig:
    """Load a learner YAML (a name under ``config/learner/``, e.g. ``archive/sawyer_front``, or a
    path: :func:`~morl_robot.resources.resolve_config`) into :class:`MPOConfig` (errors name file and
    key).  A profile may ``extends: PARENT`` another and state only what it changes
    (:func:`~morl_robot.configuration.load_layers`); ``about:`` describes it and is not a setting."""
    return load_config(MPOConfig, resolve_config("learner", name_or_path), overrides, kind="learner",
                       metadata=LEARNER_METADATA)


def config_from_dict(data: dict[str, Any], source: str = "<dict>") -> MPOConfig:
    return from_mapping(MPOConfig, data, source=source)


def config_to_dict(config: MPOConfig) -> dict[str, Any]:
    return to_mapping(config)
