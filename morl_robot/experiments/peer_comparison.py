"""The peer comparison of issue 36 as one command: ε-conditioned MO-MPO, the per-setting MO-MPO
sweep and CAPQL on ``mo-halfcheetah-v5`` and ``mo-hopper-v5``, every (env, method, seed) an
``experiment conditioned`` run, then per env the hypervolume IQM with bootstrap 95 % CIs at the
reference −100 per objective, with the do-nothing (middle-action) policy's hypervolume beside it.

``morl-robot experiment peer-comparison --out DIR [--steps 200000] [--seeds 5] [--dry-run]``;
finished runs (their ``results.json``) are kept and skipped, so the command resumes where it
stopped.  ``--dry-run`` prints the plan and its wall time estimated from measured per-step times
(:data:`SECONDS_PER_STEP`).  docs/howto/reproduce_result.md ("The peer comparison").
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from morl_robot.errors import UsageError

ENVS = ("mo-halfcheetah-v5", "mo-hopper-v5")
METHODS = ("conditioned", "sweep", "capql")

#: wall seconds per environment step (training + evaluation) measured on the shared 2-core machine:
#: medians of the committed 30 000-step runs in results/conditioned/<env>/ (conditioned: the
#: ``conditioned_spi64`` profile, variants/samples_per_insert_64; sweep and capql: the top-level
#: runs), at host loads of about 4-16 on 2 cores.
SECONDS_PER_STEP: dict[tuple[str, str], float] = {
    ("mo-halfcheetah-v5", "conditioned"): 5669.3 / 30000,
    ("mo-halfcheetah-v5", "sweep"): 540.5 / 30000,
    ("mo-halfcheetah-v5", "capql"): 253.8 / 30000,
    ("mo-hopper-v5", "conditioned"): 1455.0 / 30000,
    ("mo-hopper-v5", "sweep"): 655.2 / 30000,
    ("mo-hopper-v5", "capql"): 410.0 / 30000,
}


@dataclass
class PeerComparison:
    """What ``experiment peer-comparison`` runs (defaults: the issue's protocol)."""

    out: Path
    envs: list[str] = field(default_factory=lambda: list(ENVS))
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    seeds: int = 5
    steps: int = 200_000
    ref: float = -100.0
    points: int = 11
    eval_episodes: int = 3
    min_size_to_sample: int | None = None  # tiny budgets only

    def validate(self) -> None:
        if self.seeds < 1:
            raise UsageError(f"--seeds must be >= 1, got {self.seeds}")
        if self.steps < 1:
            raise UsageError(f"--steps must be >= 1, got {self.steps}")
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise UsageError(f"--methods: unknown {bad}; known: {', '.join(METHODS)}")

    def runs(self) -> list[tuple[str, str, int, Path]]:
        """Every (env, method, seed, run folder), in the order they run (seeds outermost: a stopped
        comparison has every method at the same seeds)."""
        return [(env, method, seed, self.out / env / f"{method}_s{seed}")
                for seed in range(self.seeds) for env in self.envs for method in self.methods]


def estimate_seconds(cfg: PeerComparison) -> tuple[float, list[str]]:
    """Estimated wall seconds of the runs not yet done, and what was not measured (no estimate)."""
    total, unknown = 0.0, []
    for env, method, _seed, folder in cfg.runs():
        if (folder / "results.json").exists():
            continue
        per_step = SECONDS_PER_STEP.get((env, method))
        if per_step is None:
            unknown.append(f"{env}/{method}")
        else:
            total += per_step * cfg.steps
    return total, sorted(set(unknown))


def plan_text(cfg: PeerComparison) -> str:
    runs = cfg.runs()
    todo = [r for r in runs if not (r[3] / "results.json").exists()]
    seconds, unknown = estimate_seconds(cfg)
    lines = [(f"peer comparison: {', '.join(cfg.envs)} x {', '.join(cfg.methods)} x {cfg.seeds} seeds, "
             f"{cfg.steps} env steps each, reference {cfg.ref:g} per objective; {len(runs)} runs, "
             f"{len(runs) - len(todo)} done"),
             (f"estimated wall time of the rest, one after another on the shared 2-core machine: "
             f"{seconds / 3600:.1f} h ({seconds / 86400:.1f} days)")]
    if unknown:
        lines.append(f"(no measured per-step time for {', '.join(unknown)}: not in the estimate)")
    return "\n".join(lines)


def run(cfg: PeerComparison, progress: bool = False, echo: Any = print) -> dict[str, Any]:
    """Every run not yet done, then per env :func:`~morl_robot.experiments.conditioned.report` at the
    reference; writes ``<out>/<env>/report/summary.json`` + ``fronts.png`` and ``<out>/summary.json``."""
    from morl_robot.evaluation.provenance import write_results_json
    from morl_robot.experiments import conditioned

    cfg.validate()
    echo(plan_text(cfg))
    for env, method, seed, folder in cfg.runs():
        if (folder / "results.json").exists():
            continue
        echo(f"-- {env} {method} seed {seed} -> {folder}")
        conditioned.run(conditioned.ConditionedExperiment(
            env_id=env, steps=cfg.steps, seed=seed, method=method, points=cfg.points,
            eval_episodes=cfg.eval_episodes, min_size_to_sample=cfg.min_size_to_sample), folder, progress=progress)
    summaries = {}
    for env in cfg.envs:
        files = [folder / "results.json" for e, _m, _s, folder in cfg.runs() if e == env]
        k = len(json.loads(files[0].read_text())["ref"])
        summary = conditioned.report(files, cfg.out / env / "report", ref=[cfg.ref] * k)
        echo(conditioned.format_report(summary))
        summaries[env] = summary
    write_results_json(cfg.out / "summary.json", {"steps": cfg.steps, "seeds": cfg.seeds, "ref": cfg.ref,
                                                  "envs": summaries})
    return summaries
