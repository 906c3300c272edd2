"""Deep Sea Treasure: MO-MPO's ε sweep vs scalarized MPO's weight sweep (MO-MPO §5.2).

Domain (Vamplew et al., 2011; values of Yang et al., 2019): MO-Gymnasium's ``deep-sea-treasure-v0``,
an 11×11 grid (the paper's 11×10 plus a column of open water), start at the top-left corner, four
moves, ten treasures; the episode ends on a treasure (or after 100 steps, MO-Gymnasium's time
limit).  Objectives (K = 2): treasure value, time penalty −1 per step.  :func:`check_environment`
checks the map's treasures are Yang et al.'s convex values and reads the ten Pareto points from
``env.unwrapped.pareto_front(gamma)``.

Sweeps (paper §5.2):

* MO-MPO: ε_time ∈ {0.01, 0.02, 0.05}, ε_treasure = c·ε_time, c on an even grid over [0.5, 1.5]
  (the paper: 101 values; here ``c_values`` of them).
* Scalarized MPO: weights [w, 1 − w] on an even grid over [0, 1] (the paper: 101 weights) with as
  many runs as the ε sweep (equal total budget) unless told otherwise.

Each setting trains one policy with the learner's ``train`` (categorical policy over the four
moves) and evaluates it with the learner's ``evaluate``; the undiscounted return vector is what
the front and the "Pareto points found" count use.  The observation is the one-hot grid cell
(:class:`OneHotCell`): DST is a tabular problem and the raw (row, column) integers would make the
network's job needlessly hard.  The paper reports MO-MPO reaching all 10 Pareto points and
scalarized MPO 8 of 10.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from morl_robot.evaluation.hypervolume import hypervolume
from morl_robot.evaluation.pareto import (
    expected_utility,
    pareto_front,
    simplex_weights,
    sparsity,
)
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.evaluation.sweep import Setting, SweepResult, run_sweep

__all__ = [
    "ENV_ID",
    "EPSILON_TIME",
    "OBJECTIVES",
    "REFERENCE_POINT",
    "YANG_2019_TREASURES",
    "OneHotCell",
    "check_environment",
    "format_table",
    "learner_config",
    "make_env",
    "mo_mpo_setting",
    "mo_mpo_settings",
    "pareto_points_found",
    "run_experiment",
    "scalarized_settings",
    "train_and_evaluate",
    "train_setting",
    "true_pareto_front",
]

ENV_ID = "deep-sea-treasure-v0"
#: Treasure values of the convex DST of Yang et al. (2019), nearest to farthest.
YANG_2019_TREASURES: tuple[float, ...] = (0.7, 8.2, 11.5, 14.0, 15.1, 16.1, 19.6, 20.3, 22.4, 23.7)
#: Objective order of the environment's reward vector.
OBJECTIVES: tuple[str, str] = ("treasure", "time")
#: Hypervolume reference point (treasure, time): below every reachable return (time limit 100).
REFERENCE_POINT: tuple[float, float] = (0.0, -100.0)
#: ε_time values of the paper's MO-MPO sweep.
EPSILON_TIME: tuple[float, ...] = (0.01, 0.02, 0.05)


class OneHotCell(gym.ObservationWrapper):
    """Replace DST's (row, column) integer observation by a one-hot vector over the grid cells."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.rows, self.cols = env.unwrapped.sea_map.shape
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(self.rows * self.cols,), dtype=np.float32)

    def observation(self, observation: Any) -> NDArray[np.float32]:
        row, col = (int(v) for v in np.asarray(observation).reshape(-1)[:2])
        out = np.zeros(self.rows * self.cols, dtype=np.float32)
        out[row * self.cols + col] = 1.0
        return out


