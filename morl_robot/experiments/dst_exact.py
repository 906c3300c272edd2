"""Exact tabular MO-MPO on Deep Sea Treasure: what the algorithm's fixed points are, per ε.

The learned DST runs (:mod:`morl_robot.experiments.deep_sea_treasure`) mix three things: MO-MPO's
policy improvement, replay-based critics and a finite budget.  This module removes the last two,
so a learned run can be read against what MO-MPO itself converges to (MO-MPO paper §4, Alg. 1):

* **model**: the tabular MDP read off MO-Gymnasium's ``deep-sea-treasure-v0`` by stepping the
  environment from every cell with every action (no re-implemented dynamics); treasures end the
  episode; the reward vector is (treasure, −1 per step);
* **policy evaluation**: exact, Q_k^π = r_k + γ P V_k^π by a linear solve per objective (γ < 1 so
  that a policy that never reaches a treasure has finite values; default γ = 0.99);
* **E-step** (eq. 3–4): per objective k and state s, q_k(a|s) ∝ π(a|s) exp(Q_k(s,a)/η_k), with η_k
  the exact minimiser of the dual, i.e. mean_s KL(q_k(·|s) ‖ π(·|s)) = ε_k, where the mean is over
  the **uniform distribution on non-terminal cells** (a replay buffer that has seen the whole map;
  the state distribution is a stated choice: ``distribution="visitation"`` averages over the
  current policy's discounted visitation from the start instead, the states a replay filled only
  by the policy's own episodes from the corner holds);
* **M-step** (eq. 5 without the trust region, which changes the speed, not the fixed point):
  π_new = argmax Σ_k E_{q_k} log π = (1/K) Σ_k q_k;
* iterate until the greedy path has been the same for ``patience`` iterations (converged), or
  ``max_iterations`` (not converged); the last policy change max |Δπ| and the policy's entropy are
  reported with it.

Reported per (ε_time, c) with ε_treasure = c·ε_time: the treasure the **greedy** policy's path ends
on (and its undiscounted return vector), the **stochastic** policy's expected undiscounted return
within MO-Gymnasium's 100-step limit, the iterations and whether it converged.  With 101 values of
c in [0.5, 1.5] for each ε_time ∈ {0.01, 0.02, 0.05} this is the exact counterpart of the paper's
Fig. 5 (right) and of its "Pareto points found".
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from morl_robot.evaluation.provenance import write_results_json

TIME_LIMIT = 100  # MO-Gymnasium's deep-sea-treasure-v0 truncation


@dataclass(frozen=True)
class TabularDST:
    """The DST MDP: ``next_state`` (S, A) int, ``reward`` (S, A, K), ``terminal`` (S, A) bool
    (the transition ends on a treasure), ``start`` index, ``cells`` (S, 2), ``treasure_at`` (S,)."""

    next_state: NDArray[np.int64]
    reward: NDArray[np.float64]
    terminal: NDArray[np.bool_]
    start: int
    cells: NDArray[np.int64]
    treasure_at: NDArray[np.float64]

    @property
    def num_states(self) -> int:
        return int(self.next_state.shape[0])


def build_model() -> TabularDST:
    """Step MO-Gymnasium's DST from every open cell with every action to read the model off it."""
    from morl_robot.experiments.deep_sea_treasure import make_env

    env = make_env(one_hot=False)
    try:
        env.reset(seed=0)
        u = env.unwrapped
        sea = np.asarray(u.sea_map, dtype=np.float64)
        cells = [(r, c) for r in range(sea.shape[0]) for c in range(sea.shape[1]) if sea[r, c] != -10]
        index = {cell: i for i, cell in enumerate(cells)}
        n_actions = int(env.action_space.n)
        nxt = np.zeros((len(cells), n_actions), dtype=np.int64)
        rew = np.zeros((len(cells), n_actions, 2))
        term = np.zeros((len(cells), n_actions), dtype=bool)
        for (r, c), i in index.items():
            for a in range(n_actions):
                u.current_state = np.array([r, c], dtype=np.int32)
                obs, reward, terminated, _, _ = env.step(a)
                nxt[i, a] = index[(int(obs[0]), int(obs[1]))]
                rew[i, a] = np.asarray(reward, dtype=np.float64)
                term[i, a] = bool(terminated)
        env.reset(seed=0)
        start = index[(int(u.current_state[0]), int(u.current_state[1]))]
    finally:
        env.close()
    treasure = np.array([sea[r, c] if sea[r, c] > 0 else 0.0 for r, c in cells])
    return TabularDST(nxt, rew, term, start, np.asarray(cells, dtype=np.int64), treasure)


