"""MO-MPO / MPO losses as small pure functions (Abdolmaleki et al. 2020, "A Distributional View on
Multi-Objective Policy Optimization"; MPO: Abdolmaleki et al. 2018a/b).

Shapes (as in acme's losses):

* ``N`` sampled actions per state (or, for a categorical policy, all ``A`` actions enumerated),
* ``B`` states (batch; a sequence batch is flattened to ``T*B`` states before the policy step),
* ``D`` action dimensions, ``K`` objectives, ``T`` sequence length.

What is computed
----------------
E-step (paper eq. 3-4, Algorithm 1 lines 9-13), per objective k::

    q_k(a|s) ∝ π_old(a|s) exp(Q_k(s,a) / η_k)
    η_k = argmin_η  g(η) = η ε_k + η E_s log E_{a~π_old} exp(Q_k(s,a) / η)

With ``N`` actions ``a_j ~ π_old`` the inner expectation is ``mean_j`` (``log_prior = -log N``);
with an enumerated categorical policy it is ``Σ_a π_old(a|s)`` (``log_prior = log π_old``).  The
derivative of the dual is ``g'(η) = ε - KL(q‖π_old)``, so the exact solution makes the E-step KL
equal to ε (:func:`solve_temperature` uses that).

M-step (paper eq. 5, Algorithm 1 line 16), with MPO's Lagrangian relaxation and the decoupled
trust region of Abdolmaleki et al. 2018a (mean and covariance parts each with a bound and a
Lagrange multiplier, per action dimension by default)::

    max_θ Σ_k E_s Σ_j q_kj log π_θ(a_j|s)   s.t.  E_s KL(π_old‖π_θ^mean) < ε_mean,
                                                  E_s KL(π_old‖π_θ^std)  < ε_stddev

where ``π_θ^mean = N(μ_θ, σ_old)`` and ``π_θ^std = N(μ_old, σ_θ)``.  The Lagrangian is split into
a policy part (multiplier stop-gradiented) and a dual part ``α (ε - sg[KL])``.

Critic targets (paper section 4.1 and appendix C): Retrace (Munos et al. 2016) on sequences, and
n-step TD targets, both bootstrapping from ``V(s) = E_{a~π_target} Q_target(s, a)`` estimated with
the same ``N`` samples (or the enumerated actions).

Scalarized MPO (paper section 5, baseline): the same E-step on ``Σ_k w_k Q_k`` with one ε; see
:func:`scalarize_q`.

Pitfall (NOTES.md): the temperature losses of the K objectives are **summed**, not averaged —
averaging scales each η_k's gradient by 1/K.

Every loss returns ``(loss, stats)``: a scalar tensor to minimise and a dict of named, detached
scalar tensors for logging.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

Tensor = torch.Tensor

#: Lower bound of the (pre-softplus) dual parameters, as in the reference code.
LOG_DUAL_FLOOR = -18.0
#: Added to softplus outputs so a dual is never exactly zero.
DUAL_EPSILON = 1e-8

__all__ = [
    "DUAL_EPSILON",
    "LOG_DUAL_FLOOR",
    "categorical_kl",
    "categorical_kl_numpy",
    "categorical_m_step",
    "conditioned_e_step",
    "densified_rewards",
    "dual_from_param",
    "dual_param_from_value",
    "e_step_weights",
    "gaussian_kl_per_dim",
    "gaussian_log_prob",
    "gaussian_m_step",
    "kl_to_prior",
    "lagrange_terms",
    "multi_objective_e_step",
    "n_step_targets",
    "retrace_targets",
    "scalarize_q",
    "solve_categorical_m_step",
    "solve_log_temperatures",
    "solve_temperature",
    "symmetry_loss",
    "temperature_dual",
]


# --------------------------------------------------------------------------------------------
# Dual variables (temperatures η_k, Lagrange multipliers α): softplus-parameterised.
# --------------------------------------------------------------------------------------------


def dual_from_param(param: Tensor) -> Tensor:
    """Positive dual value ``softplus(param) + 1e-8`` (any shape)."""
    return F.softplus(param) + DUAL_EPSILON


def dual_param_from_value(value: float | np.ndarray | Tensor) -> Tensor:
    """Inverse of :func:`dual_from_param` (up to the 1e-8), clamped at the log floor."""
    v = torch.as_tensor(value, dtype=torch.float32)
    v = torch.clamp(v - DUAL_EPSILON, min=1e-30)
    # inverse softplus: x = v + log(1 - exp(-v)), stable for large v.
    param = v + torch.log(-torch.expm1(-v))
    return torch.clamp(param, min=LOG_DUAL_FLOOR)


# --------------------------------------------------------------------------------------------
# E-step
# --------------------------------------------------------------------------------------------


def temperature_dual(q: Tensor, temperature: Tensor, epsilon: float | Tensor,
                     log_prior: Tensor | None = None) -> Tensor:
    """MPO temperature dual g(η) (paper eq. 4; Algorithm 1 line 10).

    Args:
        q: ``[N, B]`` Q-values of the N actions per state (detached by the caller).
        temperature: scalar η > 0 (differentiable).
        epsilon: the KL bound ε.
        log_prior: ``[N, B]`` log prior weights of the actions; ``None`` means ``-log N``
            (actions sampled from π_old).  For enumerated categorical actions pass ``log π_old``.

    Returns:
        scalar ``η ε + η mean_B logsumexp_N(Q/η + log_prior)`` (a stable log-mean-exp).
    """
    if log_prior is None:
        lse = torch.logsumexp(q / temperature, dim=0) - math.log(q.shape[0])
    else:
        lse = torch.logsumexp(q / temperature + log_prior, dim=0)
    return temperature * epsilon + temperature * lse.mean()


def e_step_weights(q: Tensor, temperature: Tensor | float,
                   log_prior: Tensor | None = None) -> Tensor:
    """Normalised improved-distribution weights ``q_kj`` (paper eq. 3; Algorithm 1 line 12).

    Args:
        q: ``[N, B]`` (or ``[K, N, B]`` with ``temperature`` of shape ``[K, 1, 1]``).
        temperature: η (scalar or broadcastable to ``q``); gradients are *not* wanted here, so the
            caller passes a detached value.
        log_prior: as in :func:`temperature_dual`.

    Returns:
        ``[N, B]`` weights, ``softmax(Q/η + log_prior)`` along N (sums to one per state).
    """
    logits = q / temperature
    if log_prior is not None:
        logits = logits + log_prior
    return torch.softmax(logits, dim=-2)


def kl_to_prior(weights: Tensor, log_prior: Tensor | None = None) -> Tensor:
    """``mean_B KL(q‖π_old) = mean_B Σ_j w_j (log w_j - log prior_j)``.

    ``weights``: ``[N, B]`` (or ``[K, N, B]`` → result ``[K]``).  With sampled actions
    (``log_prior=None``) this is ``mean_B Σ_j w_j log(N w_j)``.
    """
    n = weights.shape[-2]
    log_w = torch.log(torch.clamp(weights, min=1e-30))
    lp = -math.log(n) if log_prior is None else log_prior
    kl = torch.sum(weights * (log_w - lp), dim=-2)  # [..., B]
    return kl.mean(dim=-1)


def solve_log_temperatures(q: Tensor, epsilons: Tensor, state_weights: Tensor | None = None,
                           log_prior: Tensor | None = None, *, tol: float = 1e-7,
                           max_iter: int = 100) -> Tensor:
    """Exact minimisers of the convex dual g(η) (paper eq. 4) for G independent groups at once.

    Group g is one objective (or one objective × one sequence, for the ε-conditioned E-step) with
    its own bound ε_g over its own states; ``g'(η) = ε - KL(q_η‖π_old)`` with the KL averaged over
    the group's states, so the solution is the η at which that mean KL equals ε_g.  The KL falls
    monotonically in ``u = log η`` with derivative ``dKL/du = -Var_{q_η}(Q) / η²`` (per state), so
    a Newton step on u, kept inside a bisection bracket ``[lo, hi]`` with ``KL(lo) > ε ≥ KL(hi)``
    (a step that leaves the bracket is replaced by bisection), converges in a handful of steps where
    bisection needs ~30.  Solved in float64.  The bracket starts at ``[1e-12, 1e4]`` times the
    group's Q spread (and grows upward if needed), so rescaling a group's Q by c rescales its η by
    c (the scale invariance of paper §4.2.1).

    Args:
        q: ``[G, N, M]`` Q-values of N actions (sampled from, or enumerating, π_old) in M states.
        epsilons: ``[G]`` bounds ε_g > 0.
        state_weights: ``[G, M]`` or ``[M]`` non-negative weight of each state in the group's mean
            KL (a 0/1 mask of valid states), or None (all states, equal weight).
        log_prior: ``[N, M]`` or ``[G, N, M]`` log π_old of enumerated actions, or None (N samples
            from π_old: ``-log N``).
        tol: stop once every group's step in ``log η`` is below ``tol``.

    Returns:
        ``[G]`` log η.  A group whose Q-values are all equal gets ``log 1 = 0`` (any η is optimal,
        the weights equal the prior); one whose ε is at least the greedy KL (no finite η reaches it)
        gets the bracket's lower end, ``log(1e-12 · spread)`` (nearly greedy).
    """
    with torch.no_grad():
        q64 = torch.as_tensor(q).detach().double()
        n_groups, n = q64.shape[0], q64.shape[1]
        eps = torch.as_tensor(epsilons, dtype=torch.float64).reshape(n_groups)
        if bool((eps <= 0).any()):
            raise ValueError(f"epsilon must be > 0 for a finite temperature, got {eps.tolist()}")
        m = (torch.ones(q64.shape[-1], dtype=torch.float64) if state_weights is None
             else torch.as_tensor(state_weights, dtype=torch.float64))
        m = m.expand(n_groups, q64.shape[-1])  # [G, M]
        count = m.sum(-1).clamp(min=1e-300)  # [G]
        lp = None if log_prior is None else torch.as_tensor(log_prior, dtype=torch.float64)
        lp_kl = -math.log(n) if lp is None else lp

        def kl_and_slope(u: Tensor) -> tuple[Tensor, Tensor]:  # [G] -> mean KL [G], dKL/du [G]
            eta = u.exp()[:, None, None]
            logits = q64 / eta if lp is None else q64 / eta + lp
            log_w = torch.log_softmax(logits, dim=1)  # [G, N, M]
            w = log_w.exp()
            kl = torch.sum(w * (log_w - lp_kl), dim=1)  # [G, M]
            mean_q = torch.sum(w * q64, dim=1, keepdim=True)
            var = torch.sum(w * (q64 - mean_q) ** 2, dim=1)  # [G, M]
            return (kl * m).sum(-1) / count, -((var * m).sum(-1) / count) / eta[:, 0, 0] ** 2

        valid = m > 0
        spread = torch.where(valid, q64.amax(1) - q64.amin(1), torch.zeros_like(m)).amax(-1)  # [G]
        flat = spread <= 0
        scale = torch.where(flat, torch.ones_like(spread), spread)
        lo, hi = torch.log(scale * 1e-12), torch.log(scale * 1e4)
        for _ in range(8):  # KL(hi) ≤ ε, growing hi for a very small ε
            too_small = (kl_and_slope(hi)[0] > eps) & ~flat
            if not bool(too_small.any()):
                break
            hi = torch.where(too_small, hi + math.log(1e4), hi)
        unreachable = (kl_and_slope(lo)[0] <= eps) | flat  # ε ≥ greedy KL: answer lo
        # start from the large-η expansion KL ≈ Var_π_old(Q) / (2η²), close for the usual small ε
        prior = torch.full_like(q64, 1.0 / n) if lp is None else lp.exp().expand_as(q64)
        prior_var = torch.sum(prior * (q64 - torch.sum(prior * q64, dim=1, keepdim=True)) ** 2, dim=1)  # [G, M]
        guess = 0.5 * torch.log(((prior_var * m).sum(-1) / count).clamp(min=1e-300) / (2.0 * eps))
        u = torch.where((guess > lo) & (guess < hi), guess, 0.5 * (lo + hi))
        # the bracket's bookkeeping on [G] in numpy (the same float64 arithmetic, element for element,
        # without torch's per-op dispatch: ~25 small ops per iteration); the KL and its slope in torch
        u_np, lo_np, hi_np, eps_np = u.numpy(), lo.numpy(), hi.numpy(), eps.numpy()
        done_np = unreachable.numpy()
        for _ in range(max_iter):
            f_t, slope_t = kl_and_slope(torch.from_numpy(u_np))
            f, slope = f_t.numpy() - eps_np, slope_t.numpy()
            over = f > 0  # KL too large: η must grow
            lo_np = np.where(over, u_np, lo_np)
            hi_np = np.where(over, hi_np, u_np)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                newton = u_np - f / np.where(slope < 0, slope, -1e-300)
            # a converged group's Newton step (< tol) may sit on its bracket's edge: keep it (bisecting
            # would throw it away from the root while other groups are still converging)
            inside = ((newton > lo_np) & (newton < hi_np) | (np.abs(newton - u_np) < tol)) & np.isfinite(newton)
            step = np.where(inside, newton, 0.5 * (lo_np + hi_np)) - u_np
            u_np = u_np + step
            if ((np.abs(step) < tol) | done_np).all():
                break
        u, lo = torch.from_numpy(u_np), torch.from_numpy(lo_np)
        u = torch.where(unreachable, lo, u)
        return torch.where(flat, torch.zeros_like(u), u)


def solve_temperature(q: Tensor | np.ndarray, epsilon: float, log_prior: Tensor | np.ndarray | None = None,
                      *, tol: float = 1e-7, max_iter: int = 100) -> float:
    """Exact minimiser η of the dual g(η) (paper eq. 4) for one objective over the states of ``q``.

    ``q``: ``[N, B]`` Q-values; ``epsilon`` > 0; ``log_prior`` as in :func:`temperature_dual`.
    Returns η with ``KL(q_η‖π_old) = ε`` (to ``tol`` in log η); see :func:`solve_log_temperatures`
    (one group) for the method and the limiting cases (flat Q → 1.0; ε beyond the greedy KL → a
    nearly greedy η).
    """
    qt = torch.as_tensor(q, dtype=torch.float64)
    lp = None if log_prior is None else torch.as_tensor(log_prior, dtype=torch.float64)
    u = solve_log_temperatures(qt.unsqueeze(0), torch.tensor([float(epsilon)]), None, lp,
                               tol=tol, max_iter=max_iter)
    return math.exp(float(u[0]))


def categorical_kl_numpy(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p‖q) for categorical distributions (A,) in float64; terms with p = 0 are 0."""
    mask = p > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))


