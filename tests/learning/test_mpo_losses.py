"""The MO-MPO maths (morl_robot.learning.mpo): E-step dual, decoupled M-step, Retrace, n-step."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.learning import mpo

torch.set_num_threads(1)


def _q(seed: int, n: int = 20, b: int = 16, scale: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(n, b, generator=g, dtype=torch.float64)


def _kl_uniform(w: torch.Tensor) -> float:
    """KL(q‖π_old) for uniform π_old samples: mean_s Σ_j w_j log(N w_j), written out directly."""
    n = w.shape[0]
    return float(torch.mean(torch.sum(w * torch.log(n * w), dim=0)))


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5])
def test_solved_temperature_gives_kl_equal_epsilon(epsilon: float) -> None:
    q = _q(0)
    eta = mpo.solve_temperature(q, epsilon)
    w = mpo.e_step_weights(q, eta)
    assert torch.allclose(w.sum(0), torch.ones(q.shape[1], dtype=q.dtype))
    assert _kl_uniform(w) == pytest.approx(epsilon, rel=1e-4)
    assert float(mpo.kl_to_prior(w)) == pytest.approx(epsilon, rel=1e-4)


def test_solved_temperature_is_the_dual_minimum() -> None:
    q = _q(1)
    eps = 0.1
    eta = mpo.solve_temperature(q, eps)
    t = torch.tensor(eta, dtype=torch.float64, requires_grad=True)
    g = mpo.temperature_dual(q, t, eps)
    (grad,) = torch.autograd.grad(g, t)
    assert abs(float(grad)) < 1e-5  # g'(η*) = ε - KL = 0
    for f in (0.8, 1.25):
        assert float(mpo.temperature_dual(q, torch.tensor(eta * f, dtype=torch.float64), eps)) > float(g.detach())


def test_gradient_steps_on_the_dual_approach_the_exact_solution() -> None:
    """Algorithm 1's gradient steps on a softplus-parameterised η (Adam 1e-2) reach the exact η*."""
    q = _q(2, scale=0.5).float()
    eps = 0.1
    eta_star = mpo.solve_temperature(q, eps)
    param = torch.nn.Parameter(mpo.dual_param_from_value(3.0 * eta_star))
    opt = torch.optim.Adam([param], lr=1e-2)
    for _ in range(600):
        opt.zero_grad()
        mpo.temperature_dual(q, mpo.dual_from_param(param), eps).backward()
        opt.step()
        with torch.no_grad():
            param.clamp_(min=mpo.LOG_DUAL_FLOOR)
    assert float(mpo.dual_from_param(param)) == pytest.approx(eta_star, rel=0.03)


def test_enumerated_prior_matches_sampling_with_replication() -> None:
    """With log_prior = log π_old over enumerated actions, the E-step equals sampling in proportion."""
    qa = torch.tensor([[1.0], [0.0], [-1.0]], dtype=torch.float64)  # [A=3, B=1]
    prior = torch.tensor([[0.5], [0.25], [0.25]], dtype=torch.float64)
    q_rep = torch.tensor([[1.0], [1.0], [0.0], [-1.0]], dtype=torch.float64)  # the same as 4 samples
    eta_e = mpo.solve_temperature(qa, 0.05, prior.log())
    eta_s = mpo.solve_temperature(q_rep, 0.05)
    assert eta_e == pytest.approx(eta_s, rel=1e-5)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.floats(0.01, 100.0), eps=st.sampled_from([0.01, 0.05, 0.2]))
def test_scaling_q_scales_temperature_and_keeps_weights(seed: int, c: float, eps: float) -> None:
    q = _q(seed, n=10, b=8)
    eta = mpo.solve_temperature(q, eps)
    eta_c = mpo.solve_temperature(c * q, eps)
    assert eta_c == pytest.approx(c * eta, rel=1e-5)
    w, w_c = mpo.e_step_weights(q, eta), mpo.e_step_weights(c * q, eta_c)
    assert torch.allclose(w, w_c, atol=1e-6)


