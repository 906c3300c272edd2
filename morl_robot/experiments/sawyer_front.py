"""The Sawyer peg-in-hole front (MO-MPO paper §6.4, Fig. 7): ε_force settings with ε_task fixed.

Two ways to get it.  The default, ``conditioned``: one ε-conditioned MO-MPO policy per seed for the
whole ε_force range (``config/learner/sawyer_conditioned_clone_lr.yaml``, seeds 0 1 2), evaluated
at every setting; it matches or beats the per-setting sweep's hypervolume at under a third of its
steps (README, "One policy for every preference").  ``per-setting`` (the paper's way):
one MO-MPO policy per (ε_force, seed), trained in-process (:func:`morl_robot.training.train`) in
``OUT/runs/eps_force=<ε>/seed<s>/`` (by default from demonstrations,
``config/learner/sawyer_front_demos.yaml``: 60 noisy episodes of the scripted insertion controller
in the replay, behaviour cloning on them, then MO-MPO), then exported to ONNX under the task's contract and evaluated
with the protocol (:mod:`morl_robot.evaluation.protocol`: deterministic episodes on fixed seeds,
the robot's safety rules in the loop).  The sweep **resumes**: a run whose ``eval.json`` is at the
sweep's budget is skipped, an interrupted run continues from its newest checkpoint (``train``
resumes one), so a sweep can span several sittings.  Runs go ``--processes`` at a time, each
process on one core (:func:`morl_robot.evaluation.sweep.run_sweep`).

Outputs (small; commit them under ``results/``):

* ``results.json`` — the budget and learner settings; per run its ``EVAL``, wall time and ONNX file;
  per setting success rate and returns across seeds; the front report
  (:func:`morl_robot.evaluation.front.front_report`: per-seed hypervolume, EUM, sparsity and
  their IQM with bootstrap CIs across seeds);
* ``policies/eps_force=<ε>_seed<s>.onnx`` — every trained policy, re-checkable with
  ``morl-robot evaluate``;
* ``plots/front.png`` — the returns of every policy, each marked with its ε_force;
* ``plots/force_traces.png`` — per setting, the wrist-force trace of one evaluation episode
  (an insertion where the policy inserted).

The hypervolume reference point is the worst return an episode can have without being stopped by
the force threshold: task 0, wrist force −min(clip, √3·threshold)·steps (the ℓ1 norm of a force
whose ℓ2 norm is at the threshold is at most √3 times it).
"""
from __future__ import annotations

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

TASK = "sawyer_peg_in_hole"
DEFAULT_LEARNER = "learner/sawyer_front_demos.yaml"  # per-setting runs
DEFAULT_CONDITIONED_LEARNER = "learner/sawyer_conditioned_clone_lr.yaml"
METHODS = ("conditioned", "per-setting")
#: seeds by method: a conditioned front costs one run per seed, so it affords a third
DEFAULT_SEEDS = {"conditioned": (0, 1, 2), "per-setting": (0, 1)}
#: the scripted controller's gains for the reference front (5: its default, the demonstrator)
REFERENCE_GAINS = (0.5, 1.0, 1.5, 2.0, 3.0, 5.0)


