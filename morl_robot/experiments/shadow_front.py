"""Shadow Hand fronts (MO-MPO paper §6.2, Fig. 6 and Table 1): MO-MPO over an ε sweep against
scalarized MPO over a weight sweep, at equal budget, on ``shadow_touch`` / ``shadow_turn``; and the
orient check (``shadow_orient``: MO-MPO against the random policy on three aligned objectives).

Touch and turn have two competing objectives, ``task`` (sparse, 1 on success) and ``pain`` (≤ 0).

* **MO-MPO**: one policy per ε_pain (ε_task fixed), ``epsilons = [ε_task, ε_pain]``;
* **scalarized MPO**: one policy per pain weight w, ``scalarization_weights = [1 − w, w]`` and one
  E-step bound ``scalarized_epsilon``;

each for every seed, with the same learner YAML and the same environment steps per run (the
budget is equal by construction: same settings count, seeds and ``steps``).  Every policy is
exported to ONNX under the task's contract and evaluated with the protocol
(:mod:`morl_robot.evaluation.protocol`: deterministic episodes on fixed seeds, the safety rules in
the loop).  The sweep **resumes** (:func:`morl_robot.evaluation.sweep.run_sweep` over
:func:`train_and_evaluate`): a run whose ``eval.json`` is at the sweep's budget is skipped, an
interrupted run continues from its newest checkpoint.

Hypervolume as in the paper (Table 1, footnote 7): the front is plotted and measured in
(**discounted** task return, γ = 0.99, pain return) — "Task reward is discounted for touch and
turn, with a discount factor of 0.99" (Fig. 6) — with the reference point the paper writes
[0, 20], i.e. task 0 and pain −20 in our sign convention (pain ≤ 0), so a front's hypervolume is
at most 1 × 20 = 20.  The discounted task return of an evaluation episode is γ^(T−1) when it
succeeds at step T (the sparse reward arrives once, on the success step), else 0.

Orient: the paper's reference point is the zero vector; the three objectives are aligned, so the
check is per objective: the MO-MPO policies' mean return against the random policy's under the same
protocol and seeds, with bootstrap CIs.

Outputs (small; commit them under ``results/<task>_front/``): ``results.json`` (budget, learner
settings, per run its ``EVAL``; per algorithm the front report of
:func:`morl_robot.evaluation.front.front_report` — per-seed hypervolume, EUM, sparsity and their IQM
with bootstrap CIs across seeds — and the hypervolume of all its policies pooled),
``policies/<algorithm>/<setting>_seed<s>.onnx`` and ``plots/front.png`` (every policy, marked with
its ε or weight).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import UsageError
from morl_robot.evaluation.provenance import write_results_json
from morl_robot.records import write_json_atomic

TASKS = ("shadow_touch", "shadow_turn", "shadow_orient")  # the package's; front_tasks() adds plugin hand tasks


def front_tasks() -> tuple[str, ...]:
    """The tasks a Shadow Hand front runs on: every registered task on the ``shadow_hand`` robot."""
    from morl_robot.tasks.registry import task_class, task_names

    return tuple(n for n in task_names() if task_class(n).robot_name == "shadow_hand")


def aligned(task: str) -> bool:
    """Whether ``task``'s objectives are aligned (its ``tradeoff`` is None, e.g. shadow_orient): one ε
    on every objective, MO-MPO against the random policy, the front over the undiscounted returns."""
    from morl_robot.tasks.registry import task_class

    return task_class(task).tradeoff is None
ALGORITHMS = ("mo-mpo", "scalarized-mpo")
DEFAULT_LEARNER = "learner/shadow_front.yaml"
DISCOUNT = 0.99  # the paper's discount of the task reward in Fig. 6 / Table 1
PAIN_REFERENCE = -20.0  # the paper's [0, 20] reference point, pain as a (≤ 0) return

#: --quick: a smoke run of the whole pipeline (tiny networks, updates after 64 transitions)
QUICK_OVERRIDES: dict[str, Any] = {
    "networks": {"policy_hidden": [32], "critic_hidden": [32]},
    "replay": {"min_size_to_sample": 64, "samples_per_insert": 4.0, "error_buffer": 256.0},
    "batch_size": 16, "num_samples": 4,
    "training": {"eval_every": 0, "checkpoint_every": 0, "tensorboard": False},
}


@dataclass
class ShadowFrontConfig:
    """What a sweep trains and how it is evaluated."""

    task: str = "shadow_touch"
    eps_task: float = 0.1
    #: MO-MPO settings: ε_pain (touch/turn); orient: one ε shared by its three objectives
    eps_pain: list[float] = field(default_factory=lambda: [0.001, 0.01, 0.03, 0.1])
    #: scalarized MPO settings: the pain weight w in [1 − w, w]
    weights_pain: list[float] = field(default_factory=lambda: [0.01, 0.05, 0.2, 0.5])
    scalarized_epsilon: float = 0.1
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    steps: int = 20_000
    learner_config: str = DEFAULT_LEARNER
    eval_episodes: int = 20
    eval_seed: int = 10_000
    parallel: int = 1
    algorithms: list[str] = field(default_factory=lambda: list(ALGORITHMS))
    quick: bool = False
    #: how the hand's actions are read (task config ``action_mode``): None = the task YAML's
    #: (absolute motor targets), "delta" = changes of the targets from the measured positions
    action_mode: str | None = None

    @property
    def task_overrides(self) -> dict[str, Any]:
        """Task-config overrides of every environment of the sweep (training, demonstrator,
        evaluation, random baseline)."""
        return {} if self.action_mode is None else {"action_mode": self.action_mode}

    def validate(self) -> None:
        if self.task not in front_tasks():
            raise UsageError(f"--task: unknown {self.task!r}; allowed: {', '.join(front_tasks())}")
        unknown = sorted(set(self.algorithms) - set(ALGORITHMS))
        if unknown or not self.algorithms:
            raise UsageError(f"--algorithms: unknown {unknown}; allowed: {', '.join(ALGORITHMS)}")
        if aligned(self.task) and self.algorithms != ["mo-mpo"]:
            raise UsageError(f"{self.task}: the orient check (aligned objectives) trains MO-MPO only (--algorithms mo-mpo)")
        if not self.eps_pain or any(not (e > 0 and math.isfinite(e)) for e in self.eps_pain):
            raise UsageError(f"--epsilon pain=…: give finite values > 0, got {self.eps_pain}")
        if not (self.eps_task > 0 and math.isfinite(self.eps_task)):
            raise UsageError(f"--epsilon task=… must be a finite value > 0, got {self.eps_task}")
        if "scalarized-mpo" in self.algorithms and (
                not self.weights_pain or any(not 0.0 < w < 1.0 for w in self.weights_pain)):
            raise UsageError(f"--weights-pain: give values in (0, 1) (the pain weight w of [1 - w, w]), "
                             f"got {self.weights_pain}")
        if not (self.scalarized_epsilon > 0 and math.isfinite(self.scalarized_epsilon)):
            raise UsageError(f"--scalarized-epsilon must be a finite value > 0, got {self.scalarized_epsilon}")
        if self.action_mode not in (None, "absolute", "delta"):
            raise UsageError(f"--action-mode: 'absolute' or 'delta', got {self.action_mode!r}")
        if self.steps < 1 or self.eval_episodes < 1 or self.parallel < 1 or not self.seeds:
            raise UsageError("--steps, --eval-episodes and --processes must be >= 1, and --seeds non-empty")
        from morl_robot.evaluation.protocol import SCRIPTED_TASKS
        from morl_robot.learning import load_learner_config

        if load_learner_config(self.learner_path()).training.demonstrations.episodes and self.task not in SCRIPTED_TASKS:
            raise UsageError(f"--learner {self.learner_config}: training.demonstrations needs a scripted controller "
                             f"and {self.task} has none (tasks with one: {', '.join(SCRIPTED_TASKS)})")

    def learner_path(self) -> Path:
        """The learner YAML: a name under ``config/learner/`` or a path (``learner/x.yaml`` is
        looked up under ``config/``)."""
        from morl_robot.resources import resolve_config

        return resolve_config("learner", self.learner_config)


def setting_label(algorithm: str, value: float) -> str:
    """``eps_pain=<ε>`` (MO-MPO; on orient the ε shared by its three objectives) or ``w_pain=<w>``."""
    return f"eps_pain={value:g}" if algorithm == "mo-mpo" else f"w_pain={value:g}"


def run_name(algorithm: str, value: float, seed: int) -> str:
    return f"{algorithm}/{setting_label(algorithm, value)}_seed{seed}"


def run_dir(out: Path, algorithm: str, value: float, seed: int) -> Path:
    return out / "runs" / algorithm / setting_label(algorithm, value) / f"seed{seed}"


def sweep_values(cfg: ShadowFrontConfig, algorithm: str) -> list[float]:
    return list(cfg.eps_pain) if algorithm == "mo-mpo" else list(cfg.weights_pain)


def learner_overrides(cfg: ShadowFrontConfig, algorithm: str, value: float, num_objectives: int) -> dict[str, Any]:
    """The per-run learner settings: ε (MO-MPO) or weights and ε (scalarized MPO)."""
    if algorithm == "mo-mpo":
        eps = [value] * num_objectives if aligned(cfg.task) else [cfg.eps_task, value]
        run: dict[str, Any] = {"algorithm": "mo_mpo", "epsilons": eps}
    else:
        run = {"algorithm": "scalarized_mpo", "scalarization_weights": [1.0 - value, value],
               "epsilon": cfg.scalarized_epsilon}
    return {**(QUICK_OVERRIDES if cfg.quick else {}), **run}


def discounted_task_returns(per_episode: list[dict[str, Any]], discount: float = DISCOUNT) -> list[float]:
    """γ^(T−1) for an episode that succeeded at step T (the sparse reward arrives once), else 0."""
    return [float(discount ** (e["steps"] - 1)) if e["success"] else 0.0 for e in per_episode]


def train_and_evaluate(setting: Any, out: str, cfg: dict[str, Any]) -> list[float]:
    """One sweep run (in a worker process): train or resume, export, evaluate; returns mean returns (K,).

    A run already evaluated at this budget is not trained again."""
    from morl_robot.envs.mo_env import MORobotEnv, make_sim_robot
    from morl_robot.evaluation.protocol import (
        evaluate_policy,
        onnx_policy,
        scripted_policy,
    )
    from morl_robot.learning import load_learner_config
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy
    from morl_robot.tasks.registry import load_task
    from morl_robot.training import train

    sweep = ShadowFrontConfig(**cfg)
    algorithm, value, seed = str(setting.params["algorithm"]), float(setting.params["value"]), int(setting.seed)
    rdir = run_dir(Path(out), algorithm, value, seed)
    eval_path = rdir / "eval.json"
    if eval_path.is_file():
        done = json.loads(eval_path.read_text())
        if done.get("env_steps") == sweep.steps and done.get("episodes") == sweep.eval_episodes \
                and done.get("task_overrides", {}) == sweep.task_overrides:
            return [done["objectives"][n]["mean"] for n in done["objective_names"]]
    overrides = sweep.task_overrides or None
    task = load_task(sweep.task, overrides=overrides)
    config = load_learner_config(sweep.learner_path(), learner_overrides(sweep, algorithm, value,
                                                                         len(task.objective_names)))
    # learner YAML training.demonstrations.episodes > 0: those episodes are acted by the task's
    # scripted controller (with noise), the policy is cloned on them, then the algorithm learns
    demonstrator = (scripted_policy(sweep.task, overrides=overrides).act
                    if config.training.demonstrations.episodes else None)
    start = time.monotonic()
    result = train(functools.partial(MORobotEnv, sweep.task, overrides=overrides), config, total_steps=sweep.steps, seed=seed,
                   out_dir=rdir, progress=False, demonstrator=demonstrator)
    wall = time.monotonic() - start
    robot = make_sim_robot(task)
    try:
        contract = contract_for_task(task, robot, config, policy_version=result.env_steps,
                                     run_id=f"{sweep.task}_front/{run_name(algorithm, value, seed)}")
    finally:
        robot.close()
    policy_path = rdir / "policy.onnx"
    export_policy(result.learner.policy, contract, policy_path)
    loaded = onnx_policy(policy_path)
    evaluation = evaluate_policy(loaded.act, sweep.task, sweep.eval_episodes, sweep.eval_seed, loaded.description,
                                 task_overrides=loaded.task_overrides)
    data = evaluation.to_json()
    data.update({
        "objective_names": list(evaluation.objective_names),
        "env_steps": int(result.env_steps), "updates": int(result.updates),
        "train_wall_time_s": round(wall, 1),  # this sitting's (a resumed run names its checkpoint)
        "resumed_from": str(result.resumed_from) if result.resumed_from else None,
        "algorithm": algorithm, "setting": setting_label(algorithm, value), "value": value, "train_seed": seed,
        "learner": {k: v for k, v in learner_overrides(sweep, algorithm, value, len(task.objective_names)).items()
                    if k in ("algorithm", "epsilons", "scalarization_weights", "epsilon")},
        "demonstrations": dataclasses.asdict(config.training.demonstrations),
        "task_overrides": sweep.task_overrides,
    })
    if not aligned(sweep.task):
        data["discounted_task_return"] = float(np.mean(discounted_task_returns(data["per_episode"])))
    write_json_atomic(eval_path, data)
    return evaluation.mean_returns.tolist()


def settings_for(cfg: ShadowFrontConfig) -> list[Any]:
    """Every (algorithm, setting, seed); seeds outer and the two algorithms interleaved, so a first
    sitting that finishes few runs still compares both algorithms across the sweep."""
    from morl_robot.evaluation.sweep import Setting

    out = []
    for s in cfg.seeds:
        columns = [[(a, v) for v in sweep_values(cfg, a)] for a in cfg.algorithms]
        for i in range(max(len(c) for c in columns)):
            for col in columns:
                if i < len(col):
                    a, v = col[i]
                    out.append(Setting(run_name(a, v, s), {"algorithm": a, "value": v}, s))
    return out


def run(out_dir: str | Path, cfg: ShadowFrontConfig, progress: bool = True,
        time_limit_s: float | None = None) -> dict[str, Any]:
    """Run (or resume) the sweep, then write ``results.json``, ``policies/`` and ``plots/``."""
    from morl_robot.evaluation.sweep import run_sweep

    cfg.validate()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    job = functools.partial(train_and_evaluate, out=str(out), cfg=asdict(cfg))
    sweep = run_sweep(settings_for(cfg), job, processes=cfg.parallel, out_path=out / "sweep_progress.json",
                      time_limit_s=time_limit_s, progress=progress, description=f"{cfg.task} front", resumes=True)
    errors = [r.to_dict() for r in sweep.records if not r.ok]
    return summarise(out, cfg, sweep.total_wall_time_s, errors)  # every sitting's, a resumed sweep's too


def random_baseline(cfg: ShadowFrontConfig, out: Path) -> dict[str, Any]:
    """The random policy under the same protocol and seeds (cached in ``out/random_eval.json``)."""
    from morl_robot.evaluation.protocol import evaluate_policy, random_policy

    path = out / "random_eval.json"
    if path.is_file():
        done = json.loads(path.read_text())
        if done.get("episodes") == cfg.eval_episodes and done.get("seed") == cfg.eval_seed \
                and done.get("task_overrides", {}) == cfg.task_overrides:
            return dict(done)
    policy = random_policy(cfg.task, seed=cfg.eval_seed, overrides=cfg.task_overrides)
    data = evaluate_policy(policy.act, cfg.task, cfg.eval_episodes, cfg.eval_seed, policy.description,
                           task_overrides=cfg.task_overrides).to_json()
    data["task_overrides"] = cfg.task_overrides
    if not aligned(cfg.task):
        data["discounted_task_return"] = float(np.mean(discounted_task_returns(data["per_episode"])))
    write_json_atomic(path, data)
    return data


def front_returns(ev: dict[str, Any], names: list[str]) -> tuple[float, ...]:
    """The point a policy contributes to the front: (discounted task, pain) for touch/turn, the
    undiscounted mean returns for orient."""
    if "discounted_task_return" in ev:
        return (float(ev["discounted_task_return"]), float(ev["objectives"]["pain"]["mean"]))
    return tuple(float(ev["objectives"][n]["mean"]) for n in names)


def reference_point(task: str, num_objectives: int) -> list[float]:
    """The paper's (footnote 7): [0, 20] for touch and turn (pain ≤ 0 here: (0, −20)), zero for orient."""
    return [0.0, PAIN_REFERENCE] if not aligned(task) else [0.0] * num_objectives