class ExploringStarts(gym.Wrapper):
    """Start an episode, with probability ``probability``, in an open-water cell drawn uniformly
    instead of the top-left corner (exploring starts; the dynamics, rewards and the 100-step limit
    are unchanged).

    For training only: it makes the replay's state distribution the uniform one over the map that
    the exact reference's E-step averages its KL over (:mod:`~morl_robot.experiments.dst_exact`),
    so states beyond the treasure a policy already prefers keep being visited.  Evaluation always
    starts at the corner.  Wraps the raw environment (observation (row, column)).

    ``horizon`` H: an episode that began at an exploring start is cut after H steps, reported as a
    truncation (``truncated=True``, not a termination: the learner still bootstraps from the last
    state), so the replay's states stay close to the start distribution (H = 1: uniform on open
    water) instead of drifting along the current policy's path.  Corner starts keep the 100-step limit.
    """

    def __init__(self, env: gym.Env, probability: float, horizon: int | None = None):
        super().__init__(env)
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"exploring-starts probability must be in [0, 1], got {probability}")
        if horizon is not None and horizon < 1:
            raise ValueError(f"exploring-start horizon must be >= 1 step, got {horizon}")
        self.probability = float(probability)
        self.horizon = horizon
        sea = np.asarray(env.unwrapped.sea_map)
        #: (N, 2) open-water cells (neither land nor treasure)
        self.cells = np.argwhere(sea == 0).astype(np.int32)
        self._rng = np.random.default_rng()
        self._explored = False
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._steps = 0
        self._explored = self.probability > 0 and bool(self._rng.random() < self.probability)
        if self._explored:
            cell = self.cells[self._rng.integers(len(self.cells))]
            self.env.unwrapped.current_state = cell.copy()
            obs = self.env.unwrapped._get_state()
            info = {**info, "exploring_start": cell.tolist()}
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        if self._explored and self.horizon is not None and self._steps >= self.horizon and not terminated:
            truncated = True
        return obs, reward, terminated, truncated, info


def make_env(one_hot: bool = True, exploring_starts: float = 0.0, exploring_horizon: int | None = None) -> gym.Env:
    """``deep-sea-treasure-v0`` (reward vector (treasure, time)), one-hot observations by default;
    ``exploring_starts`` > 0 wraps it in :class:`ExploringStarts` (training only), whose episodes
    are cut after ``exploring_horizon`` steps if given.

    Module-level so that it pickles into spawned sweep workers.
    """
    import mo_gymnasium

    env = mo_gymnasium.make(ENV_ID)  # gym.make without the scalar-reward env checker
    if exploring_starts > 0:
        env = ExploringStarts(env, exploring_starts, exploring_horizon)
    return OneHotCell(env) if one_hot else env


def true_pareto_front(gamma: float = 1.0) -> NDArray[np.float64]:
    """The ten Pareto-optimal return vectors (10, 2) from ``env.unwrapped.pareto_front(gamma)``,
    sorted by treasure value."""
    env = make_env(one_hot=False)
    try:
        front = np.asarray(env.unwrapped.pareto_front(gamma=gamma), dtype=np.float64)
    finally:
        env.close()
    return front[np.argsort(front[:, 0])]


def check_environment() -> dict[str, Any]:
    """Check the map's treasures are Yang et al. (2019)'s and the front has ten points.

    Returns ``{"treasures": [...], "pareto_front": [[treasure, time], ...]}`` (undiscounted);
    raises ``RuntimeError`` on a mismatch (e.g. a changed MO-Gymnasium default map).
    """
    env = make_env(one_hot=False)
    try:
        sea_map = np.asarray(env.unwrapped.sea_map, dtype=np.float64)
    finally:
        env.close()
    treasures = np.sort(sea_map[sea_map > 0])
    if not np.allclose(treasures, YANG_2019_TREASURES):
        raise RuntimeError(f"{ENV_ID}: treasures {treasures.tolist()} differ from Yang et al. 2019 "
                           f"{list(YANG_2019_TREASURES)}")
    front = true_pareto_front(1.0)
    if front.shape != (10, 2) or not np.allclose(front[:, 0], YANG_2019_TREASURES):
        raise RuntimeError(f"{ENV_ID}: expected 10 Pareto points with the treasures as values, got {front.tolist()}")
    return {"treasures": treasures.tolist(), "pareto_front": front.tolist()}


def pareto_points_found(
    returns: NDArray[np.float64], front: NDArray[np.float64], atol: float = 1e-3
) -> NDArray[np.bool_]:
    """Which true Pareto points (T, K) some return vector in ``returns`` (R, K) equals (± atol).

    Returns a mask (T,).  Deterministic (greedy) evaluation of a DST policy gives exactly one of
    the treasure outcomes, so equality up to float noise is the right test.
    """
    returns = np.asarray(returns, dtype=np.float64).reshape(-1, front.shape[1])
    if returns.shape[0] == 0:
        return np.zeros(front.shape[0], dtype=bool)
    close = np.all(np.abs(returns[:, None, :] - front[None, :, :]) <= atol, axis=2)  # (R, T)
    return close.any(axis=0)