def solve_categorical_m_step(
    weights: np.ndarray, prior: np.ndarray, beta: float, tol: float = 1e-12
) -> tuple[np.ndarray, float]:
    """Exact single-state M-step: argmax_π Σ_k Σ_a q_k(a) log π(a) s.t. KL(prior‖π) ≤ β.

    Args:
        weights: (K, A) E-step distributions q_k (each row sums to 1).
        prior: (A,) π_old.
        beta: the KL bound β > 0.

    Returns:
        (π (A,), α): the new policy π_α = (W + α·prior)/(K + α), W = Σ_k q_k, and the Lagrange
        multiplier α (0 when the unconstrained fit W/K already satisfies the bound).
    """
    w_sum = np.asarray(weights, dtype=np.float64).sum(axis=0)  # (A,)
    k = float(w_sum.sum())
    prior = np.asarray(prior, dtype=np.float64)

    def policy(alpha: float) -> np.ndarray:
        return (w_sum + alpha * prior) / (k + alpha)

    if categorical_kl_numpy(prior, policy(0.0)) <= beta:
        return policy(0.0), 0.0
    # KL(prior‖π_α) decreases monotonically from KL(prior‖W/K) (α = 0) to 0 (α → ∞).
    lo, hi = math.log(1e-12 * k), math.log(k)
    while categorical_kl_numpy(prior, policy(math.exp(hi))) > beta:
        hi += math.log(10.0)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if categorical_kl_numpy(prior, policy(math.exp(mid))) > beta:
            lo = mid
        else:
            hi = mid
    alpha = math.exp(hi)  # the feasible side of the bracket
    return policy(alpha), alpha


