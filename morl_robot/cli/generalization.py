"""``morl-robot generalization``: policies × environment contexts through the one evaluation
protocol, scored with the MORL-generalisation paper's metrics (:mod:`morl_robot.evaluation.generalization`).

``--policies`` entries are ``[METHOD=]POLICY[,POLICY…]`` (the policies after ``=`` are runs —
seeds — of one method; ``zero``, ``scripted`` and ``random`` are built in); a conditioned policy is
evaluated at every ``--preferences`` point, which together form its front.  Every (run, preference,
context) cell is one protocol evaluation, written to ``OUT/evaluations/`` and reused when the
command runs again with the same episodes and seed.  Writes ``results.json``, ``results.md`` and
plots into ``--out``.  How-to: docs/howto/generalization.md.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from morl_robot.errors import UsageError

BUILT_IN = ("zero", "scripted", "random")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("generalization", help="evaluate policies on held-out environment contexts "
                                              "(NHGR, EUGR, IQM and optimality gap with CIs)")
    p.add_argument("--policies", nargs="+", required=True, metavar="[METHOD=]POLICY[,POLICY...]",
                   help="policies (.onnx, run directories, or zero | scripted | random); METHOD=A,B groups runs "
                        "(seeds) of one method (required)")
    p.add_argument("--task", default=None, help="task of the built-in policies (default: the ONNX policies' task)")
    p.add_argument("--contexts", default="held_out",
                   help="held_out (nominal and every held-out context), nominal, or comma-separated context "
                        "names (default held_out)")
    p.add_argument("--context-file", default=None, help="context YAML (default: config/contexts/<task>.yaml)")
    p.add_argument("--preferences", nargs="+", default=None, metavar="E1,E2",
                   help="preferences (one ε per objective, comma-separated) at which conditioned policies are "
                        "evaluated (default: each policy's centre)")
    p.add_argument("--episodes", type=int, default=50, help="protocol episodes per cell (default 50)")
    p.add_argument("--seed", type=int, default=None, help="first episode seed (default: the protocol's held-out 50000)")
    p.add_argument("--ref-point", type=float, nargs="+", default=None,
                   help="raw hypervolume reference point, one value per objective (default: the per-objective "
                        "minimum of every evaluated return, so every point counts)")
    p.add_argument("--no-safety", action="store_true", help="act without the safety rules (default: through them)")
    p.add_argument("--backend", choices=("sim", "hardware"), default="sim",
                   help="sim: the evaluation protocol in process; hardware: each cell is `morl-robot deploy --backend "
                        "hardware --episodes N` against the driver emulator playing the context (real time, through "
                        "the ROS graph and the safety monitor; ONNX policies only) (default: sim)")
    p.add_argument("--emulate", default="none", metavar="FAULTS",
                   help="--backend hardware: the emulator's link faults on top of the context's, as deploy's "
                        "--emulate (default: none)")
    p.add_argument("--realtime-priority", type=int, default=0, metavar="N",
                   help="--backend hardware: deploy's --realtime-priority for each cell's graph (default 0: normal)")
    p.add_argument("--out", type=Path, required=True, help="output directory (required)")
    p.set_defaults(func=run)


def _parse_methods(entries: list[str]) -> dict[str, list[str]]:
    methods: dict[str, list[str]] = {}
    for e in entries:
        name, _, rest = e.partition("=") if "=" in e else ("", "", e)
        paths = [x for x in rest.split(",") if x]
        if not paths:
            raise UsageError(f"--policies {e!r}: no policy after '='")
        name = name or (paths[0] if paths[0] in BUILT_IN else Path(paths[0]).stem)
        if name in methods:
            raise UsageError(f"--policies: method '{name}' given twice")
        methods[name] = paths
    return methods


def _preferences(raw: list[str] | None) -> list[tuple[float, ...]] | None:
    if raw is None:
        return None
    out = []
    for r in raw:
        try:
            out.append(tuple(float(x) for x in r.split(",")))
        except ValueError:
            raise UsageError(f"--preferences {r!r}: expected comma-separated numbers, e.g. 0.1,0.005") from None
    return out


def _zero_policy(task: str, overrides: dict[str, Any] | None = None) -> Any:
    """The do-nothing policy (zero action) in ``overrides``' action mode (delta actions: hold still)."""
    import numpy as np

    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.evaluation.protocol import LoadedPolicy

    env = MORobotEnv(task, overrides=overrides or None)
    dim = env.action_space.shape[0]
    env.close()
    return LoadedPolicy(lambda obs: np.zeros(dim), task, "do nothing (zero action)", task_overrides=dict(overrides or {}))


