"""ButtonWorld with multi-objective reward machines (MORM paper, appendix A–B): exact fronts, and
MO-MPO with and without counterfactual experience (CRM).

Domain: :mod:`morl_robot.envs.button_world` (5×5 grid, start (0, 0), button A at (1, 3), B at
(3, 1)); objectives from the reward machines ``config/reward_machines/button_world/abb_*.yaml``
and ``baa_*.yaml`` (variants term / once / cycle, paper Figs. 10–11); γ = 0.99, 200-step
episodes.  Variant pairs X-Y (X for abb, Y for baa): term-term, once-once, term-cycle,
once-cycle, cycle-cycle (paper §B.1–B.5).

Per pair the experiment records

* ``product_states``: non-terminal MORM states (the paper: 5 for term-term instead of 9),
* the exact Pareto front of discounted returns over the 200-step episode
  (:func:`~morl_robot.evaluation.exact_front.pareto_front_exact`),
* for MO-MPO without and with CRM (``replay.crm``, with ``crm_scale_updates``: each real step
  adds |U \\ F| experiences, so the learner makes |U \\ F| times the updates per environment step,
  as the paper's PQL-CRM; learner, environment steps and seeds are otherwise identical): per seed, one policy per ε setting (MO-MPO's preferences), each evaluated every
  ``eval_every`` steps by a deterministic 200-step episode (discounted return); the learned front
  at a step is the non-dominated set of those returns over the ε settings.  Learning curves of
  its hypervolume (reference point −0.5 per objective, as the paper) and expected utility (EUM,
  50 evenly spaced weights, as the paper); the area under the EUM curve relative to the exact
  front's EUM summarises sample efficiency (the paper's finding: CRM learns faster).

The paper's learner is Pareto Q-learning (tabular, one run gives a whole front); MO-MPO gives one
policy per ε, so a front needs one run per ε setting.  Runs are cached under ``DIR/runs`` (a
re-run resumes: finished runs are read back).
"""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from morl_robot.envs.button_world import SIZE, START, ButtonWorld
from morl_robot.errors import UsageError
from morl_robot.evaluation.exact_front import (
    linear_front,
    pareto_front_exact,
    tabular_product,
)
from morl_robot.evaluation.hypervolume import hypervolume
from morl_robot.evaluation.pareto import expected_utility, pareto_front, simplex_weights
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.records import write_json_atomic
from morl_robot.reward_machines import ProductMachine, build_product, load_machine
from morl_robot.reward_machines.env import RewardMachineEnv

__all__ = [
    "GAMMA",
    "HORIZON",
    "PAIRS",
    "REFERENCE_POINT",
    "Budget",
    "exact_front",
    "format_table",
    "make_env",
    "product_for",
    "run_experiment",
]

PAIRS: tuple[str, ...] = ("term-term", "once-once", "term-cycle", "once-cycle", "cycle-cycle")
VARIANTS = ("term", "once", "cycle")
GAMMA = 0.99
HORIZON = 200
#: the paper's hypervolume reference point V_ref = −0.5 (per objective)
REFERENCE_POINT = (-0.5, -0.5)
#: EUM weights: 50 uniformly spaced linear scalarisations (paper A.2)
EUM_WEIGHTS = simplex_weights(2, 49)


def _split(pair: str) -> tuple[str, str]:
    x, _, y = pair.partition("-")
    if x not in VARIANTS or y not in VARIANTS:
        raise ValueError(f"unknown ButtonWorld pair {pair!r}; pairs are X-Y with X, Y in {', '.join(VARIANTS)}")
    return x, y


def product_for(pair: str) -> ProductMachine:
    """The MORM of abb_X × baa_Y."""
    x, y = _split(pair)
    return build_product([load_machine(f"button_world/abb_{x}"), load_machine(f"button_world/baa_{y}")])


def make_env(pair: str = "term-term", max_steps: int = HORIZON) -> RewardMachineEnv:
    """The product environment (Gymnasium ids ``morl_robot/ButtonWorld-<pair>-v0``)."""
    return RewardMachineEnv(ButtonWorld(max_steps), product_for(pair))


def exact_front(pair: str, max_points: int = 200) -> dict[str, Any]:
    product = product_for(pair)
    cells = [(x, y) for x in range(SIZE) for y in range(SIZE)]
    model = tabular_product(cells, START, 4, ButtonWorld.move, lambda s, a, s2: ButtonWorld.labels_of(s2), product)
    res = pareto_front_exact(model, GAMMA, HORIZON, max_points=max_points)
    convex = linear_front(model, GAMMA, HORIZON, EUM_WEIGHTS)
    return {"front": res.front, "exact": res.exact, "product_mdp_states": model.num_states,
            "convex_coverage": pareto_front(convex)}