def multi_objective_e_step(q: Tensor, temperatures: Tensor, epsilons: Tensor,
                           log_prior: Tensor | None = None) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """Per-objective E-step (Algorithm 1 lines 9-13) for all K objectives at once.

    Args:
        q: ``[K, N, B]`` Q-values (detached) of the N actions per state, per objective.
        temperatures: ``[K]`` η_k (differentiable; from :func:`dual_from_param`).
        epsilons: ``[K]`` ε_k.
        log_prior: ``[N, B]`` shared by all objectives, or ``None`` (sampled actions).

    Returns:
        ``(weights [K, N, B] (no grad), temperature_loss (scalar, Σ_k g_k(η_k)), stats)``; stats
        has ``kl_q`` ``[K]`` (E-step KL per objective) and ``kl_q_rel`` ``[K]`` (KL / ε_k).
        An objective with ε_k = 0 gets the η_k → ∞ limit ``q_k = π_old`` (prior weights; its
        Q-values have no influence, paper section 4.2.1) and no temperature loss.
    """
    q = q.detach()
    k = q.shape[0]
    eta = temperatures.reshape(k, 1, 1)
    logits = q / eta
    if log_prior is None:
        lse = torch.logsumexp(logits, dim=1) - math.log(q.shape[1])  # [K, B]
    else:
        lse = torch.logsumexp(logits + log_prior, dim=1)
    active = epsilons > 0  # [K]
    # Sum over objectives (NOTES.md pitfall: a mean would scale each η_k's gradient by 1/K).
    per_objective = temperatures * epsilons + temperatures * lse.mean(dim=-1)
    loss = torch.sum(torch.where(active, per_objective, torch.zeros_like(per_objective)))
    weights = e_step_weights(q, eta.detach(), log_prior)
    if not bool(active.all()):
        # ε_k = 0: the η_k → ∞ limit, q_k = π_old (the prior weights); Q_k has no influence.
        prior = torch.full_like(weights[0], 1.0 / q.shape[1]) if log_prior is None else log_prior.exp()
        weights = torch.where(active.view(k, 1, 1), weights, prior.unsqueeze(0))
    kl = kl_to_prior(weights, log_prior)  # [K]
    safe_eps = torch.where(active, epsilons, torch.ones_like(epsilons))
    stats = {"kl_q": kl.detach(), "kl_q_rel": (kl / safe_eps).detach(), "loss_temperature": loss.detach()}
    return weights, loss, stats