@dataclass
class FrontSweepConfig:
    """What a sweep trains and how it is evaluated."""

    eps_task: float = 0.1
    eps_force: list[float] = field(default_factory=lambda: [0.005, 0.01, 0.02, 0.05, 0.1])
    seeds: list[int] = field(default_factory=list)  # empty: DEFAULT_SEEDS of the method
    steps: int = 40_000
    learner_config: str = ""  # empty: the method's (DEFAULT_CONDITIONED_LEARNER or DEFAULT_LEARNER)
    eval_episodes: int = 20
    eval_seed: int = 10_000
    parallel: int = 2
    #: one ε-conditioned policy per seed (preferences: ε_task fixed, ε_force over the settings'
    #: range), trained ``steps`` in all and evaluated at every ``eps_force`` setting (the default);
    #: False: one policy per (ε_force, seed)
    conditioned: bool = True
    #: gains (1/s) of the scripted insertion controller evaluated on the same seeds as the policies:
    #: the reference front (a slower controller presses less and inserts later); empty: none
    reference_gains: list[float] = field(default_factory=lambda: list(REFERENCE_GAINS))

    def __post_init__(self) -> None:
        method = "conditioned" if self.conditioned else "per-setting"
        self.seeds = list(self.seeds) or list(DEFAULT_SEEDS[method])
        self.learner_config = self.learner_config or (DEFAULT_CONDITIONED_LEARNER if self.conditioned
                                                      else DEFAULT_LEARNER)

    @property
    def method(self) -> str:
        return "conditioned" if self.conditioned else "per-setting"

    def validate(self) -> None:
        if not self.eps_force or any(not (e >= 0 and math.isfinite(e)) for e in self.eps_force):
            raise UsageError(f"--epsilon wrist_force=…: give finite values >= 0, got {self.eps_force}")
        if not (self.eps_task > 0 and math.isfinite(self.eps_task)):
            raise UsageError(f"--epsilon task=… must be a finite value > 0, got {self.eps_task}")
        if self.steps < 1 or self.eval_episodes < 1 or self.parallel < 1 or not self.seeds:
            raise UsageError("--steps, --eval-episodes and --processes must be >= 1, and --seeds non-empty")
        if any(not (g > 0 and math.isfinite(g)) for g in self.reference_gains):
            raise UsageError(f"--reference-gains: give finite gains > 0 (1/s), got {self.reference_gains}")
        if self.conditioned and not min(self.eps_force) > 0:
            raise UsageError(f"--method conditioned: the ε_force settings span a log-scale box, so all must be > 0, "
                             f"got {self.eps_force}")


def run_name(eps_force: float, seed: int) -> str:
    return f"eps_force={eps_force:g}_seed{seed}"


def run_dir(out: Path, eps_force: float, seed: int) -> Path:
    return out / "runs" / f"eps_force={eps_force:g}" / f"seed{seed}"


def hypervolume_reference(task: Any) -> list[float]:
    """(task, wrist_force) reference point: see the module docstring."""
    c = task.config
    worst_force = min(c.force_reward_clip, math.sqrt(3.0) * c.force_threshold) * task.max_steps
    return [0.0, -float(worst_force)]


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

    sweep = FrontSweepConfig(**cfg)
    eps_force, seed = float(setting.params["eps_force"]), int(setting.seed)
    rdir = run_dir(Path(out), eps_force, seed)
    eval_path = rdir / "eval.json"
    if eval_path.is_file():
        done = json.loads(eval_path.read_text())
        if (done.get("env_steps") == sweep.steps and done.get("episodes") == sweep.eval_episodes
                and not done.get("conditioned")):  # a conditioned policy's evaluation is not this run
            return [done["objectives"][n]["mean"] for n in done["objective_names"]]
    config = load_learner_config(sweep.learner_config, {"epsilons": [sweep.eps_task, eps_force]})
    # learner YAML training.demonstrations.episodes > 0: those episodes are acted by the scripted
    # insertion controller (with noise), the rest by the learning policy
    demonstrator = scripted_policy(TASK).act if config.training.demonstrations.episodes else None
    start = time.monotonic()
    result = train(functools.partial(MORobotEnv, TASK), config, total_steps=sweep.steps, seed=seed, out_dir=rdir,
                   progress=False, demonstrator=demonstrator)
    wall = time.monotonic() - start
    task = load_task(TASK)
    robot = make_sim_robot(task)
    try:
        contract = contract_for_task(task, robot, config, policy_version=result.env_steps,
                                     run_id=f"sawyer_front/{run_name(eps_force, seed)}")
    finally:
        robot.close()
    policy_path = rdir / "policy.onnx"
    export_policy(result.learner.policy, contract, policy_path)
    loaded = onnx_policy(policy_path)
    evaluation = evaluate_policy(loaded.act, TASK, sweep.eval_episodes, sweep.eval_seed, loaded.description)
    data = evaluation.to_json()
    trace = next((e for e in evaluation.episodes if e.success), evaluation.episodes[0])
    data.update({
        "objective_names": list(evaluation.objective_names),
        "env_steps": int(result.env_steps), "updates": int(result.updates),
        "train_wall_time_s": round(wall, 1),  # this sitting's (a resumed run names its checkpoint)
        "resumed_from": str(result.resumed_from) if result.resumed_from else None,
        "epsilons": {"task": sweep.eps_task, "wrist_force": eps_force}, "train_seed": seed,
        "force_trace": {"seed": trace.seed, "success": trace.success, "forces": trace.forces.round(3).tolist()},
    })
    write_json_atomic(eval_path, data)
    return evaluation.mean_returns.tolist()