#: The paper's range of the ratio c = ε_treasure / ε_time.
C_RANGE: tuple[float, float] = (0.5, 1.5)


def c_grid(count: int, c_range: tuple[float, float] = C_RANGE) -> NDArray[np.float64]:
    """``count`` values of c evenly over ``c_range`` (the paper: 101 over [0.5, 1.5], step 0.01);
    a single value is the range's midpoint."""
    if count < 1:
        raise ValueError(f"need at least one c value, got {count}")
    lo, hi = c_range
    return np.array([0.5 * (lo + hi)]) if count == 1 else np.linspace(lo, hi, count)


def mo_mpo_settings(c_values: int, epsilon_time: Sequence[float] = EPSILON_TIME, seed: int = 0,
                    c_range: tuple[float, float] = C_RANGE) -> list[Setting]:
    """MO-MPO settings: ε = [ε_treasure, ε_time] with ε_treasure = c·ε_time (paper §5.2)."""
    return [mo_mpo_setting(eps_time, c, seed + i)
            for i, (eps_time, c) in enumerate((e, c) for e in epsilon_time for c in c_grid(c_values, c_range))]


def mo_mpo_setting(eps_time: float, c: float, seed: int) -> Setting:
    """One MO-MPO setting: ε = [c·ε_time, ε_time]."""
    eps = [round(float(c) * eps_time, 10), float(eps_time)]
    return Setting(name=f"eps_time={eps_time:g},c={c:.3f}",
                   params={"algorithm": "mo-mpo", "epsilons": eps, "c": float(c), "epsilon_time": float(eps_time)},
                   seed=seed)


def scalarized_settings(num_weights: int, epsilon: float = 0.01, seed: int = 0) -> list[Setting]:
    """Scalarized MPO settings: weights [w, 1 − w], w evenly over [0, 1] (paper §5.2: 101)."""
    ws = np.array([0.5]) if num_weights == 1 else np.linspace(0.0, 1.0, num_weights)
    return [Setting(name=f"w={w:.3f}",
                    params={"algorithm": "scalarized-mpo", "weights": [float(w), float(1 - w)],
                            "epsilon": epsilon},
                    seed=seed + i)
            for i, w in enumerate(ws)]


