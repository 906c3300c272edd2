"""``morl-robot demo``: the main job on the embedded defaults (what ``make demo`` runs).

1. A training session through the ROS graph (``morl-robot train``: on the sim backend a vector
   actor, simulated environments with the safety rules in the loop, and the MO-MPO learner node) on the Sawyer peg-in-hole task
   with the task's recipe (its task YAML's ``recipe:``; for the Sawyer the demo session,
   ``config/sessions/demo.yaml``, and learner profile ``config/learner/demo_demos.yaml``: learning from demonstrations; the actors act the
   first episodes with the scripted insertion controller, the learner clones them, MO-MPO fine-tunes).
2. The evaluation protocol (:mod:`morl_robot.evaluation.protocol`) on the initial policy and on
   the final one, same fixed seeds: a before/after table (each objective with its CI, success
   rate next to the per-episode peak-force distribution (p50/p90 with CIs, max) and the rates of
   episodes above the task's force threshold and at the collision level (Wilson CIs), termination
   reasons), written as ``demo_report.json``
   (``{"before": EVAL, "after": EVAL, ...}``); and on every kept snapshot, as a learning curve of
   deterministic evaluations (``eval_curve.csv``, ``plots/eval_curve.png``).
3. The sim-to-sim deploy check (``morl-robot deploy --episodes N``): the trained policy served
   through robot node + safety monitor + policy server, compared with its in-process evaluation.

Sub-commands are built through the real ``morl-robot`` parser, so an option added to ``train``
or ``deploy`` later cannot break the demo.  Everything lands in ``--out``.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import Any

from morl_robot.cli.options import add_set, deprecated
from morl_robot.cli.video import add_video
from morl_robot.errors import UsageError

#: What ``make demo`` trains: the Sawyer peg-in-hole recipe (its task YAML's ``recipe:``), chosen
#: so the improvement is clear within the 10-minute budget.
DEMO_TASK = "sawyer_peg_in_hole"
DEMO_STEPS = 12_000


def demo_recipe(task: str = DEMO_TASK) -> tuple[str, str]:
    """The learner profile and session of ``task``'s recipe (without recipes: demo_demos, demo)."""
    try:
        from morl_robot.tasks.recipes import default_recipe
    except ImportError:
        return "demo_demos", "demo"
    recipe = default_recipe(task)
    return recipe.learner, recipe.session


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the embedded default job: train, evaluate before/after, deploy check")
    learner, session = demo_recipe()
    p.add_argument("--task", default=DEMO_TASK, help="task to train")
    p.add_argument("--learner", default=None, metavar="NAME|PATH",
                   help=f"learner profile, name or YAML path (default: the task's recipe, {learner} for {DEMO_TASK})")
    p.add_argument("--session", default=None, metavar="NAME|PATH",
                   help=f"training session YAML, name under config/sessions/ or path (default: the task's recipe, "
                        f"{session} for {DEMO_TASK})")
    add_set(p, ("learner", "session", "task", "robot", "safety"))
    p.add_argument("--steps", type=int, default=DEMO_STEPS, help=f"training env steps (default {DEMO_STEPS})")
    p.add_argument("--eval-episodes", type=int, default=10,
                   help="evaluation episodes per policy, seeds S…S+N−1 (default 10)")
    p.add_argument("--episodes", type=int, default=2, help="deploy check episodes (default 2)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    p.add_argument("--eval-seed", type=int, default=10_000,
                   help="first evaluation seed (kept apart from the training episodes' seeds) (default 10000)")
    p.add_argument("--out", default="runs/demo", help="run directory: checkpoints, policy.onnx, demo_report.json, "
                                                      "eval_curve.csv, plots/, deploy/ (default runs/demo)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: random)")
    add_video(p, "episode of the trained policy's final evaluation (DIR/episode_<seed>.mp4)")
    deprecated(p, "--learner-config", "--learner")
    deprecated(p, "--session-config", "--session")
    p.set_defaults(func=run)


def _sub_command(argv: list[str]) -> int:
    """Run ``morl-robot <argv>`` through the real parser (the CLI's own entry point)."""
    from morl_robot.cli import parse

    args = parse(argv)
    return int(args.func(args) or 0)


