"""A product machine drawn as a PNG (matplotlib; no Graphviz binary needed).

Layout: states in columns by breadth-first depth from u0, terminal states as double circles, one
arrow per (source, target) pair labelled by the assignments σ that take it and the reward vector
when non-zero.  For Graphviz users :meth:`ProductMachine.to_dot` gives the same graph as dot text.
"""
from __future__ import annotations

import os
from collections import deque
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # (after choosing the backend)

from morl_robot.records import save_figure
from morl_robot.reward_machines.guards import format_assignment
from morl_robot.reward_machines.product import ProductMachine

__all__ = ["plot_product_machine"]


def _depths(p: ProductMachine) -> list[int]:
    depth = [-1] * p.num_states
    depth[0] = 0
    queue = deque([0])
    while queue:
        s = queue.popleft()
        for v in p.next_state[s][p.possible]:
            if depth[int(v)] < 0:
                depth[int(v)] = depth[s] + 1
                queue.append(int(v))
    return depth


def plot_product_machine(p: ProductMachine, path: str | os.PathLike[str], title: str | None = None) -> Path:
    depth = _depths(p)
    columns: dict[int, list[int]] = {}
    for s, d in enumerate(depth):
        columns.setdefault(d, []).append(s)
    pos = {}
    for d, members in columns.items():
        for k, s in enumerate(members):
            pos[s] = (2.6 * d, -1.6 * (k - (len(members) - 1) / 2))
    width = max(6.0, 2.2 * len(columns))
    height = max(3.5, 1.3 * max(len(m) for m in columns.values()))
    fig, ax = plt.subplots(figsize=(width, height))
    for s in range(p.num_states):
        if p.terminal[s]:
            continue
        groups: dict[int, list[str]] = {}
        rewards: dict[int, set[tuple[float, ...]]] = {}
        for mask in np.flatnonzero(p.possible):
            nxt = int(p.next_state[s, mask])
            groups.setdefault(nxt, []).append(format_assignment(int(mask), p.propositions))
            rew = tuple(float(x) for x in p.reward[s, mask])
            if any(rew):
                rewards.setdefault(nxt, set()).add(rew)
        for nxt, sigmas in groups.items():
            label = " ".join(sigmas)
            for rew in sorted(rewards.get(nxt, ())):
                label += " / (" + ", ".join(f"{r:g}" for r in rew) + ")"
            (x0, y0), (x1, y1) = pos[s], pos[nxt]
            if nxt == s:
                ax.annotate("", xy=(x0 + 0.15, y0 + 0.35), xytext=(x0 - 0.15, y0 + 0.35),
                            arrowprops={"arrowstyle": "->", "connectionstyle": "arc3,rad=-1.8", "color": "0.4"})
                ax.text(x0, y0 + 0.75, label, ha="center", va="bottom", fontsize=7, color="0.3")
                continue
            colour = "tab:red" if nxt in rewards else "0.35"
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops={"arrowstyle": "->", "shrinkA": 16, "shrinkB": 16, "color": colour,
                                        "connectionstyle": "arc3,rad=0.15"})
            # the label sits on the arc's apex (arc3: control point mid + rad·(dy, −dx))
            lx, ly = (x0 + x1) / 2 + 0.5 * 0.15 * (y1 - y0), (y0 + y1) / 2 - 0.5 * 0.15 * (x1 - x0)
            ax.text(lx, ly, label, ha="center", va="center", fontsize=7, color=colour,
                    bbox={"fc": "white", "ec": "none", "pad": 0.5, "alpha": 0.8})
    for s, (x, y) in pos.items():
        ax.add_patch(plt.Circle((x, y), 0.42, fill=True, fc="white", ec="black", zorder=3))
        if p.terminal[s]:
            ax.add_patch(plt.Circle((x, y), 0.34, fill=False, ec="black", zorder=4))
        ax.text(x, y, p.state_name(s), ha="center", va="center", fontsize=6.5, zorder=5)
    ax.annotate("start", xy=(pos[0][0] - 0.45, pos[0][1]), xytext=(pos[0][0] - 1.4, pos[0][1]),
                arrowprops={"arrowstyle": "->"}, va="center", fontsize=8)
    ax.set_aspect("equal")
    ax.autoscale_view()
    xs = [x for x, _ in pos.values()]
    ys = [y for _, y in pos.values()]
    ax.set_xlim(min(xs) - 1.6, max(xs) + 1.0)
    ax.set_ylim(min(ys) - 1.0, max(ys) + 1.4)
    ax.axis("off")
    ax.set_title(title or " × ".join(p.objective_names)
                 + f": {p.num_nonterminal} non-terminal / {p.num_states} reachable states", fontsize=9)
    from morl_robot.learning.run_lock import write_error

    try:
        return save_figure(fig, path, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise write_error(path, exc) from None
