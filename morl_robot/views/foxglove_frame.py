"""A frame of the live view as the dashboard lays it out, drawn from the channels a WebSocket client
received (``--foxglove``): NOT a Foxglove app screenshot (no Foxglove app here), the same data drawn
with matplotlib: the last ``/scene`` SceneUpdate projected in 3D (boxes, spheres, cylinders as
boxes of their size; meshes as their triangles), the objectives' returns, the contact force, the
e-stop state and the last safety violation.

``python -m morl_robot.views.foxglove_frame --url ws://127.0.0.1:8765 --seconds 8 --out frame.png``
while a session runs with ``--foxglove 8765``.  docs/howto/rviz_foxglove.md.
"""
from __future__ import annotations

import argparse
import textwrap
from typing import Any

import numpy as np

from morl_robot.views.foxglove_client import Received, decode_protobuf, read_live_view

_CORNERS = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])
_FACES = [[0, 1, 3, 2], [4, 5, 7, 6], [0, 1, 5, 4], [2, 3, 7, 6], [0, 2, 6, 4], [1, 3, 7, 5]]


def _rotation(q: Any) -> np.ndarray:
    x, y, z, w = q.x, q.y, q.z, q.w
    if x == y == z == w == 0:
        return np.eye(3)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def scene_polygons(scene: Any, extent: float = 3.0) -> list[tuple[np.ndarray, tuple[float, ...]]]:
    """(polygon (P, 3) in world, rgba) of every primitive of a decoded SceneUpdate (primitives larger
    than ``extent`` m, the floor, left out)."""
    out = []
    for e in scene.entities:
        for kind in ("cubes", "spheres", "cylinders", "triangles"):
            for p in getattr(e, kind):
                r, t = _rotation(p.pose.orientation), np.array([p.pose.position.x, p.pose.position.y,
                                                                 p.pose.position.z])
                rgba = (p.color.r, p.color.g, p.color.b, max(p.color.a, 0.3))
                if kind == "triangles":
                    pts = np.array([[q.x, q.y, q.z] for q in p.points]) @ r.T + t
                    out += [(pts[i:i + 3], rgba) for i in range(0, len(pts) - 2, 3)]
                    continue
                size = np.array([p.size.x, p.size.y, p.size.z])
                if size.max() > extent:
                    continue
                corners = (_CORNERS * size) @ r.T + t
                out += [(corners[f], rgba) for f in _FACES]
    return out


def draw(got: Received, path: str, title: str = "") -> None:
    """The frame of ``got`` to ``path`` (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    fig = plt.figure(figsize=(13, 7), dpi=100)
    grid = fig.add_gridspec(4, 5)
    ax3 = fig.add_subplot(grid[:, :3], projection="3d")
    if got.messages.get("/scene"):
        scene = decode_protobuf(got.channels["/scene"], got.messages["/scene"][-1][1])
        polys = scene_polygons(scene)
        ax3.add_collection3d(Poly3DCollection([p for p, _ in polys], facecolors=[c for _, c in polys],
                                              edgecolors=(0, 0, 0, 0.15), linewidths=0.2))
        pts = np.concatenate([p for p, _ in polys])
        lo, hi = pts.min(0), pts.max(0)
        mid, half = (lo + hi) / 2, (hi - lo).max() / 2
        for setter, m in zip((ax3.set_xlim, ax3.set_ylim, ax3.set_zlim), mid):
            setter(m - half, m + half)
        ax3.view_init(elev=25, azim=-135)
        ax3.set_title(f"/scene (foxglove.SceneUpdate, frame world): {len(scene.entities)} bodies")
    ax3.set_xlabel("x (m)")
    ax3.set_ylabel("y (m)")
    ax3.set_zlabel("z (m)")
    t0 = min((m[0][0] for m in got.messages.values() if m), default=0)

    def series(topic: str, get: Any) -> tuple[list[float], dict[str, list[float]]]:
        ts, ys = [], {}
        for t, m in got.messages.get(topic, []):
            vals = get(m)
            ts.append((t - t0) / 1e9)
            for k, v in vals.items():
                ys.setdefault(k, []).append(v)
        return ts, ys

    for row, (topic, get, label) in enumerate([
            ("/objectives", lambda m: m["return"], "/objectives.return.<objective>"),
            ("/objectives", lambda m: m["reward"], "/objectives.reward.<objective>"),
            ("/wrench", lambda m: {"wrist |F| (N)": m["force"]["norm"]}, "/wrench.force.norm")]):
        ax = fig.add_subplot(grid[row, 3:])
        ts, ys = series(topic, get)
        for k, v in ys.items():
            ax.plot(ts, v, label=k, lw=1)
        ax.set_title(label, fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        ax.tick_params(labelsize=7)
    ax = fig.add_subplot(grid[3, 3])
    estop = [m["engaged"] for _, m in got.messages.get("/safety/estop", [])]
    engaged = bool(estop and estop[-1])
    ax.set_facecolor("#d32f2f" if engaged else "#2e7d32")
    ax.text(0.5, 0.5, "E-STOP engaged" if engaged else "running", color="white", ha="center", va="center",
            fontsize=12, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title("/safety/estop.engaged", fontsize=9)
    ax = fig.add_subplot(grid[3, 4])
    ax.axis("off")
    viol = got.messages.get("/safety/violations", [])
    text = (f"{len(viol)} violation(s); last:\n" + textwrap.fill(
        f"{viol[-1][1]['rule']}: {viol[-1][1]['message']}", 48)) if viol else "no violation"
    ax.text(0, 1, text, fontsize=7, va="top", family="monospace")
    ax.set_title("/safety/violations", fontsize=9)
    fig.suptitle(title or "live view channels received over WebSocket (foxglove.sdk.v1), drawn with matplotlib "
                 "as the layout arranges them: not a Foxglove app screenshot", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8765")
    p.add_argument("--seconds", type=float, default=8.0, help="how long to read the channels")
    p.add_argument("--out", default="foxglove_frame.png")
    p.add_argument("--title", default="")
    a = p.parse_args(argv)
    got = read_live_view(a.url, a.seconds)
    draw(got, a.out, a.title)
    print(f"{a.out}: " + ", ".join(f"{t} {len(m)}" for t, m in sorted(got.messages.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