def _load(source: str, task: str | None, preference: tuple[float, ...] | None,
          overrides: dict[str, Any] | None = None) -> Any:
    """``overrides``: the task keys of the evaluated ONNX policies (their action mode), which the
    built-in policies act in too."""
    from morl_robot.evaluation.protocol import load_policy

    if source == "zero":
        if not task:
            raise UsageError("the zero policy needs --task")
        return _zero_policy(task, overrides)
    return load_policy(source, task=task if source in BUILT_IN else None,
                       preference=None if source in BUILT_IN else preference)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=,-]+", "_", text).strip("_")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from morl_robot.contexts import resolve_contexts
    from morl_robot.evaluation import generalization as g
    from morl_robot.evaluation.protocol import HELD_OUT_SEED, wilson_interval
    from morl_robot.evaluation.provenance import write_results_json
    from morl_robot.records import write_json_atomic

    if args.episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {args.episodes}")
    seed = HELD_OUT_SEED if args.seed is None else args.seed
    methods = _parse_methods(args.policies)
    if args.backend == "hardware":
        if args.no_safety:
            raise UsageError("--backend hardware runs through the safety monitor; --no-safety is for --backend sim")
        builtin = [p for ps in methods.values() for p in ps if p in BUILT_IN]
        if builtin:
            raise UsageError(f"--backend hardware deploys ONNX policies; {', '.join(builtin)} is built in (sim only)")
    prefs = _preferences(args.preferences)
    # the task: --task, else the first ONNX policy's
    task = args.task
    if task is None:
        first = next((p for ps in methods.values() for p in ps if p not in BUILT_IN), None)
        if first is None:
            raise UsageError("built-in policies only: give --task")
        task = _load(first, None, None).task
    # the built-in policies act in the ONNX policies' action mode (e.g. delta: zero = hold still)
    first = next((p for ps in methods.values() for p in ps if p not in BUILT_IN), None)
    overrides = _load(first, None, None).task_overrides if first is not None else {}
    contexts = resolve_contexts(args.contexts, task, args.context_file)
    out: Path = args.out
    (out / "evaluations").mkdir(parents=True, exist_ok=True)

    cells: dict[tuple[str, int, str], list[dict[str, Any]]] = {}  # (method, run, context) → per-preference
    objective_names: list[str] = []
    for method, paths in methods.items():
        for run_i, path in enumerate(paths):
            conditioned = path not in BUILT_IN and prefs is not None
            for pref in (prefs if conditioned else [None]):
                loaded = None
                stem = path if path in BUILT_IN else Path(path).stem if Path(path).suffix else Path(path).name
                label = _slug(f"{method}_{stem}" + (f"@{','.join(f'{v:g}' for v in pref)}" if pref else ""))
                for ctx in contexts:
                    file = out / "evaluations" / f"{label}__{ctx.name}.json"
                    data = json.loads(file.read_text()) if file.is_file() else None
                    if (data is None or data.get("episodes") != args.episodes or data.get("seed") != seed
                            or data.get("backend", "sim") != args.backend):
                        if loaded is None:
                            loaded = _load(path, task, pref, overrides)
                            if loaded.task != task:
                                raise UsageError(f"--policies {path}: trained for task '{loaded.task}', not '{task}'")
                        print(f"[generalization] {label} on {ctx.name}: {args.episodes} episodes"
                              + (" (hardware through the driver emulator)" if args.backend == "hardware" else ""),
                              file=sys.stderr)
                        if args.backend == "hardware":
                            data = _hardware_cell(args, path, pref, ctx, seed, out / "deploys" / f"{label}__{ctx.name}")
                        else:
                            data = g.evaluate_in_context(loaded, ctx, args.episodes, seed,
                                                         safety=not args.no_safety).to_json()
                        for e in data["per_episode"]:
                            e["context"] = ctx.name
                        write_json_atomic(file, data)
                    objective_names = list(data["objectives"])
                    cells.setdefault((method, run_i, ctx.name), []).append(
                        {"preference": list(pref) if pref else None, "file": str(file.relative_to(out)), "eval": data})

    def summary(evals: list[dict[str, Any]]) -> dict[str, Any]:
        n = sum(e["eval"]["episodes"] for e in evals)
        ok = sum(round(e["eval"]["success_rate"] * e["eval"]["episodes"]) for e in evals)
        forced = sum(e["eval"]["terminations"].get("force_threshold", 0) for e in evals)
        safety = sum(e["eval"]["terminations"].get("safety", 0) for e in evals)
        s_lo, s_hi = wilson_interval(ok, n)
        f_lo, f_hi = wilson_interval(forced, n)
        return {"episodes": n, "success_rate": ok / n, "success_ci": [s_lo, s_hi],
                "force_threshold_rate": forced / n, "force_threshold_ci": [f_lo, f_hi], "safety_stops": safety}

    fronts = {k: np.array([[e["eval"]["objectives"][o]["mean"] for o in objective_names] for e in v])
              for k, v in cells.items()}
    ref_point = (np.asarray(args.ref_point, dtype=float) if args.ref_point is not None
                 else np.min(np.concatenate(list(fronts.values())), axis=0) - 1e-9)
    if ref_point.size != len(objective_names):
        raise UsageError(f"--ref-point: {ref_point.size} values for {len(objective_names)} objectives "
                         f"({', '.join(objective_names)})")
    references = {c.name: g.reference_front([f for (m, r, cn), f in fronts.items() if cn == c.name])
                  for c in contexts}
    result_methods: dict[str, Any] = {}
    scores: dict[str, dict[str, np.ndarray]] = {"nhgr": {}, "eugr": {}}
    for method, paths in methods.items():
        runs = []
        for run_i, path in enumerate(paths):
            per_ctx = {}
            for c in contexts:
                f = fronts[(method, run_i, c.name)]
                per_ctx[c.name] = {"front": f.tolist(), **g.context_metrics(f, references[c.name], ref_point),
                                   **summary(cells[(method, run_i, c.name)]),
                                   "cells": [{"preference": e["preference"], "file": e["file"]}
                                             for e in cells[(method, run_i, c.name)]]}
                if args.backend == "hardware":
                    per_ctx[c.name]["in_process_success"] = [e["eval"]["in_process"]["success_rate"]
                                                             for e in cells[(method, run_i, c.name)]]
                    per_ctx[c.name]["estops"] = sum(e["eval"]["estops"] for e in cells[(method, run_i, c.name)])
            runs.append({"policy": path, "contexts": per_ctx})
        for metric, table in scores.items():
            table[method] = np.array([[r["contexts"][c.name][metric] for c in contexts] for r in runs])
        result_methods[method] = {"runs": runs}
    aggregates = {metric: g.aggregate(s) for metric, s in scores.items()}
    for method, entry in result_methods.items():
        entry["aggregate"] = {metric: agg[method] for metric, agg in aggregates.items()}
        for c in contexts:  # success and force-limit terminations pooled over runs
            entry.setdefault("pooled", {})[c.name] = summary(
                [e for r in range(len(methods[method])) for e in cells[(method, r, c.name)]])
    data = {"task": task, "objectives": objective_names, "episodes": args.episodes, "seed": seed,
            "backend": args.backend, **({"emulate": args.emulate} if args.backend == "hardware" else {}),
            "safety": not args.no_safety, "ref_point": ref_point.tolist(),
            "reference": "nondominated union of every evaluated front on the context (no specialists)",
            "contexts": [c.to_json() for c in contexts],
            "reference_fronts": {k: v.tolist() for k, v in references.items()}, "methods": result_methods}
    write_results_json(out / "results.json", data)
    (out / "results.md").write_text(_markdown(data))
    _plots(data, out)
    print(f"wrote {out / 'results.json'}, {out / 'results.md'} and plots")
    return 0


