"""Exact solutions of small product MOMDPs: ground truth for learned fronts.

For a deterministic labelled environment with a tabular model and a MORM, the cross-product MOMDP
(MORM paper Def. 5) has states x = (s, u), deterministic successors x' = (s', δ(u, L(s, a, s')))
and rewards λ(u, L(s, a, s')) (d,).  :func:`tabular_product` builds its tables; two solvers:

* :func:`pareto_front_exact` — Pareto value iteration (White 1982; MORM paper eq. 3) over a finite
  horizon H (the episode length), backwards from V_H(x) = {0}:

      V_t(x) = ND( ∪_a { r(x, a) + γ v : v ∈ V_{t+1}(x'(x, a)) } ),   V_t(x) = {0} for terminal x,

  where ND keeps the non-dominated vectors (:func:`~morl_robot.evaluation.pareto.pareto_mask`).  V_0(x_0) is the exact
  Pareto front of discounted returns of all (non-stationary, deterministic) policies over H steps
  — what an H-step episode can earn.  Sets larger than ``max_points`` are thinned by crowding
  distance (the paper's PVI keeps 50); the result says whether that happened (``exact``).
* :func:`linear_front` — scalarised value iteration for each weight w on a grid (the convex
  coverage set): backward induction on w·Q with the vector value of the greedy choice carried
  along.  Cheaper, and enough when only convex-hull points matter.

Shapes: N product states, A actions, d objectives.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from morl_robot.evaluation.pareto import pareto_mask
from morl_robot.reward_machines.product import ProductMachine

__all__ = ["FrontResult", "TabularProduct", "linear_front", "pareto_front_exact", "tabular_product"]


@dataclass
class TabularProduct:
    """Tables of a deterministic cross-product MOMDP; state 0 is the initial (s0, u0)."""

    next_state: NDArray[np.int64]  # (N, A)
    reward: NDArray[np.float64]  # (N, A, d)
    terminal: NDArray[np.bool_]  # (N,) machine in F: the episode is over
    names: list[str]

    @property
    def num_states(self) -> int:
        return int(self.next_state.shape[0])


def tabular_product(env_states: Sequence, start, num_actions: int, move: Callable, labels: Callable,
                    product: ProductMachine) -> TabularProduct:
    """The reachable cross-product of a deterministic environment and a MORM.

    Args:
        env_states: every environment state (hashable), ``start`` among them.
        move: (s, a) → s'.  labels: (s, a, s') → set of true propositions.
    """
    index = {(start, product.initial): 0}
    order = [(start, product.initial)]
    rows_next: list[list[int]] = []
    rows_rew: list[NDArray[np.float64]] = []
    terminal: list[bool] = []
    i = 0
    while i < len(order):
        s, u = order[i]
        i += 1
        terminal.append(bool(product.terminal[u]))
        nxt = []
        rew = np.zeros((num_actions, product.num_objectives))
        for a in range(num_actions):
            if product.terminal[u]:
                nxt.append(index[(s, u)])
                continue
            s2 = move(s, a)
            u2, r = product.step(u, product.mask(labels(s, a, s2)))
            rew[a] = r
            key = (s2, u2)
            if key not in index:
                index[key] = len(order)
                order.append(key)
            nxt.append(index[key])
        rows_next.append(nxt)
        rows_rew.append(rew)
    del env_states  # the reachable set is built from the start; all states need not be listed
    return TabularProduct(np.asarray(rows_next, np.int64), np.stack(rows_rew), np.asarray(terminal),
                          [f"{s} {product.state_name(u)}" for s, u in order])


@dataclass
class FrontResult:
    front: NDArray[np.float64]  # (P, d) non-dominated discounted returns from the initial state
    exact: bool  # False if any set was thinned to max_points
    horizon: int
    gamma: float


def _thin(points: NDArray[np.float64], max_points: int) -> NDArray[np.float64]:
    """Keep ``max_points`` by repeatedly dropping the point of least crowding distance."""
    pts = points
    while len(pts) > max_points:
        n, d = pts.shape
        crowd = np.zeros(n)
        for j in range(d):
            order = np.argsort(pts[:, j])
            span = pts[order[-1], j] - pts[order[0], j] or 1.0
            crowd[order[0]] = crowd[order[-1]] = np.inf
            crowd[order[1:-1]] += (pts[order[2:], j] - pts[order[:-2], j]) / span
        pts = np.delete(pts, int(np.argmin(crowd)), axis=0)
    return pts


def pareto_front_exact(model: TabularProduct, gamma: float, horizon: int, max_points: int = 500) -> FrontResult:
    """Finite-horizon Pareto value iteration (see the module docstring)."""
    N, A = model.next_state.shape
    d = model.reward.shape[2]
    zero = np.zeros((1, d))
    values: list[NDArray[np.float64]] = [zero] * N
    exact = True
    for _ in range(horizon):
        new: list[NDArray[np.float64]] = []
        for x in range(N):
            if model.terminal[x]:
                new.append(zero)
                continue
            cands = np.concatenate([model.reward[x, a] + gamma * values[model.next_state[x, a]] for a in range(A)])
            cands = np.round(cands, 12)
            nd = cands[pareto_mask(cands)]
            if len(nd) > max_points:
                nd, exact = _thin(nd, max_points), False
            new.append(nd)
        values = new
    front = values[0]
    return FrontResult(front[np.lexsort(front.T[::-1])], exact, horizon, gamma)


def linear_front(model: TabularProduct, gamma: float, horizon: int, weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Vector returns (W, d) of the optimal policy for each weight row of ``weights`` (W, d)."""
    N, _A = model.next_state.shape
    out = []
    for w in np.asarray(weights, np.float64):
        v = np.zeros((N, model.reward.shape[2]))
        for _ in range(horizon):
            q = model.reward + gamma * v[model.next_state]  # (N, A, d)
            # a 1e-9 share of the unweighted sum breaks ties towards non-dominated points (w with zeros)
            best = np.argmax(np.round(q @ w + 1e-9 * q.sum(-1), 12), axis=1)
            v = np.where(model.terminal[:, None], 0.0, q[np.arange(N), best])
        out.append(v[0])
    return np.asarray(out)