@dataclass(frozen=True)
class LearnerKnobs:
    """Changes to the DST learner of :func:`learner_config` (None: its value): the levers on the
    learned critic's accuracy (a slower critic, slower target networks, more updates per step,
    larger batches) and the policy network (``policy_hidden=()``: a table over the one-hot cells,
    as the exact algorithm's policy is)."""

    critic_lr: float | None = None
    target_update_period: int | None = None  # learner updates between target-network copies
    samples_per_insert: float | None = None  # replay samples per inserted step (updates per step × batch)
    batch_size: int | None = None  # sequences per update
    policy_hidden: tuple[int, ...] | None = None  # policy layer sizes; (): no hidden layer

    def validate(self) -> None:
        for name, value in self.changed().items():
            if isinstance(value, list):
                if any(v <= 0 for v in value):
                    raise ValueError(f"{name} must be positive layer sizes, got {value}")
            elif not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}")

    def changed(self) -> dict[str, Any]:
        """The knobs set (name → value; layer sizes as a list), as recorded in results."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RunBudget:
    """Per-run training budget and learner sizes (shared by both algorithms: equal budget)."""

    steps: int  # environment steps per run (with ``stable_evals``: at most)
    eval_episodes: int = 1
    quick: bool = False
    eval_every: int = 0  # environment steps between greedy evaluations (0: only at the end)
    stable_evals: int = 0  # convergence: stop after this many equal greedy evaluations in a row (0: off)
    exploring_starts: float = 0.0  # probability a training episode starts in a uniform open cell
    exploring_horizon: int | None = None  # exploring-start episodes cut after this many steps (None: 100-step limit)
    learner: LearnerKnobs = LearnerKnobs()  # changes to the learner config (default: none)


def learner_config(setting: Setting, budget: RunBudget) -> Any:
    """An :class:`~morl_robot.learning.config.MPOConfig` for one DST setting.

    Small networks and batches (the state is one of 121 cells), exact enumeration of the four
    actions in the E-step, n-step/Retrace targets as the learner defaults, γ = 0.99.
    """
    from morl_robot.learning.config import (
        MPOConfig,
        NetworkConfig,
        ReplayConfig,
        TrainingConfig,
    )

    quick = budget.quick
    params = setting.params
    common: dict[str, Any] = {
        "objective_names": list(OBJECTIVES),
        "networks": NetworkConfig(policy_hidden=[32] if quick else [64, 64],
                               critic_hidden=[32] if quick else [128, 128]),
        "replay": ReplayConfig(capacity=100_000, samples_per_insert=4.0 if quick else 8.0,
                            min_size_to_sample=64 if quick else 500, error_buffer=256.0),
        "training": TrainingConfig(eval_every=budget.eval_every, eval_episodes=budget.eval_episodes,
                                checkpoint_every=0, log_every=50, tensorboard=False,
                                stop_when_stable=budget.stable_evals),
        "batch_size": 16 if quick else 32,
        "sequence_length": 5,
        "target_update_period": 20,
        "epsilon_categorical": 0.01,
        "policy_lr": 1e-3,
        "critic_lr": 1e-3,
    }
    knobs = budget.learner
    common.update({name: getattr(knobs, name) for name in ("critic_lr", "target_update_period", "batch_size")
                   if getattr(knobs, name) is not None})
    if knobs.policy_hidden is not None:
        common["networks"] = replace(common["networks"], policy_hidden=list(knobs.policy_hidden))
    if knobs.samples_per_insert is not None:
        common["replay"] = replace(common["replay"], samples_per_insert=float(knobs.samples_per_insert))
    if params["algorithm"] == "mo-mpo":
        return MPOConfig(algorithm="mo_mpo", epsilons=list(params["epsilons"]), **common)
    return MPOConfig(algorithm="scalarized_mpo", scalarization_weights=list(params["weights"]),
                     epsilon=float(params.get("epsilon", 0.01)), **common)


def train_setting(setting: Setting, budget: RunBudget) -> Any:
    """Train one policy for ``setting`` with the learner's ``train`` (a
    :class:`~morl_robot.training.loop.TrainResult`); training episodes as ``budget`` says,
    greedy evaluations always from the corner."""
    import functools

    from morl_robot.training.loop import evaluate, train

    config = learner_config(setting, budget)
    train_env = functools.partial(make_env, exploring_starts=budget.exploring_starts,
                                  exploring_horizon=budget.exploring_horizon)

    def corner_eval(policy: Any) -> NDArray[np.float64]:  # evaluation always starts at the corner
        return np.asarray(evaluate(policy, make_env, budget.eval_episodes, setting.seed), dtype=np.float64)

    return train(train_env, config, total_steps=budget.steps, seed=setting.seed, out_dir=None, progress=False,
                 eval_fn=corner_eval if budget.exploring_starts > 0 else None)


def train_and_evaluate(setting: Setting, budget: RunBudget) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Train one policy for ``setting`` (:func:`train_setting`); return its undiscounted
    greedy evaluation return (K,) and what the run measured: environment steps, updates, the step
    at which the greedy return stopped changing (``converged_at``, None if it did not within the
    budget) and the policy entropy at the last logged update (picklable for the sweep workers)."""
    from morl_robot.training.loop import evaluate

    result = train_setting(setting, budget)
    # train() ends with evaluate() of the final deterministic policy (config.training.eval_episodes).
    if result.final_return is not None:
        returns = np.asarray(result.final_return, dtype=np.float64).reshape(-1)
    else:
        returns = np.asarray(evaluate(result.policy, make_env, budget.eval_episodes, setting.seed), dtype=np.float64)
    entropy = next((row["entropy"] for row in reversed(result.metrics) if "entropy" in row), None)
    return returns, {"env_steps": result.env_steps, "updates": result.updates, "converged_at": result.converged_at,
                     "entropy": None if entropy is None else float(entropy),
                     "evaluations": [[int(s), [float(v) for v in r]] for s, r in result.evaluations]}