def conditioned_dir(out: Path, seed: int) -> Path:
    return out / "runs" / "conditioned" / f"seed{seed}"


def _learner_config(sweep: FrontSweepConfig, overrides: dict[str, Any]) -> Any:
    from morl_robot.learning import load_learner_config
    return load_learner_config(sweep.learner_config, overrides)


def train_and_evaluate_conditioned(setting: Any, out: str, cfg: dict[str, Any]) -> list[float]:
    """One ε-conditioned run (in a worker process): π(a | s, ε) over ε_task fixed × ε_force in
    [min, max] of the settings, trained ``steps`` in all (resumes), exported once, then evaluated
    with the protocol at every ε_force setting; each evaluation is written where a sweep run's
    would be (``runs/eps_force=<ε>/seed<s>/eval.json``), so :func:`summarise` reads both alike.
    Returns the mean returns at the first setting."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.evaluation.protocol import evaluate_policy, scripted_policy
    from morl_robot.training import train

    sweep = FrontSweepConfig(**cfg)
    seed = int(setting.seed)
    cdir = conditioned_dir(Path(out), seed)
    box = [[sweep.eps_task, sweep.eps_task], [min(sweep.eps_force), max(sweep.eps_force)]]
    config = _learner_config(sweep, {"preferences": {"ranges": box, "eval_points": max(2, len(sweep.eps_force))}})
    demonstrator = scripted_policy(TASK).act if config.training.demonstrations.episodes else None
    start = time.monotonic()
    result = train(functools.partial(MORobotEnv, TASK), config, total_steps=sweep.steps, seed=seed, out_dir=cdir,
                   progress=False, demonstrator=demonstrator)
    wall = time.monotonic() - start
    policy_file = _export(result, config, cdir / "policy.onnx", f"sawyer_front/conditioned_seed{seed}")
    first: list[float] = []
    for e in sweep.eps_force:
        actor = result.policy.with_preference(np.array([sweep.eps_task, e]))
        evaluation = evaluate_policy(actor, TASK, sweep.eval_episodes, sweep.eval_seed,
                                     f"conditioned seed {seed} at ε_force={e:g}")
        data = evaluation.to_json()
        trace = next((ep for ep in evaluation.episodes if ep.success), evaluation.episodes[0])
        data.update({
            "objective_names": list(evaluation.objective_names),
            "env_steps": int(result.env_steps), "updates": int(result.updates),
            "train_wall_time_s": round(wall, 1), "resumed_from": str(result.resumed_from) if result.resumed_from else None,
            "epsilons": {"task": sweep.eps_task, "wrist_force": e}, "train_seed": seed,
            "conditioned": {"run": cdir.relative_to(Path(out)).as_posix(), "policy": policy_file},
            "force_trace": {"seed": trace.seed, "success": trace.success, "forces": trace.forces.round(3).tolist()},
        })
        write_json_atomic(run_dir(Path(out), e, seed) / "eval.json", data)
        first = first or evaluation.mean_returns.tolist()
    return first


def _export(result: Any, config: Any, path: Path, run_id: str) -> str | None:
    """The trained policy as ONNX under the task's contract (with the preference input when the
    policy is conditioned); returns the file name."""
    from morl_robot.envs.mo_env import make_sim_robot
    from morl_robot.serving.contract import contract_for_task
    from morl_robot.serving.export import export_policy
    from morl_robot.tasks.registry import load_task

    task = load_task(TASK)
    robot = make_sim_robot(task)
    try:
        contract = contract_for_task(task, robot, config, policy_version=result.env_steps, run_id=run_id)
    finally:
        robot.close()
    export_policy(result.learner.policy, contract, path, normalizer=result.policy.normalizer)
    return path.name


def run(out_dir: str | Path, cfg: FrontSweepConfig, progress: bool = True,
        time_limit_s: float | None = None) -> dict[str, Any]:
    """Run (or resume) the sweep, then write ``results.json``, ``policies/`` and ``plots/``."""
    from morl_robot.evaluation.sweep import Setting, run_sweep

    cfg.validate()
    out = Path(out_dir)
    _check_same_kind(out, cfg)
    out.mkdir(parents=True, exist_ok=True)
    _mark_kind(out, cfg)
    # seeds outer, settings spread: a first sitting that finishes few runs still spans the front
    order = sorted(range(len(cfg.eps_force)), key=lambda i: (i % 2, i if i % 2 == 0 else -i))
    if cfg.conditioned:  # one run per seed covers every setting
        settings = [Setting(f"conditioned_seed{s}", {}, s) for s in cfg.seeds]
        job = functools.partial(train_and_evaluate_conditioned, out=str(out), cfg=asdict(cfg))
    else:
        settings = [Setting(run_name(cfg.eps_force[i], s), {"eps_force": cfg.eps_force[i]}, s)
                    for s in cfg.seeds for i in order]
        job = functools.partial(train_and_evaluate, out=str(out), cfg=asdict(cfg))
    sweep = run_sweep(settings, job, processes=cfg.parallel, out_path=out / "sweep_progress.json",
                      time_limit_s=time_limit_s, progress=progress, description="sawyer front", resumes=True)
    return summarise(out, cfg, sweep.total_wall_time_s)  # every sitting's, a resumed sweep's too


#: written when a sweep starts: which kind of front the folder holds (read before any run's files)
KIND_FILE = "front.json"


def _same_learner_config(a: str | None, b: str) -> bool:
    """Whether two learner-config references name the same file (``config/learner/x.yaml``,
    ``learner/x.yaml`` and ``x`` all do)."""
    from morl_robot.resources import resolve_config

    if a == b:
        return True
    try:
        return a is not None and resolve_config("learner", a).resolve() == resolve_config("learner", b).resolve()
    except Exception:  # noqa: BLE001 -- a reference that no longer resolves is simply not the same
        return False


def _check_same_kind(out: Path, cfg: FrontSweepConfig) -> None:
    """A folder holds one front: resuming it with the other method or another learner YAML would
    mix incomparable runs and overwrite its results.json.  The kind is read from ``front.json``
    (written when a sweep starts, so a first sitting cut off before its ``results.json`` still
    names it), else from a ``results.json`` of a folder made before ``front.json`` existed.  A
    :class:`UsageError` names the clash; nothing in the folder is touched."""
    marker, summary = out / KIND_FILE, out / "results.json"
    path = marker if marker.is_file() else summary
    if not path.is_file():
        return
    try:
        before = json.loads(path.read_text())
        if path == summary:
            before = before["config"]
        method = before["method"] if path == marker else (
            "conditioned" if before.get("conditioned", False) else "per-setting")
        learner = before.get("learner_config")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        remedy = ("delete it to resume (it is rebuilt from runs/)" if path == summary
                  else "delete it only if you know which method and --learner made the runs")
        raise UsageError(f"{path} does not say which sawyer-front this folder holds ({type(e).__name__}: {e}); "
                         f"{remedy}, or give another --out") from e
    if method != cfg.method or not _same_learner_config(learner, cfg.learner_config):
        raise UsageError(f"{out} holds a {method} front trained with {learner}; this command "
                         f"asks for a {cfg.method} front with {cfg.learner_config}: pass --method {method} "
                         f"--learner {learner} to resume it, or give another --out")


def _mark_kind(out: Path, cfg: FrontSweepConfig) -> None:
    """Record the folder's kind of front (see :func:`_check_same_kind`) before any run starts."""
    if not (out / KIND_FILE).is_file():
        write_json_atomic(out / KIND_FILE, {"method": cfg.method, "learner_config": cfg.learner_config})


