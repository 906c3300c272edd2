"""EPIC: the Equivalent-Policy Invariant Comparison distance between reward functions
(Gleave et al., ICLR 2021, "Quantifying differences in reward functions"), for scalar and vector
rewards.

* Canonical shaping (Definition 4.1), with S, S' ~ D_S and A ~ D_A independent:

      C(R)(s, a, s') = R(s, a, s') + E[γ R(s', A, S') − R(s, A, S') − γ R(S, A, S')]

  removes potential shaping: C(R + γΦ(s') − Φ(s)) = C(R).
* Pearson distance (Definition 4.4): D_ρ(X, Y) = √((1 − ρ(X, Y)) / 2) ∈ [0, 1]; invariant to
  positive affine maps of either argument, 0 for equal, 1 for X = −Y, a pseudometric.
* EPIC (Definition 4.6): D_EPIC(R_A, R_B) = D_ρ(C(R_A)(S, A, S'), C(R_B)(S, A, S')) with
  (S, A, S') from the coverage distribution D.
* Regret bound (Theorem 4.9, finite MDPs): G_{R_A}(π*_A) − G_{R_A}(π*_B) ≤
  16 K ‖R_A‖₂ (1 − γ)⁻¹ D_EPIC(R_A, R_B), where K D ≥ D_π(t) for every t and π ∈ {π*_A, π*_B}.

Two estimators:

* :func:`canonicalize_tabular` / :func:`epic_tabular`: exact, the expectations in closed form on
  arrays R[S, A, S'] (tabular problems).
* :func:`canonicalize_samples`: the paper's sample estimator (section A.1.1): N_V coverage
  transitions and N_M (state, action) pairs from D_S × D_A; the constant term E[γR(S, A, S')] is
  dropped (Pearson ignores shifts).  Defaults N_V = N_M = 4096, "precise" 32768 × 32768.

Canonicalisation is linear, C(wᵀR) = wᵀC(R), so a vector reward R (K objectives) is canonicalised
once, shape [N_V, K], and every question about it is answered from that array:
:func:`distance_matrix` (K × K between objectives, or between any set of columns),
:func:`paired_distances` (two vector rewards objective by objective) and
:func:`scalarisation_distances` (every pair of weights wᵢᵀR, wⱼᵀR on a grid).  Confidence
intervals come from a bootstrap over the N_V coverage transitions (:func:`bootstrap_distances`).

Shapes: N_V coverage transitions, N_M expectation samples, K objectives, G weights, B bootstrap
resamples; states [N, d_S], actions [N, d_A].
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from morl_robot.tasks.base import TransitionReward

#: A reward as a pure function of a batch of transitions: (s [N, d_S], a [N, d_A], s' [N, d_S])
#: -> [N] or [N, K].  It must be vectorised over N and must not keep state between calls.
RewardFn = TransitionReward

#: The paper's sample sizes (section A.1.1 and Table A.6): (N_V, N_M).
DEFAULT_SAMPLES = (4096, 4096)
PRECISE_SAMPLES = (32768, 32768)


# --- Pearson distance --------------------------------------------------------------------------
def pearson_distance(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """D_ρ(X, Y) = √((1 − ρ) / 2) of two samples [N] (optionally weighted by a distribution [N]).

    A constant sample has no correlation with anything; it is an error rather than a silent NaN.
    """
    return float(distance_matrix(np.stack([np.ravel(x), np.ravel(y)], axis=1), weights)[0, 1])


def correlation_matrix(values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Pearson correlation [M, M] between the columns of ``values`` [N, M] (weights [N] ≥ 0)."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must be [N, M], got shape {v.shape}")
    w = np.full(v.shape[0], 1.0 / v.shape[0]) if weights is None else np.asarray(weights, np.float64).ravel()
    if w.shape[0] != v.shape[0]:
        raise ValueError(f"weights have {w.shape[0]} entries for {v.shape[0]} samples")
    w = w / w.sum()
    centred = v - w @ v
    cov = (centred * w[:, None]).T @ centred
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    scale = np.maximum(np.abs(v).max(axis=0), 1e-300)
    constant = std <= 1e-12 * scale
    if np.any(constant):
        raise ValueError(f"column(s) {np.flatnonzero(constant).tolist()} are constant over the coverage "
                         "distribution after canonicalisation: their Pearson correlation is undefined "
                         "(a reward equivalent to zero, or a coverage that never varies it)")
    rho = cov / np.outer(std, std)
    np.fill_diagonal(rho, 1.0)
    return np.clip(rho, -1.0, 1.0)


def distance_matrix(values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Pearson distances [M, M] between the columns of canonicalised rewards ``values`` [N, M]."""
    return np.sqrt((1.0 - correlation_matrix(values, weights)) / 2.0)