@dataclass(frozen=True)
class Budget:
    steps: int = 50_000
    eval_every: int = 1_000
    seeds: tuple[int, ...] = (0, 1, 2)
    epsilons: tuple[tuple[float, float], ...] = ((0.05, 0.005), (0.02, 0.02), (0.005, 0.05))
    quick: bool = False


def learner_config(epsilons: Sequence[float], crm: bool, budget: Budget, names: Sequence[str]) -> Any:
    """MO-MPO for the tabular product MDP: small networks, exact enumeration of the four actions,
    Retrace sequences of 5, γ = 0.99 (the same for both arms except ``replay.crm``)."""
    from morl_robot.learning.config import (
        MPOConfig,
        NetworkConfig,
        ReplayConfig,
        TrainingConfig,
    )

    quick = budget.quick
    return MPOConfig(
        algorithm="mo_mpo", objective_names=list(names), epsilons=list(epsilons),
        networks=NetworkConfig(policy_hidden=[64] if quick else [64, 64], critic_hidden=[64] if quick else [128, 128]),
        replay=ReplayConfig(capacity=100_000, samples_per_insert=4.0, min_size_to_sample=200 if quick else 500,
                            error_buffer=256.0, crm=crm),
        training=TrainingConfig(eval_every=budget.eval_every, eval_episodes=1, checkpoint_every=0, log_every=50,
                                tensorboard=False),
        batch_size=32, sequence_length=5, target_update_period=50, epsilon_categorical=0.01,
        policy_lr=1e-3, critic_lr=1e-3, discount=GAMMA,
    )


def discounted_return(policy: Any, pair: str) -> NDArray[np.float64]:
    """One deterministic 200-step episode (the domain is deterministic): Σ_t γ^t r_t (d,)."""
    env = make_env(pair)
    obs, _ = env.reset(seed=0)
    total = np.zeros(env.reward_dim)
    discount = 1.0
    for _ in range(HORIZON):
        obs, r, terminated, truncated, _ = env.step(policy(np.asarray(obs, np.float32)))
        total += discount * np.asarray(r, np.float64)
        discount *= GAMMA
        if terminated or truncated:
            break
    return total


def train_run(pair: str, epsilons: Sequence[float], crm: bool, seed: int, budget: Budget) -> dict[str, Any]:
    """One MO-MPO run; returns its evaluation curve [(step, return (d,))] and wall time."""
    from morl_robot.training.loop import train

    product = product_for(pair)
    config = learner_config(epsilons, crm, budget, product.objective_names)
    t0 = time.monotonic()
    result = train(lambda: make_env(pair), config, total_steps=budget.steps, seed=seed, out_dir=None, progress=False,
                   eval_fn=lambda policy: discounted_return(policy, pair))
    return {"pair": pair, "epsilons": list(epsilons), "crm": crm, "seed": seed, "steps": budget.steps,
            "crm_scale_updates": config.replay.crm_scale_updates if crm else None,
            "curve": [[int(s), np.asarray(r, float).tolist()] for s, r in result.evaluations],
            "updates": result.updates, "wall_time_s": time.monotonic() - t0}


def front_metrics(points: NDArray[np.float64]) -> dict[str, float]:
    return {"hypervolume": hypervolume(points, REFERENCE_POINT), "eum": expected_utility(points, EUM_WEIGHTS)}


def _arm_summary(runs: list[dict[str, Any]], exact_eum: float, seeds: Sequence[int],
                 runs_per_seed: int) -> dict[str, Any]:
    """Curves and final fronts of one arm (with or without CRM) over the seeds that have all their
    ``runs_per_seed`` ε runs (a seed's front is over its ε runs; a partial one would understate it)."""
    per_seed = []
    for seed in seeds:
        mine = [r for r in runs if r["seed"] == seed]
        if len(mine) < runs_per_seed:
            continue
        steps = sorted({s for r in mine for s, _ in r["curve"]})
        curve = []
        for step in steps:
            pts = np.array([{s: v for s, v in r["curve"]}[step] for r in mine
                            if step in {s: v for s, v in r["curve"]}])
            curve.append({"step": step, **front_metrics(pts), "front": pareto_front(pts).tolist()})
        eum = np.array([c["eum"] for c in curve])
        per_seed.append({"seed": seed, "curve": curve, "final_front": curve[-1]["front"],
                         "final_eum": float(eum[-1]), "final_hypervolume": curve[-1]["hypervolume"],
                         # mean EUM over the evaluations / the exact front's EUM: 1 = optimal from the start
                         "eum_auc_ratio": float(eum.mean() / exact_eum) if exact_eum > 0 else None,
                         "wall_time_s": float(sum(r["wall_time_s"] for r in mine))})
    finals = np.array([p["final_eum"] for p in per_seed]) if per_seed else np.zeros(0)
    aucs = np.array([p["eum_auc_ratio"] for p in per_seed if p["eum_auc_ratio"] is not None])
    return {"seeds": per_seed,
            "final_eum_median": float(np.median(finals)) if finals.size else None,
            "eum_auc_ratio_median": float(np.median(aucs)) if aucs.size else None,
            "front": pareto_front(np.array([pt for p in per_seed for pt in p["final_front"]])).tolist()
            if per_seed else []}


