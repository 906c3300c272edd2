"""Oracle (dense) vs baseline (sparse) vs PRISM on an MO-Gymnasium task (issue 38): ``morl-robot prism run``.

Per variant and seed, one MO-MPO learner (ε-conditioned by default, or one per ε setting):

* ``oracle`` — the dense environment;
* ``baseline`` — the sparse one (``p_rel`` of the PRISM config), no reward model;
* ``prism`` — sparse, densified critics from ReSymNet and SymReg, Algorithm 1's refinement:
  N random episodes → train → RL for M steps → E policy episodes → retrain (IR times);
* ``prism_no_symreg`` / ``prism_no_residual`` — the paper's ablations.

Every variant gets (IR + 1)·M environment steps of RL (PRISM's N + IR·E collection episodes come on
top and are reported).  Fronts are evaluated deterministically on the dense environment;
hypervolume at the reference (−100 per objective) beside the do-nothing (zero action) policy's, and
EUM over equally spaced weights.  Writes ``results.json`` (per run and per variant, with bootstrap
CIs over seeds), ``fronts.png`` and, for PRISM, ``prediction_<variant>_seed<s>.png`` (Fig. 5).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import UsageError
from morl_robot.prism.config import PrismConfig, load_prism_config

VARIANTS = ("oracle", "baseline", "prism", "prism_no_symreg", "prism_no_residual")
MODES = ("conditioned", "per_setting")
DEFAULT_REF = -100.0


@dataclass
class PrismExperiment:
    """What ``morl-robot prism run`` runs."""

    env_id: str = "mo-hopper-v5"
    prism: str = "mo-hopper-v5"  # config/prism name or path
    variants: list[str] = field(default_factory=lambda: ["oracle", "baseline", "prism"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    mode: str = "conditioned"
    learner: str = "conditioned_spi64"
    settings: int = 3  # per_setting: ε settings taken evenly from the grid
    points: int = 11
    eval_episodes: int = 3
    #: budget overrides of the PRISM config (None: its values, the paper's Table 8)
    steps_per_cycle: int | None = None
    refinements: int | None = None
    initial_episodes: int | None = None
    policy_episodes: int | None = None
    epochs: int | None = None
    min_replay: int | None = None  # replay.min_size_to_sample (None: min(config, M // 4))
    label: str = ""  # written into results.json (e.g. "pipeline check")
    #: torch threads (1: on a loaded 2-core machine two threads made a learner update ~5x slower)
    threads: int = 1

    def validate(self) -> None:
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad or not self.variants:
            raise UsageError(f"--variants must be among {', '.join(VARIANTS)}, got {self.variants}")
        if self.mode not in MODES:
            raise UsageError(f"--mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not self.seeds:
            raise UsageError("--seeds: at least one seed")
        for key in ("settings", "points", "eval_episodes", "threads"):
            if getattr(self, key) < 1:
                raise UsageError(f"--{key.replace('_', '-')} must be >= 1, got {getattr(self, key)}")
        for key in ("steps_per_cycle", "initial_episodes", "epochs"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise UsageError(f"--{key.replace('_', '-')} must be >= 1, got {getattr(self, key)}")
        for key in ("refinements", "policy_episodes"):
            if getattr(self, key) is not None and getattr(self, key) < 0:
                raise UsageError(f"--{key.replace('_', '-')} must be >= 0, got {getattr(self, key)}")

    def prism_config(self) -> PrismConfig:
        cfg = load_prism_config(self.prism)
        ref = dataclasses.replace(cfg.refinement, **{k: getattr(self, k) for k in
                                                     ("steps_per_cycle", "refinements", "initial_episodes",
                                                      "policy_episodes") if getattr(self, k) is not None})
        res = cfg.resymnet if self.epochs is None else dataclasses.replace(cfg.resymnet, epochs=self.epochs)
        cfg = dataclasses.replace(cfg, refinement=ref, resymnet=res)
        cfg.validate()
        return cfg


# --------------------------------------------------------------------------------------------
# environments
# --------------------------------------------------------------------------------------------


def make_env(env_id: str, p_rel: list[float] | None = None) -> Any:
    """``env_id`` from MO-Gymnasium, wrapped sparse when ``p_rel`` is given (module-level: pickles)."""
    import mo_gymnasium

    env = mo_gymnasium.make(env_id)
    if p_rel is None:
        return env
    from morl_robot.prism.sparse import SparseRewardWrapper

    return SparseRewardWrapper(env, p_rel)


class _Collector:
    """``obs -> action`` of a trained policy for data collection: stochastic, and (conditioned) under a
    fresh random preference each episode."""

    def __init__(self, policy: Any, seed: int):
        self.policy, self.rng = policy, np.random.default_rng(seed)

    def new_episode(self) -> None:
        if self.policy.preferences is not None:
            self.policy.set_preference(self.policy.preferences.sample(1, self.rng)[0])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.policy.act(np.asarray(obs, np.float32), deterministic=False)[0]


# --------------------------------------------------------------------------------------------
# one learner
# --------------------------------------------------------------------------------------------


def _learner_config(exp: PrismExperiment, steps_per_cycle: int) -> Any:
    from morl_robot.learning.config import load_learner_config

    config = load_learner_config(exp.learner)
    # the profile's observation normalisation is kept: the reflection and the reward model act on raw
    # observations either way (normalised batches carry them)
    training = dataclasses.replace(config.training, checkpoint_replay=True, eval_every=0, checkpoint_every=0,
                                   tensorboard=False)
    min_replay = exp.min_replay if exp.min_replay is not None else min(config.replay.min_size_to_sample,
                                                                       max(100, steps_per_cycle // 4))
    replay = dataclasses.replace(config.replay, min_size_to_sample=min_replay)
    config = config.replace(training=training, replay=replay)
    if exp.mode == "conditioned" and config.preferences is None:
        raise UsageError(f"--learner {exp.learner!r} is not ε-conditioned (no preferences: section); "
                         "use --mode per_setting or an ε-conditioned profile")
    return config


def _train_variant(exp: PrismExperiment, pcfg: PrismConfig, variant: str, seed: int, config: Any, run: Path,
                   p_rel: list[float]) -> dict[str, Any]:
    """RL (with Algorithm 1's refinement for the PRISM variants) → the final policy and what PRISM learned."""
    from morl_robot.learning.config import DensifyConfig, SymRegConfig
    from morl_robot.training.loop import train

    m, ir = pcfg.refinement.steps_per_cycle, pcfg.refinement.refinements
    total = (ir + 1) * m
    if variant == "oracle":
        result = train(functools.partial(make_env, exp.env_id), config, total, seed=seed, out_dir=run, progress=False)
        return {"policy": result.policy, "updates": result.updates}
    sparse_fn = functools.partial(make_env, exp.env_id, p_rel)
    if variant == "baseline":
        result = train(sparse_fn, config, total, seed=seed, out_dir=run, progress=False)
        return {"policy": result.policy, "updates": result.updates}

    from morl_robot.prism.mirror import load_mirror_map
    from morl_robot.prism.resymnet import export_densifier, train_densifier
    from morl_robot.prism.sparse import collect_episodes

    sparse = [i for i, p in enumerate(p_rel) if p < 1.0]
    dense = [i for i, p in enumerate(p_rel) if p == 1.0]
    rcfg = pcfg.resymnet if variant != "prism_no_residual" else dataclasses.replace(pcfg.resymnet, residual=False)
    model_path = run / "reward_model.pt"
    env = sparse_fn()
    episodes = collect_episodes(env, None, pcfg.refinement.initial_episodes, seed=seed * 100_003)
    densifier, reports = train_densifier(episodes, sparse, dense, rcfg, seed)
    export_densifier(densifier, model_path)
    symreg = None
    if variant != "prism_no_symreg" and pcfg.symreg_weight > 0:
        mirror = load_mirror_map(pcfg.mirror)
        mirror.check_spaces(env.observation_space, env.action_space)
        symreg = SymRegConfig(**mirror.symreg_section(pcfg.symreg_weight))
    config = config.replace(densify=DensifyConfig(objectives=sparse, model=str(model_path), mode=pcfg.densify_mode,
                                                  mix_weight=pcfg.mix_weight), symreg=symreg)
    fits = [_fit_summary(reports)]
    result = None
    for cycle in range(ir + 1):
        result = train(sparse_fn, config, (cycle + 1) * m, seed=seed, out_dir=run / "learner", progress=False)
        if cycle < ir:
            episodes += collect_episodes(env, _Collector(result.policy, seed + cycle), pcfg.refinement.policy_episodes,
                                         seed=seed * 100_003 + 50_000 * (cycle + 1))
            densifier, reports = train_densifier(episodes, sparse, dense, rcfg, seed + cycle + 1)
            export_densifier(densifier, model_path)  # the learner re-reads it: later samples relabelled
            fits.append(_fit_summary(reports))
    assert result is not None
    held_out = collect_episodes(env, _Collector(result.policy, seed + 999), 5, seed=seed * 100_003 + 900_000)
    env.close()
    symreg_stat = [row.get("loss/symreg") for row in result.metrics if "loss/symreg" in row]
    return {"policy": result.policy, "updates": result.updates, "densifier": densifier, "held_out": held_out,
            "sparse": sparse, "fits": fits, "collected_episodes": len(episodes),
            "last_symreg_loss": float(symreg_stat[-1]) if symreg_stat else None}


def _fit_summary(reports: dict[int, list[Any]]) -> dict[str, Any]:
    return {str(k): [dataclasses.asdict(r) for r in reps] for k, reps in reports.items()}


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


def eum(points: np.ndarray, weights: np.ndarray) -> float:
    """Expected utility (Zintgraf et al. 2015): ``mean_w max_p w·p`` for points ``[P, K]``, weights ``[W, K]``."""
    return float(np.mean(np.max(np.asarray(weights) @ np.asarray(points).T, axis=1)))


def _evaluate(policies: list[Any], env_fn: Callable[[], Any], episodes: int, seed: int) -> np.ndarray:
    from morl_robot.training.loop import evaluate

    return np.stack([evaluate(p, env_fn, episodes, seed=seed) for p in policies])


def _bootstrap(values: list[float], seed: int = 0, resamples: int = 2000) -> dict[str, Any]:
    v = np.asarray(values, np.float64)
    rng = np.random.default_rng(seed)
    means = rng.choice(v, size=(resamples, len(v)), replace=True).mean(axis=1)
    return {"median": float(np.median(v)), "mean": float(v.mean()), "values": v.tolist(),
            "ci95_of_mean": [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]}


def _run_one(exp: PrismExperiment, pcfg: PrismConfig, variant: str, seed: int, out: Path, p_rel: list[float],
             k: int) -> tuple[dict[str, Any], np.ndarray]:
    from morl_robot.evaluation.hypervolume import hypervolume
    from morl_robot.learning.preferences import PreferenceSpace

    base = _learner_config(exp, pcfg.refinement.steps_per_cycle)
    dense_fn = functools.partial(make_env, exp.env_id)
    eval_seed = 10_000 + seed
    names = [f"objective_{i}" for i in range(k)]
    run = out / "runs" / variant / f"seed{seed}"
    info: dict[str, Any] = {}
    if exp.mode == "conditioned":
        space = PreferenceSpace.from_config(base.preferences, names)
        trained = _train_variant(exp, pcfg, variant, seed, base, run, p_rel)
        grid = space.grid(max(exp.points, base.preferences.eval_points))
        points = _evaluate([trained["policy"].with_preference(e) for e in grid], dense_fn, exp.eval_episodes, eval_seed)
        prefs, updates, last = grid.tolist(), trained["updates"], trained
    else:
        space = PreferenceSpace.from_config(base.preferences, names) if base.preferences is not None else None
        if space is None:
            raise UsageError("--mode per_setting takes its ε settings from the learner's preference box: "
                             "give an ε-conditioned --learner profile")
        full = space.grid(max(exp.points, exp.settings))
        settings = full[np.unique(np.round(np.linspace(0, len(full) - 1, exp.settings)).astype(int))]
        plain = base.replace(preferences=None)
        pts, updates = [], 0
        for i, eps in enumerate(settings):
            last = _train_variant(exp, pcfg, variant, seed, plain.replace(epsilons=[float(e) for e in eps]),
                                  run / f"setting{i}", p_rel)
            pts.append(_evaluate([last["policy"]], dense_fn, exp.eval_episodes, eval_seed)[0])
            updates += last["updates"]
        points, prefs = np.stack(pts), settings.tolist()
    if "densifier" in last:
        info = _diagnostics(exp, last, out, variant, seed)
    ref = [DEFAULT_REF] * k
    from morl_robot.evaluation.epic import weight_grid

    row = {"variant": variant, "seed": seed, "points": points.tolist(), "preferences": prefs,
           "hypervolume": hypervolume(points, ref), "eum": eum(points, weight_grid(k, 11)),
           "updates": updates, **info}
    for key in ("fits", "collected_episodes", "last_symreg_loss"):
        if key in last:
            row[key] = last[key]
    return row, points


def _diagnostics(exp: PrismExperiment, trained: dict[str, Any], out: Path, variant: str, seed: int) -> dict[str, Any]:
    from morl_robot.prism.diagnostics import (
        epic_learned_vs_true,
        plot_prediction,
        predict,
        prediction_quality,
    )

    densifier, held, diag = trained["densifier"], trained["held_out"], {}
    for col, k in enumerate(trained["sparse"]):
        q = prediction_quality(densifier, held, col, k)
        longest = max(held, key=len)
        name = f"prediction_{variant}_seed{seed}_objective{k}.png"
        plot_prediction(q, predict(densifier, longest)[:, col], longest.true_rewards[:, k], out / name,
                        f"{exp.env_id}, {variant}, seed {seed}: objective {k} (held-out policy episodes)")
        try:
            epic = epic_learned_vs_true(densifier, exp.env_id, held, col, seed=seed)
        except ValueError as e:  # e.g. a channel constant over too little coverage
            epic = {"error": str(e)}
        diag[f"objective_{k}"] = {**q.summary(), "plot": name, "epic": epic}
    return {"reward_model": diag}


def run(exp: PrismExperiment, out_dir: str | Path, progress: bool = True, command: str = "") -> dict[str, Any]:
    """All variants × seeds (seed-major); writes ``out_dir/results.json`` and ``fronts.png`` after
    every run (``complete: false`` until the last)."""
    from morl_robot.training.loop import evaluate, num_objectives_of

    exp.validate()
    pcfg = exp.prism_config()
    import torch

    torch.set_num_threads(exp.threads)
    try:
        probe = make_env(exp.env_id)
    except Exception as e:  # gymnasium's NameNotFound, a missing MuJoCo asset …
        raise UsageError(f"--env {exp.env_id!r}: cannot make the environment ({type(e).__name__}: {e})") from e
    k = num_objectives_of(probe)
    dim = int(np.prod(probe.action_space.shape))
    probe.close()
    p_rel = pcfg.release_probabilities(k)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    # seed-major: an interrupted run still has every variant on its first seeds
    jobs = [(v, s) for s in exp.seeds for v in exp.variants]
    ref = [DEFAULT_REF] * k
    zero = np.zeros(dim, np.float32)
    still = np.stack([evaluate(lambda obs: zero, functools.partial(make_env, exp.env_id), exp.eval_episodes,
                               seed=10_000 + s) for s in exp.seeds]).mean(axis=0)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), unit="run", desc="prism", dynamic_ncols=True)
    rows: list[dict[str, Any]] = []
    fronts: dict[str, list[np.ndarray]] = {}
    try:
        for variant, seed in jobs:
            if bar is not None:
                bar.set_postfix_str(f"{variant} seed {seed}")
            row, points = _run_one(exp, pcfg, variant, seed, out, p_rel, k)
            rows.append(row)
            fronts.setdefault(variant, []).append(points)
            if len(rows) < len(jobs):  # partial results after every run (complete: false)
                _write(exp, pcfg, p_rel, ref, still, rows, fronts, out, start, command, complete=False)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return _write(exp, pcfg, p_rel, ref, still, rows, fronts, out, start, command, complete=True)


