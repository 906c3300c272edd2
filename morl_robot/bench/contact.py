"""``morl-robot bench contact``: contact force and insertion under every policy (issue 32).

Each policy is run through the evaluation protocol (:func:`~morl_robot.evaluation.protocol.evaluate_policy`,
through the robot's safety rules as deployed) on held-out seeds, and its row gives the insertion
rate (95 % Wilson interval), the episodes above the task's force threshold (30 N) and at the
collision level (40 N), and the p50 / p90 / p99 / max of the per-episode peak contact force
(the larger of the 20 Hz reading and the compliant controller's physics-rate peak of each period;
docs/explanation/contact_control.md).

Rows: the scripted insertion controller, the hostile ``press`` (full speed straight down every
step), ``press`` without the safety rules (what the compliant controller alone does), and every
``--policy`` (an ONNX policy at its default preference, or ``PATH@e1,e2`` under a preference).
``--stiff`` adds each row under contact control ``stiff`` (the stack before the compliant
controller and the approach limit) as the baseline.  ``--out DIR`` writes ``results.json`` and
``peak_force.png`` (the per-episode peaks of every row, with the 30 N and 40 N lines).
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.cli.options import add_policy, add_set
from morl_robot.errors import UsageError

TASK = "sawyer_peg_in_hole"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=100, help="episodes per row (default 100)")
    parser.add_argument("--seed", type=int, default=120_000,
                        help="first episode seed (default 120000: held out from every seed the recipes and the "
                             "contact layers were tuned on)")
    add_policy(parser, "ONNX policies to add as rows, PATH[@E1,E2] (@E1,E2: an ε-conditioned policy's preference) "
                       "(default: the built-in rows only)", many=True)
    parser.add_argument("--no-builtin", action="store_true", help="only the POLICY rows")
    parser.add_argument("--stiff", action="store_true", help="also every row under contact control 'stiff'")
    parser.add_argument("--out", default=None, help="write results.json and peak_force.png here (default: print only)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_set(parser, ("task", "robot", "safety"))


def _policy_name(path: str) -> str:
    """A row's name for an ONNX file: its path without ``results/`` and ``.onnx`` (and without a run's
    ``/policy``), e.g. ``demo/seed0``, ``baseline_stiff/demo/seed0``, ``sawyer_front/policies/eps…``."""
    name = str(Path(path).with_suffix(""))
    name = name.split("results/", 1)[-1]
    return name.removesuffix("/policy")


def _rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if not args.no_builtin:
        rows += [{"name": "scripted", "source": "scripted", "safety": True},
                 {"name": "press", "source": "press", "safety": True},
                 {"name": "press, no safety rules", "source": "press", "safety": False}]
    for spec in args.policy:
        path, _, pref = spec.partition("@")
        preference = [float(x) for x in pref.split(",")] if pref else None
        if not Path(path).exists():
            raise UsageError(f"--policy {spec}: no such file")
        name = _policy_name(path) if preference is None else f"{_policy_name(path)} @ {pref}"
        rows.append({"name": name, "source": path, "safety": True, "preference": preference})
    controls = ("compliant", "stiff") if args.stiff else ("compliant",)
    return [{**row, "control": c} for c in controls for row in rows]


def _summary(result: Any) -> dict[str, Any]:
    from morl_robot.evaluation.protocol import wilson_interval

    n = len(result.episodes)
    ok = int(sum(e.success for e in result.episodes))
    lo, hi = wilson_interval(ok, n)
    force = result.force()
    return {"episodes": n, "insertion": {"count": ok, "rate": ok / n, "ci_low": lo, "ci_high": hi},
            "force": force, "peaks": [round(float(e.peak_force), 3) for e in result.episodes],
            "terminations": dict(result.to_json()["terminations"])}


def _line(row: dict[str, Any]) -> str:
    s = row["summary"]
    f, ins = s["force"], s["insertion"]
    pk = f["peak"]
    return (f"{row['name'][-44:]:44} {row['control']:9} {ins['rate']:6.0%} [{ins['ci_low']:.0%},{ins['ci_high']:.0%}]"
            f"  {f['threshold']['count']:3d}/{s['episodes']:<3d} {f['collision']['count']:3d}/{s['episodes']:<3d}"
            f"  {pk['p50']['value']:6.1f} {pk['p90']['value']:6.1f} {pk['p99']['value']:6.1f} {pk['max']:6.1f}")


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.5))
    for i, row in enumerate(rows):
        peaks = np.asarray(row["summary"]["peaks"])
        jitter = np.random.default_rng(i).uniform(-0.2, 0.2, peaks.size)
        ax.scatter(np.maximum(peaks, 0.1), i + jitter, s=6, alpha=0.6)
    ax.axvline(30.0, color="tab:orange", ls="--", label="task force threshold 30 N")
    ax.axvline(40.0, color="tab:red", ls="--", label="collision level 40 N")
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [f"{r['name']} ({r['control']})" for r in rows], fontsize=8)
    ax.set_xlabel("per-episode peak contact force (N, physics-rate peak)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)


def run(args: argparse.Namespace) -> int:
    from morl_robot.evaluation.protocol import evaluate_policy, load_policy
    from morl_robot.evaluation.provenance import write_results_json

    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    rows = _rows(args)
    if not rows:
        raise UsageError("nothing to measure: give --policy or drop --no-builtin")
    print(f"bench contact: task {TASK}, {args.episodes} episodes per row on seeds {args.seed}…"
          f"{args.seed + args.episodes - 1}, through the safety rules unless said")
    print(f"{'policy':44} {'control':9} {'insertion [95% CI]':18} {'>30 N':7} {'>=40 N':7} "
          f"{'p50':>6} {'p90':>6} {'p99':>6} {'max':>6}  (N)")
    for row in rows:
        loaded = load_policy(row["source"], TASK, args.seed, row.get("preference"))
        start = time.perf_counter()
        result = evaluate_policy(loaded.act, loaded.task, args.episodes, args.seed, loaded.description,
                                 progress=not args.no_progress, safety=row["safety"], env_fn=loaded.make_env,
                                 contact_control=row["control"])
        row["summary"] = _summary(result)
        row["seconds"] = round(time.perf_counter() - start, 1)
        if not all(math.isfinite(p) for p in row["summary"]["peaks"]):
            raise RuntimeError(f"{row['name']}: non-finite peak force")
        print(_line(row), flush=True)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_results_json(out / "results.json", {
            "command": "morl-robot bench contact " + " ".join(
                [f"--episodes {args.episodes}", f"--seed {args.seed}"] + list(args.policy)
                + (["--no-builtin"] if args.no_builtin else []) + (["--stiff"] if args.stiff else [])),
            "task": TASK, "episodes": args.episodes, "seeds": [args.seed, args.seed + args.episodes - 1],
            "rows": [{k: v for k, v in r.items() if k != "source"} | {"policy": r["source"]} for r in rows]})
        _plot(rows, out / "peak_force.png")
        print(f"wrote {out / 'results.json'}, {out / 'peak_force.png'}")
    return 0