def scripted_reference(out: Path, cfg: FrontSweepConfig) -> list[dict[str, Any]]:
    """The scripted insertion controller at each of ``cfg.reference_gains``, evaluated with the
    protocol on the policies' seeds: what the task's force–insertion trade-off looks like when a
    hand-written controller goes slower or faster.  Cached in ``OUT/scripted_reference.json`` (an
    entry is reused when its gain, episodes and seed match).  One entry per gain: ``gain``,
    ``returns`` (per objective), ``success_rate``, ``mean_force``, ``peak_force``, ``terminations``."""
    from morl_robot.evaluation.protocol import evaluate_policy, scripted_policy

    path = out / "scripted_reference.json"
    cached = json.loads(path.read_text()).get("entries", []) if path.is_file() else []
    key = {"episodes": cfg.eval_episodes, "seed": cfg.eval_seed}
    entries = []
    for gain in cfg.reference_gains:
        hit = next((e for e in cached if e["gain"] == gain and all(e.get(k) == v for k, v in key.items())), None)
        if hit is None:
            policy = scripted_policy(TASK, gain=gain)
            ev = evaluate_policy(policy.act, TASK, cfg.eval_episodes, cfg.eval_seed, policy.description).to_json()
            hit = {"gain": gain, **key, "returns": [ev["objectives"][n]["mean"] for n in ev["objectives"]],
                   "success_rate": ev["success_rate"], "mean_force": ev["mean_force"],
                   "peak_force": ev["peak_force"], "terminations": ev["terminations"]}
        entries.append(hit)
    write_json_atomic(path, {"what": "scripted insertion controller per gain (1/s), evaluated with the protocol",
                             "entries": entries})
    return entries