def conditioned_e_step(q: Tensor, epsilons: Tensor, mask: Tensor, log_prior: Tensor | None = None,
                       tol: float = 1e-7) -> tuple[Tensor, Tensor, Tensor]:
    """The E-step of ε-conditioned MO-MPO: eq. 3-4 with a bound per objective *and per sequence*.

    Every sequence b of a batch is learned under its own preference ε_b (sampled by the learner),
    so each (k, b) gets its own temperature: η_kb solves eq. 4 over the states of sequence b,
    i.e. ``mean_{t valid} KL(q_k(·|s_tb) ‖ π_old(·|s_tb)) = ε_kb`` — the exact dual solution
    (``g'(η) = ε − KL``), found for all K·B groups at once by :func:`solve_log_temperatures`, so
    rescaling objective k by c rescales every η_kb by c and leaves the weights unchanged (the
    scale invariance of paper §4.2.1).  A group whose Q-values are all equal gets uniform
    (prior) weights; one whose ε exceeds the greedy KL gets the smallest η (nearly greedy).

    Args:
        q: ``[K, N, T, B]`` Q-values (no grad) of N actions per state.
        epsilons: ``[K, B]`` ε_kb > 0.
        mask: ``[T, B]`` 1 for the valid states of each sequence.
        log_prior: ``[N, T, B]`` (enumerated categorical actions: log π_old) or None (N samples
            from π_old: ``-log N``).
        tol: solver tolerance in ``log η``.

    Returns:
        ``(weights [K, N, T, B] float32, temperatures [K, B], kl [K, B])`` — the achieved mean KL
        per group (≈ ε_kb unless ε_kb is out of reach).
    """
    with torch.no_grad():
        k, n, t, b = q.shape
        q64 = q.detach().double()
        m = mask.double()  # [T, B]
        groups_q = q64.permute(0, 3, 1, 2).reshape(k * b, n, t)  # group (k, b): [N, T]
        groups_m = m.t().repeat(k, 1)  # [K*B, T]
        groups_lp = None if log_prior is None else (
            log_prior.double().permute(2, 0, 1).unsqueeze(0).expand(k, b, n, t).reshape(k * b, n, t))
        log_eta = solve_log_temperatures(groups_q, epsilons.double().reshape(k * b), groups_m, groups_lp,
                                         tol=tol).view(k, b)  # [K, B]
        logits = q64 / log_eta.exp()[:, None, None, :]
        if log_prior is not None:
            logits = logits + log_prior.double().unsqueeze(0)
        log_w = torch.log_softmax(logits, dim=1)  # [K, N, T, B]
        log_prior_w = -math.log(n) if log_prior is None else log_prior.double().unsqueeze(0)
        kl_t = torch.sum(log_w.exp() * (log_w - log_prior_w), dim=1)  # [K, T, B]
        kl = (kl_t * m).sum(1) / m.sum(0).clamp(min=1.0)
        return log_w.exp().float(), log_eta.exp().float(), kl.float()