def test_multi_objective_e_step_sums_dual_losses_and_ignores_zero_epsilon() -> None:
    q = torch.stack([_q(3).float(), _q(4).float()])  # [K=2, N, B]
    temps = torch.tensor([0.5, 2.0], requires_grad=True)
    eps = torch.tensor([0.1, 0.05])
    _w, loss, stats = mpo.multi_objective_e_step(q, temps, eps)
    expected = sum(mpo.temperature_dual(q[k], temps[k], eps[k]) for k in range(2))
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)  # a sum, not a mean over K
    (grad,) = torch.autograd.grad(loss, temps)
    (g0,) = torch.autograd.grad(mpo.temperature_dual(q[0], temps[0], eps[0]), temps)
    assert float(grad[0]) == pytest.approx(float(g0[0]), rel=1e-5)
    assert stats["kl_q"].shape == (2,)
    # ε_1 = 0: the weights of objective 1 are π_old's whatever Q_1 is.
    eps0 = torch.tensor([0.1, 0.0])
    w_a, _, _ = mpo.multi_objective_e_step(q, temps, eps0)
    w_b, _, _ = mpo.multi_objective_e_step(torch.stack([q[0], 100 * torch.randn_like(q[1])]), temps, eps0)
    assert torch.equal(w_a, w_b)
    assert torch.allclose(w_a[1], torch.full_like(w_a[1], 1.0 / q.shape[1]))


def test_scalarize_q() -> None:
    q = torch.arange(12.0).reshape(2, 3, 2)
    out = mpo.scalarize_q(q, torch.tensor([0.25, 0.75]))
    assert out.shape == (1, 3, 2)
    assert torch.allclose(out[0], 0.25 * q[0] + 0.75 * q[1])


def test_gaussian_kl_and_log_prob_match_torch_distributions() -> None:
    g = torch.Generator().manual_seed(0)
    m1, m2 = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)
    s1, s2 = torch.rand(4, 3, generator=g) + 0.1, torch.rand(4, 3, generator=g) + 0.1
    d1, d2 = torch.distributions.Normal(m1, s1), torch.distributions.Normal(m2, s2)
    assert torch.allclose(mpo.gaussian_kl_per_dim(m1, s1, m2, s2), torch.distributions.kl_divergence(d1, d2), atol=1e-5)
    a = torch.randn(5, 4, 3, generator=g)
    assert torch.allclose(mpo.gaussian_log_prob(a, m1, s1), d1.log_prob(a), atol=1e-5)


def _run_m_step(eps_mean: float, eps_std: float, steps: int = 400) -> dict[str, torch.Tensor]:
    """Fit per-state Gaussians to E-step weights that pull hard towards a = +2 (far outside)."""
    g = torch.Generator().manual_seed(0)
    b, d, n = 32, 2, 20
    target_mean = 0.1 * torch.randn(b, d, generator=g)
    target_std = torch.full((b, d), 0.5)
    actions = target_mean + target_std * torch.randn(n, b, d, generator=g)  # [N, B, D]
    q = -((actions - 2.0) ** 2).sum(-1)  # [N, B]: prefers large actions
    w = mpo.e_step_weights(q, mpo.solve_temperature(q, 0.5))
    mean = torch.nn.Parameter(target_mean.clone())
    raw_std = torch.nn.Parameter(torch.log(torch.expm1(target_std.clone())))
    log_am = torch.nn.Parameter(mpo.dual_param_from_value(torch.full((d,), 10.0)))
    log_as = torch.nn.Parameter(mpo.dual_param_from_value(torch.full((d,), 1000.0)))
    opt = torch.optim.Adam([mean, raw_std], lr=1e-3)
    dual_opt = torch.optim.Adam([log_am, log_as], lr=1e-2)
    for _ in range(steps):
        loss, stats = mpo.gaussian_m_step(w, actions, mean, torch.nn.functional.softplus(raw_std), target_mean,
                                          target_std, mpo.dual_from_param(log_am), mpo.dual_from_param(log_as),
                                          eps_mean, eps_std)
        opt.zero_grad()
        dual_opt.zero_grad()
        loss.backward()
        opt.step()
        dual_opt.step()
    with torch.no_grad():
        std = torch.nn.functional.softplus(raw_std)
        kl_mean = mpo.gaussian_kl_per_dim(target_mean, target_std, mean, target_std).mean(0)
        kl_std = mpo.gaussian_kl_per_dim(target_mean, target_std, target_mean, std).mean(0)
    return {**stats, "kl_mean_dims": kl_mean, "kl_std_dims": kl_std, "mean_shift": (mean - target_mean).mean()}