def summarise(out: Path, cfg: FrontSweepConfig, wall_time_s: float | None = None) -> dict[str, Any]:
    """Gather every finished run's ``eval.json`` into ``results.json``, ``policies/`` and plots."""
    from morl_robot.evaluation.front import FrontPoint, front_report
    from morl_robot.tasks.registry import load_task

    task = load_task(TASK)
    names = list(task.objective_names)
    runs: list[dict[str, Any]] = []
    points: list[FrontPoint] = []
    (out / "policies").mkdir(exist_ok=True)
    for e in cfg.eps_force:
        for s in cfg.seeds:
            rdir = run_dir(out, e, s)
            path = rdir / "eval.json"
            if not path.is_file():
                runs.append({"run": run_name(e, s), "finished": False})
                continue
            ev = json.loads(path.read_text())
            if ev.get("env_steps") != cfg.steps or bool(ev.get("conditioned")) != cfg.conditioned:
                runs.append({"run": run_name(e, s), "finished": False, "env_steps": ev.get("env_steps")})
                continue
            if ev.get("conditioned"):  # one policy for every setting of this seed
                policy = out / "policies" / f"conditioned_seed{s}.onnx"
                shutil.copyfile(conditioned_dir(out, s) / "policy.onnx", policy)
            else:
                policy = out / "policies" / f"{run_name(e, s)}.onnx"
                shutil.copyfile(rdir / "policy.onnx", policy)
            trace = ev.pop("force_trace", None)
            runs.append({"run": run_name(e, s), "finished": True, "policy": policy.relative_to(out).as_posix(),
                         "eval": ev, "force_trace": trace})
            points.append(FrontPoint(run_name(e, s), s, {"task": cfg.eps_task, "wrist_force": e},
                                     tuple(ev["objectives"][n]["mean"] for n in names), ev["success_rate"],
                                     policy.relative_to(out).as_posix()))
    per_setting = []
    for e in cfg.eps_force:
        mine = [r for r in runs if r["finished"] and r["eval"]["epsilons"]["wrist_force"] == e]
        if mine:
            per_setting.append({
                "eps_force": e, "seeds": [r["eval"]["train_seed"] for r in mine],
                "success_rate": [r["eval"]["success_rate"] for r in mine],
                **{f"return/{n}": [r["eval"]["objectives"][n]["mean"] for r in mine] for n in names},
                "peak_force": [r["eval"]["peak_force"] for r in mine],
                "mean_force": [r["eval"]["mean_force"] for r in mine],
                # median final insertion depth (mm) per run; None for evaluations made before it was reported
                "depth_mm": [(r["eval"].get("progress") or {}).get("median") for r in mine],
            })
    ref = hypervolume_reference(task)
    reference = scripted_reference(out, cfg) if cfg.reference_gains else []
    results: dict[str, Any] = {
        "experiment": "sawyer_peg_in_hole ε_force sweep (MO-MPO §6.4, Fig. 7)",
        "config": asdict(cfg), "sweep_wall_time_s": None if wall_time_s is None else round(wall_time_s, 1),
        "runs_finished": len(points), "runs_total": len(cfg.eps_force) * len(cfg.seeds),
        "trained_policies": len(cfg.seeds) if cfg.conditioned else len(cfg.eps_force) * len(cfg.seeds),
        "env_steps_in_all": cfg.steps * (len(cfg.seeds) if cfg.conditioned else len(cfg.eps_force) * len(cfg.seeds)),
        "per_setting": per_setting,
        "front": front_report(points, ref, names) if points else None,
        "scripted_reference": reference,
        "trade_off": trade_off(runs, names, reference) if points else None,
        "runs": [{k: v for k, v in r.items() if k != "force_trace"} for r in runs],
    }
    write_results_json(out / "results.json", results)
    if points:
        _plots(out, runs, names, task.config.control_period, task.config.force_threshold, reference)
    return results