def _write(exp: PrismExperiment, pcfg: PrismConfig, p_rel: list[float], ref: list[float], still: np.ndarray,
           rows: list[dict[str, Any]], fronts: dict[str, list[np.ndarray]], out: Path, start: float, command: str,
           complete: bool) -> dict[str, Any]:
    """``results.json`` and ``fronts.png`` of the runs so far."""
    from morl_robot.evaluation.hypervolume import hypervolume
    from morl_robot.evaluation.plots import plot_pareto_fronts
    from morl_robot.evaluation.provenance import write_results_json

    done = [v for v in exp.variants if v in fronts]
    summary = {v: {"hypervolume": _bootstrap([r["hypervolume"] for r in rows if r["variant"] == v]),
                   "eum": _bootstrap([r["eum"] for r in rows if r["variant"] == v])} for v in done}
    results = {
        "label": exp.label, "complete": complete, "env": exp.env_id, "mode": exp.mode, "variants": exp.variants,
        "seeds": exp.seeds,
        "p_rel": p_rel, "ref": ref, "learner": exp.learner, "torch_threads": exp.threads,
        "observation_normalization": _learner_config(exp, pcfg.refinement.steps_per_cycle).training.observation_normalization,
        "budget": {"steps_per_cycle": pcfg.refinement.steps_per_cycle, "refinements": pcfg.refinement.refinements,
                   "rl_steps_per_run": (pcfg.refinement.refinements + 1) * pcfg.refinement.steps_per_cycle,
                   "initial_episodes": pcfg.refinement.initial_episodes,
                   "policy_episodes": pcfg.refinement.policy_episodes, "resymnet_epochs": pcfg.resymnet.epochs,
                   "eval_episodes": exp.eval_episodes},
        "prism_config": dataclasses.asdict(pcfg),
        "do_nothing_policy": {"returns": still.tolist(), "hypervolume": hypervolume(still[None], ref)},
        "summary": summary, "runs": rows, "wall_time_s": time.monotonic() - start, "command": command,
    }
    write_results_json(out / "results.json", results)
    seeds = len({r["seed"] for r in rows})
    plot_pareto_fronts({v: np.concatenate(p) for v, p in fronts.items()} | {"do nothing": still[None]},
                       out / "fronts.png", ref=ref,
                       title=f"{exp.env_id}: {', '.join(done)} ({seeds} seeds) {exp.label}".strip(), counts=False)
    return results