def scalarize_q(q: Tensor, weights: Tensor) -> Tensor:
    """Scalarized MPO: ``[K, N, B]`` → ``[1, N, B]`` with ``Σ_k w_k Q_k`` (paper section 5)."""
    return torch.einsum("k,knb->nb", weights.to(q.dtype), q).unsqueeze(0)


# --------------------------------------------------------------------------------------------
# M-step
# --------------------------------------------------------------------------------------------

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_log_prob(actions: Tensor, mean: Tensor, std: Tensor) -> Tensor:
    """Per-dimension diagonal-Gaussian log density: actions ``[N, B, D]``, mean/std ``[B, D]``
    → ``[N, B, D]`` (sum over D for the joint log-probability)."""
    z = (actions - mean) / std
    return -0.5 * z * z - torch.log(std) - _LOG_SQRT_2PI


def gaussian_kl_per_dim(mean_p: Tensor, std_p: Tensor, mean_q: Tensor, std_q: Tensor) -> Tensor:
    """``KL(N(mean_p, std_p) ‖ N(mean_q, std_q))`` per dimension: ``[B, D]`` → ``[B, D]``."""
    var_ratio = (std_p / std_q) ** 2
    t1 = ((mean_p - mean_q) / std_q) ** 2
    return 0.5 * (var_ratio + t1 - 1.0 - torch.log(var_ratio))