#: a Spearman p-value below this counts as a measured trend of a measure with ε_force
TREND_P = 0.05


def trade_off(runs: list[dict[str, Any]], names: list[str], reference: list[dict[str, Any]]) -> dict[str, Any]:
    """Does the front trade force for task?  From every finished run's evaluation (``runs`` as in
    ``results.json``; ``names`` the objectives, task first; ``reference`` the scripted controller's
    points):

    * ``spearman``: how each measure moves with ε_force, within seeds (mean within-seed Spearman ρ,
      settings permuted within each seed: :func:`~morl_robot.evaluation.front.preference_response`):
      mean contact force, the two returns, success rate and force-threshold stops.  A larger
      ε_force weights force more, so a front that trades has ρ < 0 for the mean force;
    * ``presses_less_when_force_weighted_more``: that ρ is negative with p < :data:`TREND_P`;
    * ``clean_insertions``: the episodes that inserted and ran to the time limit, per run and pooled
      (count, median returns, median peak force), and which scripted gains dominate the pooled
      median: how a policy does when nothing goes wrong; ``spearman`` of each run's medians with
      ε_force and ``trades_task_for_force`` (task falls and force return rises with ε_force, both at
      p < :data:`TREND_P`): the trade-off where failed episodes cannot mask it;
    * ``force_from_stopped_episodes``: the share of all runs' wrist-force cost spent in episodes
      that did not end cleanly (stopped by the force threshold, a collision or the safety rules, or
      not inserted), i.e. how much of the front's force axis is failures rather than insertions.
    """
    from morl_robot.evaluation.front import preference_response

    task, force = names[0], names[1]
    done = [r["eval"] for r in runs if r["finished"]]
    spearman = preference_response(
        [e["epsilons"][force] for e in done],
        {"mean_force": [e.get("mean_force") for e in done],
         f"return/{force}": [e["objectives"][force]["mean"] for e in done],
         f"return/{task}": [e["objectives"][task]["mean"] for e in done],
         "success_rate": [e["success_rate"] for e in done],
         "force_threshold_stops": [e["terminations"].get("force_threshold", 0) for e in done]},
        groups=[e["train_seed"] for e in done])
    per_run, pooled_task, pooled_force = [], [], []
    cost_clean = cost_all = 0.0
    for e in done:
        episodes = e.get("per_episode") or []
        clean = [p for p in episodes if p["success"] and p["termination"] == "time_limit"]
        cost_all += sum(p["returns"][force] for p in episodes)
        cost_clean += sum(p["returns"][force] for p in clean)
        pooled_task += [p["returns"][task] for p in clean]
        pooled_force += [p["returns"][force] for p in clean]
        per_run.append({"eps_force": e["epsilons"][force], "seed": e["train_seed"], "episodes": len(clean),
                        f"median_{task}": float(np.median([p["returns"][task] for p in clean])) if clean else None,
                        f"median_{force}": float(np.median([p["returns"][force] for p in clean])) if clean else None,
                        "median_peak_force": float(np.median([p["peak_force"] for p in clean])) if clean else None})
    pooled: dict[str, Any] = {"episodes": len(pooled_task)}
    if pooled_task:
        point = (float(np.median(pooled_task)), float(np.median(pooled_force)))
        pooled.update({f"median_{task}": point[0], f"median_{force}": point[1],
                       "dominated_by_scripted_gains": [
                           r["gain"] for r in reference
                           if all(a >= b for a, b in zip(r["returns"], point))
                           and any(a > b for a, b in zip(r["returns"], point))]})
    mean_force = spearman["mean_force"]
    # the same question asked of the clean insertions alone (each run's medians), where failures
    # cannot hide a trade-off: force weighted more should cost task return and save force
    clean_runs = [r for r in per_run if r["episodes"]]
    clean_spearman = preference_response([r["eps_force"] for r in clean_runs],
                                         {f"median_{n}": [r[f"median_{n}"] for r in clean_runs] for n in (task, force)},
                                         groups=[r["seed"] for r in clean_runs])
    ct, cf = clean_spearman[f"median_{task}"], clean_spearman[f"median_{force}"]
    return {"spearman": spearman, "trend_p": TREND_P,
            "presses_less_when_force_weighted_more": bool(mean_force["rho"] < 0 and mean_force["p"] < TREND_P),
            "clean_insertions": {"definition": "inserted (success) and ran to the time limit",
                                 "pooled": pooled, "per_run": per_run, "spearman": clean_spearman,
                                 "trades_task_for_force": bool(ct["rho"] < 0 and ct["p"] < TREND_P
                                                               and cf["rho"] > 0 and cf["p"] < TREND_P)},
            "force_from_stopped_episodes": (1.0 - cost_clean / cost_all) if cost_all < 0 else None}