def test_decoupled_m_step_respects_both_trust_regions() -> None:
    eps_mean, eps_std = 1e-3, 1e-5
    out = _run_m_step(eps_mean, eps_std, steps=1000)
    assert float(out["mean_shift"]) > 0  # moved towards the preferred actions ...
    assert torch.all(out["kl_mean_dims"] <= 1.5 * eps_mean), out["kl_mean_dims"]  # ... within the bound
    assert torch.all(out["kl_std_dims"] <= 1.5 * eps_std), out["kl_std_dims"]
    # A 100x larger mean bound lets the mean move much further.
    wide = _run_m_step(1e-1, eps_std, steps=800)
    assert float(wide["mean_shift"]) > 3 * float(out["mean_shift"])


def test_categorical_m_step_moves_towards_weights_within_bound() -> None:
    b, a = 16, 3
    target_logits = torch.zeros(b, a)
    logits = torch.nn.Parameter(torch.zeros(b, a))
    log_alpha = torch.nn.Parameter(mpo.dual_param_from_value(10.0))
    q = torch.tensor([1.0, 0.0, -1.0]).view(a, 1).expand(a, b)
    prior = torch.log_softmax(target_logits, -1).t()
    w = mpo.e_step_weights(q, 0.3, prior)
    idx = torch.arange(a).view(a, 1).expand(a, b)
    opt = torch.optim.Adam([logits], lr=1e-3)
    dual = torch.optim.Adam([log_alpha], lr=1e-2)
    for _ in range(1500):
        loss, _stats = mpo.categorical_m_step(w, idx, logits, target_logits, mpo.dual_from_param(log_alpha), 1e-3)
        opt.zero_grad()
        dual.zero_grad()
        loss.backward()
        opt.step()
        dual.step()
    p = torch.softmax(logits.detach(), -1)
    assert float(p[:, 0].mean()) > 1 / 3
    assert float(mpo.categorical_kl(target_logits, logits.detach()).mean()) <= 2.0e-3  # Lagrangian transient: within 2x


def test_retrace_matches_hand_computed_values() -> None:
    # T = 3, B = 1, K = 1.
    r = torch.tensor([1.0, 2.0, 3.0]).view(3, 1, 1)
    d = torch.tensor([0.9, 0.9, 0.0]).view(3, 1)  # terminated at the last step
    q = torch.tensor([10.0, 20.0, 30.0]).view(3, 1, 1)  # Q(s_t, a_t)
    v = torch.tensor([5.0, 6.0, 7.0]).view(3, 1, 1)  # V(s_{t+1})
    log_pi = torch.log(torch.tensor([0.5, 0.2, 0.8])).view(3, 1)
    log_mu = torch.log(torch.tensor([0.5, 0.4, 0.4])).view(3, 1)
    lam = 0.9
    # c_1 = 0.9 * min(1, 0.2/0.4) = 0.45; c_2 = 0.9 * min(1, 2) = 0.9
    g2 = 3.0 + 0.0 * 7.0  # = 3
    g1 = 2.0 + 0.9 * (6.0 + 0.9 * (g2 - 30.0))  # = 2 + 0.9 * (6 - 24.3) = -14.47
    g0 = 1.0 + 0.9 * (5.0 + 0.45 * (g1 - 20.0))  # = 1 + 0.9 * (5 - 15.5115) = -8.46035
    out = mpo.retrace_targets(q, v, r, d, log_pi, log_mu, lambda_=lam)
    assert torch.allclose(out.view(3), torch.tensor([g0, g1, g2]), atol=1e-5)
    assert g1 == pytest.approx(-14.47) and g0 == pytest.approx(-8.46035)
    # A masked step cuts the trace: step 1 invalid → step 0 bootstraps from V(s_1) only.
    mask = torch.tensor([1.0, 0.0, 0.0]).view(3, 1)
    out_m = mpo.retrace_targets(q, v, r, d, log_pi, log_mu, mask, lambda_=lam)
    assert float(out_m[0, 0, 0]) == pytest.approx(1.0 + 0.9 * 5.0)