def _hardware_cell(args: argparse.Namespace, policy: str, pref: tuple[float, ...] | None, ctx: Any, seed: int,
                   out: Path) -> dict[str, Any]:
    """One cell on the hardware backend: ``morl-robot deploy POLICY --backend hardware --emulate F
    --set session.driver_emulator.context=FILE:NAME --episodes N`` (a subprocess: its own ROS
    graph), its ``deploy_report.json`` in the protocol's cell form (``in_process``: the same seeds
    in the same context in simulation)."""
    import subprocess

    import numpy as np

    from morl_robot.errors import MorlRobotError
    from morl_robot.evaluation.protocol import bootstrap_ci

    where = args.context_file or ctx.task
    cmd = [sys.executable, "-m", "morl_robot.cli", "deploy", policy, "--backend", "hardware", "--emulate", args.emulate,
           "--set", f"session.driver_emulator.context={where}:{ctx.name}", "--episodes", str(args.episodes),
           "--seed", str(seed), "--out", str(out), "--realtime-priority", str(args.realtime_priority)]
    if pref is not None:
        cmd += ["--preference", *(f"{v:g}" for v in pref)]
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300 + 120 * args.episodes)
    (out / "deploy.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise MorlRobotError(f"{' '.join(cmd)} exited with {proc.returncode}; log {out / 'deploy.log'}: "
                             f"{proc.stderr.strip()[-600:]}")
    rep = json.loads((out / "deploy_report.json").read_text())
    names = rep["objectives"]
    g, ref = np.asarray(rep["graph_returns"]), np.asarray(rep["in_process_returns"])
    terms = [str(t) for t in rep["terminations"]]

    def objectives(r: Any) -> dict[str, Any]:
        return {n: dict(zip(("mean", "ci_low", "ci_high"), (float(r[:, i].mean()), *bootstrap_ci(r[:, i], seed=seed))))
                for i, n in enumerate(names)}

    return {"task": rep["task"], "policy": policy, "backend": "hardware", "emulate": args.emulate,
            "episodes": args.episodes, "seed": seed, "seeds": rep["seeds"], "objectives": objectives(g),
            "success_rate": float(np.mean(rep["graph_success"])),
            "terminations": {t: terms.count(t) for t in sorted(set(terms))},
            "estops": rep["graph_estops"], "operator_resets": rep.get("operator_resets"),
            "deadline_misses": rep.get("deadline_misses"), "context": ctx.to_json(),
            "per_episode": [{"seed": s, "returns": dict(zip(names, map(float, r))), "termination": t, "success": ok,
                             "context": ctx.name}
                            for s, r, t, ok in zip(rep["seeds"], g, rep["terminations"], rep["graph_success"])],
            "in_process": {"objectives": objectives(ref), "success_rate": float(np.mean(rep["in_process_success"])),
                           "terminations": {t: [str(x) for x in rep["in_process_terminations"]].count(t)
                                            for t in sorted(set(map(str, rep["in_process_terminations"])))}},
            "deploy_report": str(out / "deploy_report.json")}


