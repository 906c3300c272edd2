"""``morl-robot rm inspect FILE... [--dot OUT] [--png OUT] [--json]``: load reward machines (one
per objective), validate them, build their product (MORM) and print its state counts, states and
transitions; optionally a Graphviz dot file and a PNG diagram."""
from __future__ import annotations

import argparse
import json
import math

from morl_robot.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rm", help="reward machines and their multi-objective product (MORM)")
    rsub = p.add_subparsers(dest="rm_command", metavar="ACTION")
    rsub.required = True
    q = rsub.add_parser("inspect", help="validate reward machines, build their product, print its states")
    q.add_argument("files", nargs="+", metavar="FILE",
                   help="reward machine YAML, one per objective (a path, or a name under config/reward_machines "
                        "such as button_world/abb_term)")
    q.add_argument("--dot", metavar="OUT", help="write the product as a Graphviz dot file (default: not written)")
    q.add_argument("--png", metavar="OUT", help="draw the product as a PNG (default: not drawn)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run_inspect)


def summary(product) -> dict:
    """The facts `rm inspect` prints, as data."""
    full = math.prod(len(m.states) for m in product.machines)
    return {
        "objectives": list(product.objective_names),
        "propositions": list(product.propositions),
        "machines": [{"name": m.name, "file": m.source, "states": len(m.states), "terminal": sorted(m.terminal),
                      "unreachable": list(m.unreachable)} for m in product.machines],
        "product_states": product.num_states,
        "nonterminal_states": product.num_nonterminal,
        "terminal_states": product.num_states - product.num_nonterminal,
        "full_product_states": full,
        "states": [{"index": s, "name": product.state_name(s), "terminal": bool(product.terminal[s])}
                   for s in range(product.num_states)],
    }


def run_inspect(args: argparse.Namespace) -> int:
    from morl_robot.records import write_bytes_atomic
    from morl_robot.reward_machines import build_product, load_machine

    machines = [load_machine(f) for f in args.files]
    names = [m.name for m in machines]
    if len(set(names)) != len(names):
        raise UsageError(f"rm inspect: machine names must differ (they name the objectives), got {names}")
    product = build_product(machines)
    info = summary(product)
    if args.dot:
        write_bytes_atomic(args.dot, product.to_dot().encode())
        info["dot"] = args.dot
    if args.png:
        from morl_robot.reward_machines.diagram import plot_product_machine

        info["png"] = str(plot_product_machine(product, args.png))
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    lines = [f"MORM of {' x '.join(names)}: {len(names)} objectives over propositions {', '.join(product.propositions)}"]
    for m in info["machines"]:
        extra = f", unreachable: {', '.join(m['unreachable'])}" if m["unreachable"] else ""
        lines.append(f"  {m['name']:<16} {m['states']} states, terminal {m['terminal'] or '-'}{extra}  ({m['file']})")
    lines.append(f"product states  {info['product_states']} reachable ({info['nonterminal_states']} non-terminal, "
                 f"{info['terminal_states']} terminal) of {info['full_product_states']} in the full product")
    for st in info["states"]:
        lines.append(f"  {st['index']:3d}  {st['name']}{'  terminal' if st['terminal'] else ''}")
    for key in ("dot", "png"):
        if key in info:
            lines.append(f"{key:<15} {info[key]}")
    print("\n".join(lines))
    return 0
