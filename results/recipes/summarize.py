"""Collect the recipe runs of one task into results/recipes/<task>/ (see NOTES.md there).

    .venv/bin/python results/recipes/summarize.py TASK --runs 'runs/recipe_{seed}' --seeds 0 1 2 \
        --evals '/tmp/eval_{seed}.json' --train-logs '/tmp/train_{seed}.log' --eval-seed 130000

Per seed it copies ``policy.onnx`` and the evaluation JSON (``morl-robot evaluate POLICY --episodes N
--seed S --json``) to ``seed<S>/`` and writes ``seed<S>/train.json`` (steps, updates, wall time from
``/usr/bin/time -v``); ``results.json`` pools the seeds: success with 95 % Wilson intervals per
seed and pooled, episodes past the force limit, and the provenance (command, commit, date, machine).
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
from pathlib import Path

from morl_robot.evaluation.protocol import wilson_interval
from morl_robot.evaluation.provenance import provenance, write_results_json
from morl_robot.tasks.recipes import default_recipe

HERE = Path(__file__).resolve().parent
#: N: the Sawyer task's force threshold (an episode past it ends 'force_threshold'); for the Shadow Hand
#: pass --force-limit 60 --force-limit-source 'safety/shadow_hand.yaml: tactile collision level'
FORCE_LIMIT = 30.0


def _wall_time(log: Path) -> float | None:
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", log.read_text())
    if not m:
        return None
    h, mi, s = m.groups()
    return int(h or 0) * 3600 + int(mi) * 60 + float(s)


def _train_info(run: Path, log: Path | None) -> dict:
    """Steps, episodes (demonstrations: policy version 0), learner updates (as last logged) and wall time."""
    metrics = list(csv.DictReader((run / "metrics.csv").open())) if (run / "metrics.csv").is_file() else []
    episodes = list(csv.DictReader((run / "episodes.csv").open())) if (run / "episodes.csv").is_file() else []
    info = {"run_dir": str(run), "episodes": len(episodes),
            "demonstration_episodes": sum(e["policy_version"] == "0" for e in episodes),
            "env_steps": int(episodes[-1]["env_steps"]) if episodes else None,
            "learner_updates_last_logged": int(metrics[-1]["step"]) if metrics else None}
    if log is not None and log.is_file():
        info["wall_time_s"] = _wall_time(log)
    return info


def _rate(k: int, n: int) -> dict:
    lo, hi = wilson_interval(k, n)
    return {"count": k, "episodes": n, "rate": k / n if n else None, "ci95_wilson": [lo, hi]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--runs", required=True, help="run directory pattern with {seed}")
    p.add_argument("--evals", required=True, help="evaluation JSON pattern with {seed}")
    p.add_argument("--train-logs", default=None, help="train log pattern with {seed} (/usr/bin/time -v output)")
    p.add_argument("--force-limit", type=float, default=FORCE_LIMIT, help="N: an episode whose peak force passes it counts")
    p.add_argument("--force-limit-source", default="config/tasks/sawyer_peg_in_hole.yaml: force_threshold")
    p.add_argument("--commits", default=None,
                   help="pattern with {seed} of a file holding `git rev-parse HEAD` and `git status --porcelain` "
                        "taken when that seed's training started")
    p.add_argument("--train-command", required=True, help="the train command with {seed}")
    p.add_argument("--eval-command", required=True, help="the evaluate command with {seed}")
    args = p.parse_args()
    recipe = default_recipe(args.task)
    out = HERE / args.task
    seeds, succ, force, n_all = {}, 0, 0, 0
    for seed in args.seeds:
        run, ev = Path(args.runs.format(seed=seed)), Path(args.evals.format(seed=seed))
        folder = out / f"seed{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / "policy.onnx", folder / "policy.onnx")
        evaluation = json.loads(ev.read_text())
        evaluation["policy"] = f"results/recipes/{args.task}/seed{seed}/policy.onnx"
        (folder / "eval.json").write_text(json.dumps(evaluation, indent=2) + "\n")
        log = Path(args.train_logs.format(seed=seed)) if args.train_logs else None
        train = {**_train_info(run, log), "command": args.train_command.format(seed=seed)}
        if args.commits:
            lines = Path(args.commits.format(seed=seed)).read_text().splitlines()
            train["code_commit"], train["code_dirty_files"] = lines[0], [x[3:] for x in lines[1:] if x.strip()]
        (folder / "train.json").write_text(json.dumps(train, indent=2) + "\n")
        eps = evaluation["per_episode"]
        k = sum(bool(e["success"]) for e in eps)
        f = sum((e.get("peak_force") or 0.0) > args.force_limit or e["termination"] == "force_threshold" for e in eps)
        succ, force, n_all = succ + k, force + f, n_all + len(eps)
        seeds[str(seed)] = {"success": _rate(k, len(eps)), "past_force_limit": _rate(f, len(eps)),
                            "objectives": evaluation["objectives"], "peak_force_max": evaluation.get("peak_force"),
                            "terminations": evaluation["terminations"], "train": train,
                            "evaluate_command": args.eval_command.format(seed=seed)}
    data = {"task": args.task, "recipe": {"learner": recipe.learner, "session": recipe.session},
            "claim_measure": "success = the task's info['success'] at the episode's end (Sawyer: inserted "
                             "to 90 % of the hole depth; Shadow touch: pressed > 5 N; turn: dial in the window)",
            "force_limit_N": args.force_limit, "force_limit_source": args.force_limit_source,
            "eval_seeds": f"{json.loads(Path(args.evals.format(seed=args.seeds[0])).read_text())['seed']}…",
            "pooled": {"success": _rate(succ, n_all), "past_force_limit": _rate(force, n_all)},
            "seeds": seeds,
            "commands": {"train": args.train_command, "evaluate": args.eval_command}}
    prov_argv = args.train_command.format(seed=args.seeds[0]).split()[1:]
    path = write_results_json(out / "results.json", data, argv=prov_argv)
    final = json.loads(path.read_text())
    final["provenance"]["command"] = " ; ".join(
        [args.train_command.replace("{seed}", "S"), args.eval_command.replace("{seed}", "S"),
         f"S = {' '.join(map(str, args.seeds))}"])
    final["provenance"]["summarised_at"] = provenance()["date"]
    path.write_text(json.dumps(final, indent=2) + "\n")
    print(json.dumps(data["pooled"], indent=2))


if __name__ == "__main__":
    main()
