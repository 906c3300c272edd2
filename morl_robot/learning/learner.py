"""The MO-MPO learner step (Abdolmaleki et al. 2020, Algorithm 1 with sections 4.1-4.2).

One call of :meth:`MOMPOLearner.update` on a :class:`~morl_robot.learning.replay.SequenceBatch`:

1. Policy evaluation (section 4.1): the target policy π_old samples N actions at every state of
   the sequences (discrete: all A actions are enumerated), the target critic scores them
   (``[N, T+1, B, K]``), ``V(s) = E_{π_old} Q_k`` bootstraps Retrace targets (default; or n-step
   TD targets) for all K objectives, and the online critics regress onto them.
2. E-step (eq. 3-4): per objective, weights ``q_kj ∝ exp(Q_k(s, a_j)/η_k)`` over the same samples at
   states ``s_0 … s_{T-1}``; η_k takes one Adam step on its dual g(η_k) (warm-started across
   updates) or is solved exactly (``temperature_solver: exact``).  Scalarized MPO uses
   ``Σ_k w_k Q_k`` with a single η and ε.  An objective with ε_k = 0 gets the η → ∞ limit,
   ``q_k = π_old``: its Q-values cannot influence the policy.
3. M-step (eq. 5): weighted maximum likelihood with the decoupled KL trust region (mean / stddev
   multipliers α per action dimension) — :func:`~morl_robot.learning.mpo.gaussian_m_step` or
   :func:`~morl_robot.learning.mpo.categorical_m_step`.
4. Adam steps (1e-4 policy and critic with grad-norm clip 40, 1e-2 duals, dual log floor -18) and a
   hard copy of the online networks into the targets every ``target_update_period`` updates.

Statistics (all floats): ``temperature/{name}``, ``kl_q/{name}`` (E-step KL / ε_k),
``q_min|q_mean|q_max/{name}``, ``target_mean/{name}``, ``loss_critic/{name}``, ``kl_mean``,
``kl_stddev`` (M-step KLs / their bounds; categorical: ``kl_categorical``), ``alpha_*``,
``loss/critic``, ``loss/policy``, ``loss/temperature``, ``loss/alpha``, ``loss/kl_penalty``,
``grad_norm/policy``, ``grad_norm/critic``, ``std_mean`` or ``entropy``; PRISM (issue 38):
``loss/symreg`` (the SymReg term before its weight λ) and ``densify/predicted_mean/{name}``.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from morl_robot.errors import ConfigError
from morl_robot.learning import mpo
from morl_robot.learning.config import MPOConfig, config_to_dict
from morl_robot.learning.networks import (
    ActionSpec,
    Critic,
    action_features,
    make_policy,
)
from morl_robot.learning.preferences import PreferenceSpace
from morl_robot.learning.replay import SequenceBatch

Tensor = torch.Tensor


class PolicyActor:
    """A policy for acting: numpy observation in, ``(action, log_prob)`` out.

    ``act(obs, deterministic)`` returns a float32 action in [-1, 1]^D (box) or an int
    (discrete) and the behaviour log-probability of that action (Retrace's ``log μ``).
    ``PolicyActor(obs)`` (call) returns only the deterministic action.
    """

    def __init__(self, network: nn.Module, spec: ActionSpec, generator: torch.Generator | None = None,
                 preferences: PreferenceSpace | None = None, preference: np.ndarray | None = None):
        self.network = network
        self.spec = spec
        self.generator = generator if generator is not None else torch.Generator().manual_seed(0)
        #: observation normaliser applied before the network (None: raw observations)
        self.normalizer: Any = None
        #: ε-conditioned policy: the preference box, and the preference ε [K] it acts under
        self.preferences = preferences
        self.preference: np.ndarray | None = None
        if preferences is not None:
            self.set_preference(preferences.centre if preference is None else preference)

    def set_preference(self, eps: np.ndarray) -> None:
        """Act under preference ``eps`` [K] (checked against the box) from now on."""
        if self.preferences is None:
            raise ValueError("this policy is not ε-conditioned: it has no preference input")
        self.preference = self.preferences.check(eps)
        self._features = self.preferences.features(self.preference)

    def with_preference(self, eps: np.ndarray) -> PolicyActor:
        """A copy acting under ``eps`` (same network, generator and normaliser)."""
        other = PolicyActor(self.network, self.spec, self.generator, self.preferences, eps)
        other.normalizer = self.normalizer
        return other

    def augment(self, obs: np.ndarray) -> np.ndarray:
        """What the replay stores for an observation ``[O]``: ``[O + K]`` with the preference
        features appended (conditioned), else the observation itself (raw: not normalised)."""
        if self.preferences is None:
            return np.asarray(obs, np.float32)
        return np.concatenate([np.asarray(obs, np.float32).reshape(-1), self._features])

    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool = False) -> tuple[Any, float]:
        if self.normalizer is not None:
            obs = self.normalizer.normalize(np.asarray(obs, np.float64))
        x = torch.as_tensor(self.augment(obs)).reshape(1, -1)
        if self.spec.is_discrete:
            logits = self.network(x)[0]
            log_p = torch.log_softmax(logits, -1)
            if deterministic:
                a = int(torch.argmax(logits))
            else:
                a = int(torch.multinomial(log_p.exp(), 1, generator=self.generator))
            return a, float(log_p[a])
        mean, std = self.network(x)
        mean, std = mean[0], std[0]
        if deterministic:
            a = mean
        else:
            a = mean + std * torch.randn(mean.shape, generator=self.generator)
        a = torch.clamp(a, -1.0, 1.0)
        log_p = mpo.gaussian_log_prob(a.unsqueeze(0), mean, std).sum()
        return a.numpy().astype(np.float32), float(log_p)

    def __call__(self, obs: np.ndarray) -> Any:
        return self.act(obs, deterministic=True)[0]


def _as_floats(stats: dict[str, Tensor]) -> dict[str, float]:
    """Scalar tensors as floats, in one device transfer."""
    values = torch.stack([v.reshape(()).float() for v in stats.values()]).tolist()
    return dict(zip(stats, values))


class MOMPOLearner:
    """MO-MPO (or scalarized MPO, per ``config.algorithm``) on K objectives.

    Args:
        obs_dim: observation width O (flat float vector).
        action_spec: :class:`ActionSpec` (``ActionSpec.box(D)`` in [-1, 1] or ``ActionSpec.discrete(A)``),
            or a Gymnasium ``Box``/``Discrete`` space.
        num_objectives: K.
        config: :class:`MPOConfig` (defaults: the reference values).
        seed: seeds the networks' initialisation and the learner's sampling generator.
    """

    def __init__(self, obs_dim: int, action_spec: ActionSpec | Any, num_objectives: int,
                 config: MPOConfig | None = None, seed: int = 0):
        self.config = config = config if config is not None else MPOConfig()
        config.check_objectives(num_objectives)
        spec = action_spec if isinstance(action_spec, ActionSpec) else ActionSpec.from_space(action_spec)
        self.spec = spec
        self.obs_dim, self.num_objectives = int(obs_dim), int(num_objectives)
        self.objective_names = config.names(num_objectives)
        self.scalarized = config.algorithm == "scalarized_mpo"
        torch.manual_seed(seed)
        self.generator = torch.Generator().manual_seed(seed + 1)
        self.actor_generator = torch.Generator().manual_seed(seed + 2)
        net = config.networks
        #: ε-conditioned: the preference box; the networks take [obs, features(ε)] (O + K inputs)
        self.preferences = (PreferenceSpace.from_config(config.preferences, self.objective_names)
                            if config.preferences is not None else None)
        in_dim = self.obs_dim + (self.preferences.dim if self.preferences is not None else 0)
        self.input_dim = in_dim
        self.policy = make_policy(in_dim, spec, net.policy_hidden, net.min_std, net.init_std)
        self.critic = Critic(in_dim, spec.input_dim, num_objectives, net.critic_hidden, net.critic_architecture,
                             net.critic_output_scale, net.critic_torso)
        #: conditioned: the last update's (ε [K, B], achieved E-step KL [K, B]) for inspection
        self.last_preference_kl: tuple[np.ndarray, np.ndarray] | None = None
        #: PRISM (issue 38): SymReg signs ``L_g`` [O(+K)] / ``K_g`` [D], and the reward model that
        #: densifies the sparse objectives (``config.densify.model`` re-read when it changes, or set here
        #: directly: ``(obs [M, O], actions [M, D], rewards [M, K]) -> r̂ [M, S]``)
        self.symreg_signs = self._symreg_signs(config, spec)
        self.reward_model: Any = None
        self._reward_model_stamp: tuple[int, int] | None = None
        self.target_policy = copy.deepcopy(self.policy).requires_grad_(False)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)

        # Duals (softplus-parameterised, floored at LOG_DUAL_FLOOR).
        if self.scalarized:
            self.epsilons = torch.tensor([config.epsilon], dtype=torch.float32)
            self.scalarization_weights = torch.tensor(config.weights_for(num_objectives), dtype=torch.float32)
        else:
            self.epsilons = torch.tensor(config.epsilons_for(num_objectives), dtype=torch.float32)
            self.scalarization_weights = None
        num_temps = self.epsilons.numel()
        self.log_temperature = nn.Parameter(mpo.dual_param_from_value(torch.full((num_temps,), config.initial_temperature)))
        if spec.is_discrete:
            self.log_alpha_mean = nn.Parameter(mpo.dual_param_from_value(torch.tensor(config.initial_alpha_mean)))
            self.log_alpha_stddev = None
        else:
            shape = (spec.dim,) if config.per_dim_constraining else ()
            self.log_alpha_mean = nn.Parameter(mpo.dual_param_from_value(torch.full(shape, config.initial_alpha_mean)))
            self.log_alpha_stddev = nn.Parameter(mpo.dual_param_from_value(torch.full(shape, config.initial_alpha_stddev)))
        self.dual_params = [p for p in (self.log_temperature, self.log_alpha_mean, self.log_alpha_stddev) if p is not None]

        self._optimizers: tuple[torch.optim.Adam, torch.optim.Adam, torch.optim.Adam] | None = None
        self.num_updates = 0
        self._stat_keys: list[str] | None = None

    # The optimizers are made on first use: a learner built only to check a configuration or a
    # resume (the train CLI's start-up check) then never imports torch._dynamo, which torch.optim's
    # methods pull in on their first call (2-6 s of CPU per process on these machines).
    def _make_optimizers(self) -> tuple[torch.optim.Adam, torch.optim.Adam, torch.optim.Adam]:
        if self._optimizers is None:
            c = self.config
            self._optimizers = (torch.optim.Adam(self.policy.parameters(), lr=c.policy_lr, foreach=True),
                                torch.optim.Adam(self.critic.parameters(), lr=c.critic_lr, foreach=True),
                                torch.optim.Adam(self.dual_params, lr=c.dual_lr, foreach=True))
        return self._optimizers

    @property
    def policy_optimizer(self) -> torch.optim.Adam:
        return self._make_optimizers()[0]

    @property
    def critic_optimizer(self) -> torch.optim.Adam:
        return self._make_optimizers()[1]

    @property
    def dual_optimizer(self) -> torch.optim.Adam:
        return self._make_optimizers()[2]

    # -- acting ------------------------------------------------------------------------------

    def actor(self) -> PolicyActor:
        """A :class:`PolicyActor` sharing the online policy (acts with the latest parameters)."""
        return PolicyActor(self.policy, self.spec, self.actor_generator, self.preferences)

    def policy_snapshot(self) -> PolicyActor:
        """A :class:`PolicyActor` on a frozen copy of the current online policy (conditioned: acting
        under the box's centre until :meth:`PolicyActor.set_preference`)."""
        return PolicyActor(copy.deepcopy(self.policy).requires_grad_(False), self.spec,
                           torch.Generator().manual_seed(int(self.num_updates)), self.preferences)

    def act(self, obs: np.ndarray, deterministic: bool = False) -> tuple[Any, float]:
        """Action from the online policy and its behaviour log-probability ``log μ(a|s)``."""
        return self.actor().act(obs, deterministic)

    @property
    def temperatures(self) -> np.ndarray:
        return mpo.dual_from_param(self.log_temperature.detach()).numpy().copy()

    def behaviour_clone(self, obs: np.ndarray, actions: np.ndarray, updates: int, batch_size: int,
                        seed: int = 0, lr: float | None = None) -> float:
        """Maximum-likelihood pre-training of the Gaussian policy on demonstrations:
        ``updates`` Adam steps (learning rate ``lr``; None: ``policy_lr``) on
        −mean log π(a_demo | s) over minibatches of (obs [N, O], actions [N, D] normalised); then
        the target policy is set to the result, so MO-MPO's M-step trust region (KL to the target
        policy) starts from the cloned behaviour.  Returns the last minibatch's loss."""
        if self.spec.is_discrete:
            raise ValueError("behaviour cloning is implemented for continuous (Gaussian) policies only")
        o = torch.as_tensor(np.asarray(obs, np.float32))
        a = torch.as_tensor(np.asarray(actions, np.float32)).reshape(len(o), -1)
        if len(o) == 0 or a.shape[1] != self.spec.dim:
            raise ValueError(f"behaviour cloning needs demonstrations of shape [N>0, {self.spec.dim}], got {tuple(a.shape)}")
        g = torch.Generator().manual_seed(seed)
        loss = torch.zeros(())
        groups = self.policy_optimizer.param_groups
        for group in groups:  # the cloning's own step size; policy_lr again afterwards
            group["lr"] = self.config.policy_lr if lr is None else float(lr)
        for _ in range(updates):
            idx = torch.randint(len(o), (min(batch_size, len(o)),), generator=g)
            x = o[idx]
            if self.preferences is not None and x.shape[-1] == self.obs_dim:
                # demonstrations are preference-free: clone them under preferences from the whole box
                x = torch.cat([x, self.preferences.features(self.preferences.sample_torch(len(x), g))], -1)
            mean, std = self.policy(x)
            loss = -torch.distributions.Normal(mean, std).log_prob(a[idx]).sum(-1).mean()
            self.policy_optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.config.grad_clip)
            self.policy_optimizer.step()
        for group in groups:
            group["lr"] = self.config.policy_lr
        self.update_targets()
        return float(loss.detach())

    # -- the update --------------------------------------------------------------------------

    def _to_tensors(self, batch: SequenceBatch | dict[str, Any]) -> dict[str, Tensor]:
        data = batch.as_dict() if isinstance(batch, SequenceBatch) else batch
        return {k: torch.as_tensor(v) for k, v in data.items()}

    @torch.no_grad()
    def _sample_and_score(self, obs: Tensor, taken: Tensor | None = None) -> dict[str, Tensor]:
        """Target policy and target critic at all ``[T+1, B]`` states (one big forward pass).

        Returns ``q [N, T+1, B, K]``, the actions they refer to (``[N, T+1, B, D]`` raw Gaussian
        samples or ``[A, T+1, B]`` indices), ``log_prior [N, T+1, B]`` or None, ``value [T+1, B, K]``
        and the target policy's parameters; with ``taken`` (the batch's actions ``[T, B, ...]``)
        also ``q_taken [T, B, K]``, scored in the same pass (one more action row per state: the
        observation part of the critic's first layer is computed once for both).
        """
        cfg, spec = self.config, self.spec
        out: dict[str, Tensor] = {}
        if spec.is_discrete:
            logits = self.target_policy(obs)  # [T+1, B, A]
            out["target_logits"] = logits
            a_count = spec.num_actions
            if cfg.enumerate_discrete:
                idx = torch.arange(a_count).view(a_count, 1, 1).expand(a_count, *obs.shape[:-1])
                log_prior = torch.log_softmax(logits, -1).permute(2, 0, 1)  # [A, T+1, B]
            else:
                probs = torch.softmax(logits, -1).reshape(-1, a_count)
                idx = torch.multinomial(probs, cfg.num_samples, replacement=True, generator=self.generator)
                idx = idx.t().reshape(cfg.num_samples, *obs.shape[:-1])
                log_prior = None
            q = self._score(obs, action_features(idx, spec), taken, out)  # [N, T+1, B, K]
            out["actions"], out["log_prior"] = idx, log_prior
            value = (q * log_prior.exp().unsqueeze(-1)).sum(0) if log_prior is not None else q.mean(0)
        else:
            mean, std = self.target_policy(obs)  # [T+1, B, D]
            noise = torch.randn((cfg.num_samples, *mean.shape), generator=self.generator)
            actions = mean + std * noise  # [N, T+1, B, D]
            q = self._score(obs, action_features(actions, spec), taken, out)
            out["actions"], out["log_prior"] = actions, None
            out["target_mean"], out["target_std"] = mean, std
            value = q.mean(0)
        out["q"], out["value"] = q, value
        return out

    def _score(self, obs: Tensor, features: Tensor, taken: Tensor | None, out: dict[str, Tensor]) -> Tensor:
        """Target critic on ``features [N, T+1, B, A_in]``; with ``taken`` ``[T, B, ...]`` its
        features ride along as row N (padded at state T) and ``out["q_taken"]`` gets their Q."""
        if taken is None:
            return self.target_critic(obs, features)
        t = taken.shape[0]
        row = action_features(taken, self.spec)  # [T, B, A_in]
        row = torch.cat([row, row.new_zeros((obs.shape[0] - t, *row.shape[1:]))]).unsqueeze(0)
        q = self.target_critic(obs, torch.cat([features, row]))  # [N+1, T+1, B, K]
        out["q_taken"] = q[-1, :t]
        return q[:-1]

    def _target_log_prob(self, scored: dict[str, Tensor], actions: Tensor, T: int) -> Tensor:
        """``log π_target(a_t|s_t)`` ``[T, B]`` of the taken actions."""
        if self.spec.is_discrete:
            log_p = torch.log_softmax(scored["target_logits"][:T], -1)
            return torch.gather(log_p, -1, actions.long().unsqueeze(-1)).squeeze(-1)
        a = torch.clamp(actions, -1.0, 1.0)
        return mpo.gaussian_log_prob(a, scored["target_mean"][:T], scored["target_std"][:T]).sum(-1)

    def update(self, batch: SequenceBatch | dict[str, Any], improve_policy: bool = True) -> dict[str, float]:
        """One learner step on a sequence batch; returns the named statistics as floats.

        ``improve_policy=False``: policy evaluation only (step 1 and the target copies of step 4):
        the critics regress onto their targets under the current target policy, while the policy
        and the duals are left as they are (no E- or M-step); statistics ``loss/critic``,
        ``grad_norm/critic`` and per objective ``q_*``, ``target_mean``, ``loss_critic``.  This is
        the critic warm-up of ``training.demonstrations.critic_warmup_updates``."""
        cfg, spec = self.config, self.spec
        data = self._to_tensors(batch)
        obs = data["observations"].float()  # [T+1, B, O]
        actions = data["actions"]  # [T, B, D] | [T, B]
        rewards = data["rewards"].float()  # [T, B, K]
        mask = data["mask"].float()  # [T, B]
        T = rewards.shape[0]
        discounts = cfg.discount * (1.0 - data["terminated"].float())  # [T, B]
        raw = data["raw_observations"].float() if "raw_observations" in data else obs  # normalised batches carry them
        rewards, densify_stats = self._densify(raw, actions, rewards)  # PRISM: sparse critics learn r̂
        pref_eps = None
        if self.preferences is not None:
            obs, pref_eps = self._condition(obs)  # [T+1, B, O+K], ε [B, K]

        # ---- 1. policy evaluation ----------------------------------------------------------
        scored = self._sample_and_score(obs, actions)
        with torch.no_grad():
            q_taken_target = scored["q_taken"]  # [T, B, K] (target critic, taken actions)
            v_next = scored["value"][1:]  # [T, B, K]
            if cfg.critic_target == "retrace":
                log_pi = self._target_log_prob(scored, actions, T)
                log_mu = data["behaviour_log_prob"].float()
                targets = mpo.retrace_targets(q_taken_target, v_next, rewards, discounts, log_pi, log_mu,
                                              mask, cfg.retrace_lambda)
            else:
                targets = mpo.n_step_targets(rewards, discounts, v_next, cfg.n_step, mask)
        q_online = self.critic(obs[:T], action_features(actions, spec))  # [T, B, K]
        count = mask.sum().clamp(min=1.0)
        td_sq = 0.5 * (q_online - targets) ** 2 * mask.unsqueeze(-1)
        critic_loss_k = td_sq.sum(dim=(0, 1)) / count  # [K]
        critic_loss = critic_loss_k.sum()  # independent critics: sum over objectives
        sel = mask.reshape(-1) > 0  # [T*B] the valid states s_0 … s_{T-1}
        n = scored["q"].shape[0]
        q_e = scored["q"][:, :T].reshape(n, T * rewards.shape[1], -1)[:, sel]  # [N, S, K]
        q_e = q_e.permute(2, 0, 1)  # [K, N, S]
        if not improve_policy:
            return self._evaluate_policy_only(critic_loss, critic_loss_k, q_e, targets, mask, count)

        # ---- 2. E-step on the valid states ------------------------------------------------------
        log_prior = None
        if scored["log_prior"] is not None:
            log_prior = scored["log_prior"][:, :T].reshape(n, -1)[:, sel]  # [N, S]
        q_for_e = mpo.scalarize_q(q_e, self.scalarization_weights) if self.scalarized else q_e
        if pref_eps is not None:  # ε-conditioned: one exact temperature per objective and sequence
            weights, temperatures, e_stats = self._conditioned_e_step(scored, pref_eps, mask, T, sel)
            temperature_loss = torch.zeros(())
        elif cfg.temperature_solver == "exact":
            with torch.no_grad():
                solved = self.epsilons > 0  # [K'] (ε_k = 0: objective k has no E-step)
                if bool(solved.any()):
                    log_eta = mpo.solve_log_temperatures(q_for_e[solved], self.epsilons[solved], None, log_prior)
                    self.log_temperature[solved] = mpo.dual_param_from_value(log_eta.exp())
        if pref_eps is None:
            temperatures = mpo.dual_from_param(self.log_temperature)  # [K'] (K' = 1 if scalarized)
            weights, temperature_loss, e_stats = mpo.multi_objective_e_step(q_for_e, temperatures, self.epsilons,
                                                                            log_prior)
            if cfg.temperature_solver == "exact":
                temperature_loss = temperature_loss.detach()

        # ---- 3. M-step ----------------------------------------------------------------------
        obs_s = obs[:T].reshape(-1, obs.shape[-1])[sel]  # [S, O]
        if spec.is_discrete:
            online_logits = self.policy(obs_s)
            target_logits = scored["target_logits"][:T].reshape(-1, spec.num_actions)[sel]
            act_idx = scored["actions"][:, :T].reshape(n, -1)[:, sel]  # [N, S]
            alpha = mpo.dual_from_param(self.log_alpha_mean)
            policy_loss, m_stats = mpo.categorical_m_step(weights, act_idx, online_logits, target_logits, alpha,
                                                          cfg.epsilon_categorical)
        else:
            online_mean, online_std = self.policy(obs_s)
            d = spec.dim
            target_mean = scored["target_mean"][:T].reshape(-1, d)[sel]
            target_std = scored["target_std"][:T].reshape(-1, d)[sel]
            sampled = scored["actions"][:, :T].reshape(n, -1, d)[:, sel]  # [N, S, D]
            policy_loss, m_stats = mpo.gaussian_m_step(
                weights, sampled, online_mean, online_std, target_mean, target_std,
                mpo.dual_from_param(self.log_alpha_mean), mpo.dual_from_param(self.log_alpha_stddev),
                cfg.epsilon_mean, cfg.epsilon_stddev, cfg.per_dim_constraining)
            if self.symreg_signs is not None and cfg.symreg is not None:  # PRISM SymReg beside the likelihood
                obs_sign, act_sign = self.symreg_signs
                reflected = obs_s * obs_sign
                if "reflected_observations" in data:  # normalised: L_g on the raw state, then normalised
                    ref = data["reflected_observations"].float()[:T].reshape(-1, self.obs_dim)[sel]
                    reflected = torch.cat([ref, reflected[:, self.obs_dim:]], dim=-1)  # features never reflected
                mean_r, std_r = self.policy(reflected)
                log_std = (torch.log(std_r), torch.log(online_std)) if cfg.symreg.invariant_log_std else (None, None)
                sym = mpo.symmetry_loss(mean_r, online_mean, act_sign, *log_std, norm=cfg.symreg.norm)
                policy_loss = policy_loss + cfg.symreg.weight * sym
                m_stats["loss_symreg"] = sym.detach()

        # ---- 4. optimise ----------------------------------------------------------------------
        self.policy_optimizer.zero_grad(set_to_none=True)
        self.critic_optimizer.zero_grad(set_to_none=True)
        self.dual_optimizer.zero_grad(set_to_none=True)
        (critic_loss + policy_loss + temperature_loss).backward()
        policy_gn = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.grad_clip)
        critic_gn = torch.nn.utils.clip_grad_norm_(self.critic.parameters(), cfg.grad_clip)
        self.policy_optimizer.step()
        self.critic_optimizer.step()
        if cfg.temperature_solver == "exact":
            self.log_temperature.grad = None  # solved exactly; Adam must not move it
        self.dual_optimizer.step()
        with torch.no_grad():
            for p in self.dual_params:
                p.clamp_(min=mpo.LOG_DUAL_FLOOR)
        self._count_update()

        # ---- statistics -------------------------------------------------------------------------
        with torch.no_grad():
            stats: dict[str, Tensor] = {
                "loss/critic": critic_loss.detach(),
                "loss/policy": m_stats["loss_policy"],
                "loss/temperature": temperature_loss.detach(),
                "loss/alpha": m_stats["loss_alpha"],
                "loss/kl_penalty": m_stats["loss_kl_penalty"],
                "grad_norm/policy": policy_gn.detach(),
                "grad_norm/critic": critic_gn.detach(),
            }
            if "loss_symreg" in m_stats:
                stats["loss/symreg"] = m_stats["loss_symreg"]
            stats.update(densify_stats)
            for key in ("kl_mean", "kl_stddev", "kl_mean_abs", "kl_stddev_abs", "alpha_mean", "alpha_stddev",
                        "std_mean", "kl_categorical", "kl_categorical_abs", "alpha_categorical", "entropy"):
                if key in m_stats:
                    stats[key] = m_stats[key]
            temp_names = ["scalarized"] if self.scalarized else self.objective_names
            for i, name in enumerate(temp_names):
                stats[f"temperature/{name}"] = temperatures[i].detach()
                if pref_eps is not None:
                    stats[f"kl_q/{name}"] = e_stats["kl_q_rel"][i]
                else:
                    stats[f"kl_q/{name}"] = (e_stats["kl_q_rel"][i] if float(self.epsilons[i]) > 0
                                             else e_stats["kl_q"][i] * 0)
            stats.update(self._critic_statistics(q_e, targets, mask, count, critic_loss_k))
        return _as_floats(stats)

    def _evaluate_policy_only(self, critic_loss: Tensor, critic_loss_k: Tensor, q_e: Tensor, targets: Tensor,
                              mask: Tensor, count: Tensor) -> dict[str, float]:
        """The critic step of :meth:`update` alone (``improve_policy=False``); ``q_e [K, N, S]``
        the target critic's scores of the target policy's samples at the valid states,
        ``targets [T, B, K]``."""
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        critic_gn = torch.nn.utils.clip_grad_norm_(self.critic.parameters(), self.config.grad_clip)
        self.critic_optimizer.step()
        self._count_update()
        with torch.no_grad():
            stats: dict[str, Tensor] = {"loss/critic": critic_loss.detach(), "grad_norm/critic": critic_gn.detach(),
                                        **self._critic_statistics(q_e, targets, mask, count, critic_loss_k)}
        return _as_floats(stats)

    def _count_update(self) -> None:
        """One more learner step; the target networks follow every ``target_update_period``."""
        self.num_updates += 1
        if self.num_updates % self.config.target_update_period == 0:
            self.update_targets()

    def _critic_statistics(self, q_e: Tensor, targets: Tensor, mask: Tensor, count: Tensor,
                           critic_loss_k: Tensor) -> dict[str, Tensor]:
        """Per objective: the range and mean of ``q_e [K, N, S]``, the mean critic target over the
        valid steps of ``targets [T, B, K]`` and the critic loss ``critic_loss_k [K]``."""
        q_min, q_max, q_mean = q_e.amin(dim=(1, 2)), q_e.amax(dim=(1, 2)), q_e.mean(dim=(1, 2))
        tmean = (targets * mask.unsqueeze(-1)).sum(dim=(0, 1)) / count
        stats: dict[str, Tensor] = {}
        for k, name in enumerate(self.objective_names):
            stats[f"q_min/{name}"] = q_min[k]
            stats[f"q_mean/{name}"] = q_mean[k]
            stats[f"q_max/{name}"] = q_max[k]
            stats[f"target_mean/{name}"] = tmean[k]
            stats[f"loss_critic/{name}"] = critic_loss_k[k].detach()
        return stats

    def _condition(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """The preference each sequence is learned under: with ``preferences.relabel`` a fresh ε per
        sequence (its features replace the collected ones at every step), else the ε it was
        collected under (read back from the stored features).  ``obs [T+1, B, O+K]`` →
        ``(obs [T+1, B, O+K], ε [B, K])``."""
        assert self.preferences is not None and self.config.preferences is not None
        if obs.shape[-1] != self.input_dim:
            raise ValueError(f"ε-conditioned learner: observations must carry the preference features "
                             f"({self.obs_dim} + {self.preferences.dim} = {self.input_dim} wide), got {obs.shape[-1]}")
        b = obs.shape[1]
        if self.config.preferences.relabel:
            eps = self.preferences.sample_torch(b, self.generator)  # [B, K]
            obs = torch.cat([obs[..., : self.obs_dim],
                             self.preferences.features(eps).unsqueeze(0).expand(obs.shape[0], b, -1)], -1)
        else:
            eps = self.preferences.from_features(obs[0, :, self.obs_dim:])
        return obs, eps

    def _conditioned_e_step(self, scored: dict[str, Tensor], eps: Tensor, mask: Tensor, T: int,
                            sel: Tensor) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        """:func:`~morl_robot.learning.mpo.conditioned_e_step` on the batch; weights flattened to the
        valid states ``[K, N, S]`` for the M-step; temperatures averaged over sequences ``[K]``
        (geometric mean, for logging); ``kl_q_rel`` = mean over sequences of KL_kb / ε_kb."""
        q = scored["q"][:, :T].permute(3, 0, 1, 2)  # [K, N, T, B]
        log_prior = scored["log_prior"][:, :T] if scored["log_prior"] is not None else None
        eps_kb = eps.t().contiguous()  # [K, B]
        w, eta, kl = mpo.conditioned_e_step(q, eps_kb, mask, log_prior)
        k, n = w.shape[:2]
        weights = w.reshape(k, n, -1)[:, :, sel]  # [K, N, S]
        self.last_preference_kl = (eps_kb.numpy().copy(), kl.numpy().copy())
        with torch.no_grad():
            self.log_temperature.copy_(mpo.dual_param_from_value(torch.exp(torch.log(eta).mean(1))))
        rel = (kl / eps_kb).mean(1)
        return weights, torch.exp(torch.log(eta).mean(1)), {"kl_q_rel": rel, "kl_q": kl.mean(1)}

    def _symreg_signs(self, config: MPOConfig, spec: ActionSpec) -> tuple[Tensor, Tensor] | None:
        """``(L_g [input_dim], K_g [D])`` as ±1 vectors from ``config.symreg`` (indices checked
        against the observation and action widths; preference features are never reflected)."""
        sym = config.symreg
        if sym is None:
            return None
        if spec.is_discrete:
            raise ConfigError("symreg: the mirror-symmetry regulariser is for continuous (Gaussian) policies")
        for key, idx, width in (("observation_negate", sym.observation_negate, self.obs_dim),
                                ("action_negate", sym.action_negate, spec.dim)):
            if any(i >= width for i in idx):
                raise ConfigError(f"symreg.{key}: indices must be < {width} (the width), got {idx}")
        obs_sign = torch.ones(self.input_dim)
        obs_sign[list(sym.observation_negate)] = -1.0
        act_sign = torch.ones(spec.dim)
        act_sign[list(sym.action_negate)] = -1.0
        return obs_sign, act_sign

    def _current_reward_model(self) -> Any:
        """The densifying reward model: ``config.densify.model`` (TorchScript, re-loaded when the
        file changes: a retrained model relabels every later sample) or :attr:`reward_model`."""
        d = self.config.densify
        if d is None or not d.model:
            return self.reward_model
        import os

        try:
            st = os.stat(d.model)
        except FileNotFoundError:
            return None  # not trained yet: the released rewards are learned as they are
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._reward_model_stamp:
            self.reward_model = torch.jit.load(d.model)
            self.reward_model.eval()
            self._reward_model_stamp = stamp
        return self.reward_model

    def _densify(self, obs: Tensor, actions: Tensor, rewards: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Rewards ``[T, B, K]`` with the sparse objectives' columns from the reward model at
        ``(s_t, a_t, r_t)`` (``obs [T+1, B, O(+K)]``, raw); unchanged while there is no model."""
        d = self.config.densify
        model = self._current_reward_model() if d is not None else None
        if model is None or d is None:
            return rewards, {}
        t, b, k = rewards.shape
        with torch.no_grad():
            pred = model(obs[:t, :, : self.obs_dim].reshape(t * b, -1).float(),
                         actions.reshape(t * b, -1).float(), rewards.reshape(t * b, k))  # [T*B, S]
            pred = pred.reshape(t, b, -1)
        out = mpo.densified_rewards(rewards, pred, list(d.objectives), d.mode, d.mix_weight)
        return out, {f"densify/predicted_mean/{self.objective_names[i]}": pred[..., j].mean()
                     for j, i in enumerate(d.objectives)}

    def update_targets(self) -> None:
        """Hard copy of the online networks into the target networks."""
        with torch.no_grad():
            for src, dst in ((self.policy, self.target_policy), (self.critic, self.target_critic)):
                for ps, pd in zip(src.parameters(), dst.parameters()):
                    pd.copy_(ps)

    # -- state ----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.state_dict(),
            "critic": self.critic.state_dict(),
            "target_policy": self.target_policy.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "duals": {"log_temperature": self.log_temperature.detach().clone(),
                      "log_alpha_mean": self.log_alpha_mean.detach().clone(),
                      "log_alpha_stddev": None if self.log_alpha_stddev is None else self.log_alpha_stddev.detach().clone()},
            "policy_optimizer": self.policy_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "dual_optimizer": self.dual_optimizer.state_dict(),
            "num_updates": self.num_updates,
            "generator": self.generator.get_state(),
            "actor_generator": self.actor_generator.get_state(),
            "meta": {"obs_dim": self.obs_dim, "action_spec": self.spec.to_dict(),
                     "num_objectives": self.num_objectives, "objective_names": self.objective_names,
                     "preferences": None if self.preferences is None else self.preferences.to_dict(),
                     "config": config_to_dict(self.config)},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        meta = state["meta"]
        mine = {"obs_dim": self.obs_dim, "action_spec": self.spec.to_dict(), "num_objectives": self.num_objectives,
                "preferences": None if self.preferences is None else self.preferences.to_dict()}
        for key, value in mine.items():
            if meta.get(key) != value:
                raise ValueError(f"checkpoint {key} is {meta[key]!r} but this learner has {value!r}")
        self.policy.load_state_dict(state["policy"])
        self.critic.load_state_dict(state["critic"])
        self.target_policy.load_state_dict(state["target_policy"])
        self.target_critic.load_state_dict(state["target_critic"])
        with torch.no_grad():
            self.log_temperature.copy_(state["duals"]["log_temperature"])
            self.log_alpha_mean.copy_(state["duals"]["log_alpha_mean"])
            if self.log_alpha_stddev is not None:
                self.log_alpha_stddev.copy_(state["duals"]["log_alpha_stddev"])
        self.policy_optimizer.load_state_dict(state["policy_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.dual_optimizer.load_state_dict(state["dual_optimizer"])
        self.num_updates = int(state["num_updates"])
        self.generator.set_state(state["generator"])
        self.actor_generator.set_state(state["actor_generator"])