def _summarise(result: SweepResult, true_front: NDArray[np.float64]) -> dict[str, Any]:
    """Per-algorithm entry of results.json."""
    returns = result.returns
    distinct, counts = (np.unique(returns, axis=0, return_counts=True) if returns.size
                        else (np.zeros((0, 2)), np.zeros(0, dtype=int)))
    found = pareto_points_found(returns, true_front)
    return {
        "runs": len(result.records),
        "failures": [{"setting": r.setting.name, "error": r.error} for r in result.records if not r.ok],
        "not_run": [s.name for s in result.not_run],
        "distinct_returns": [{"returns": d.tolist(), "runs": int(n)} for d, n in zip(distinct, counts)],
        "pareto_points_found": int(found.sum()),
        "pareto_points_found_mask": found.tolist(),
        "front": pareto_front(returns).tolist() if returns.size else [],
        "hypervolume": hypervolume(returns, REFERENCE_POINT) if returns.size else 0.0,
        # EUM over the 101 weights [w, 1 − w] on the raw returns; PGMORL sparsity of the front.
        "expected_utility": expected_utility(returns, simplex_weights(2, 100)) if returns.size else None,
        "sparsity": sparsity(pareto_front(returns)) if returns.size else None,
        "wall_time_s": result.wall_time_s,  # this sitting's
        "total_wall_time_s": result.total_wall_time_s,  # every sitting's (--resume)
        "kept_from_earlier_sittings": result.kept,
        "processes": result.processes,
        "per_setting": [
            {"setting": r.setting.to_dict(), "returns": None if r.returns is None else r.returns.tolist(),
             "seconds": r.seconds, **r.extras}
            for r in result.records
        ],
        "converged": sum(r.extras.get("converged_at") is not None for r in result.records),
    }


def by_epsilon_time(per_setting: Sequence[Mapping[str, Any]], true_front: NDArray[np.float64],
                    exact: Mapping[tuple[float, float], float] | None = None) -> dict[str, dict[str, Any]]:
    """MO-MPO's sweep split by ε_time (the paper's Fig. 5 draws one c → treasure curve per ε_time):
    per value its runs, Pareto points found, hypervolume, converged runs and, given ``exact``
    ((ε_time, c) rounded to 6 digits → the exact algorithm's treasure), the settings whose greedy
    treasure is the exact one's.  Keys are the ε_time values as ``%g`` strings."""
    out: dict[str, dict[str, Any]] = {}
    for eps in sorted({s["setting"]["params"]["epsilon_time"] for s in per_setting}):
        mine = [s for s in per_setting if s["setting"]["params"]["epsilon_time"] == eps]
        rets = np.asarray([s["returns"] for s in mine if s["returns"] is not None], dtype=np.float64).reshape(-1, 2)
        row: dict[str, Any] = {
            "runs": len(mine),
            "pareto_points_found": int(pareto_points_found(rets, true_front).sum()),
            "hypervolume": hypervolume(rets, REFERENCE_POINT) if rets.size else 0.0,
            "converged": sum(s.get("converged_at") is not None for s in mine),
        }
        if exact is not None:
            pairs = [(exact[key], s["returns"][0]) for s in mine if s["returns"] is not None
                     and (key := (round(eps, 6), round(s["setting"]["params"]["c"], 6))) in exact]
            row["same_treasure_as_exact"] = sum(abs(a - b) < 1e-3 for a, b in pairs)
            row["compared_with_exact"] = len(pairs)
        out[f"{eps:g}"] = row
    return out


def scalarized_optimum(weights: Sequence[float], gamma: float = 0.99) -> list[float]:
    """The treasure a policy optimal for the linear scalarization w·r + (1 − w)·time reaches, per
    weight w: the true front point (discounted with the learner's γ) of largest scalarized value.
    This is scalarized MPO's target, as exact MO-MPO is MO-MPO's.  Only the front's convex hull is
    reachable, and a point whose window of weights is narrower than the grid's step is missed by
    every weight (on this map 20.3: w ∈ [0.666, 0.672] at γ = 0.99)."""
    discounted = true_pareto_front(gamma)  # (10, 2), treasure order
    treasures = true_pareto_front()[:, 0]
    w = np.asarray(weights, dtype=np.float64).reshape(-1, 1)
    values = w * discounted[None, :, 0] + (1.0 - w) * discounted[None, :, 1]  # (W, 10)
    return [float(treasures[i]) for i in np.argmax(values, axis=1)]


#: what a run's outcome depends on besides its setting: a resumed sweep keeps earlier runs only if
#: these ``budget`` entries are the same (processes and the time limit may change between sittings)
RESUME_KEYS = ("steps_per_run", "eval_episodes", "quick", "convergence", "exploring_starts",
               "exploring_horizon", "learner_changes")