def _force_rows(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Rows of the per-episode peak force distribution (p50/p90 with their bootstrap CIs, max) and
    the rates above the task's force threshold and the safety collision level (count/episodes, %,
    Wilson CI), from the ``force`` blocks of two EVAL objects (none: no rows)."""
    from morl_robot.evaluation.protocol import rate_ci, rate_value

    fb, fa = before.get("force"), after.get("force")
    if fb is None or fa is None:
        return []

    def pct(f: dict[str, Any], key: str) -> str:
        v = f["peak"][key]
        return f"{v['value']:.1f} [{v['ci_low']:.1f}, {v['ci_high']:.1f}]"

    def rate(b: dict[str, Any]) -> str:
        return f"{rate_value(b, 0)} {rate_ci(b, 0)}"

    rows = [(f"peak force {key} (N)", pct(fb, key), pct(fa, key)) for key in ("p50", "p90")]
    rows.append(("peak force max (N)", f"{fb['peak']['max']:.1f}", f"{fa['peak']['max']:.1f}"))
    for key, what in (("threshold", "above force threshold"), ("collision", "at collision level")):
        if fb.get(key) is not None and fa.get(key) is not None:
            rows.append((f"episodes {what} {fb[key]['level']:g} N", rate(fb[key]), rate(fa[key])))
    return rows


def _table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The before/after table: each objective's return with its CI, the success rate next to the
    per-episode peak-force distribution and the force rates (:func:`_force_rows`), terminations."""
    rows = [("measure", "before (initial policy)", "after (trained)")]
    for name in before["objectives"]:
        b, a = before["objectives"][name], after["objectives"][name]
        rows.append((f"return: {name}", f"{b['mean']:.2f} [{b['ci_low']:.2f}, {b['ci_high']:.2f}]",
                     f"{a['mean']:.2f} [{a['ci_low']:.2f}, {a['ci_high']:.2f}]"))
    rows.append(("success rate", f"{before['success_rate']:.0%}", f"{after['success_rate']:.0%}"))
    force = _force_rows(before, after)  # its max is the old peak contact force row
    rows.extend(force)
    if not force and before.get("peak_force") is not None and after.get("peak_force") is not None:
        rows.append(("peak contact force (N)", f"{before['peak_force']:.1f}", f"{after['peak_force']:.1f}"))
    rows.append(("terminations", ", ".join(f"{k} {v}" for k, v in before["terminations"].items()),
                 ", ".join(f"{k} {v}" for k, v in after["terminations"].items())))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def write_curve(curve: list[tuple[int, Any]], out: Path) -> Path:
    """``eval_curve.csv``: env_steps, return/<objective> (+ CI columns), success_rate."""
    path = out / "eval_curve.csv"
    names = list(curve[0][1].objective_names)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["env_steps"] + [f"return/{n}" for n in names] + [f"ci_low/{n}" for n in names]
                   + [f"ci_high/{n}" for n in names] + ["success_rate"])
        for steps, ev in curve:
            obj = ev.objectives()
            w.writerow([steps] + [obj[n]["mean"] for n in names] + [obj[n]["ci_low"] for n in names]
                       + [obj[n]["ci_high"] for n in names] + [ev.success_rate])
    return path


def run(args: argparse.Namespace) -> int:
    from morl_robot.cli.video import evaluation_videos, video_summary
    from morl_robot.evaluation.protocol import (
        evaluation_curve,
        onnx_policy,
        snapshot_files,
    )
    from morl_robot.evaluation.provenance import write_results_json

    if args.steps < 1 or args.eval_episodes < 1 or args.episodes < 0:
        raise UsageError("--steps and --eval-episodes must be >= 1, --episodes >= 0")
    out = Path(args.out).resolve()
    recipe_learner, recipe_session = demo_recipe(args.task)
    learner, session = args.learner or recipe_learner, args.session or recipe_session
    common = ["--seed", str(args.seed)] + (["--domain-id", str(args.domain_id)] if args.domain_id is not None else [])
    start = time.monotonic()
    print(f"[demo 1/3] training {args.task} for {args.steps} env steps through the ROS graph -> {out}", file=sys.stderr)
    rc = _sub_command(["train", "--task", args.task, "--steps", str(args.steps), "--out", str(out),
                       "--learner", learner, "--session", session, "--namespace", "demo",
                       *common]
                      + (["--no-progress"] if args.no_progress else []))
    if rc != 0:
        return rc
    train_s = time.monotonic() - start

    print(f"[demo 2/3] evaluating every kept snapshot on seeds {args.eval_seed}…"
          f"{args.eval_seed + args.eval_episodes - 1} (deterministic policy)", file=sys.stderr)
    snapshots = snapshot_files(out)
    if len(snapshots) < 2 or snapshots[0][0] != 0:
        raise UsageError(f"{out}/snapshots/ lacks the initial policy or a trained one ({len(snapshots)} files): "
                         "the demo needs a fresh run directory (use a new --out)")
    videos = evaluation_videos(args.video, onnx_policy(snapshots[-1][1])) if args.video else None
    curve = evaluation_curve(out, args.eval_episodes, args.eval_seed, progress=not args.no_progress,
                             last_observer=videos)
    if videos is not None:
        print(video_summary(videos), file=sys.stderr)
    before, after = curve[0][1].to_json(), curve[-1][1].to_json()
    write_curve(curve, out)
    from morl_robot.evaluation.plots import plot_learning_curves

    names = list(curve[0][1].objective_names)
    plot_learning_curves(out / "eval_curve.csv", out / "plots" / "eval_curve.png", step_column="env_steps",
                         return_columns=[f"return/{n}" for n in names] + ["success_rate"], title=f"{args.task}: deterministic evaluation ({args.eval_episodes} episodes, 95 % CI)")
    report = {"task": args.task, "steps": args.steps, "learner_config": learner,
              "session_config": session, "seed": args.seed,
              "eval_seed": args.eval_seed, "before_env_steps": curve[0][0], "after_env_steps": curve[-1][0],
              "train_wall_time_s": round(train_s, 1), "before": before, "after": after,
              "curve": [{"env_steps": s, **{n: v["mean"] for n, v in ev.objectives().items()},
                         "success_rate": ev.success_rate} for s, ev in curve]}
    write_results_json(out / "demo_report.json", report)
    print(_table(before, after))
    print(f"wrote {out / 'demo_report.json'}, {out / 'eval_curve.csv'}, {out / 'plots' / 'eval_curve.png'}")

    if args.episodes:
        print(f"[demo 3/3] deploy check: {args.episodes} episodes through the graph vs in-process", file=sys.stderr)
        rc = _sub_command(["deploy", str(out / "policy.onnx"), "--episodes", str(args.episodes),
                           "--compare", str(out), "--out", str(out / "deploy"), *common])
    print(f"demo wall time {time.monotonic() - start:.0f} s", file=sys.stderr)
    return rc