def _cached_run(path: Path, budget: Budget, eps: Sequence[float], crm: bool) -> tuple[dict[str, Any] | None, str | None]:
    """A cached run's record if it was trained at ``budget`` (steps, ε and, with CRM, scaled
    updates), else ``None``; and why a file that exists was not taken (``None`` if it was or there
    is none): an unreadable file or a different budget."""
    if not path.exists():
        return None, None
    try:
        run = json.loads(path.read_text())
        steps, epsilons, scaled = run.get("steps"), run.get("epsilons"), run.get("crm_scale_updates")
    except (ValueError, OSError, AttributeError) as e:
        return None, f"unreadable ({type(e).__name__}: {e})"
    if steps != budget.steps or epsilons != list(eps) or (crm and scaled is not True):
        return None, f"another budget (steps {steps}, epsilons {epsilons}, crm_scale_updates {scaled})"
    return run, None


def run_experiment(out_dir: str | Path, budget: Budget = Budget(), pairs: Sequence[str] = PAIRS,
                   learn: bool = True, progress: bool = True, finished_only: bool = False) -> dict[str, Any]:
    """Exact fronts and (``learn``) MO-MPO with/without CRM for every pair; writes results.json and plots.

    ``finished_only``: train nothing; summarise the runs already cached in ``DIR/runs`` (a sweep
    that spans several sittings) and list the missing ones per pair (``missing_runs``)."""
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    results: dict[str, Any] = {"gamma": GAMMA, "horizon": HORIZON, "reference_point": list(REFERENCE_POINT),
                               "eum_weights": len(EUM_WEIGHTS), "budget": {
                                   "steps": budget.steps, "eval_every": budget.eval_every, "seeds": list(budget.seeds),
                                   "epsilons": [list(e) for e in budget.epsilons], "quick": budget.quick},
                               "product_states": {}, "pairs": {}}
    jobs = [(pair, eps, crm, seed) for pair in pairs for crm in (False, True) for seed in budget.seeds
            for eps in budget.epsilons] if learn else []
    bar, counted = None, 0
    if progress and jobs and not finished_only:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), unit="run", dynamic_ncols=True)
    for pair in pairs:
        product = product_for(pair)
        results["product_states"][pair] = product.num_nonterminal
        ex = exact_front(pair)
        exact_eum = expected_utility(ex["front"], EUM_WEIGHTS)
        entry: dict[str, Any] = {
            "objectives": list(product.objective_names),
            "product_states": product.num_nonterminal, "product_states_reachable": product.num_states,
            "product_mdp_states": ex["product_mdp_states"],
            "exact_front": ex["front"].tolist(), "exact_front_is_exact": ex["exact"],
            "convex_coverage": ex["convex_coverage"].tolist(),
            "exact": front_metrics(ex["front"]),
        }
        if learn:
            arms: dict[str, list[dict[str, Any]]] = {"without_crm": [], "with_crm": []}
            missing: list[str] = []
            mismatched: dict[str, str] = {}
            for crm in (False, True):
                for seed in budget.seeds:
                    for i, eps in enumerate(budget.epsilons):
                        name = f"{'crm' if crm else 'plain'}/eps{i}_seed{seed}"
                        path = out / "runs" / pair / f"{name}.json"
                        run, problem = _cached_run(path, budget, eps, crm)
                        if problem is not None:
                            mismatched[name] = problem
                        if run is None and finished_only:
                            missing.append(name)
                            continue
                        if run is None:  # not run yet, or at another budget, or unreadable: train (again)
                            if bar is not None:
                                bar.set_description(f"{pair} {name}")
                            run = train_run(pair, eps, crm, seed, budget)
                            write_json_atomic(path, run)
                        arms["with_crm" if crm else "without_crm"].append(run)
                        counted += 1
                        if bar is not None:
                            bar.update(1)
            n = len(budget.epsilons)
            entry["without_crm"] = _arm_summary(arms["without_crm"], exact_eum, budget.seeds, n)
            entry["with_crm"] = _arm_summary(arms["with_crm"], exact_eum, budget.seeds, n)
            entry["front_without_crm"] = entry["without_crm"]["front"]
            entry["front_with_crm"] = entry["with_crm"]["front"]
            entry["missing_runs"] = missing
            if finished_only:  # cached runs that exist but were not counted, and why
                entry["mismatched_runs"] = mismatched
        results["pairs"][pair] = entry
        if not finished_only:  # a long sweep's partial summary survives an interruption
            write_results_json(out / "results.json", results)
    if bar is not None:
        bar.close()
    if finished_only and not counted:  # nothing to summarise: keep the results.json that is there
        raise UsageError(f"--finished-only: no run in {out / 'runs'} matches this budget ({budget.steps} steps, "
                         f"seeds {list(budget.seeds)}, pairs {list(pairs)}); nothing written. "
                         f"Mismatched: {sum(len(e.get('mismatched_runs', {})) for e in results['pairs'].values())}")
    results["wall_time_s"] = time.monotonic() - t0
    write_results_json(out / "results.json", results)
    _plots(results, out)
    return results