# --- exact (tabular) -----------------------------------------------------------------------------
def canonicalize_tabular(reward: np.ndarray, gamma: float, state_dist: np.ndarray | None = None,
                         action_dist: np.ndarray | None = None) -> np.ndarray:
    """Exact C(R) for a tabular reward ``reward`` [S, A, S] or a vector reward [S, A, S, K].

    ``state_dist`` [S] is D_S and ``action_dist`` [A] is D_A (uniform when None).
    """
    r = np.asarray(reward, dtype=np.float64)
    if r.ndim not in (3, 4) or r.shape[0] != r.shape[2]:
        raise ValueError(f"reward must be [S, A, S] or [S, A, S, K], got shape {r.shape}")
    n_s, n_a = r.shape[0], r.shape[1]
    ds = np.full(n_s, 1.0 / n_s) if state_dist is None else _distribution(state_dist, n_s, "state_dist")
    da = np.full(n_a, 1.0 / n_a) if action_dist is None else _distribution(action_dist, n_a, "action_dist")
    # m[s] = E_{A, S'}[R(s, A, S')]  ([S] or [S, K]); c = E_S[m(S)]
    m = np.einsum("sax...,a,x->s...", r, da, ds)
    c = np.einsum("s...,s->...", m, ds)
    # C = R(s, a, s') + γ m(s') − m(s) − γ c
    return r + gamma * m[None, None, :] - m[:, None, None] - gamma * c


def epic_tabular(reward_a: np.ndarray, reward_b: np.ndarray, gamma: float, coverage: np.ndarray | None = None,
                 state_dist: np.ndarray | None = None, action_dist: np.ndarray | None = None) -> float:
    """Exact D_EPIC between two tabular rewards [S, A, S] under a coverage distribution [S, A, S]
    (uniform over all transitions when None)."""
    ca = canonicalize_tabular(reward_a, gamma, state_dist, action_dist)
    cb = canonicalize_tabular(reward_b, gamma, state_dist, action_dist)
    w = None if coverage is None else _distribution(coverage, ca.size, "coverage").reshape(-1)
    return pearson_distance(ca.reshape(-1), cb.reshape(-1), w)