def _markdown(data: dict[str, Any]) -> str:
    import numpy as np

    ctxs = [c["name"] for c in data["contexts"]]
    lines = [f"# Generalisation: {data['task']}", "",
             (f"{data['episodes']} episodes per cell from seed {data['seed']}; "
              + ("the hardware backend through the driver emulator playing each context (emulated link faults "
                 f"{data.get('emulate', 'none')}), in real time; " if data.get("backend") == "hardware" else "")
              + f"{'through' if data['safety'] else 'without'} the safety rules; raw HV reference "
              f"{[round(v, 3) for v in data['ref_point']]}; reference front: {data['reference']}."), "",
             "| context | outside training | " + " | ".join(data["methods"]) + " |",
             "|---|---|" + "---|" * len(data["methods"])]
    outside = {c["name"]: ", ".join(c.get("outside_training", [])) or "—" for c in data["contexts"]}
    for c in ctxs:
        row = []
        for m in data["methods"].values():
            p = m["pooled"][c]
            hv = [r["contexts"][c]["hv"] for r in m["runs"]]
            row.append(f"insert {p['success_rate']:.0%} [{p['success_ci'][0]:.0%}, {p['success_ci'][1]:.0%}], "
                       f">limit {p['force_threshold_rate']:.0%} [{p['force_threshold_ci'][0]:.0%}, "
                       f"{p['force_threshold_ci'][1]:.0%}], HV {np.median(hv):.4g}, NHGR "
                       f"{np.median([r['contexts'][c]['nhgr'] for r in m['runs']]):.3f}")
        lines.append(f"| {c} | {outside[c]} | " + " | ".join(row) + " |")
    if data.get("backend") == "hardware":  # each cell's same seeds in the same context, in process
        lines += ["", "| context | method | hardware insertion | in-process (sim, same seeds) insertion | e-stops |",
                  "|---|---|---|---|---|"]
        for c in ctxs:
            for name, m in data["methods"].items():
                for r in m["runs"]:
                    hw = r["contexts"][c]
                    lines.append(f"| {c} | {name} | {hw['success_rate']:.0%} | "
                                 + ", ".join(f"{x:.0%}" for x in hw.get("in_process_success", [])) + " | "
                                 + str(hw.get("estops", "")) + " |")
    lines += ["", "| method | NHGR IQM [95 % CI] | NHGR optimality gap | EUGR IQM | EUGR optimality gap | runs × contexts |",
              "|---|---|---|---|---|---|"]
    for name, m in data["methods"].items():
        a = m["aggregate"]

        def fmt(b: dict[str, Any]) -> str:
            if b["value"] is None or b["value"] != b["value"]:  # no context to aggregate (see below)
                return "undefined"
            return f"{b['value']:.3f} [{b['ci_low']:.3f}, {b['ci_high']:.3f}]"

        lines.append(f"| {name} | {fmt(a['nhgr']['iqm'])} | {fmt(a['nhgr']['optimality_gap'])} | "
                     f"{fmt(a['eugr']['iqm'])} | {fmt(a['eugr']['optimality_gap'])} | "
                     f"{a['nhgr']['runs']} × {a['nhgr']['contexts']} |")
    first = next(iter(data["methods"].values()))["aggregate"]["nhgr"]
    if first["excluded"]:
        lines += ["", "Left out of the aggregates (the reference front has no spread there, NHGR undefined): "
                  + ", ".join(ctxs[i] for i in first["excluded"]) + "."]
    return "\n".join(lines) + "\n"