def _plots(results: dict[str, Any], out: Path) -> None:
    from morl_robot.evaluation.plots import _colour, _save, plot_pareto_fronts, plt
    from morl_robot.reward_machines.diagram import plot_product_machine

    for pair, entry in results["pairs"].items():
        plot_product_machine(product_for(pair), out / "plots" / f"morm_{pair}.png")
        points = {}
        if "with_crm" in entry:
            points = {"MO-MPO": np.array(entry["front_without_crm"] or np.zeros((0, 2))),
                      "MO-MPO + CRM": np.array(entry["front_with_crm"] or np.zeros((0, 2)))}
        plot_pareto_fronts(points, out / "plots" / f"front_{pair}.png", ref=REFERENCE_POINT,
                           objective_names=entry["objectives"], true_front=np.array(entry["exact_front"]),
                           title=f"ButtonWorld {pair}: exact front (200 steps, γ=0.99) and learned fronts")
    learned = [p for p, e in results["pairs"].items() if "with_crm" in e]
    if not learned:
        return
    fig, axes = plt.subplots(2, len(learned), figsize=(3.4 * len(learned), 5.6), squeeze=False)
    for j, pair in enumerate(learned):
        entry = results["pairs"][pair]
        for row, metric in enumerate(("eum", "hypervolume")):
            ax = axes[row, j]
            for c, arm in enumerate(("without_crm", "with_crm")):
                curves = [[pt[metric] for pt in s["curve"]] for s in entry[arm]["seeds"]]
                if not curves:
                    continue
                steps = [pt["step"] for pt in entry[arm]["seeds"][0]["curve"]]
                n = min(len(cv) for cv in curves)
                arr = np.array([cv[:n] for cv in curves])
                label = "MO-MPO + CRM" if arm == "with_crm" else "MO-MPO"
                ax.plot(steps[:n], np.median(arr, 0), color=_colour(c), label=label)
                ax.fill_between(steps[:n], arr.min(0), arr.max(0), color=_colour(c), alpha=0.2)
            ax.axhline(entry["exact"][metric], color="k", ls="--", lw=0.8, label="exact")
            ax.set_title(pair if row == 0 else "", fontsize=9)
            ax.set_xlabel("environment steps" if row == 1 else "")
            if j == 0:
                ax.set_ylabel("EUM (50 weights)" if metric == "eum" else "hypervolume (ref −0.5)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("ButtonWorld: learned fronts over training (median, min–max over seeds)", fontsize=10)
    _save(fig, out / "plots" / "learning_curves.png")


def format_table(results: dict[str, Any]) -> str:
    lines = [("| pair | non-terminal MORM states | exact front (points) | exact EUM | final EUM MO-MPO | final EUM + CRM | "
             "EUM AUC/exact MO-MPO | EUM AUC/exact + CRM | seeds MO-MPO / + CRM |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for pair, e in results["pairs"].items():
        def f(arm: str, key: str, e: dict[str, Any] = e) -> str:
            v = e.get(arm, {}).get(key)
            return "—" if v is None else f"{v:.3f}"
        lines.append(f"| {pair} | {e['product_states']} | {len(e['exact_front'])}"
                     f"{'' if e['exact_front_is_exact'] else ' (thinned)'} | {e['exact']['eum']:.3f} | "
                     f"{f('without_crm', 'final_eum_median')} | {f('with_crm', 'final_eum_median')} | "
                     f"{f('without_crm', 'eum_auc_ratio_median')} | {f('with_crm', 'eum_auc_ratio_median')} | "
                     f"{len(e.get('without_crm', {}).get('seeds', []))} / {len(e.get('with_crm', {}).get('seeds', []))} |")
    return "\n".join(lines)