def plot_c_to_treasure(rows: Sequence[Mapping[str, Any]], eps_time: Sequence[float], path: Path, title: str,
                       reference: Sequence[Mapping[str, Any]] = ()) -> None:
    """The paper's Fig. 5 (right): the treasure the greedy policy reaches against c, one line per
    ε_time; ``rows`` carry ``eps_time``, ``c`` and ``treasure``.  ``reference``: rows of the same
    form (e.g. the exact solution) drawn dashed, in the colour of the same ε_time.  With a reference
    and several ε_time values each gets its own panel (shared axes), so each curve is read against its
    own reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = len(eps_time) if reference and len(eps_time) > 1 else 1
    fig, axes = plt.subplots(panels, 1, figsize=(7, 4 if panels == 1 else 2.6 * panels), sharex=True, sharey=True,
                             squeeze=False)
    for i, e in enumerate(eps_time):
        ax = axes[i if panels > 1 else 0, 0]
        colour = f"C{i}"
        ref = sorted((r for r in reference if r["eps_time"] == e), key=lambda r: r["c"])
        if ref:
            ax.plot([r["c"] for r in ref], [r["treasure"] for r in ref], linestyle="--", color=colour, alpha=0.5,
                    linewidth=1.0, label=f"exact, ε_time = {e:g}")
        mine = [r for r in rows if r["eps_time"] == e]
        ax.plot([r["c"] for r in mine], [r["treasure"] for r in mine], marker=".", linewidth=0.8, color=colour,
                label=f"ε_time = {e:g}")
    for ax in axes[:, 0]:
        ax.set_ylabel("greedy treasure" if panels > 1 else "treasure reached by the greedy policy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    axes[-1, 0].set_xlabel("c = ε_treasure / ε_time")
    axes[0, 0].set_title(title, fontsize=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def run_experiment(
    out_dir: str | os.PathLike[str],
    processes: int = 2,
    steps: int | None = None,
    quick: bool = False,
    c_values: int = 7,
    c_range: tuple[float, float] = C_RANGE,
    epsilon_time: Sequence[float] = EPSILON_TIME,
    num_weights: int | None = None,
    eval_episodes: int = 1,
    seed: int = 0,
    time_limit_s: float | None = None,
    algorithms: Sequence[str] = ("mo-mpo", "scalarized-mpo"),
    progress: bool = True,
    eval_every: int = 0,
    stable_evals: int = 0,
    exact_reference: str | os.PathLike[str] | None = None,
    exploring_starts: float = 0.0,
    exploring_horizon: int | None = None,
    learner: LearnerKnobs | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Run the sweeps and write ``results.json``, ``fronts.png`` and ``c_to_treasure.png`` (MO-MPO's
    greedy treasure against c per ε_time, the paper's Fig. 5 right) into ``out_dir``.

    ``eval_every`` / ``stable_evals``: each run evaluates its greedy policy every ``eval_every``
    steps and stops once ``stable_evals`` evaluations in a row agree (the greedy path no longer
    changes; ``steps`` is then the cap); the step it stopped at is recorded per setting.
    ``exact_reference``: a ``dst-exact`` results.json drawn dashed in ``c_to_treasure.png`` and
    compared setting by setting (``agrees_with_exact``).
    ``exploring_starts``: probability that a training episode starts in a uniformly drawn open
    cell (:class:`ExploringStarts`; 0: the paper's protocol, always the corner);
    ``exploring_horizon``: such episodes are cut (truncated) after this many steps.
    ``learner``: changes to the learner config for every run of both algorithms (recorded as
    ``budget.learner_changes``).

    ``quick``: 2 settings per algorithm, 300 steps, tiny networks (a smoke test, not a result).
    ``resume``: keep the settings an earlier sitting finished in ``out_dir`` (its
    ``sweep_<algorithm>.json``) and run only the rest, so the paper's 3 × 101-setting protocol can
    span several sittings; the earlier sitting must have used the same per-run budget
    (:data:`RESUME_KEYS` of ``budget``), else :class:`ConfigError`.  Without it every setting is run.
    ``time_limit_s`` is shared by the algorithms (each gets the time the previous ones left, split
    evenly over those remaining).
    """
    import functools

    from morl_robot.evaluation.plots import plot_pareto_fronts

    out = Path(out_dir)
    env_facts = check_environment()
    front = np.asarray(env_facts["pareto_front"])
    if quick:
        steps = steps or 300
        mo_settings = mo_mpo_settings(1, epsilon_time=(0.01, 0.05), seed=seed)
        sc_settings = scalarized_settings(2, seed=seed)
    else:
        steps = steps or 8_000
        mo_settings = mo_mpo_settings(c_values, epsilon_time=epsilon_time, seed=seed, c_range=c_range)
        sc_settings = scalarized_settings(num_weights or len(mo_settings), seed=seed)
    budget = RunBudget(steps=int(steps), eval_episodes=int(eval_episodes), quick=quick,
                       eval_every=int(eval_every), stable_evals=int(stable_evals),
                       exploring_starts=float(exploring_starts), exploring_horizon=exploring_horizon,
                       learner=learner or LearnerKnobs())
    budget.learner.validate()
    fn = functools.partial(train_and_evaluate, budget=budget)
    sweeps = {"mo-mpo": mo_settings, "scalarized-mpo": sc_settings}
    results: dict[str, Any] = {
        "environment": {"id": ENV_ID, "objectives": list(OBJECTIVES), **env_facts,
                        "pareto_front_discounted_0.99": true_pareto_front(0.99).tolist()},
        "reference_point": list(REFERENCE_POINT),
        "true_front_hypervolume": hypervolume(front, REFERENCE_POINT),
        "true_front_expected_utility": expected_utility(front, simplex_weights(2, 100)),
        "sweep": {"epsilon_time": list(epsilon_time), "c_range": list(c_range), "c_values": c_values,
                  "scalarized_weights": len(sc_settings), "scalarized_epsilon": 0.01},
        "budget": {"steps_per_run": budget.steps, "eval_episodes": budget.eval_episodes, "quick": quick,
                   "convergence": (f"stop once {stable_evals} greedy evaluations {eval_every} steps apart agree"
                                   if stable_evals else None),
                   "processes": processes, "time_limit_s": time_limit_s, "cpu_count": os.cpu_count(),
                   "exploring_starts": budget.exploring_starts, "exploring_horizon": budget.exploring_horizon,
                   "learner_changes": budget.learner.changed()},
    }
    meta = {k: results["budget"][k] for k in RESUME_KEYS}
    start = time.perf_counter()
    returns_by_algorithm: dict[str, NDArray[np.float64]] = {}
    chosen = [a for a in sweeps if a in algorithms]
    for index, algorithm in enumerate(chosen):
        limit = None
        if time_limit_s is not None:
            left = time_limit_s - (time.perf_counter() - start)
            limit = max(0.0, left / (len(chosen) - index))
        sweep = run_sweep(sweeps[algorithm], fn, processes=processes, ref=REFERENCE_POINT,
                          out_path=out / f"sweep_{algorithm}.json", time_limit_s=limit,
                          progress=progress, description=f"DST {algorithm}", keep_finished=resume, meta=meta)
        results[algorithm] = _summarise(sweep, front)
        if algorithm == "scalarized-mpo" and results[algorithm]["per_setting"]:
            done = [r for r in results[algorithm]["per_setting"] if r["returns"] is not None]
            optimum = scalarized_optimum([r["setting"]["params"]["weights"][0] for r in done])
            grid = scalarized_optimum([s.params["weights"][0] for s in sc_settings])
            results[algorithm]["agrees_with_optimum"] = {
                "settings": len(done), "same_treasure": sum(abs(o - r["returns"][0]) < 1e-3 for o, r in zip(optimum, done)),
                "points_reachable_on_this_grid": len(set(grid)),
                "optimum": "the true front point of largest w·treasure + (1 − w)·time, discounted with γ = 0.99"}
        returns_by_algorithm[algorithm] = sweep.returns
        write_results_json(out / "results.json", results)
    results["wall_time_s"] = time.perf_counter() - start
    write_results_json(out / "results.json", results)
    plot_pareto_fronts({a: r for a, r in returns_by_algorithm.items() if r.size}, out / "fronts.png",
                       ref=REFERENCE_POINT, objective_names=OBJECTIVES, true_front=front,
                       title="Deep Sea Treasure: returns reached per setting (MO-MPO §5.2, Fig. 5)")
    if results.get("mo-mpo", {}).get("per_setting"):
        rows = [{"eps_time": s["setting"]["params"]["epsilon_time"], "c": s["setting"]["params"]["c"],
                 "treasure": s["returns"][0]} for s in results["mo-mpo"]["per_setting"] if s["returns"] is not None]
        reference: list[dict[str, Any]] = []
        exact: dict[tuple[float, float], float] | None = None
        if exact_reference is not None:
            import json

            reference = json.loads(Path(exact_reference).read_text())["runs"]
            exact = {(round(r["eps_time"], 6), round(r["c"], 6)): r["treasure"] for r in reference}
        split = by_epsilon_time(results["mo-mpo"]["per_setting"], front, exact)
        if exact is not None:  # the comparison is made once, per ε_time; the whole sweep's is its sum
            results["mo-mpo"]["agrees_with_exact"] = {
                "settings": sum(b["compared_with_exact"] for b in split.values()),
                "same_treasure": sum(b["same_treasure_as_exact"] for b in split.values()),
                "reference": str(exact_reference)}
        results["mo-mpo"]["by_epsilon_time"] = split
        write_results_json(out / "results.json", results)
        plot_c_to_treasure(sorted(rows, key=lambda r: r["c"]), sorted({r["eps_time"] for r in rows}),
                           out / "c_to_treasure.png",
                           "Deep Sea Treasure: learned MO-MPO, greedy treasure against c (paper Fig. 5 right)",
                           reference=reference)
    return results