def _plots(data: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ctxs = [c["name"] for c in data["contexts"]]
    obj = data["objectives"]
    methods = list(data["methods"])
    if len(obj) == 2:
        cols = min(4, len(ctxs))
        rows = -(-len(ctxs) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.2 * rows), squeeze=False)
        for ax, c in zip(axes.flat, ctxs):
            ref = np.array(data["reference_fronts"][c])
            ax.scatter(ref[:, 0], ref[:, 1], marker="x", color="k", label="reference", zorder=3)
            for m in methods:
                for i, r in enumerate(data["methods"][m]["runs"]):
                    f = np.array(r["contexts"][c]["front"])
                    ax.plot(f[:, 0], f[:, 1], "o-", ms=3, alpha=0.8, label=m if i == 0 else None)
            ax.set_title(c, fontsize=9)
            ax.set_xlabel(obj[0], fontsize=8)
            ax.set_ylabel(obj[1], fontsize=8)
        for ax in list(axes.flat)[len(ctxs):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "fronts.png", dpi=110)
        plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    for ax, metric in zip(axes, ("nhgr", "eugr")):
        for i, m in enumerate(methods):
            a = data["methods"][m]["aggregate"][metric]
            for j, key in enumerate(("iqm", "optimality_gap")):
                b = a[key]
                ax.bar(j + i * 0.8 / len(methods), b["value"], width=0.8 / len(methods),
                       yerr=[[b["value"] - b["ci_low"]], [b["ci_high"] - b["value"]]], capsize=3,
                       label=m if j == 0 else None, color=f"C{i}")
        ax.set_xticks([0.3, 1.3], ["IQM", "optimality gap"])
        ax.set_title(metric.upper())
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "metrics.png", dpi=110)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.1 * len(ctxs) * 2), 3.2))
    x = np.arange(len(ctxs))
    for ax, (key, title) in zip(axes, (("success", "insertion / success rate"),
                                       ("force_threshold", "force-limit terminations"))):
        for i, m in enumerate(methods):
            p = [data["methods"][m]["pooled"][c] for c in ctxs]
            v = np.array([q[f"{key}_rate"] for q in p])
            lo = np.array([q[f"{key}_ci"][0] for q in p])
            hi = np.array([q[f"{key}_ci"][1] for q in p])
            w = 0.8 / len(methods)
            ax.bar(x + i * w, v, width=w, yerr=[v - lo, hi - v], capsize=2, label=m, color=f"C{i}")
        ax.set_xticks(x + 0.4 - 0.4 / len(methods), ctxs, rotation=35, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "rates.png", dpi=110)
    plt.close(fig)