def categorical_kl(logits_p: Tensor, logits_q: Tensor) -> Tensor:
    """``KL(Cat(p) ‖ Cat(q))``: logits ``[B, A]`` → ``[B]``."""
    logp = torch.log_softmax(logits_p, dim=-1)
    logq = torch.log_softmax(logits_q, dim=-1)
    return torch.sum(logp.exp() * (logp - logq), dim=-1)


def lagrange_terms(alpha: Tensor, kl: Tensor, epsilon: float | Tensor) -> tuple[Tensor, Tensor]:
    """MPO's Lagrangian for ``KL < ε`` split with stop-gradients.

    Args:
        alpha: multiplier(s) α > 0, same shape as ``kl`` (``[D]`` per dimension, or scalar).
        kl: the KL estimate(s) (differentiable w.r.t. the policy).

    Returns:
        ``(policy_term, alpha_term)``: ``Σ sg[α]·KL`` (trains θ) and ``Σ α·(ε - sg[KL])`` (trains α:
        α grows while the KL exceeds ε and shrinks to the floor while it is inside).
    """
    policy_term = torch.sum(alpha.detach() * kl)
    alpha_term = torch.sum(alpha * (epsilon - kl.detach()))
    return policy_term, alpha_term


def gaussian_m_step(weights: Tensor, actions: Tensor, online_mean: Tensor, online_std: Tensor,
                    target_mean: Tensor, target_std: Tensor, alpha_mean: Tensor, alpha_stddev: Tensor,
                    epsilon_mean: float, epsilon_stddev: float,
                    per_dim: bool = True) -> tuple[Tensor, dict[str, Tensor]]:
    """Weighted maximum likelihood with a decoupled KL trust region (paper eq. 5).

    Args:
        weights: ``[K, N, B]`` (or ``[N, B]``) E-step weights q_kj (no grad).
        actions: ``[N, B, D]`` the actions sampled from π_old (the ones the weights refer to).
        online_mean, online_std: ``[B, D]`` π_θ parameters (differentiable).
        target_mean, target_std: ``[B, D]`` π_old parameters (no grad).
        alpha_mean, alpha_stddev: ``[D]`` (``per_dim``) or scalar multipliers (differentiable).
        epsilon_mean, epsilon_stddev: KL bounds (per dimension when ``per_dim``).

    Returns:
        ``(loss, stats)``: loss = ``-Σ_k mean_B Σ_j q_kj [log N(a_j; μ_θ, σ_old) + log N(a_j; μ_old, σ_θ)]``
        + the Lagrangian terms for both parts (multipliers included).  Stats: ``loss_policy``,
        ``loss_kl_penalty``, ``loss_alpha``, ``kl_mean``/``kl_stddev`` (relative to their bounds;
        mean over dims), ``kl_mean_abs``/``kl_stddev_abs``, ``alpha_mean``/``alpha_stddev``,
        ``std_mean`` (mean online std).
    """
    target_mean = target_mean.detach()
    target_std = target_std.detach()
    if weights.dim() == 2:
        weights = weights.unsqueeze(0)
    w = weights.detach().sum(dim=0)  # [N, B]: Σ_k q_kj (the loss is linear in the weights)
    # Decoupled fixed-covariance / fixed-mean distributions.
    logp_mean = gaussian_log_prob(actions, online_mean, target_std).sum(dim=-1)  # [N, B]
    logp_std = gaussian_log_prob(actions, target_mean, online_std).sum(dim=-1)  # [N, B]
    loss_policy = -(torch.sum(w * (logp_mean + logp_std), dim=0)).mean()

    kl_mean = gaussian_kl_per_dim(target_mean, target_std, online_mean, target_std).mean(dim=0)  # [D]
    kl_std = gaussian_kl_per_dim(target_mean, target_std, target_mean, online_std).mean(dim=0)  # [D]
    if not per_dim:
        kl_mean, kl_std = kl_mean.sum(), kl_std.sum()
    pen_mean, dual_mean = lagrange_terms(alpha_mean, kl_mean, epsilon_mean)
    pen_std, dual_std = lagrange_terms(alpha_stddev, kl_std, epsilon_stddev)
    loss_kl = pen_mean + pen_std
    loss_alpha = dual_mean + dual_std
    loss = loss_policy + loss_kl + loss_alpha
    stats = {
        "loss_policy": loss_policy.detach(),
        "loss_kl_penalty": loss_kl.detach(),
        "loss_alpha": loss_alpha.detach(),
        "kl_mean": (kl_mean / epsilon_mean).mean().detach(),
        "kl_stddev": (kl_std / epsilon_stddev).mean().detach(),
        "kl_mean_abs": kl_mean.mean().detach(),
        "kl_stddev_abs": kl_std.mean().detach(),
        "alpha_mean": alpha_mean.mean().detach(),
        "alpha_stddev": alpha_stddev.mean().detach(),
        "std_mean": online_std.mean().detach(),
    }
    return loss, stats