def format_table(results: Mapping[str, Any]) -> str:
    """Printed summary: runs, distinct returns, Pareto points found, hypervolume, wall time."""
    header = f"{'algorithm':<16}{'runs':>6}{'distinct':>10}{'pareto found':>14}{'hypervolume':>13}{'wall s':>9}"
    lines = [header, "-" * len(header)]
    for algorithm in ("mo-mpo", "scalarized-mpo"):
        if algorithm not in results:
            continue
        r = results[algorithm]
        lines.append(f"{algorithm:<16}{r['runs']:>6}{len(r['distinct_returns']):>10}"
                     f"{r['pareto_points_found']:>11}/10{r['hypervolume']:>13.1f}"
                     f"{r.get('total_wall_time_s', r['wall_time_s']):>9.1f}")
        if r.get("kept_from_earlier_sittings"):
            lines.append(f"  {r['kept_from_earlier_sittings']} runs kept from earlier sittings (--resume); "
                         f"this sitting {r['wall_time_s']:.1f} s")
        if results["budget"].get("convergence"):
            lines.append(f"  converged: {r.get('converged', 0)} of {r['runs']} runs "
                         f"({results['budget']['convergence']})")
        if "agrees_with_exact" in r:
            a = r["agrees_with_exact"]
            lines.append(f"  same treasure as exact MO-MPO: {a['same_treasure']} of {a['settings']} settings")
        if "agrees_with_optimum" in r:
            a = r["agrees_with_optimum"]
            lines.append(f"  same treasure as the scalarization's optimum: {a['same_treasure']} of {a['settings']} "
                         f"settings; {a['points_reachable_on_this_grid']} Pareto points are optimal for some weight "
                         "of this grid")
        if len(r.get("by_epsilon_time", {})) > 1:
            for eps, b in r["by_epsilon_time"].items():
                exact = (f", same as exact {b['same_treasure_as_exact']} of {b['compared_with_exact']}"
                         if "same_treasure_as_exact" in b else "")
                lines.append(f"  ε_time {eps}: {b['runs']} runs, {b['pareto_points_found']}/10 Pareto points, "
                             f"hypervolume {b['hypervolume']:.1f}, converged {b['converged']}{exact}")
        if r["failures"]:
            lines.append(f"  {len(r['failures'])} failed runs, first error: "
                         f"{r['failures'][0]['error'].strip().splitlines()[-1]}")
        if r["not_run"]:
            lines.append(f"  {len(r['not_run'])} settings not run (time limit; --resume continues)")
    lines.append(f"true front hypervolume {results['true_front_hypervolume']:.1f} "
                 f"(reference point {tuple(results['reference_point'])}); this sitting's wall time "
                 f"{results.get('wall_time_s', math.nan):.1f} s with {results['budget']['processes']} processes")
    return "\n".join(lines)