def transition_matrix(model: TabularDST, policy: NDArray[np.float64]) -> NDArray[np.float64]:
    """P_π (S, S): the probability of moving from s to s' under π without the episode ending."""
    s_count, a_count = policy.shape
    cont = (~model.terminal).astype(np.float64)  # (S, A)
    p_pi = np.zeros((s_count, s_count))
    np.add.at(p_pi, (np.repeat(np.arange(s_count), a_count), model.next_state.reshape(-1)),
              (policy * cont).reshape(-1))
    return p_pi


def evaluate_q(model: TabularDST, policy: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """Exact Q_k^π (K, S, A): V_k = (I − γ P_π)^{-1} r_π, Q_k = r_k + γ (1 − terminal) V_k(s')."""
    s_count = policy.shape[0]
    cont = (~model.terminal).astype(np.float64)  # (S, A)
    p_pi = transition_matrix(model, policy)
    r_pi = np.einsum("sa,sak->ks", policy, model.reward)  # (K, S)
    v = np.linalg.solve(np.eye(s_count) - gamma * p_pi, r_pi.T).T  # (K, S)
    return model.reward.transpose(2, 0, 1) + gamma * cont[None] * v[:, model.next_state]  # (K, S, A)


def _kl_rows(q: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * (np.log(q) - np.log(np.maximum(p, 1e-300))), 0.0)
    return terms.sum(axis=-1)


def e_step(q_values: NDArray[np.float64], policy: NDArray[np.float64], epsilon: float,
           states: NDArray[np.bool_] | NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """q(a|s) ∝ π(a|s) exp(Q(s,a)/η) with η solving E_{s∼μ} KL(q‖π) = ε (bisection on log η; the
    KL falls monotonically in η).  ``states``: a mask (S,) (μ uniform on it) or weights μ (S,) ≥ 0.
    Returns (q (S, A), η)."""
    log_pi = np.log(np.maximum(policy, 1e-300))

    def improved(eta: float) -> NDArray[np.float64]:
        z = log_pi + q_values / eta
        z -= z.max(axis=1, keepdims=True)
        w = np.exp(z)
        return w / w.sum(axis=1, keepdims=True)

    mu = np.asarray(states, dtype=np.float64)
    mu = mu / mu.sum() if mu.sum() > 0 else mu
    support = mu > 0

    def kl(eta: float) -> float:
        return float(_kl_rows(improved(eta), policy) @ mu)

    spread = float(np.ptp(q_values[support], axis=1).max()) if support.any() else 0.0
    if spread == 0.0 or epsilon <= 0:
        return policy.copy(), math.inf
    lo, hi = math.log(spread * 1e-9), math.log(spread * 1e3)
    if kl(math.exp(lo)) <= epsilon:  # ε above the greedy KL: as greedy as it gets
        eta = math.exp(lo)
        return improved(eta), eta
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if kl(math.exp(mid)) > epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    eta = math.exp(0.5 * (lo + hi))
    return improved(eta), eta


def greedy_path(model: TabularDST, policy: NDArray[np.float64]) -> tuple[list[int], NDArray[np.float64]]:
    """The argmax policy's path from the start (≤ 100 steps) and its undiscounted return (K,)."""
    s, path, ret = model.start, [model.start], np.zeros(model.reward.shape[2])
    for _ in range(TIME_LIMIT):
        a = int(np.argmax(policy[s]))
        ret += model.reward[s, a]
        if model.terminal[s, a]:
            path.append(int(model.next_state[s, a]))
            break
        s = int(model.next_state[s, a])
        path.append(s)
    return path, ret


def stochastic_return(model: TabularDST, policy: NDArray[np.float64]) -> NDArray[np.float64]:
    """The stochastic policy's expected undiscounted return (K,) within the 100-step limit."""
    dist = np.zeros(model.num_states)
    dist[model.start] = 1.0
    total = np.zeros(model.reward.shape[2])
    cont = ~model.terminal
    for _ in range(TIME_LIMIT):
        flow = dist[:, None] * policy  # (S, A) probability of taking a in s now
        total += np.einsum("sa,sak->k", flow, model.reward)
        dist = np.bincount(model.next_state[cont], weights=flow[cont], minlength=model.num_states)
    return total


#: State distributions μ the E-step's KL is averaged over (:func:`state_weights`).
STATE_DISTRIBUTIONS = ("uniform", "visitation", "exploring")
#: What each state distribution stands for (written into results.json).
STATE_DISTRIBUTION_MEANING = {
    "uniform": "uniform on non-terminal cells",
    "visitation": "the current policy's discounted visitation from the start",
    "exploring": "the current policy's discounted visitation from a start drawn uniformly on open-water cells "
                 "(exploring starts)",
}


def check_horizon(distribution: str, horizon: int | None) -> None:
    """A horizon H (exploring-start episodes cut after H steps) applies only to ``exploring``, H >= 1."""
    if horizon is not None and (distribution != "exploring" or horizon < 1):
        raise ValueError(f"a horizon (got {horizon}) needs the exploring state distribution and H >= 1")


def distribution_meaning(distribution: str, horizon: int | None = None) -> str:
    """What μ stands for, as written into results (:data:`STATE_DISTRIBUTION_MEANING` plus the horizon)."""
    return STATE_DISTRIBUTION_MEANING[distribution] + (
        f", episodes cut after {horizon} steps" if horizon is not None else "")


def visitation(model: TabularDST, policy: NDArray[np.float64], gamma: float,
               start: NDArray[np.float64] | None = None, horizon: int | None = None) -> NDArray[np.float64]:
    """The policy's normalised discounted state visitation (S,):
    d ∝ (I − γ P_π^T)^{-1} ρ_0 over non-terminal transitions, ρ_0 the start distribution (S,)
    (default: the corner) — the states a replay filled by this policy's own episodes holds.
    ``horizon`` H: episodes cut after H steps, d ∝ Σ_{t<H} γ^t (P_π^T)^t ρ_0."""
    s_count = policy.shape[0]
    if start is None:
        start = np.zeros(s_count)
        start[model.start] = 1.0
    rho = np.asarray(start, np.float64)
    if horizon is None:
        d = np.linalg.solve(np.eye(s_count) - gamma * transition_matrix(model, policy).T, rho)
    else:
        p_t = transition_matrix(model, policy).T
        d, now = rho.copy(), rho
        for _ in range(horizon - 1):
            now = gamma * (p_t @ now)
            d += now
    return d / d.sum()


def state_weights(model: TabularDST, policy: NDArray[np.float64], gamma: float,
                  distribution: str, horizon: int | None = None) -> NDArray[np.float64]:
    """μ (S,) for the E-step: ``uniform`` on non-terminal cells (a replay that has seen the whole
    map evenly), ``visitation`` (the current policy's discounted visitation from the start: a
    replay filled by the policy's own episodes from the corner) or ``exploring`` (its visitation
    from a start drawn uniformly on non-terminal cells: a replay filled with exploring starts,
    ``deep-sea-treasure --exploring-starts 1``; with ``horizon`` H, of exploring-start episodes
    cut after H steps, ``--exploring-horizon H``: H = 1 is the uniform distribution on open water)."""
    check_horizon(distribution, horizon)
    nonterminal = ~model.terminal.all(axis=1)
    if distribution == "uniform":
        return nonterminal.astype(np.float64)
    if distribution == "visitation":
        return visitation(model, policy, gamma) * nonterminal
    if distribution == "exploring":  # starts as ExploringStarts draws them: open water, no treasure
        open_water = (model.treasure_at == 0).astype(np.float64)
        return visitation(model, policy, gamma, open_water / open_water.sum(), horizon) * nonterminal
    raise ValueError(f"unknown state distribution {distribution!r}; choose one of {STATE_DISTRIBUTIONS}")


@dataclass
class ExactRun:
    epsilons: tuple[float, float]
    policy: NDArray[np.float64]
    temperatures: tuple[float, float]
    iterations: int
    converged: bool
    greedy_return: NDArray[np.float64]
    stochastic_return: NDArray[np.float64]
    entropy: float  # mean policy entropy over non-terminal cells (nats)
    last_change: float  # max |Δπ| of the last iteration


def solve(model: TabularDST, epsilons: tuple[float, float], gamma: float = 0.99, patience: int = 300,
          max_iterations: int = 3000, distribution: str = "uniform", horizon: int | None = None,
          initial_policy: NDArray[np.float64] | None = None) -> ExactRun:
    """Exact MO-MPO policy iteration from the uniform policy, or from ``initial_policy`` (S, A)
    (e.g. a learned run's final policy: where would the exact algorithm take it?) (see the module
    docstring); ``distribution`` (and ``horizon``) is the E-step's state distribution μ
    (:func:`state_weights`)."""
    s_count, a_count = model.next_state.shape
    if initial_policy is None:
        policy = np.full((s_count, a_count), 1.0 / a_count)
    else:
        policy = np.asarray(initial_policy, np.float64)
        if policy.shape != (s_count, a_count) or not np.all(policy >= 0):
            raise ValueError(f"initial policy must be non-negative of shape {(s_count, a_count)}, got {policy.shape}")
        policy = policy / policy.sum(axis=1, keepdims=True)
    # cells from which a move exists that is not an immediate treasure ending count as states of μ
    states = ~model.terminal.all(axis=1)
    last_path: list[int] | None = None
    same = 0
    temps = (math.nan, math.nan)
    converged = False
    it = 0
    for it in range(1, max_iterations + 1):
        q = evaluate_q(model, policy, gamma)
        improved, etas = [], []
        mu = state_weights(model, policy, gamma, distribution, horizon)
        for k, eps in enumerate(epsilons):
            qk, eta = e_step(q[k], policy, float(eps), mu)
            improved.append(qk)
            etas.append(eta)
        new = np.mean(improved, axis=0)
        change = float(np.abs(new - policy).max())
        policy, temps = new, (etas[0], etas[1])
        path, _ = greedy_path(model, policy)
        same = same + 1 if path == last_path else 0
        last_path = path
        if same >= patience:
            converged = True
            break
    _, g_ret = greedy_path(model, policy)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(policy > 0, policy * np.log(policy), 0.0).sum(axis=1)
    return ExactRun(tuple(epsilons), policy, temps, it, converged, g_ret, stochastic_return(model, policy),
                    float(ent[states].mean()), change)


def _sweep_job(args: tuple[float, float, float, str, int | None]) -> dict[str, Any]:
    eps_time, c, gamma, distribution, horizon = args
    model = _model()
    run = solve(model, (c * eps_time, eps_time), gamma=gamma, distribution=distribution, horizon=horizon)
    return {"eps_time": eps_time, "c": round(float(c), 6), "eps_treasure": c * eps_time,
            "greedy_return": run.greedy_return.tolist(), "treasure": float(run.greedy_return[0]),
            "stochastic_return": run.stochastic_return.tolist(), "iterations": run.iterations,
            "converged": run.converged, "last_change": run.last_change, "temperatures": list(run.temperatures),
            "entropy": run.entropy}


_MODEL: TabularDST | None = None


def _model() -> TabularDST:
    global _MODEL
    if _MODEL is None:
        _MODEL = build_model()
    return _MODEL


def run_sweep_exact(out_dir: str | Path, eps_time: tuple[float, ...] = (0.01, 0.02, 0.05), c_values: int = 101,
                    gamma: float = 0.99, processes: int = 2, progress: bool = True,
                    distribution: str = "uniform", horizon: int | None = None) -> dict[str, Any]:
    """Exact MO-MPO over ε_time × c (c evenly in [0.5, 1.5]); writes ``results.json`` and
    ``c_to_treasure.png`` (the paper's Fig. 5 right, exact).  ``distribution`` (and ``horizon``
    for ``exploring``): the E-step's state distribution (:func:`state_weights`)."""
    import multiprocessing as mp

    from tqdm import tqdm

    from morl_robot.experiments.deep_sea_treasure import (
        c_grid,
        pareto_points_found,
        plot_c_to_treasure,
        true_pareto_front,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if distribution not in STATE_DISTRIBUTIONS:
        raise ValueError(f"unknown state distribution {distribution!r}; choose one of {STATE_DISTRIBUTIONS}")
    check_horizon(distribution, horizon)
    jobs = [(float(e), float(c), gamma, distribution, horizon) for e in eps_time for c in c_grid(c_values)]
    start = time.monotonic()
    if processes <= 1:  # here: a spawned worker's start-up (an interpreter and its imports) costs seconds
        rows = [_sweep_job(job) for job in tqdm(jobs, disable=not progress, desc="exact MO-MPO")]
    else:
        with mp.get_context("spawn").Pool(processes) as pool:
            rows = list(tqdm(pool.imap(_sweep_job, jobs), total=len(jobs), disable=not progress, desc="exact MO-MPO"))
    front = true_pareto_front(1.0)
    greedy = np.array([r["greedy_return"] for r in rows])
    stochastic = np.array([r["stochastic_return"] for r in rows])
    found = pareto_points_found(greedy, front)
    results = {
        "method": "exact tabular MO-MPO (exact policy evaluation, per-state E-step with η solving E_μ KL = ε, "
                  "unconstrained M-step)",
        "state_distribution": distribution_meaning(distribution, horizon),
        "exploring_horizon": horizon,
        "gamma": gamma, "eps_time": list(eps_time), "c_values": c_values,
        "wall_time_s": round(time.monotonic() - start, 1),
        "pareto_points_found_greedy": int(found.sum()),
        "treasures_found_greedy": sorted({float(t) for t in front[found, 0]}),
        "pareto_points_found_stochastic": int(pareto_points_found(stochastic, front, atol=0.05).sum()),
        "converged": sum(r["converged"] for r in rows), "runs": rows,
    }
    write_results_json(out / "results.json", results)
    plot_c_to_treasure(rows, eps_time, out / "c_to_treasure.png",
                       f"Deep Sea Treasure: exact tabular MO-MPO, μ {distribution}"
                       + (f" (horizon {horizon})" if horizon is not None else "") + " (MO-MPO paper Fig. 5 right)")
    return results


def diagnose_learned(eps_time: float, c: float, seed: int = 0, steps: int = 30_000, exploring_starts: float = 1.0,
                     exploring_horizon: int | None = None, eval_every: int = 1000, stable_evals: int = 8,
                     quick: bool = False, gamma: float = 0.99, learner: Any = None) -> dict[str, Any]:
    """Train one learned MO-MPO run at (ε_time, c) as ``deep-sea-treasure`` does, then hold its final
    policy against the exact algorithm: the learned critics against exact Q^π of that same policy
    (per objective, mean and max |error| over open water), and where exact MO-MPO goes when started
    from the learned policy (``solve(initial_policy=…)``, with the E-step's μ of the run's replay:
    exploring starts cut after ``exploring_horizon`` steps, or whole exploring episodes) next to
    where it goes from the uniform policy.  If exact-from-learned reaches a treasure the learned
    run did not, the learned run's end point is not a fixed point of MO-MPO but of its learned step.

    Returns a JSON-ready dict with the learned policy's log-probabilities (S, A) and critics (K, S, A)
    on :func:`build_model`'s state order (``cells``).  ``learner``: a
    :class:`~morl_robot.experiments.deep_sea_treasure.LearnerKnobs` (changes to the learner config,
    recorded as ``learner_changes``)."""
    import torch

    if exploring_starts not in (0.0, 1.0):
        raise ValueError(f"exploring_starts must be 0 (corner starts) or 1 (always exploring), got {exploring_starts}: "
                         "the exact reference has no state distribution for a mixture")
    from morl_robot.experiments import deep_sea_treasure as dst
    from morl_robot.learning.networks import action_features

    knobs = learner or dst.LearnerKnobs()
    knobs.validate()
    setting = dst.mo_mpo_setting(eps_time, c, seed)
    eps = tuple(setting.params["epsilons"])
    budget = dst.RunBudget(steps=steps, quick=quick, eval_every=eval_every, stable_evals=stable_evals,
                           exploring_starts=exploring_starts, exploring_horizon=exploring_horizon, learner=knobs)
    result = dst.train_setting(setting, budget)
    model = _model()
    s_count, a_count = model.next_state.shape
    rows, cols = np.asarray(dst.make_env(one_hot=False).unwrapped.sea_map).shape
    obs = np.zeros((s_count, rows * cols), np.float32)  # OneHotCell's encoding of every model state
    obs[np.arange(s_count), model.cells[:, 0] * cols + model.cells[:, 1]] = 1.0
    learner = result.learner
    with torch.no_grad():
        x = torch.as_tensor(obs)
        log_pi = torch.log_softmax(learner.policy(x), dim=-1).double().numpy()  # (S, A)
        q_learned = np.stack([learner.critic(x, action_features(torch.full((s_count,), a), learner.spec)).numpy()
                              for a in range(a_count)], axis=1).transpose(2, 0, 1).astype(np.float64)  # (K, S, A)
    policy = np.exp(log_pi)
    policy /= policy.sum(axis=1, keepdims=True)
    q_exact = evaluate_q(model, policy, gamma)
    water = model.treasure_at == 0
    error = np.abs(q_learned - q_exact)[:, water]  # (K, open cells, A)
    distribution = "exploring" if exploring_starts > 0 else "visitation"
    from_learned = solve(model, eps, gamma=gamma, distribution=distribution, horizon=exploring_horizon,
                         initial_policy=policy)
    from_uniform = solve(model, eps, gamma=gamma, distribution=distribution, horizon=exploring_horizon)
    return {
        "setting": setting.to_dict(), "gamma": gamma, "steps": result.env_steps, "updates": result.updates,
        "exploring_starts": exploring_starts, "exploring_horizon": exploring_horizon,
        "learner_changes": knobs.changed(), "converged_at": result.converged_at,
        "evaluations": [[int(s), [float(v) for v in r]] for s, r in result.evaluations],
        "learned_greedy_return": greedy_path(model, policy)[1].tolist(),
        "critic_error": {"mean_abs": error.mean(axis=(1, 2)).tolist(), "max_abs": error.max(axis=(1, 2)).tolist()},
        "exact_from_learned": {"greedy_return": from_learned.greedy_return.tolist(),
                               "iterations": from_learned.iterations, "converged": from_learned.converged},
        "exact_from_uniform": {"greedy_return": from_uniform.greedy_return.tolist(),
                               "iterations": from_uniform.iterations, "converged": from_uniform.converged},
        "state_distribution": distribution_meaning(distribution, exploring_horizon),
        "cells": model.cells.tolist(),
        "learned_log_policy": np.round(log_pi, 5).tolist(),
        "learned_q": np.round(q_learned, 4).tolist(),
    }