def summarise(out: Path, cfg: ShadowFrontConfig, wall_time_s: float | None = None,
              errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Gather every finished run's ``eval.json`` into ``results.json``, ``policies/`` and the plot."""
    from morl_robot.evaluation.front import FrontPoint, front_report
    from morl_robot.evaluation.hypervolume import hypervolume
    from morl_robot.tasks.registry import load_task

    task = load_task(cfg.task)
    names = list(task.objective_names)
    front_names = ["task (discounted)", "pain"] if not aligned(cfg.task) else names
    ref = reference_point(cfg.task, len(names))
    runs: list[dict[str, Any]] = []
    points: dict[str, list[FrontPoint]] = {a: [] for a in cfg.algorithms}
    for a in cfg.algorithms:
        for v in sweep_values(cfg, a):
            for s in cfg.seeds:
                name, rdir = run_name(a, v, s), run_dir(out, a, v, s)
                path = rdir / "eval.json"
                ev = json.loads(path.read_text()) if path.is_file() else None
                if ev is None or ev.get("env_steps") != cfg.steps or ev.get("episodes") != cfg.eval_episodes:
                    runs.append({"run": name, "finished": False,
                                 **({"env_steps": ev.get("env_steps")} if ev else {})})
                    continue
                policy = out / "policies" / a / f"{setting_label(a, v)}_seed{s}.onnx"
                policy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(rdir / "policy.onnx", policy)
                rel = policy.relative_to(out).as_posix()
                runs.append({"run": name, "finished": True, "policy": rel, "eval": ev})
                points[a].append(FrontPoint(setting_label(a, v), s, {"value": v}, front_returns(ev, names),
                                            ev["success_rate"], rel))
    fronts: dict[str, Any] = {}
    for a, pts in points.items():
        if not pts:
            continue
        fronts[a] = front_report(pts, ref, front_names)
        fronts[a]["pooled_hypervolume"] = hypervolume(np.asarray([p.returns for p in pts]), np.asarray(ref))
        if not aligned(cfg.task):  # touch / turn: does weighting pain more trade task for pain?
            fronts[a]["preference_response"] = pain_response(pts, front_names)
    results: dict[str, Any] = {
        "experiment": f"{cfg.task}: MO-MPO ε sweep vs scalarized MPO weight sweep (MO-MPO §6.2, Table 1)"
                      if not aligned(cfg.task) else f"{cfg.task}: MO-MPO vs random (MO-MPO §6.2)",
        "config": asdict(cfg),
        "budget": {"env_steps_per_run": cfg.steps, "runs_per_algorithm": {
            a: len(sweep_values(cfg, a)) * len(cfg.seeds) for a in cfg.algorithms}},
        "hypervolume_reference": {"point": ref, "objectives": front_names,
                                  "note": "paper footnote 7: [0, 20] for touch/turn (task discounted with "
                                          "γ = 0.99, pain as a ≤ 0 return), zero vector for orient"},
        "paper_table1": {"shadow_touch": {"mo-mpo": 16.4, "scalarized-mpo": 16.2},
                         "shadow_turn": {"mo-mpo": 15.4, "scalarized-mpo": 14.4}}.get(cfg.task),
        "sweep_wall_time_s": None if wall_time_s is None else round(wall_time_s, 1),  # every sitting's
        "train_wall_time_sum_s": round(sum(r["eval"]["train_wall_time_s"] for r in runs if r["finished"]), 1),
        "runs_finished": sum(r["finished"] for r in runs), "runs_total": len(runs),
        "fronts": fronts,
        "runs": runs,
        "errors": errors or [],
    }
    baseline = random_baseline(cfg, out)
    results["random"] = {k: baseline[k] for k in ("objectives", "success_rate", "terminations", "peak_force")
                         if k in baseline} | ({"discounted_task_return": baseline["discounted_task_return"]}
                                              if "discounted_task_return" in baseline else {})
    results["random"]["front_point"] = list(front_returns(baseline, names))
    results["random"]["hypervolume"] = hypervolume(np.asarray([front_returns(baseline, names)]), np.asarray(ref))
    if aligned(cfg.task):
        results["orient_check"] = orient_check([r["eval"] for r in runs if r["finished"]], baseline, names)
    write_results_json(out / "results.json", results)
    if any(points.values()):
        _plot(out, cfg, points, front_names, ref, baseline, names)
    return results


def pain_response(points: list[Any], front_names: list[str]) -> dict[str, dict[str, float]]:
    """How each front objective of an algorithm's policies moves with its pain setting (MO-MPO's
    ε_pain, scalarized MPO's pain weight; both give pain more say as they grow): the Spearman ρ
    within seeds and its permutation p-value
    (:func:`~morl_robot.evaluation.front.preference_response`).  A sweep that trades has ρ > 0 for
    pain (a return ≤ 0: less pain) and ρ < 0 for the task."""
    from morl_robot.evaluation.front import preference_response

    return preference_response([p.preference["value"] for p in points],
                               {n: [p.returns[i] for p in points] for i, n in enumerate(front_names)},
                               groups=[p.seed for p in points])


def orient_check(evals: list[dict[str, Any]], baseline: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Per objective: each MO-MPO policy's mean return and CI against the random policy's.

    ``improves_all``: every objective's mean over the policies is above the random policy's
    upper CI bound."""
    per: dict[str, Any] = {}
    for n in names:
        mine = [e["objectives"][n] for e in evals]
        rnd = baseline["objectives"][n]
        mean = float(np.mean([m["mean"] for m in mine])) if mine else math.nan
        per[n] = {"mo_mpo_mean": mean, "mo_mpo_per_policy": mine, "random": rnd,
                  "improves": bool(mine) and mean > rnd["ci_high"]}
    return {"per_objective": per, "improves_all": bool(evals) and all(v["improves"] for v in per.values())}


def _plot(out: Path, cfg: ShadowFrontConfig, points: dict[str, list[Any]], front_names: list[str],
          ref: list[float], baseline: dict[str, Any], names: list[str]) -> None:
    from morl_robot.evaluation.plots import plot_pareto_fronts

    title = {"mo-mpo": "MO-MPO", "scalarized-mpo": "scalarized MPO"}
    sets = {f"{title[a]}": [list(p.returns) for p in pts] for a, pts in points.items() if pts}
    labels = {f"{title[a]}": [f"{p.setting.replace('eps_pain', 'ε').replace('w_pain', 'w')} s{p.seed}"
                              for p in pts] for a, pts in points.items() if pts}
    sets["random"] = [list(front_returns(baseline, names))]
    labels["random"] = ["random"]
    if len(names) > 2:  # orient's three objectives: the paper plots lift against orient (the last two)
        idx = [len(names) - 2, len(names) - 1]
        sets = {k: [[v[i] for i in idx] for v in pts] for k, pts in sets.items()}
        front_names, ref = [names[i] for i in idx], [ref[i] for i in idx]
    plot_pareto_fronts(sets, out / "plots" / "front.png", ref=ref, objective_names=front_names, labels=labels,
                       title=f"{cfg.task}: one dot per trained policy ({cfg.steps} env steps each), "
                             "label: ε_pain / pain weight w, seed")


def format_table(results: dict[str, Any]) -> str:
    """Per algorithm: its policies' front returns and success, then the hypervolumes."""
    lines = [(f"runs finished: {results['runs_finished']} of {results['runs_total']} "
             f"({results['budget']['env_steps_per_run']} env steps per run)")]
    for r in results["runs"]:
        if not r["finished"]:
            continue
        ev = r["eval"]
        objs = ", ".join(f"{n} {ev['objectives'][n]['mean']:.3g}" for n in ev["objective_names"])
        disc = f", task (γ=0.99) {ev['discounted_task_return']:.3f}" if "discounted_task_return" in ev else ""
        lines.append(f"{r['run']:<36} success {ev['success_rate']:>4.0%}  {objs}{disc}")
    rnd = results["random"]
    lines.append(f"{'random':<36} success {rnd['success_rate']:>4.0%}  "
                 + ", ".join(f"{n} {v['mean']:.3g}" for n, v in rnd["objectives"].items())
                 + f"; its point alone: hypervolume {rnd['hypervolume']:.3f}")
    ref = results["hypervolume_reference"]["point"]
    for a, front in results["fronts"].items():
        hv = front["across_seeds"]["hypervolume"]
        lines.append(f"{a}: hypervolume (ref {ref}) pooled {front['pooled_hypervolume']:.3f}; per seed IQM "
                     f"{hv['iqm']:.3f} [{hv['ci_low']:.3f}, {hv['ci_high']:.3f}] over {hv['n']} seeds")
        if "preference_response" in front:
            from morl_robot.evaluation.front import format_response

            lines.append(f"  with its pain setting, Spearman ρ within seeds: {format_response(front['preference_response'])}")
    if results.get("paper_table1"):
        lines.append(f"paper Table 1: MO-MPO {results['paper_table1']['mo-mpo']}, "
                     f"scalarized MPO {results['paper_table1']['scalarized-mpo']}")
    if "orient_check" in results:
        oc = results["orient_check"]
        for n, v in oc["per_objective"].items():
            lines.append(f"orient {n}: MO-MPO {v['mo_mpo_mean']:.3f} vs random {v['random']['mean']:.3f} "
                         f"[{v['random']['ci_low']:.3f}, {v['random']['ci_high']:.3f}]"
                         f" -> {'better' if v['improves'] else 'not better'}")
        lines.append(f"MO-MPO improves all three objectives over random: {oc['improves_all']}")
    return "\n".join(lines)