def test_retrace_reduces_to_n_step_returns_on_policy() -> None:
    """π = μ, λ = 1 (c = 1) and Q(s_t, a_t) = V(s_t): Retrace is the (T - t)-step return."""
    g = torch.Generator().manual_seed(0)
    T, B, K = 5, 4, 2
    r = torch.randn(T, B, K, generator=g)
    d = 0.95 * (torch.rand(T, B, generator=g) > 0.2).float()
    v = torch.randn(T, B, K, generator=g)  # V(s_{t+1})
    q_taken = torch.cat([torch.randn(1, B, K, generator=g), v[:-1]])  # Q(s_t, a_t) = V(s_t)
    log_p = torch.randn(T, B, generator=g)
    ret = mpo.retrace_targets(q_taken, v, r, d, log_p, log_p, lambda_=1.0)
    nst = mpo.n_step_targets(r, d, v, n=T)
    assert torch.allclose(ret, nst, atol=1e-5)
    # and explicitly for t = 0
    expected = torch.zeros(B, K)
    scale = torch.ones(B)
    for t in range(T):
        expected += scale.unsqueeze(-1) * r[t]
        scale = scale * d[t]
    expected += scale.unsqueeze(-1) * v[T - 1]
    assert torch.allclose(ret[0], expected, atol=1e-5)


def test_n_step_targets_horizon_and_mask() -> None:
    T = 4
    r = torch.ones(T, 1, 1)
    d = torch.full((T, 1), 0.5)
    v = torch.full((T, 1, 1), 8.0)
    out = mpo.n_step_targets(r, d, v, n=2).view(T)
    # t < T-1: 1 + 0.5 + 0.25 * 8 = 3.5; last step: 1 + 0.5 * 8 = 5
    assert torch.allclose(out, torch.tensor([3.5, 3.5, 3.5, 5.0]))
    mask = torch.tensor([1.0, 1.0, 0.0, 0.0]).view(T, 1)
    out_m = mpo.n_step_targets(r, d, v, n=3, mask=mask).view(T)
    assert float(out_m[0]) == pytest.approx(1 + 0.5 + 0.25 * 8)  # cut at the episode end
    assert float(out_m[1]) == pytest.approx(1 + 0.5 * 8)


def test_dual_parameterisation_round_trip_and_floor() -> None:
    for v in (1e-3, 1.0, 10.0, 1000.0):
        assert float(mpo.dual_from_param(mpo.dual_param_from_value(v))) == pytest.approx(v, rel=1e-5)
    assert float(mpo.dual_param_from_value(0.0)) == mpo.LOG_DUAL_FLOOR
    assert math.isfinite(float(mpo.dual_from_param(torch.tensor(mpo.LOG_DUAL_FLOOR))))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), log_eps=st.floats(-6.0, 0.0))
def test_grouped_solver_equals_one_solve_per_group_on_its_own_states(seed: int, log_eps: float) -> None:
    """solve_log_temperatures over G groups with 0/1 state weights = each group solved alone on
    the states it weights; every group's mean KL equals its ε (the dual's stationarity, eq. 4)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn((3, 6, 12), generator=g, dtype=torch.float64) * torch.tensor([0.1, 1.0, 50.0]).view(3, 1, 1)
    weights = (torch.rand((3, 12), generator=g) > 0.3).double()
    weights[:, 0] = 1.0
    eps = math.exp(log_eps) * torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)
    eta = mpo.solve_log_temperatures(q, eps, weights).exp()
    for k in range(3):
        keep = weights[k] > 0
        alone = mpo.solve_temperature(q[k][:, keep], float(eps[k]))
        assert float(eta[k]) == pytest.approx(alone, rel=1e-5)  # both solvers stop at a tolerance: seed 0, log ε −0.113 differ by 1.5e-6
        greedy_kl = math.log(6)  # one action takes all the mass
        if float(eps[k]) < 0.9 * greedy_kl:
            w = mpo.e_step_weights(q[k][:, keep], float(eta[k]))
            assert float(mpo.kl_to_prior(w)) == pytest.approx(float(eps[k]), rel=1e-5)


def test_grouped_solver_limiting_cases() -> None:
    """Flat Q: η = 1 (weights = prior); ε above the greedy KL: the nearly greedy lower bracket end."""
    q = torch.zeros((2, 4, 5), dtype=torch.float64)
    q[1] = torch.arange(20, dtype=torch.float64).view(4, 5)
    eta = mpo.solve_log_temperatures(q, torch.tensor([0.1, 10.0]))
    assert float(eta[0]) == 0.0
    assert float(eta[1].exp()) == pytest.approx(1e-12 * 15.0, rel=1e-9)  # spread of group 1 is 15
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        mpo.solve_log_temperatures(q, torch.tensor([0.1, 0.0]))
