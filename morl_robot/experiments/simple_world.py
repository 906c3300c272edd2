"""Simple World: the 3-armed, 2-objective bandit of MO-MPO §5.1 (Abdolmaleki et al., 2020).

One state, three actions that end the episode.  Objective values (NOTES.md §1; the text gives
left = [1, 4], Fig. 2 the others): left = [1, 4], up = [3, 3], right = [4, 1].  Right is best for
objective 1, left for objective 2, up is the compromise.

The policy evaluation step is exact (Q_k(a) is the reward), and so is the policy improvement
step (paper footnote 5: both steps are convex problems when there is one state):

* E-step, per objective k (paper eq. 3-4): q_k(a) ∝ π_old(a) exp(Q_k(a)/η_k) with η_k the exact
  minimiser of the temperature dual, i.e. KL(q_k‖π_old) = ε_k — computed with the learner's
  :func:`morl_robot.learning.mpo.solve_temperature` and :func:`~morl_robot.learning.mpo.e_step_weights`
  on the enumerated actions (``log_prior = log π_old``).  Scalarized MPO does the same on
  Σ_k w_k Q_k (:func:`~morl_robot.learning.mpo.scalarize_q`) with a single ε.
* M-step (paper eq. 5): max_π Σ_k Σ_a q_k(a) log π(a) s.t. KL(π_old‖π) ≤ β.  For one state and a
  categorical π the KKT conditions give a closed form: with W(a) = Σ_k q_k(a) (total mass K) and
  multiplier α ≥ 0,  π_α(a) = (W(a) + α π_old(a)) / (K + α);  α = 0 if KL(π_old‖W/K) ≤ β,
  otherwise α solves KL(π_old‖π_α) = β (monotone in α, bisection on log α).  This is the
  stationary point of the learner's :func:`~morl_robot.learning.mpo.categorical_m_step`
  Lagrangian (checked in the tests), solved exactly instead of by gradient steps.

Settings (paper §5.1): ε = [0.01, 0.01] / [0.01, 0.002] / [0.002, 0.01] for equal / prefer-first /
prefer-second; weights [0.5, 0.5] / [0.9, 0.1] / [0.1, 0.9] with ε = 0.01 for scalarized MPO;
β = 0.001; uniform start; iterate until the policy stops changing.  "Imbalanced" multiplies
objective 1 by 20.  Paper's finding (Fig. 3): MO-MPO's converged policies are the same for both
reward scales; scalarized MPO's shift to the arm best for objective 1 (right) for equal preference
and for prefer-second.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from numpy.typing import NDArray

from morl_robot.learning.mpo import (
    categorical_kl_numpy,
    e_step_weights,
    kl_to_prior,
    scalarize_q,
    solve_categorical_m_step,
    solve_temperature,
)

__all__ = [
    "ACTIONS",
    "BETA",
    "MO_MPO_EPSILONS",
    "Q_VALUES",
    "REWARD_SCALES",
    "SCALARIZED_EPSILON",
    "SCALARIZED_WEIGHTS",
    "Algorithm",
    "SimpleWorldRun",
    "exact_e_step",
    "format_table",
    "improvement_step",
    "run_simple_world",
    "run_to_convergence",
    "shifted_to_first_objective",
    "write_report",
]

Algorithm = Literal["mo-mpo", "scalarized-mpo"]

#: Action names, in the order of the rows of :data:`Q_VALUES`.
ACTIONS: tuple[str, ...] = ("left", "up", "right")
#: Exact Q-values (A=3, K=2): the reward of each arm per objective (paper Fig. 2, NOTES.md §1).
Q_VALUES: NDArray[np.float64] = np.array([[1.0, 4.0], [3.0, 3.0], [4.0, 1.0]])
#: MO-MPO preferences: per-objective KL bounds ε_k (paper §5.1).
MO_MPO_EPSILONS: dict[str, tuple[float, float]] = {
    "equal": (0.01, 0.01),
    "prefer_first": (0.01, 0.002),
    "prefer_second": (0.002, 0.01),
}
#: Scalarized MPO preferences: linear weights w_k (paper §5.1) ...
SCALARIZED_WEIGHTS: dict[str, tuple[float, float]] = {
    "equal": (0.5, 0.5),
    "prefer_first": (0.9, 0.1),
    "prefer_second": (0.1, 0.9),
}
#: ... with one KL bound ε.
SCALARIZED_EPSILON = 0.01
#: M-step trust region KL(π_old‖π) ≤ β.
BETA = 0.001
#: Per-objective reward multipliers: "imbalanced" multiplies objective 1 by 20 (paper §5.1).
REWARD_SCALES: dict[str, tuple[float, float]] = {"balanced": (1.0, 1.0), "imbalanced": (20.0, 1.0)}


def exact_e_step(
    policy: NDArray[np.float64], q_values: NDArray[np.float64], epsilons: Sequence[float]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Exact per-objective E-step on the enumerated actions (paper eq. 3-4).

    Args:
        policy: (A,) π_old.
        q_values: (A, K') Q-values, one column per critic (K' = 1 for scalarized MPO).
        epsilons: (K',) KL bounds.

    Returns:
        (weights (K', A), temperatures (K',), kl (K',)) with KL(q_k‖π_old) ≈ ε_k unless ε_k is
        above the greedy KL (then q_k is the greedy distribution and the KL is smaller).
    """
    log_prior = torch.as_tensor(np.log(policy), dtype=torch.float64).reshape(-1, 1)  # [N=A, B=1]
    weights, temps, kls = [], [], []
    for k, eps in enumerate(epsilons):
        q_k = torch.as_tensor(q_values[:, k], dtype=torch.float64).reshape(-1, 1)  # [A, 1]
        eta = solve_temperature(q_k, float(eps), log_prior)
        w = e_step_weights(q_k, eta, log_prior)  # [A, 1]
        weights.append(w[:, 0].numpy())
        temps.append(eta)
        kls.append(float(kl_to_prior(w, log_prior)))
    return np.stack(weights), np.asarray(temps), np.asarray(kls)


