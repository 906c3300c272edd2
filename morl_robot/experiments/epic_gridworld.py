"""The EPIC paper's 3 × 3 gridworld (Gleave et al. 2021, Figures 1, A.1 and A.2), computed exactly.

Nine cells, row-major from the top-left; five actions (stay, up, down, left, right); deterministic
moves, a move into the wall stays put.  Every reward is a state reward r(s) (the value the
figures draw in a cell, the reward for being in that cell) plus potential shaping
γΦ(s') − Φ(s).  Read from the figures (goal bottom-right unless named):

* Sparse:  1 at the goal, 0 elsewhere.
* Dense:   a shifted, rescaled and shaped Sparse: r = 4·Sparse − 1, Φ = −3 · (Manhattan distance
  to the goal); equivalent to Sparse, so D_EPIC = 0.
* Penalty: −Sparse (D_EPIC(Sparse, Penalty) = 1).
* Center:  1 in the centre cell.
* Path:    −1 on the two right cells of the top row and the two left cells of the bottom row, 4 at
  the goal: the middle row is the free path.
* Cliff:   as Path but the bottom-row cells are a −4 cliff.

γ = 0.99, D_S and D_A uniform, and the coverage D uniform over (s, a) with s' the deterministic
successor (the paper's §4 example).  The paper states D_EPIC(Sparse, Dense) = 0 and
D_EPIC(Path, Cliff) = 0.27, and Penalty's distances in [0.66, 1.0].

For Path and Cliff the experiment also evaluates Theorem 4.9 on this MDP: optimal policies by
value iteration, their true regret under each other's reward, and the bound
16 K ‖R_A‖₂ (1 − γ)⁻¹ D_EPIC with K from the policies' state-action-state distributions.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from morl_robot.evaluation.epic import (
    coverage_ratio,
    epic_matrix_tabular,
    markdown_table,
    regret_bound,
    reward_l2,
)
from morl_robot.evaluation.plots import plot_distance_heatmap
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.records import write_bytes_atomic

GAMMA = 0.99
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))  # stay, up, down, left, right
ACTION_NAMES = ("stay", "up", "down", "left", "right")

_SPARSE = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1]], dtype=float)
_MANHATTAN_TO_GOAL = np.array([[4, 3, 2], [3, 2, 1], [2, 1, 0]], dtype=float)
_ZERO = np.zeros((3, 3))

#: name -> (state reward r(s) [3, 3], potential Φ [3, 3])
REWARDS: dict[str, tuple[np.ndarray, np.ndarray]] = {
    "Sparse": (_SPARSE, _ZERO),
    "Dense": (4.0 * _SPARSE - 1.0, -3.0 * _MANHATTAN_TO_GOAL),
    "Penalty": (-_SPARSE, _ZERO),
    "Center": (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=float), _ZERO),
    "Path": (np.array([[0, -1, -1], [0, 0, 0], [-1, -1, 4]], dtype=float), _ZERO),
    "Cliff": (np.array([[0, -1, -1], [0, 0, 0], [-4, -4, 4]], dtype=float), _ZERO),
}


def dynamics() -> np.ndarray:
    """T(s' | s, a) [9, 5, 9] of the deterministic 3 × 3 gridworld."""
    t = np.zeros((9, 5, 9))
    for s in range(9):
        r, c = divmod(s, 3)
        for a, (dr, dc) in enumerate(MOVES):
            rr, cc = r + dr, c + dc
            if not (0 <= rr < 3 and 0 <= cc < 3):
                rr, cc = r, c
            t[s, a, rr * 3 + cc] = 1.0
    return t


def tabular_reward(state_reward: np.ndarray, potential: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """R(s, a, s') = r(s) + γΦ(s') − Φ(s) as [9, 5, 9]."""
    r, p = state_reward.ravel(), potential.ravel()
    return np.broadcast_to(r[:, None, None], (9, 5, 9)) + gamma * p[None, None, :] - p[:, None, None]


def optimal_policy(reward: np.ndarray, t: np.ndarray, gamma: float, tol: float = 1e-10) -> np.ndarray:
    """A deterministic optimal policy π(a|s) [S, A] by value iteration (ties to the lowest action)."""
    r_sa = np.einsum("sax,sax->sa", t, reward)
    v = np.zeros(t.shape[0])
    while True:
        q = r_sa + gamma * t @ v
        v_new = q.max(axis=1)
        if np.abs(v_new - v).max() < tol:
            break
        v = v_new
    pi = np.zeros_like(q)
    pi[np.arange(q.shape[0]), q.argmax(axis=1)] = 1.0
    return pi


def policy_return(pi: np.ndarray, reward: np.ndarray, t: np.ndarray, initial: np.ndarray, gamma: float) -> float:
    """G_R(π) = d_0ᵀ (I − γ P_π)⁻¹ r_π, exactly."""
    p_pi = np.einsum("sa,sax->sx", pi, t)
    r_pi = np.einsum("sa,sax,sax->s", pi, t, reward)
    v = np.linalg.solve(np.eye(t.shape[0]) - gamma * p_pi, r_pi)
    return float(initial @ v)


def run(out: Path) -> dict:
    t = dynamics()
    coverage = t / t.sum()  # uniform over (s, a), s' deterministic
    names = list(REWARDS)
    stacked = np.stack([tabular_reward(*REWARDS[n]) for n in names], axis=-1)
    d = epic_matrix_tabular(stacked, GAMMA, coverage)
    table = {a: {b: float(d[i, j]) for j, b in enumerate(names)} for i, a in enumerate(names)}

    # Theorem 4.9 on Path vs Cliff (start: top-left cell)
    initial = np.zeros(9)
    initial[0] = 1.0
    r_a, r_b = tabular_reward(*REWARDS["Path"]), tabular_reward(*REWARDS["Cliff"])
    pi_a, pi_b = optimal_policy(r_a, t, GAMMA), optimal_policy(r_b, t, GAMMA)
    k = coverage_ratio(t, initial, [pi_a, pi_b], coverage)
    dist = table["Path"]["Cliff"]
    regret = {
        "pair": ["Path", "Cliff"],
        "regret_path": policy_return(pi_a, r_a, t, initial, GAMMA) - policy_return(pi_b, r_a, t, initial, GAMMA),
        "bound_path": regret_bound(dist, reward_l2(r_a, coverage), GAMMA, k),
        "coverage_ratio_K": k,
    }
    result = {"epic": table, "gamma": GAMMA, "names": names, "regret_bound": regret,
              "paper": {"Sparse-Dense": 0.0, "Path-Cliff": 0.27}}
    out.mkdir(parents=True, exist_ok=True)
    write_results_json(out / "results.json", result)
    plot_distance_heatmap(names, d, out / "epic_gridworld.png", "EPIC, 3×3 gridworld (exact; paper Fig. A.2)")
    write_bytes_atomic(out / "results.md", markdown_table(names, d).encode())
    return result