def epic_matrix_tabular(rewards: np.ndarray, gamma: float, coverage: np.ndarray | None = None,
                        state_dist: np.ndarray | None = None, action_dist: np.ndarray | None = None) -> np.ndarray:
    """Exact D_EPIC [K, K] between K tabular rewards stacked as [S, A, S, K]."""
    c = canonicalize_tabular(rewards, gamma, state_dist, action_dist)
    k = c.shape[-1]
    w = None if coverage is None else _distribution(coverage, c.size // k, "coverage").reshape(-1)
    return distance_matrix(c.reshape(-1, k), w)


def _distribution(p: np.ndarray, size: int, name: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.size != size or np.any(p < 0) or not np.isfinite(p).all() or p.sum() <= 0:
        raise ValueError(f"{name} must be {size} non-negative finite weights with a positive sum")
    return p / p.sum()


# --- regret bound (Theorem 4.9) --------------------------------------------------------------
def regret_bound(epic_distance: float, reward_l2: float, gamma: float, coverage_ratio: float) -> float:
    """Upper bound on G_{R_A}(π*_A) − G_{R_A}(π*_B) of Theorem 4.9 (finite S and A):
    16 K ‖R_A‖₂ (1 − γ)⁻¹ D_EPIC(R_A, R_B).

    ``reward_l2`` is ‖R_A‖₂, the L2 norm of R_A under the coverage distribution D;
    ``coverage_ratio`` is K, the smallest K with K·D(s, a, s') ≥ D_π(t, s, a, s') for every time t
    and π ∈ {π*_A, π*_B} (:func:`coverage_ratio`; K ≤ |S|²|A| for D uniform over S × A × S).
    """
    if not 0 <= gamma < 1:
        raise ValueError(f"the bound needs a discount 0 <= γ < 1, got {gamma}")
    if coverage_ratio <= 0 or not np.isfinite(coverage_ratio):
        raise ValueError(f"coverage ratio K must be positive and finite (D must cover every transition the "
                         f"optimal policies visit), got {coverage_ratio}")
    return 16.0 * coverage_ratio * reward_l2 * epic_distance / (1.0 - gamma)


def reward_l2(reward: np.ndarray, coverage: np.ndarray) -> float:
    """‖R‖₂ = √E_D[R(S, A, S')²] for a tabular reward [S, A, S] under coverage [S, A, S]."""
    d = _distribution(coverage, np.asarray(reward).size, "coverage").reshape(np.shape(reward))
    return float(np.sqrt(np.sum(d * np.asarray(reward, np.float64) ** 2)))


def coverage_ratio(dynamics: np.ndarray, initial: np.ndarray, policies: list[np.ndarray], coverage: np.ndarray,
                   horizon: int = 2000, tol: float = 1e-12) -> float:
    """K of Theorem 4.9: max over t ≤ horizon, π in ``policies`` and transitions of D_π(t)/D.

    ``dynamics`` [S, A, S] is T(s' | s, a), ``initial`` [S] is d_0, each policy is π(a | s) [S, A],
    ``coverage`` [S, A, S] is D.  Returns inf when a policy visits a transition D does not cover
    (the theorem's assumption fails).  Stops early once every state distribution is stationary.
    """
    t_sas = np.asarray(dynamics, np.float64)
    d = _distribution(coverage, t_sas.size, "coverage").reshape(t_sas.shape)
    worst = 0.0
    for pi in policies:
        p = _distribution(initial, t_sas.shape[0], "initial")
        for _ in range(horizon):
            joint = p[:, None, None] * np.asarray(pi)[:, :, None] * t_sas  # D_π(t) [S, A, S]
            uncovered = (joint > tol) & (d <= 0)
            if np.any(uncovered):
                return float("inf")
            ratio = np.where(d > 0, joint / np.where(d > 0, d, 1.0), 0.0)
            worst = max(worst, float(ratio.max()))
            nxt = joint.sum(axis=(0, 1))
            if np.abs(nxt - p).max() < tol:
                break
            p = nxt
    return worst


# --- sample estimator ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Transitions:
    """A batch of transitions: states [N, d_S], actions [N, d_A], next states [N, d_S]."""

    states: np.ndarray
    actions: np.ndarray
    next_states: np.ndarray

    def __post_init__(self) -> None:
        n = self.states.shape[0]
        if self.states.ndim != 2 or self.actions.ndim != 2 or self.next_states.shape != self.states.shape \
                or self.actions.shape[0] != n:
            raise ValueError(f"transitions need states [N, d_S], actions [N, d_A], next_states [N, d_S]; got "
                             f"{self.states.shape}, {self.actions.shape}, {self.next_states.shape}")

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def take(self, index: np.ndarray) -> Transitions:
        return Transitions(self.states[index], self.actions[index], self.next_states[index])


def sample_batches(coverage: Transitions, n_v: int, n_m: int, rng: np.random.Generator
                   ) -> tuple[Transitions, np.ndarray, np.ndarray]:
    """Draw B_V (N_V transitions from D, with replacement) and B_M (N_M states from D_S and, drawn
    independently, N_M actions from D_A), D_S and D_A being the marginals of D (paper §6.2: states
    from both ends of the coverage transitions)."""
    if len(coverage) == 0:
        raise ValueError("the coverage distribution has no transitions")
    b_v = coverage.take(rng.integers(0, len(coverage), n_v))
    all_states = np.concatenate([coverage.states, coverage.next_states])
    m_states = all_states[rng.integers(0, len(all_states), n_m)]
    m_actions = coverage.actions[rng.integers(0, len(coverage), n_m)]
    return b_v, m_states, m_actions


def _as_columns(r: np.ndarray, n: int) -> np.ndarray:
    r = np.asarray(r, dtype=np.float64)
    if r.ndim == 1:
        r = r[:, None]
    if r.ndim != 2 or r.shape[0] != n:
        raise ValueError(f"a reward function must return [N] or [N, K] for N = {n} transitions, got {r.shape}")
    return r


def canonicalize_samples(reward: RewardFn, batch: Transitions, m_states: np.ndarray, m_actions: np.ndarray,
                         gamma: float, chunk_elements: int = 1 << 16) -> np.ndarray:
    """Sample estimate of C(R) on the transitions of ``batch`` (paper eq. 5 without its constant):

        Ĉ(R)(s, a, s') = R(s, a, s') + γ/N_M Σ_j R(s', u_j, x_j) − 1/N_M Σ_j R(s, u_j, x_j)

    ``m_states`` [N_M, d_S] and ``m_actions`` [N_M, d_A] are B_M.  Returns [N_V, K] (K = 1 for a
    scalar reward).  A reward declared ``next_state_only`` (:func:`~morl_robot.tasks.base.next_state_reward`)
    is returned as is: its expectation terms are one constant.  The N_V × N_M evaluations are made in vectorised chunks of about
    ``chunk_elements`` transitions, O(N_V N_M) time and O(chunk) memory.
    """
    n_v, n_m = len(batch), m_states.shape[0]
    base = _as_columns(reward(batch.states, batch.actions, batch.next_states), n_v)
    if getattr(reward, "next_state_only", False):
        # R(s, a, s') = g(s'): E[γR(s', A, S') − R(s, A, S')] = (γ − 1) E[g(S')], a constant that
        # Pearson ignores, so C(R) = R up to a shift, exactly (no N_V × N_M evaluations)
        return base
    rows = max(1, chunk_elements // n_m)
    # column-major chunks: a reward reading feature columns gets contiguous memory
    tiled_u = np.asfortranarray(np.tile(m_actions, (min(rows, 2 * n_v), 1)))
    tiled_x = np.asfortranarray(np.tile(m_states, (min(rows, 2 * n_v), 1)))
    both = np.concatenate([batch.next_states, batch.states])  # [2 N_V, d_S]: s' rows then s rows
    out = np.empty((2 * n_v, base.shape[1]))
    for lo in range(0, 2 * n_v, rows):
        hi = min(lo + rows, 2 * n_v)
        c = hi - lo
        s = np.asfortranarray(np.repeat(both[lo:hi], n_m, axis=0))
        r = _as_columns(reward(s, tiled_u[: c * n_m], tiled_x[: c * n_m]), c * n_m)
        out[lo:hi] = r.reshape(c, n_m, -1).mean(axis=1)
    mean_next, mean_here = out[:n_v], out[n_v:]
    return base + gamma * mean_next - mean_here


# --- vector rewards, from one canonicalised array ------------------------------------------------
def paired_distances(canon_a: np.ndarray, canon_b: np.ndarray) -> np.ndarray:
    """D_EPIC between column k of ``canon_a`` [N, K] and column k of ``canon_b`` [N, K] → [K]."""
    if canon_a.shape != canon_b.shape:
        raise ValueError(f"vector rewards must have the same shape, got {canon_a.shape} and {canon_b.shape}")
    k = canon_a.shape[1]
    d = distance_matrix(np.concatenate([canon_a, canon_b], axis=1))
    return d[np.arange(k), k + np.arange(k)]


def weight_grid(num_objectives: int, points: int) -> np.ndarray:
    """All weights on the simplex with coordinates in multiples of 1/(points − 1) → [G, K]."""
    if num_objectives < 1 or points < 2:
        raise ValueError("a weight grid needs K >= 1 objectives and at least 2 points per axis")
    n = points - 1

    def compositions(total: int, parts: int) -> list[list[int]]:
        if parts == 1:
            return [[total]]
        return [[i] + rest for i in range(total, -1, -1) for rest in compositions(total - i, parts - 1)]

    return np.array(compositions(n, num_objectives), dtype=np.float64) / n


def scalarisation_distances(canon: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """D_EPIC [G, G] between the scalarisations wᵢᵀR for weights [G, K], using C(wᵀR) = wᵀC(R) on
    the canonicalised vector reward ``canon`` [N, K].  Weights must not be all zero."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != canon.shape[1]:
        raise ValueError(f"weights must be [G, {canon.shape[1]}], got {w.shape}")
    return distance_matrix(canon @ w.T)


def bootstrap_distances(values: np.ndarray, resamples: int = 1000, confidence: float = 0.95,
                        rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pearson distances [M, M] between the columns of ``values`` [N, M] and a percentile bootstrap
    confidence interval over the N coverage transitions (paper: 95 %, resampling the samples).

    Each resample is a multinomial count vector over the N rows, used as weights: B resamples cost
    O(B N M²) multiply-adds as two matrix products, not B copies of the data.  Returns
    (estimate, lower, upper), each [M, M].
    """
    rng = rng or np.random.default_rng(0)
    v = np.asarray(values, dtype=np.float64)
    n, m = v.shape
    estimate = distance_matrix(v)
    v = (v - v.mean(axis=0)) / np.maximum(v.std(axis=0), 1e-300)  # affine: distances unchanged
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64) / n  # [B, N]
    mean = counts @ v  # [B, M]
    products = (v[:, :, None] * v[:, None, :]).reshape(n, m * m)  # [N, M²]
    second = (counts @ products).reshape(resamples, m, m)
    cov = second - mean[:, :, None] * mean[:, None, :]
    std = np.sqrt(np.clip(np.einsum("bii->bi", cov), 1e-300, None))
    rho = np.clip(cov / (std[:, :, None] * std[:, None, :]), -1.0, 1.0)
    dist = np.sqrt((1.0 - rho) / 2.0)
    idx = np.arange(m)
    dist[:, idx, idx] = 0.0
    alpha = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(dist, [alpha, 1.0 - alpha], axis=0)
    return estimate, lower, upper


@dataclass
class EpicResult:
    """Distances [M, M] between named rewards (or objectives / scalarisations) with a bootstrap CI.

    ``undefined`` names the rewards left out because they are constant over the coverage after
    canonicalisation (equivalent to zero there, e.g. a sparse success the coverage never reaches):
    their distance to anything is undefined, and it says the coverage lacks support for them."""

    names: list[str]
    distance: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    n_v: int
    n_m: int
    gamma: float
    undefined: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        def table(a: np.ndarray | None) -> dict | None:
            if a is None:
                return None
            return {x: {y: float(a[i, j]) for j, y in enumerate(self.names)} for i, x in enumerate(self.names)}

        return {"names": self.names, "epic": table(self.distance), "ci_lower": table(self.lower),
                "ci_upper": table(self.upper), "n_v": self.n_v, "n_m": self.n_m, "gamma": self.gamma,
                "undefined": self.undefined}


def constant_columns(values: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Boolean [M]: columns of ``values`` [N, M] that do not vary (relative to their magnitude)."""
    spread = values.max(axis=0) - values.min(axis=0)
    return spread <= rtol * np.maximum(np.abs(values).max(axis=0), 1e-300)


def epic_samples(rewards: dict[str, RewardFn], coverage: Transitions, gamma: float,
                 n_v: int = DEFAULT_SAMPLES[0], n_m: int = DEFAULT_SAMPLES[1], resamples: int = 1000,
                 confidence: float = 0.95, seed: int = 0,
                 column_names: dict[str, list[str]] | None = None) -> tuple[EpicResult, np.ndarray]:
    """D_EPIC between every pair of named rewards (each scalar or vector) on one shared B_V and B_M,
    with bootstrap CIs.  A vector reward with K objectives contributes K columns, named by
    ``column_names[name]`` or ``name/k``.  Rewards constant over the coverage are left out and
    listed in ``EpicResult.undefined``.  Returns the result and the canonicalised samples [N_V, M]
    of the rewards kept."""
    rng = np.random.default_rng(seed)
    batch, m_states, m_actions = sample_batches(coverage, n_v, n_m, rng)
    names: list[str] = []
    columns = []
    for name, fn in rewards.items():
        c = canonicalize_samples(fn, batch, m_states, m_actions, gamma)
        columns.append(c)
        given = (column_names or {}).get(name)
        if given is not None and len(given) != c.shape[1]:
            raise ValueError(f"reward '{name}' has {c.shape[1]} columns, {len(given)} names given")
        names += given if given is not None else [name] if c.shape[1] == 1 else [f"{name}/{k}" for k in range(c.shape[1])]
    canon = np.concatenate(columns, axis=1)
    constant = constant_columns(canon)
    undefined = [n for n, c in zip(names, constant) if c]
    names = [n for n, c in zip(names, constant) if not c]
    canon = canon[:, ~constant]
    if len(names) < 2:
        raise ValueError(f"fewer than two rewards vary over the coverage (constant: {', '.join(undefined)}); "
                         "nothing to compare: broaden the coverage distribution")
    if resamples > 0:
        est, lo, hi = bootstrap_distances(canon, resamples, confidence, rng)
    else:
        est, lo, hi = distance_matrix(canon), None, None
    return EpicResult(names, est, lo, hi, n_v, n_m, gamma, undefined), canon


def markdown_table(names: list[str], d: np.ndarray, lower: np.ndarray | None = None,
                   upper: np.ndarray | None = None) -> str:
    """A Markdown table of a distance matrix [M, M] (with its CI [lower, upper] when given)."""
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for i, a in enumerate(names):
        cells = []
        for j in range(len(names)):
            cell = f"{d[i, j]:.3f}"
            if lower is not None and upper is not None and i != j:
                cell += f" [{lower[i, j]:.3f}, {upper[i, j]:.3f}]"
            cells.append(cell)
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