def categorical_m_step(weights: Tensor, actions: Tensor, online_logits: Tensor, target_logits: Tensor,
                       alpha: Tensor, epsilon: float) -> tuple[Tensor, dict[str, Tensor]]:
    """Weighted maximum likelihood for a categorical policy with one KL bound (paper eq. 5).

    Args:
        weights: ``[K, N, B]`` (or ``[N, B]``) E-step weights (no grad).
        actions: ``[N, B]`` integer action indices the weights refer to (for the enumerated E-step
            ``actions[j, b] = j``).
        online_logits: ``[B, A]`` π_θ (differentiable); target_logits ``[B, A]`` π_old.
        alpha: scalar multiplier; epsilon: KL bound.

    Returns:
        ``(loss, stats)`` with ``loss_policy``, ``loss_kl_penalty``, ``loss_alpha``, ``kl_categorical``
        (relative to ε), ``kl_categorical_abs``, ``alpha_categorical``, ``entropy``.
    """
    if weights.dim() == 2:
        weights = weights.unsqueeze(0)
    w = weights.detach().sum(dim=0)  # [N, B]
    log_pi = torch.log_softmax(online_logits, dim=-1)  # [B, A]
    logp = torch.gather(log_pi.t(), 0, actions.long())  # [N, B]
    loss_policy = -(torch.sum(w * logp, dim=0)).mean()
    kl = categorical_kl(target_logits.detach(), online_logits).mean()
    pen, dual = lagrange_terms(alpha, kl, epsilon)
    loss = loss_policy + pen + dual
    entropy = -(log_pi.exp() * log_pi).sum(-1).mean()
    stats = {
        "loss_policy": loss_policy.detach(),
        "loss_kl_penalty": pen.detach(),
        "loss_alpha": dual.detach(),
        "kl_categorical": (kl / epsilon).detach(),
        "kl_categorical_abs": kl.detach(),
        "alpha_categorical": alpha.detach().reshape(()),
        "entropy": entropy.detach(),
    }
    return loss, stats


# --------------------------------------------------------------------------------------------
# Critic targets
# --------------------------------------------------------------------------------------------


def retrace_targets(q_taken: Tensor, v_next: Tensor, rewards: Tensor, discounts: Tensor,
                    log_pi: Tensor, log_mu: Tensor, mask: Tensor | None = None,
                    lambda_: float = 1.0) -> Tensor:
    """Retrace targets (Munos et al. 2016; paper section 4.1 / appendix C) on a sequence.

    Backward recursion, for t = T-1 … 0::

        Q^ret_t = r_t + γ_t [ V(s_{t+1}) + c_{t+1} (Q^ret_{t+1} - Q(s_{t+1}, a_{t+1})) ]
        c_t     = λ min(1, π(a_t|s_t) / μ(a_t|s_t)),   c_T = 0 (the trace ends with the window)

    Args:
        q_taken: ``[T, B, K]`` target-critic ``Q(s_t, a_t)`` of the taken actions.
        v_next: ``[T, B, K]`` ``V(s_{t+1}) = E_{a~π} Q_target(s_{t+1}, a)``.
        rewards: ``[T, B, K]``.
        discounts: ``[T, B]`` ``γ · (1 - terminated_t)`` (0 after a termination; truncation keeps γ).
        log_pi: ``[T, B]`` target-policy ``log π(a_t|s_t)``; log_mu: ``[T, B]`` behaviour log-prob.
        mask: ``[T, B]`` 1 where step t is a real transition of the same episode as step 0 (steps
            after an episode end are 0 and cut the trace); ``None`` means all valid.
        lambda_: trace decay λ.

    Returns:
        ``[T, B, K]`` targets (no grad).  Entries where ``mask`` is 0 are meaningless.
    """
    T = rewards.shape[0]
    c = lambda_ * torch.clamp(torch.exp(log_pi - log_mu), max=1.0)  # [T, B]
    if mask is not None:
        c = c * mask
    targets = torch.empty_like(rewards)
    g = rewards[T - 1] + discounts[T - 1].unsqueeze(-1) * v_next[T - 1]
    targets[T - 1] = g
    for t in range(T - 2, -1, -1):
        trace = c[t + 1].unsqueeze(-1) * (g - q_taken[t + 1])
        g = rewards[t] + discounts[t].unsqueeze(-1) * (v_next[t] + trace)
        targets[t] = g
    return targets