def format_summary(results: dict[str, Any]) -> str:
    lines = [(f"{results['env']} ({results['mode']}, {len(results['seeds'])} seeds, "
             f"{results['budget']['rl_steps_per_run']} RL steps per run){' — ' + results['label'] if results['label'] else ''}"),
             f"do-nothing policy: HV {results['do_nothing_policy']['hypervolume']:.4g} at ref {results['ref'][0]:g}"]
    for v, s in results["summary"].items():
        hv, ue = s["hypervolume"], s["eum"]
        lines.append(f"{v:>18}: HV median {hv['median']:.4g} (mean {hv['mean']:.4g}, 95% CI {hv['ci95_of_mean'][0]:.4g}–"
                     f"{hv['ci95_of_mean'][1]:.4g}); EUM median {ue['median']:.4g}")
    by = {(r["variant"], r["seed"]): r["hypervolume"] for r in results["runs"]}
    for a, b in (("prism", "baseline"), ("prism", "oracle"), ("baseline", "oracle")):
        seeds = [s for s in results["seeds"] if (a, s) in by and (b, s) in by]
        if seeds:
            d = _bootstrap([by[(a, s)] - by[(b, s)] for s in seeds])
            lines.append(f"HV {a} − {b}, paired by seed ({len(seeds)}): {', '.join(f'{by[(a, s)] - by[(b, s)]:.3g}' for s in seeds)}"
                         f"; mean {d['mean']:.3g} (95% CI {d['ci95_of_mean'][0]:.3g}–{d['ci95_of_mean'][1]:.3g})")
    for r in results["runs"]:
        for key, d in (r.get("reward_model") or {}).items():
            epic = d.get("epic") or {}
            lines.append(f"{r['variant']} seed {r['seed']} {key}: predicted vs true per-step r = {d['correlation']:.3f}"
                         + (f", EPIC {epic['distance']:.3f}" if "distance" in epic else ""))
    return "\n".join(lines)


