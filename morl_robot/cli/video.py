"""``--video DIR`` (evaluate, demo, deploy and safety-test with the sim backend): one MP4 per
episode, rendered headless (:mod:`morl_robot.rendering`; docs/howto/videos.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from morl_robot.errors import UsageError


def add_video(p: argparse.ArgumentParser, where: str = "episode") -> None:
    """The ``--video DIR`` option (``where``: what one file shows)."""
    p.add_argument("--video", default=None, metavar="DIR",
                   help=f"write one MP4 per {where} into DIR (MuJoCo offscreen, headless: EGL, else OSMesa; "
                        "overlay of the objectives so far, contact force, preference, safety events) "
                        "(default: no video)")


def evaluation_videos(video: str | None, loaded: Any) -> Any:
    """The protocol's video observer for ``--video`` (None without it) for a
    :class:`~morl_robot.evaluation.protocol.LoadedPolicy`; the backend is chosen here (before any
    other rendering), so a machine without headless OpenGL fails at once, naming why."""
    if video is None:
        return None
    from morl_robot.rendering import EvaluationVideos, gl_backend

    gl_backend()
    name = Path(str(loaded.description).split(" (", 1)[0]).name
    return EvaluationVideos(video, policy=name, preference=loaded.preference,
                            log=lambda m: print(m, file=sys.stderr))


def video_summary(observer: Any) -> str:
    """One line: the files, their size and the render cost."""
    if observer is None or observer.videos is None:
        return ""
    s = observer.videos.stats.summary()
    return (f"video: {len(s['files'])} MP4 in {observer.out_dir} ({s['megabytes']:.2f} MB, {s['frames']} frames, "
            f"render + overlay {s['render_ms_median']:.1f} ms/frame median, {observer.videos.backend})")


def node_video_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The robot node's settings for ``--video`` on a graph command (deploy, safety-test): its
    ``video_dir`` (absolute), refused without the sim backend or with ``--attach``."""
    if getattr(args, "video", None) is None:
        return {}
    if args.backend != "sim":
        raise UsageError("--video renders the simulated robot: use it with --backend sim")
    if getattr(args, "attach", False):
        raise UsageError("--video starts the robot node's renderer: with --attach set it in the session YAML the "
                         "launch reads (robot_node: video_dir: DIR)")
    return {"video_dir": str(Path(args.video).resolve())}


def list_videos(video: str | None) -> str:
    """One line naming the MP4 files in ``video`` and their size (empty without ``--video``)."""
    if video is None:
        return ""
    files = sorted(Path(video).glob("*.mp4"))
    mb = sum(p.stat().st_size for p in files) / 1e6
    return f"video: {len(files)} MP4 in {Path(video).resolve()} ({mb:.2f} MB): " + ", ".join(p.name for p in files)
