"""One policy for every preference: ε-conditioned MO-MPO against a per-setting sweep and CAPQL.

``morl-robot experiment conditioned --env ENV_ID --steps N [--seed S] [--method M] --out DIR``
trains on any MO-Gymnasium-style environment (``mo-halfcheetah-v5``, ``deep-sea-treasure-v0``,
``morl_robot/SawyerPegInHole-v0`` …) for N environment steps in all and evaluates the result
deterministically on a grid of preferences:

* ``conditioned`` (default) — one ε-conditioned MO-MPO policy π(a | s, ε)
  (:mod:`morl_robot.learning.preferences`, ``config/learner/conditioned_spi64.yaml``), evaluated at every
  ε of :meth:`~morl_robot.learning.preferences.PreferenceSpace.grid` (≥ 11 points);
* ``sweep`` — MO-MPO as published (Abdolmaleki et al. 2020, §5: one policy per ε setting):
  ``--sweep-settings`` settings taken evenly from the same grid, N / settings steps each, every
  policy evaluated at its own ε;
* ``capql`` — CAPQL (Lu et al. 2023) from morl-baselines, one network conditioned on linear
  weights, N steps, evaluated at equally spaced weights (the baseline the issue measured).

``DIR/results.json``: ``{"points": [[…], …], "preferences": […], "hypervolume": h, "ref": […]}``
plus the method, budget, wall time and (conditioned) how closely the E-step KL tracked each
sampled ε.  ``DIR/front.png`` plots the points and their front; ``DIR/kl_tracking.png`` (conditioned)
plots the achieved E-step KL against the ε it was solved for.  :func:`report` summarises several
results files (seeds × methods) with the hypervolume's IQM and bootstrap CI per method.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import ConfigError, UsageError
from morl_robot.evaluation.hypervolume import hypervolume
from morl_robot.evaluation.pareto import pareto_mask
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.learning.config import (
    MPOConfig,
    load_learner_config,
)

METHODS = ("conditioned", "sweep", "capql")
#: hypervolume reference per objective for MO-Gymnasium's MuJoCo tasks (the issue's protocol)
DEFAULT_REF = -100.0


def make_env(env_id: str) -> Any:
    """``env_id`` through MO-Gymnasium's ``make`` (no scalar-reward checker); ``morl_robot/…`` ids are
    registered on ``import morl_robot``.  Module-level so it pickles."""
    import morl_robot  # noqa: F401  (registers the morl_robot/… ids)

    try:
        import mo_gymnasium

        return mo_gymnasium.make(env_id)
    except ImportError:  # pragma: no cover - mo-gymnasium is a test/experiment dependency
        import gymnasium

        return gymnasium.make(env_id, disable_env_checker=True)


@dataclass
class ConditionedExperiment:
    """What ``experiment conditioned`` runs."""

    env_id: str
    steps: int
    seed: int = 0
    method: str = "conditioned"
    #: config/learner name or YAML path; the default makes twice the updates per environment step of
    #: ``conditioned.yaml`` (samples_per_insert 64, not 32): ahead of CAPQL on HalfCheetah and Hopper
    #: over 3 seeds, where ``conditioned.yaml`` is behind it on Hopper (README)
    learner: str = "conditioned_spi64"
    points: int = 11  # evaluation grid size (the issue: at least 11)
    eval_episodes: int = 3
    ref: list[float] = field(default_factory=list)  # empty: DEFAULT_REF per objective
    sweep_settings: int = 5
    min_size_to_sample: int | None = None  # override replay.min_size_to_sample (tiny budgets)

    def validate(self) -> None:
        if self.method not in METHODS:
            raise UsageError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.steps < 1:
            raise UsageError(f"--steps must be >= 1, got {self.steps}")
        if self.points < 2:
            raise UsageError(f"--points must be >= 2, got {self.points}")
        if self.eval_episodes < 1:
            raise UsageError(f"--eval-episodes must be >= 1, got {self.eval_episodes}")
        if self.method == "sweep" and not 1 <= self.sweep_settings <= self.steps:
            raise UsageError(f"--sweep-settings must be in [1, steps], got {self.sweep_settings}")


# --------------------------------------------------------------------------------------------
# evaluation, shared by every method
# --------------------------------------------------------------------------------------------


def evaluate_points(policies: Sequence[Any], env_fn: Callable[[], Any], episodes: int, seed: int,
                    progress: bool = False) -> np.ndarray:
    """Mean per-objective return ``[P, K]`` of each policy (deterministic; :func:`~morl_robot.
    training.loop.evaluate`, the same reset seeds for every policy)."""
    from morl_robot.training.loop import evaluate

    it: Any = policies
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(policies, desc="evaluating", unit="preference", dynamic_ncols=True)
    return np.stack([evaluate(p, env_fn, episodes, seed=seed) for p in it])


def _reference(cfg: ConditionedExperiment, k: int) -> list[float]:
    if cfg.ref and len(cfg.ref) != k:
        raise UsageError(f"--ref has {len(cfg.ref)} values but the environment has {k} objectives")
    return [float(r) for r in cfg.ref] if cfg.ref else [DEFAULT_REF] * k


def _learner_config(cfg: ConditionedExperiment) -> MPOConfig:
    config = load_learner_config(cfg.learner)
    if config.preferences is None:
        raise ConfigError(f"learner config {cfg.learner!r} has no 'preferences' section: the conditioned "
                          "experiment needs an ε-conditioned config (e.g. config/learner/conditioned.yaml)")
    if cfg.min_size_to_sample is not None:
        config = config.replace(replay=dataclasses.replace(config.replay, min_size_to_sample=cfg.min_size_to_sample))
    return config


def _env_names(env: Any, k: int) -> list[str]:
    names = list(getattr(env, "objective_names", None) or getattr(env.unwrapped, "objective_names", []) or [])
    return names if len(names) == k else [f"objective_{i}" for i in range(k)]


# --------------------------------------------------------------------------------------------
# the methods
# --------------------------------------------------------------------------------------------


def _run_conditioned(cfg: ConditionedExperiment, out: Path, progress: bool) -> dict[str, Any]:
    from morl_robot.learning.checkpoint import checkpoint_step
    from morl_robot.learning.preferences import PreferenceSpace
    from morl_robot.training.loop import num_objectives_of, train

    config = _learner_config(cfg)
    env_fn = _env_fn(cfg.env_id)
    probe = env_fn()
    k, names = num_objectives_of(probe), None
    names = _env_names(probe, k)
    probe.close()
    space = PreferenceSpace.from_config(config.preferences, names)  # type: ignore[arg-type]
    result = train(env_fn, config, cfg.steps, seed=cfg.seed, out_dir=out / "run", progress=progress)
    grid = space.grid(max(cfg.points, config.preferences.eval_points))  # type: ignore[union-attr]
    policy = result.policy
    points = evaluate_points([policy.with_preference(e) for e in grid], env_fn, cfg.eval_episodes,
                             seed=cfg.seed + 10_000, progress=progress)
    tracking = _kl_tracking(result.learner, out / "kl_tracking.png")
    return {"points": points, "preferences": grid.tolist(), "preference_kind": "epsilon",
            "objective_names": names, "preference_space": space.to_dict(),
            "updates": result.updates, "episodes": result.episodes, "kl_tracking": tracking,
            # an interrupted run continues from its last checkpoint with an empty replay (as training does)
            "resumed_from_step": None if result.resumed_from is None else checkpoint_step(result.resumed_from)}


def _run_sweep(cfg: ConditionedExperiment, out: Path, progress: bool) -> dict[str, Any]:
    from morl_robot.learning.preferences import PreferenceSpace
    from morl_robot.training.loop import num_objectives_of, train

    config = _learner_config(cfg)
    env_fn = _env_fn(cfg.env_id)
    probe = env_fn()
    k = num_objectives_of(probe)
    names = _env_names(probe, k)
    probe.close()
    space = PreferenceSpace.from_config(config.preferences, names)  # type: ignore[arg-type]
    full = space.grid(max(cfg.points, cfg.sweep_settings))
    settings = full[np.unique(np.round(np.linspace(0, len(full) - 1, cfg.sweep_settings)).astype(int))]
    per_run = cfg.steps // len(settings)
    plain = config.replace(preferences=None)
    points, updates = [], 0
    for i, eps in enumerate(settings):
        run_cfg = plain.replace(epsilons=[float(e) for e in eps])
        result = train(env_fn, run_cfg, per_run, seed=cfg.seed, out_dir=out / f"run_{i}", progress=progress)
        points.append(evaluate_points([result.policy], env_fn, cfg.eval_episodes, seed=cfg.seed + 10_000)[0])
        updates += result.updates
    return {"points": np.stack(points), "preferences": settings.tolist(), "preference_kind": "epsilon",
            "objective_names": names, "steps_per_setting": per_run, "updates": updates}


def _run_capql(cfg: ConditionedExperiment, out: Path, progress: bool) -> dict[str, Any]:
    try:
        from morl_baselines.common.weights import equally_spaced_weights
        from morl_baselines.multi_policy.capql.capql import CAPQL
    except ImportError as e:
        raise UsageError("--method capql needs morl-baselines: `make capql-deps` (installs morl-baselines "
                         f"1.3.0 without its pycddlib pin, plus wandb, which it imports) ({e})") from e
    import torch

    from morl_robot.training.loop import num_objectives_of

    env_fn = _env_fn(cfg.env_id)
    env = env_fn()
    k = num_objectives_of(env)
    names = _env_names(env, k)
    torch.manual_seed(cfg.seed)
    agent = CAPQL(env, log=False, seed=cfg.seed, device="cpu")
    ref = np.asarray(_reference(cfg, k), np.float64)
    agent.train(total_timesteps=cfg.steps, eval_env=env_fn(), ref_point=ref, eval_freq=cfg.steps + 1)
    env.close()
    weights = np.asarray(equally_spaced_weights(k, n=cfg.points), np.float64)
    low, high = np.asarray(env.action_space.low, np.float64), np.asarray(env.action_space.high, np.float64)

    def policy_for(w: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        def act(obs: np.ndarray) -> np.ndarray:  # CAPQL acts in env units; evaluate() expects [-1, 1]
            a = np.asarray(agent.eval(obs, w), np.float64)
            return (2.0 * (a - low) / (high - low) - 1.0).astype(np.float32)
        return act

    points = evaluate_points([policy_for(w) for w in weights], env_fn, cfg.eval_episodes, seed=cfg.seed + 10_000,
                             progress=progress)
    return {"points": points, "preferences": weights.tolist(), "preference_kind": "linear_weights",
            "objective_names": names, "updates": max(0, int(agent.global_step - agent.learning_starts + 1))}


def _middle_action_returns(cfg: ConditionedExperiment, progress: bool) -> np.ndarray | None:
    """Returns ``[K]`` of the constant policy "middle of the action box" (0 in the normalised box)
    on the evaluation seeds; None for a discrete action space."""
    from gymnasium import spaces

    env_fn = _env_fn(cfg.env_id)
    env = env_fn()
    try:
        if not isinstance(env.action_space, spaces.Box):
            return None
        dim = int(np.prod(env.action_space.shape))
    finally:
        env.close()
    zero = np.zeros(dim, np.float32)
    return evaluate_points([lambda obs: zero], env_fn, cfg.eval_episodes, seed=cfg.seed + 10_000, progress=progress)[0]


def _env_fn(env_id: str) -> Callable[[], Any]:
    import functools

    return functools.partial(make_env, env_id)


def _kl_tracking(learner: Any, path: Path) -> dict[str, Any] | None:
    """How closely the last update's E-step KL matched each sampled ε_kb (and the plot)."""
    if learner.last_preference_kl is None:
        return None
    eps, kl = learner.last_preference_kl  # [K, B]
    ratio = np.log(np.maximum(kl, 1e-30) / eps)
    reached = np.abs(ratio) < 0.01
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from morl_robot.evaluation.plots import _save

    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    for i, name in enumerate(learner.objective_names):
        ax.scatter(eps[i], np.maximum(kl[i], 1e-6), s=10, alpha=0.6, label=name)
    lims = [float(eps.min()) * 0.8, float(eps.max()) * 1.25]
    ax.plot(lims, lims, "k--", linewidth=0.8, label="KL = ε")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sampled ε_k (per sequence)")
    ax.set_ylabel("E-step KL(q_k ‖ π_old), mean over the sequence")
    ax.set_title(f"E-step KL tracks ε (last update, {eps.shape[1]} sequences)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    _save(fig, path)
    return {"sequences": int(eps.shape[1]), "within_1pct": float(reached.mean()),
            "max_abs_log_ratio": float(np.abs(ratio).max()), "plot": path.name}


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------


def run(cfg: ConditionedExperiment, out_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """Train and evaluate one method on one seed; writes ``out_dir/results.json`` and ``front.png``."""
    from morl_robot.evaluation.plots import plot_pareto_fronts
    from morl_robot.training.loop import num_objectives_of

    cfg.validate()
    if cfg.method != "capql":
        _learner_config(cfg)  # a config without preferences is refused before anything runs
    try:
        probe = make_env(cfg.env_id)
    except Exception as e:  # gymnasium's NameNotFound, a missing MuJoCo asset …
        raise UsageError(f"--env {cfg.env_id!r}: cannot make the environment ({type(e).__name__}: {e})") from e
    k = num_objectives_of(probe)
    probe.close()
    ref = _reference(cfg, k)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    runner = {"conditioned": _run_conditioned, "sweep": _run_sweep, "capql": _run_capql}[cfg.method]
    body = runner(cfg, out, progress)
    points = np.asarray(body.pop("points"), np.float64)
    mask = pareto_mask(points)
    # context for the hypervolume: one policy that always sends the middle of the action box
    # ("do nothing" for torque-controlled bodies) already dominates part of the reference box
    still = _middle_action_returns(cfg, progress=False)
    results = {
        "env": cfg.env_id, "method": cfg.method, "seed": cfg.seed, "steps": cfg.steps,
        "points": points.tolist(), "preferences": body.pop("preferences"),
        "hypervolume": hypervolume(points, ref), "ref": ref,
        "pareto_points": int(mask.sum()), "eval_episodes": cfg.eval_episodes,
        "middle_action_policy": None if still is None else {
            "returns": still.tolist(), "hypervolume": hypervolume(still[None], ref)},
        "wall_time_s": time.monotonic() - start, **body,
        "command": command_line(cfg, out),
    }
    write_results_json(out / "results.json", results)
    plot_pareto_fronts({cfg.method: points}, out / "front.png", ref=ref, objective_names=results["objective_names"],
                       title=f"{cfg.env_id}: {cfg.method}, {cfg.steps} steps, seed {cfg.seed} "
                             f"(HV {results['hypervolume']:.4g})", counts=False)
    return results


def command_line(cfg: ConditionedExperiment, out: Path) -> str:
    """The command that reproduces this run: every option that differs from its default (the learner
    config, the grid, the episodes, the replay override) is on it."""
    parts = ["morl-robot experiment conditioned", f"--env {cfg.env_id}", f"--steps {cfg.steps}",
             f"--seed {cfg.seed}", f"--method {cfg.method}", f"--out {out}"]
    defaults = ConditionedExperiment(env_id=cfg.env_id, steps=cfg.steps)
    if cfg.learner != defaults.learner:
        parts.append(f"--config {cfg.learner}")
    if cfg.points != defaults.points:
        parts.append(f"--points {cfg.points}")
    if cfg.eval_episodes != defaults.eval_episodes:
        parts.append(f"--eval-episodes {cfg.eval_episodes}")
    if cfg.min_size_to_sample is not None:
        parts.append(f"--min-replay {cfg.min_size_to_sample}")
    if cfg.method == "sweep":
        parts.append(f"--sweep-settings {cfg.sweep_settings}")
    if cfg.ref:
        parts.append("--ref " + " ".join(f"{r:g}" for r in cfg.ref))
    return " ".join(parts)


def format_result(results: dict[str, Any]) -> str:
    names = results["objective_names"]
    lines = [(f"{results['env']} · {results['method']} · seed {results['seed']} · {results['steps']} steps · "
              f"{results['wall_time_s']:.0f} s"),
             (f"hypervolume {results['hypervolume']:.6g} (ref {results['ref']}), "
              f"{results['pareto_points']} of {len(results['points'])} points on the front"),
             "preference → " + " / ".join(names)]
    for pref, p in zip(results["preferences"], results["points"]):
        lines.append("  " + ", ".join(f"{v:.3g}" for v in pref) + "  →  " + ", ".join(f"{v:.1f}" for v in p))
    if results.get("kl_tracking"):
        t = results["kl_tracking"]
        lines.append(f"E-step KL within 1 % of ε in {100 * t['within_1pct']:.0f} % of {t['sequences']} sequences "
                     f"(max |log KL/ε| {t['max_abs_log_ratio']:.3g})")
    return "\n".join(lines)


def report(results_files: Sequence[str | Path], out_dir: str | Path | None = None,
           ref: Sequence[float] | None = None) -> dict[str, Any]:
    """Hypervolume per method across seeds: IQM with a bootstrap 95 % CI (:func:`~morl_robot.
    evaluation.front.iqm_with_ci`), median wall time; writes ``summary.json`` and ``fronts.png``.
    ``ref``: recompute every hypervolume at this reference point instead of each run's own."""
    from morl_robot.evaluation.front import iqm_with_ci
    from morl_robot.evaluation.plots import plot_pareto_fronts

    runs = []
    for f in results_files:
        p = Path(f)
        p = p / "results.json" if p.is_dir() else p
        try:
            runs.append(json.loads(p.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise UsageError(f"cannot read conditioned results {p}: {e}") from e
    if not runs:
        raise UsageError("no results files given")
    if ref is not None:
        for r in runs:
            if len(ref) != len(r["ref"]):
                raise UsageError(f"--ref has {len(ref)} values but {r['env']} has {len(r['ref'])} objectives")
            r["ref"] = [float(v) for v in ref]
            r["hypervolume"] = hypervolume(np.asarray(r["points"], np.float64), r["ref"])
            if r.get("middle_action_policy"):
                still = np.asarray(r["middle_action_policy"]["returns"], np.float64)[None]
                r["middle_action_policy"]["hypervolume"] = hypervolume(still, r["ref"])
    envs = {r["env"] for r in runs}
    if len(envs) != 1:
        raise UsageError(f"results from different environments cannot be summarised together: {sorted(envs)}")
    methods: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        methods.setdefault(r["method"], []).append(r)
    summary: dict[str, Any] = {"env": envs.pop(), "ref": runs[0]["ref"], "methods": {}}
    still = [r["middle_action_policy"]["hypervolume"] for r in runs if r.get("middle_action_policy")]
    if still:
        summary["middle_action_policy_hypervolume"] = float(np.median(still))
    for m, rs in methods.items():
        hv = [r["hypervolume"] for r in rs]
        summary["methods"][m] = {
            "seeds": sorted(r["seed"] for r in rs), "steps": sorted({r["steps"] for r in rs}),
            "hypervolume": iqm_with_ci(hv) if len(hv) > 1 else {"iqm": hv[0], "ci_low": hv[0], "ci_high": hv[0], "n": 1},
            "hypervolume_per_seed": hv,
            "median_wall_time_s": float(np.median([r["wall_time_s"] for r in rs])),
        }
    if out_dir is not None:
        out = Path(out_dir)
        write_results_json(out / "summary.json", summary)
        pts = {f"{m} (seed {r['seed']})": r["points"] for m, rs in methods.items() for r in rs}
        plot_pareto_fronts(pts, out / "fronts.png", ref=runs[0]["ref"], objective_names=runs[0]["objective_names"],
                           title=f"{summary['env']}: fronts per method and seed", counts=False)
    return summary


def format_report(summary: dict[str, Any]) -> str:
    lines = [f"{summary['env']}: hypervolume per method (IQM [95 % CI] over seeds), reference {summary['ref']}",
             f"{'method':<12} {'seeds':<10} {'steps':<8} {'HV IQM':>10} {'CI':>24} {'wall (median)':>14}"]
    for m, s in summary["methods"].items():
        h = s["hypervolume"]
        ci = f"[{h['ci_low']:.4g}, {h['ci_high']:.4g}]" if math.isfinite(h["ci_low"]) else "-"
        lines.append(f"{m:<12} {','.join(map(str, s['seeds'])):<10} {','.join(map(str, s['steps'])):<8} "
                     f"{h['iqm']:>10.4g} {ci:>24} {s['median_wall_time_s']:>12.0f} s")
    if "middle_action_policy_hypervolume" in summary:
        lines.append(f"(one constant policy sending the middle of the action box: hypervolume "
                     f"{summary['middle_action_policy_hypervolume']:.4g})")
    return "\n".join(lines)
