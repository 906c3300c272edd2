"""``morl-robot epic``: EPIC distances between a task's reward functions (Gleave et al. 2021).

* ``morl-robot epic --task T --rewards A B ... [--coverage SRC ...]``: the distance matrix between
  named rewards of task T (its objectives and their variants, ``--list`` shows them) over a
  coverage distribution (``random`` rollouts, a policy ``.onnx``, a transitions ``.npz`` or a run
  directory; several sources form an equal-share mixture).
* ``morl-robot epic --objectives RUN_DIR``: the objective-redundancy matrix (K × K) of the run's
  task, and the distances between scalarisations wᵀR over a weight grid, from one canonicalised
  sample of the vector reward; coverage: the run's transitions or policy mixed with random rollouts.

Writes ``results.json``, ``results.md`` and heatmaps (with 95 % bootstrap CIs) into ``--out``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from morl_robot.cli.options import add_set
from morl_robot.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("epic", help="EPIC distances between reward functions (a task's objectives and variants)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--task", help="task whose rewards to compare (see `morl-robot tasks`) (default: none; "
                                     "one of --task and --objectives is required)")
    what.add_argument("--objectives", type=Path, metavar="RUN_DIR",
                      help="a training run directory: objective-redundancy matrix and scalarisation distances "
                           "(default: none)")
    add_set(p, ("task",))
    p.add_argument("--rewards", nargs="+", default=None,
                   help="reward names to compare (default: all of the task's; --list shows them)")
    p.add_argument("--list", action="store_true", help="list the task's rewards and transition features, then exit")
    p.add_argument("--coverage", nargs="+", default=None, metavar="SRC",
                   help="random | POLICY.onnx | TRANSITIONS.npz | RUN_DIR, several = an equal-share mixture "
                        "(default: random; with --objectives: RUN_DIR and random)")
    p.add_argument("--steps", type=int, default=5000, help="transitions rolled out per rolled-out source (default 5000)")
    p.add_argument("--n-v", type=int, default=4096, help="coverage transitions N_V (default 4096, the paper's)")
    p.add_argument("--n-m", type=int, default=4096, help="samples N_M for the expectations (default 4096)")
    p.add_argument("--precise", action="store_true", help="the paper's precise setting N_V = N_M = 32768")
    p.add_argument("--gamma", type=float, default=0.99, help="discount of the canonicalisation (default 0.99)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs (default 1000; 0: none)")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    p.add_argument("--weight-points", type=int, default=5,
                   help="--objectives: points per axis of the scalarisation weight grid (default 5)")
    p.add_argument("--save-coverage", type=Path, default=None, metavar="NPZ",
                   help="also write the coverage transitions to this .npz (reusable as --coverage) (default: not written)")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for results.json, results.md and heatmaps (default: print only)")
    p.add_argument("--seed", type=int, default=0, help="seed of the rollouts and the samples")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from morl_robot.envs.coverage import load_coverage, run_task, save_transitions
    from morl_robot.evaluation import epic
    from morl_robot.evaluation.plots import plot_distance_heatmap
    from morl_robot.evaluation.provenance import write_results_json
    from morl_robot.records import write_bytes_atomic
    from morl_robot.tasks.registry import load_task

    task_name = args.task if args.task else run_task(args.objectives)
    task = load_task(task_name)
    available = task.transition_rewards()
    if args.list:
        print(f"{task_name} rewards: {', '.join(available)}  (objectives = the vector reward "
              f"[{', '.join(task.objective_names)}])")
        print(f"transition features: {', '.join(task.transition_feature_labels())}")
        return 0
    if not 0 <= args.gamma < 1:
        raise UsageError(f"--gamma must be in [0, 1), got {args.gamma}")
    if not 0 < args.confidence < 1 or args.bootstrap < 0:
        raise UsageError("--confidence must be in (0, 1) and --bootstrap >= 0")
    n_v, n_m = epic.PRECISE_SAMPLES if args.precise else (args.n_v, args.n_m)
    if n_v < 3 or n_m < 1:
        raise UsageError(f"--n-v must be >= 3 and --n-m >= 1, got {n_v}, {n_m}")

    if args.objectives is not None:
        if args.rewards:
            raise UsageError("--rewards does not apply to --objectives (it compares the run task's objectives)")
        if args.weight_points < 2:
            raise UsageError(f"--weight-points must be >= 2, got {args.weight_points}")
        rewards = {"objectives": available["objectives"]}
        sources = args.coverage or [str(args.objectives), "random"]
    else:
        names = args.rewards or [n for n in available if n != "objectives"]
        unknown = [n for n in names if n not in available]
        if unknown:
            raise UsageError(f"--rewards: unknown {', '.join(unknown)} for task '{task_name}'; "
                             f"allowed: {', '.join(available)}")
        if len(set(names)) != len(names):
            raise UsageError("--rewards: a name is given twice")
        rewards = {n: available[n] for n in names}
        sources = args.coverage or ["random"]

    coverage = load_coverage(task_name, sources, args.steps, args.seed, progress=not args.no_progress)
    if args.save_coverage is not None:
        save_transitions(args.save_coverage, coverage)
    transitions = epic.Transitions(coverage.states, coverage.actions, coverage.next_states)
    start = time.perf_counter()
    try:
        result, canon = epic.epic_samples(rewards, transitions, args.gamma, n_v, n_m, args.bootstrap,
                                          args.confidence, args.seed,
                                          column_names={"objectives": list(task.objective_names)})
    except ValueError as exc:  # a reward constant over this coverage: no correlation defined
        raise UsageError(f"coverage {coverage.source}: {exc}") from None
    seconds = time.perf_counter() - start
    if args.objectives is not None and result.undefined:
        raise UsageError(f"coverage {coverage.source}: objective(s) {', '.join(result.undefined)} never vary "
                         "over it; the redundancy matrix needs coverage where every objective varies")
    report = {"task": task_name, "coverage": coverage.source, "coverage_transitions": len(coverage),
              "seconds": seconds, **result.to_dict(), "confidence": args.confidence}
    table = epic.markdown_table(result.names, result.distance, result.lower, result.upper)
    print(f"EPIC, task {task_name}, coverage {coverage.source} ({len(coverage)} transitions), "
          f"N_V={n_v} N_M={n_m}, γ={args.gamma}: {seconds:.1f} s")
    print(table, end="")
    if result.undefined:
        print(f"undefined (constant over this coverage, so no correlation; broaden --coverage): "
              f"{', '.join(result.undefined)}")
    scal = None
    if args.objectives is not None:
        weights = epic.weight_grid(len(task.objective_names), args.weight_points)
        est, lo, hi = epic.bootstrap_distances(canon @ weights.T, args.bootstrap or 1, args.confidence,
                                               np.random.default_rng(args.seed)) \
            if args.bootstrap else (epic.scalarisation_distances(canon, weights), None, None)
        labels = ["(" + ", ".join(f"{w:g}" for w in row) + ")" for row in weights]
        scal = {"weights": weights.tolist(), "labels": labels, "epic": est.tolist(),
                "ci_lower": None if lo is None else lo.tolist(), "ci_upper": None if hi is None else hi.tolist()}
        report["scalarisations"] = scal
        i, j = np.unravel_index(np.argmax(est), est.shape)
        print(f"scalarisations wᵀR over {len(weights)} weights [{', '.join(task.objective_names)}]: "
              f"farthest pair {labels[i]} vs {labels[j]}: {est[i, j]:.3f}")
    if args.out is not None:
        write_results_json(args.out / "results.json", report)
        write_bytes_atomic(args.out / "results.md", table.encode())
        plot_distance_heatmap(result.names, result.distance, args.out / "epic.png",
                              f"EPIC, {task_name} (N_V={n_v}, N_M={n_m}, {int(args.confidence * 100)}% CI)",
                              result.lower, result.upper)
        written = "results.json, results.md, epic.png"
        if scal is not None:
            plot_distance_heatmap(scal["labels"], np.array(scal["epic"]), args.out / "scalarisations.png",
                                  f"EPIC between scalarisations wᵀR, {task_name}")
            written += ", scalarisations.png"
        print(f"wrote {args.out}/{{{written}}}")
    return 0