def improvement_step(
    policy: NDArray[np.float64],
    q_values: NDArray[np.float64],
    algorithm: Algorithm,
    preference: Sequence[float],
    beta: float = BETA,
    scalarized_epsilon: float = SCALARIZED_EPSILON,
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """One exact policy-improvement step (Algorithm 1) of MO-MPO or scalarized MPO.

    Args:
        policy: (A,) π_old.  q_values: (A, K) exact Q_k(a).
        preference: ε_k (K,) for MO-MPO, weights w_k (K,) for scalarized MPO.

    Returns:
        (π_new (A,), diagnostics): ``temperature`` (K' values), ``kl_q`` (E-step KLs), ``alpha``
        (M-step multiplier), ``kl_policy`` (KL(π_old‖π_new)).
    """
    if algorithm == "mo-mpo":
        critic_q, epsilons = q_values, list(preference)
    elif algorithm == "scalarized-mpo":
        q_t = torch.as_tensor(q_values.T, dtype=torch.float64).unsqueeze(-1)  # [K, N=A, B=1]
        w_t = torch.as_tensor(preference, dtype=torch.float64)
        critic_q = scalarize_q(q_t, w_t)[0, :, 0].numpy().reshape(-1, 1)  # (A, 1)
        epsilons = [scalarized_epsilon]
    else:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected 'mo-mpo' or 'scalarized-mpo'")
    weights, temperatures, kl_q = exact_e_step(policy, critic_q, epsilons)
    new_policy, alpha = solve_categorical_m_step(weights, policy, beta)
    diagnostics = {
        "temperature": temperatures.tolist(),
        "kl_q": kl_q.tolist(),
        "alpha": alpha,
        "kl_policy": categorical_kl_numpy(policy, new_policy),
    }
    return new_policy, diagnostics


@dataclass
class SimpleWorldRun:
    """The outcome of iterating :func:`improvement_step` from the uniform policy.

    ``trajectory`` (T+1, A) holds the policy after each step (row 0: the start).
    """

    algorithm: Algorithm
    preference: tuple[float, ...]
    reward_scale: tuple[float, ...]
    policy: NDArray[np.float64]
    steps: int
    converged: bool
    trajectory: NDArray[np.float64]
    final_diagnostics: dict[str, Any] = field(default_factory=dict)

    def probabilities(self) -> dict[str, float]:
        return {name: float(p) for name, p in zip(ACTIONS, self.policy)}


def run_to_convergence(
    algorithm: Algorithm,
    preference: Sequence[float],
    reward_scale: Sequence[float] = (1.0, 1.0),
    beta: float = BETA,
    tol: float = 1e-8,
    max_steps: int = 20_000,
    record_every: int = 1,
) -> SimpleWorldRun:
    """Iterate exact policy improvement from the uniform policy until max_a |Δπ(a)| < ``tol``.

    ``reward_scale`` (K,) multiplies the Q-values per objective (imbalanced: (20, 1)).
    """
    q_values = Q_VALUES * np.asarray(reward_scale, dtype=np.float64)  # (A, K)
    policy = np.full(len(ACTIONS), 1.0 / len(ACTIONS))
    trajectory = [policy]
    converged = False
    diagnostics: dict[str, Any] = {}
    step = 0
    for step in range(1, max_steps + 1):
        new_policy, diagnostics = improvement_step(policy, q_values, algorithm, preference, beta)
        if not np.all(np.isfinite(new_policy)):
            raise FloatingPointError(f"non-finite policy at step {step}: {new_policy}")
        delta = float(np.max(np.abs(new_policy - policy)))
        policy = new_policy
        if step % record_every == 0:
            trajectory.append(policy)
        if delta < tol:
            converged = True
            break
    return SimpleWorldRun(
        algorithm=algorithm,
        preference=tuple(float(x) for x in preference),
        reward_scale=tuple(float(x) for x in reward_scale),
        policy=policy,
        steps=step,
        converged=converged,
        trajectory=np.stack(trajectory),
        final_diagnostics=diagnostics,
    )


def run_simple_world(
    beta: float = BETA, tol: float = 1e-8, max_steps: int = 20_000
) -> dict[str, Any]:
    """All 2 algorithms × 2 reward scales × 3 preferences.

    Returns a JSON-ready dict: ``policies[algorithm][scale][preference] = {action: p}`` plus
    ``runs`` (steps, converged, final temperatures, preference values) and ``wall_time_s``.
    """
    start = time.perf_counter()
    table: dict[str, Mapping[str, Any]] = {
        "mo-mpo": MO_MPO_EPSILONS,
        "scalarized-mpo": SCALARIZED_WEIGHTS,
    }
    policies: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    runs: list[dict[str, Any]] = []
    trajectories: dict[str, NDArray[np.float64]] = {}
    for algorithm, prefs in table.items():
        policies[algorithm] = {}
        for scale_name, scale in REWARD_SCALES.items():
            policies[algorithm][scale_name] = {}
            for pref_name, pref in prefs.items():
                run = run_to_convergence(algorithm, pref, scale, beta=beta, tol=tol, max_steps=max_steps)  # type: ignore[arg-type]
                policies[algorithm][scale_name][pref_name] = run.probabilities()
                trajectories[f"{algorithm}/{scale_name}/{pref_name}"] = run.trajectory
                runs.append(
                    {
                        "algorithm": algorithm,
                        "reward_scale": scale_name,
                        "preference": pref_name,
                        "epsilons" if algorithm == "mo-mpo" else "weights": list(pref),
                        "steps": run.steps,
                        "converged": run.converged,
                        "temperature": run.final_diagnostics.get("temperature"),
                        "policy": run.probabilities(),
                    }
                )
    return {
        "policies": policies,
        "runs": runs,
        "settings": {
            "q_values": {a: Q_VALUES[i].tolist() for i, a in enumerate(ACTIONS)},
            "beta": beta,
            "scalarized_epsilon": SCALARIZED_EPSILON,
            "tol": tol,
            "max_steps": max_steps,
            "reward_scales": {k: list(v) for k, v in REWARD_SCALES.items()},
        },
        "wall_time_s": time.perf_counter() - start,
        "_trajectories": trajectories,
    }


# ------------------------------------------------------------------------------------------------
# Report: results.json (policies), runs.json (diagnostics), plots, a printed table.
# ------------------------------------------------------------------------------------------------


def shifted_to_first_objective(results: Mapping[str, Any], algorithm: Algorithm, preference: str) -> float:
    """How much probability the ×20 scaling of objective 1 moved onto ``right`` (its best arm):
    p_imbalanced(right) − p_balanced(right)."""
    table = results[algorithm]
    return float(table["imbalanced"][preference]["right"] - table["balanced"][preference]["right"])


def format_table(policies: Mapping[str, Any]) -> str:
    """A fixed-width table of converged action probabilities."""
    lines = [f"{'algorithm':<16}{'rewards':<12}{'preference':<15}" + "".join(f"{a:>8}" for a in ACTIONS)]
    lines.append("-" * len(lines[0]))
    for algorithm, scales in policies.items():
        for scale, prefs in scales.items():
            for pref, probs in prefs.items():
                lines.append(
                    f"{algorithm:<16}{scale:<12}{pref:<15}" + "".join(f"{probs[a]:>8.3f}" for a in ACTIONS)
                )
    return "\n".join(lines)


def write_report(out_dir: str, beta: float = BETA, tol: float = 1e-8, max_steps: int = 20_000) -> dict[str, Any]:
    """Run :func:`run_simple_world` and write ``results.json``, ``runs.json``,
    ``action_probabilities.png`` (MO-MPO Fig. 3) and ``policy_trajectories.png`` (Fig. 4).

    Returns the full result dict (``policies`` is what ``results.json`` holds).
    """
    from pathlib import Path

    from morl_robot.evaluation.plots import plot_action_probabilities
    from morl_robot.evaluation.provenance import write_results_json
    from morl_robot.records import write_json_atomic

    out = Path(out_dir)
    result = run_simple_world(beta=beta, tol=tol, max_steps=max_steps)
    trajectories = result.pop("_trajectories")
    write_json_atomic(out / "results.json", result["policies"])  # keyed by algorithm only: provenance in runs.json
    write_results_json(out / "runs.json", {k: v for k, v in result.items() if k != "policies"})
    panels = {
        f"{algorithm}, {scale} rewards": prefs
        for algorithm, scales in result["policies"].items()
        for scale, prefs in scales.items()
    }
    plot_action_probabilities({}, out / "action_probabilities.png", ax_groups=panels,
                              title="Simple World: converged policies (MO-MPO §5.1, Fig. 3)")
    _plot_trajectories(trajectories, out / "policy_trajectories.png")
    return result


def _plot_trajectories(trajectories: Mapping[str, NDArray[np.float64]], path: Any) -> None:
    """p(left) vs p(right) along each run (MO-MPO Fig. 4), one panel per algorithm × scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, dict[str, NDArray[np.float64]]] = {}
    for key, traj in trajectories.items():
        algorithm, scale, pref = key.split("/")
        groups.setdefault(f"{algorithm}, {scale}", {})[pref] = traj
    fig, axes = plt.subplots(2, 2, figsize=(9, 8), squeeze=False)
    for ax, (title, runs) in zip(axes.flat, groups.items()):
        ax.plot([0, 1, 0, 0], [0, 0, 1, 0], color="0.7", linewidth=0.8)  # the simplex
        for pref, traj in runs.items():
            ax.plot(traj[:, 0], traj[:, 2], marker=".", markersize=2, linewidth=1.0, label=pref)
        ax.scatter([1 / 3], [1 / 3], color="tab:blue", zorder=3)
        ax.set_xlabel("p(left)")
        ax.set_ylabel("p(right)")
        ax.set_title(title)
        ax.set_aspect("equal")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