def n_step_targets(rewards: Tensor, discounts: Tensor, v_next: Tensor, n: int,
                   mask: Tensor | None = None) -> Tensor:
    """n-step TD targets for every step of a sequence (reference code's critic target).

    ``G_t = Σ_{j<h} (Π_{i<j} γ_{t+i}) r_{t+j} + (Π_{i<h} γ_{t+i}) V(s_{t+h})`` with horizon
    ``h = min(n, steps left in the window / the episode)``.

    Args:
        rewards: ``[T, B, K]``; discounts: ``[T, B]`` (``γ (1 - terminated)``);
        v_next: ``[T, B, K]`` ``V(s_{t+1})`` (mean of the target critic over N target-policy
            samples); n ≥ 1; mask: ``[T, B]`` as in :func:`retrace_targets`.

    Returns:
        ``[T, B, K]`` targets (no grad).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    T = rewards.shape[0]
    if mask is None:
        mask = torch.ones_like(discounts)

    def shifted(x: Tensor, j: int) -> Tensor:  # x[t + j], zero past the end
        if j == 0:
            return x
        pad = torch.zeros_like(x[:j])
        return torch.cat([x[j:], pad], dim=0)

    g = torch.zeros_like(rewards)
    scale = torch.ones_like(discounts)  # Π_{i<j} γ_{t+i}
    exists = shifted(mask, 0)
    for j in range(n):
        r_j, d_j, v_j = shifted(rewards, j), shifted(discounts, j), shifted(v_next, j)
        exists_next = shifted(mask, j + 1) * exists if j + 1 < n else torch.zeros_like(exists)
        last = exists * (1.0 - exists_next)
        g = g + (scale * exists).unsqueeze(-1) * r_j + (scale * last * d_j).unsqueeze(-1) * v_j
        scale = scale * d_j
        exists = exists_next
        if j + 1 >= T:
            break
    return g


# --------------------------------------------------------------------------------------------
# PRISM (issue 38; ../shared/papers/prism_parallel-reward-integration-symmetry.txt)
# --------------------------------------------------------------------------------------------


def symmetry_loss(mean_reflected: Tensor, mean: Tensor, action_sign: Tensor, log_std_reflected: Tensor | None = None,
                  log_std: Tensor | None = None, norm: str = "l1_squared") -> Tensor:
    """SymReg (PRISM §4.2): ``L_eq = E_s ‖μ(L_g s) − K_g μ(s)‖²`` with ``K_g a = action_sign ⊙ a``.

    Args:
        mean_reflected: ``[S, D]`` policy mean at the reflected states ``L_g s`` (differentiable).
        mean: ``[S, D]`` policy mean at ``s`` (differentiable).
        action_sign: ``[D]`` ±1 (the reflection ``K_g``, an involution).
        log_std_reflected, log_std: ``[S, D]`` or None; given, ``‖log σ(L_g s) − log σ(s)‖²`` is added
            (a standard deviation is a magnitude: invariant under the reflection).
        norm: ``l1_squared`` (the paper's ‖·‖₁²) or ``l2_squared``.

    Returns:
        scalar; 0 exactly for an equivariant policy ``μ(L_g s) = K_g μ(s)``.
    """
    diff = mean_reflected - mean * action_sign  # [S, D]
    per_state = diff.abs().sum(-1) ** 2 if norm == "l1_squared" else (diff * diff).sum(-1)  # [S]
    if log_std_reflected is not None and log_std is not None:
        d = log_std_reflected - log_std
        per_state = per_state + (d.abs().sum(-1) ** 2 if norm == "l1_squared" else (d * d).sum(-1))
    return per_state.mean()


def densified_rewards(rewards: Tensor, predicted: Tensor, objectives: list[int], mode: str = "replace",
                      mix_weight: float = 0.5) -> Tensor:
    """The rewards a densified critic learns from (PRISM §4.1).

    Args:
        rewards: ``[..., K]`` released rewards (what the replay keeps).
        predicted: ``[..., S]`` per-step predictions r̂ of the S sparse ``objectives`` (indices into K).
        mode: ``replace`` (r_k ← r̂) or ``mix`` (r_k ← w r̂ + (1 − w) r_k, ``w = mix_weight``).

    Returns:
        ``[..., K]``: the other objectives' columns unchanged.
    """
    out = rewards.clone()
    idx = torch.as_tensor(objectives, dtype=torch.long)
    pred = predicted.to(rewards.dtype)
    out[..., idx] = pred if mode == "replace" else mix_weight * pred + (1.0 - mix_weight) * rewards[..., idx]
    return out