def _plots(out: Path, runs: list[dict[str, Any]], names: list[str], task_period: float, threshold: float,
           reference: list[dict[str, Any]]) -> None:
    from morl_robot.evaluation.plots import plot_force_traces, plot_pareto_fronts

    done = [r for r in runs if r["finished"]]
    by_seed: dict[str, list[list[float]]] = {}
    labels: dict[str, list[str]] = {}
    for r in done:
        key = f"seed {r['eval']['train_seed']}"
        by_seed.setdefault(key, []).append([r["eval"]["objectives"][n]["mean"] for n in names])
        ok = r["eval"]["success_rate"]
        labels.setdefault(key, []).append(f"ε_f={r['eval']['epsilons']['wrist_force']:g} ({ok:.0%})")
    if reference:
        by_seed["scripted controller"] = [e["returns"] for e in reference]
        labels["scripted controller"] = [f"gain {e['gain']:g} ({e['success_rate']:.0%})" for e in reference]
    plot_pareto_fronts(by_seed, out / "plots" / "front.png", objective_names=names, labels=labels,
                       title="Sawyer peg-in-hole: MO-MPO policies over ε_force (ε_task fixed)\nand the scripted "
                             "controller over its gain; label: setting (insertion success)")
    traces = {f"ε_f={r['eval']['epsilons']['wrist_force']:g}, seed {r['eval']['train_seed']}"
              + (" (inserted)" if r["force_trace"]["success"] else ""): r["force_trace"]["forces"]
              for r in done if r.get("force_trace")}
    plot_force_traces(traces, out / "plots" / "force_traces.png", period_s=float(task_period),
                      threshold=threshold,
                      title="Sawyer peg-in-hole: wrist force ‖F‖ over an evaluation episode per policy")