def load_results(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def recheck(results: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``results`` with each run's hypervolume (at its reference) and EUM recomputed from its
    evaluated front, the do-nothing policy's too, and the per-variant summaries rebuilt; and the
    values that differ from the stored ones (relative 1e-6) as lines naming the run."""
    from morl_robot.evaluation.epic import weight_grid
    from morl_robot.evaluation.hypervolume import hypervolume

    ref, bad = results["ref"], []
    runs = []
    for r in results["runs"]:
        points = np.asarray(r["points"], np.float64)
        new = {**r, "hypervolume": hypervolume(points, ref), "eum": eum(points, weight_grid(points.shape[1], 11))}
        for key in ("hypervolume", "eum"):
            if not np.isclose(new[key], r[key], rtol=1e-6, atol=1e-9):
                bad.append(f"{r['variant']} seed {r['seed']}: {key} {r[key]:.6g} stored, {new[key]:.6g} recomputed")
        runs.append(new)
    still = dict(results["do_nothing_policy"])
    still["hypervolume"] = hypervolume(np.asarray(still["returns"], np.float64)[None], ref)
    if not np.isclose(still["hypervolume"], results["do_nothing_policy"]["hypervolume"], rtol=1e-6):
        bad.append(f"do-nothing policy: hypervolume {results['do_nothing_policy']['hypervolume']:.6g} stored, "
                   f"{still['hypervolume']:.6g} recomputed")
    variants = [v for v in results["variants"] if any(r["variant"] == v for r in runs)]
    summary = {v: {"hypervolume": _bootstrap([r["hypervolume"] for r in runs if r["variant"] == v]),
                   "eum": _bootstrap([r["eum"] for r in runs if r["variant"] == v])} for v in variants}
    return {**results, "runs": runs, "do_nothing_policy": still, "summary": summary}, bad