def format_table(results: dict[str, Any]) -> str:
    """Per setting: success rate and returns (mean over seeds, min–max), then the front metrics."""
    lines = [f"runs finished: {results['runs_finished']} of {results['runs_total']}",
             (f"{'ε_force':>8} {'seeds':>5} {'success':>16} {'task return':>22} {'wrist_force return':>26} "
              f"{'mean force (N)':>20} {'depth (mm)':>22}")]

    def span(values: list[float | None] | None, fmt: str) -> str:
        known = [v for v in values or [] if v is not None]
        return f"{np.mean(known):{fmt}} [{min(known):{fmt}}, {max(known):{fmt}}]" if known else "—"

    for row in results["per_setting"]:
        lines.append(f"{row['eps_force']:>8g} {len(row['seeds']):>5d} {span(row['success_rate'], '.0%'):>16} "
                     f"{span(row['return/task'], '.1f'):>22} {span(row['return/wrist_force'], '.0f'):>26} "
                     f"{span(row.get('mean_force'), '.2f'):>20} {span(row.get('depth_mm'), '.1f'):>22}")
    if results.get("scripted_reference"):
        lines.append("scripted controller (reference): " + "; ".join(
            f"gain {e['gain']:g}: {e['success_rate']:.0%}, {e['returns'][0]:.1f} / {e['returns'][1]:.0f}"
            for e in results["scripted_reference"]))
    front = results.get("front")
    if front:
        for name, m in front["across_seeds"].items():
            lines.append(f"{name}: IQM {m['iqm']:.4g} [{m['ci_low']:.4g}, {m['ci_high']:.4g}] over {m['n']} seeds")
    t = results.get("trade_off")
    if t:
        from morl_robot.evaluation.front import format_response

        rho = format_response(t["spearman"])
        lines.append(f"trade-off: Spearman ρ with ε_force within seeds ({t['spearman']['mean_force']['n']} runs): {rho}; "
                     f"presses less when force is weighted more: {'yes' if t['presses_less_when_force_weighted_more'] else 'no'}")
        pooled = t["clean_insertions"]["pooled"]
        if pooled["episodes"]:
            task, force = (k[len("median_"):] for k in pooled if k.startswith("median_"))
            lines.append(f"clean insertions ({pooled['episodes']} episodes): median {task} {pooled['median_' + task]:.1f}, "
                         f"{force} {pooled['median_' + force]:.1f}; dominated by scripted gains: "
                         f"{', '.join(f'{g:g}' for g in pooled['dominated_by_scripted_gains']) or 'none'}")
            clean = t["clean_insertions"]
            lines.append(f"  per run, Spearman ρ with ε_force within seeds: {format_response(clean['spearman'])}; "
                         f"trades task for force: "
                         f"{'yes' if clean['trades_task_for_force'] else 'no'}")
        if t["force_from_stopped_episodes"] is not None:
            lines.append(f"share of the force cost spent in episodes that did not insert cleanly: "
                         f"{t['force_from_stopped_episodes']:.0%}")
    return "\n".join(lines)
