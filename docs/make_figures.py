"""Render the README's picture and the docs' videos: the committed demo policy inserting the peg,
and the shadow_touch recipe's policy pressing the block (:mod:`morl_robot.rendering`: the renderer,
task camera and overlay of ``morl-robot evaluate --video``).

Writes ``peg_in_hole.gif`` (the episode) and ``peg_in_hole.png`` (four moments side by side, with
shadows), ``peg_in_hole.mp4`` and ``shadow_touch.mp4`` (the protocol's ``--video`` files, overlay
included) to ``--out`` (default ``docs/_static``).  Headless: EGL, else OSMesa
(:func:`morl_robot.rendering.gl_backend`).  The episodes are the evaluation protocol's: the ONNX
policy's served action through the robot's safety rules; the Sawyer on seed 10000 (the first
evaluation seed of ``results/demo``), the hand on seed 50000 (the first held-out seed)::

    .venv/bin/python docs/make_figures.py                      # ~3 min on a shared 2-core machine (software EGL: the still picture has shadows, ~1 s a frame)
    .venv/bin/python docs/make_figures.py --steps 4 --out /tmp/fig --width 64 --height 48   # a smoke run
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_POLICY = REPO / "results" / "demo" / "seed0" / "policy.onnx"
SHADOW_POLICY = REPO / "results" / "recipes" / "shadow_touch" / "seed0" / "policy.onnx"


@dataclass
class FigureSettings:
    """What to render: the policy, the episode's seed and length, image size, the output folder."""

    policy: Path = DEFAULT_POLICY
    seed: int = 10000
    steps: int = 80  # control steps at 20 Hz: the demo policy has inserted and holds by step 50
    width: int = 640
    height: int = 480
    gif_scale: float = 0.5  # GIF frames at half size keep it ~0.3 MB
    gif_every: int = 2  # every 2nd control step (10 frames per second of robot time)
    out: Path = REPO / "docs" / "_static"
    shadow_policy: Path = SHADOW_POLICY
    shadow_seed: int = 50000
    video_crf: int = 28  # H.264 quality of the MP4s: ~0.1 MB each


def render_episode(s: FigureSettings) -> tuple[list[np.ndarray], list[float]]:
    """The episode's frames (one per control step, HxWx3 uint8, step 0 first) and each frame's
    insertion depth in mm.  The fixture is drawn translucent so the peg shows inside the hole."""
    from morl_robot.evaluation.protocol import onnx_policy
    from morl_robot.rendering import OffscreenRenderer, task_camera
    from morl_robot.safety.shield import SafetyShield

    policy = onnx_policy(s.policy)
    env = policy.make_env()
    try:
        model, data = env.robot.model, env.robot.data
        # the task's camera (fixture translucent), with shadows: a still picture may take its time
        renderer = OffscreenRenderer(model, task_camera(env.task, model), s.width, s.height, shadows=True)
        shield = SafetyShield(env)
        obs, info = env.reset(seed=s.seed)
        shield.begin(env.state)
        frames: list[np.ndarray] = []
        depths: list[float] = [0.0]
        for _ in range(s.steps):
            frames.append(renderer.render(data))
            action = shield.filter(np.asarray(policy.act(np.asarray(obs, np.float64)), np.float64), env.state.stamp)
            obs, _, terminated, truncated, info = env.step(action)
            shield.observe(env.state)
            depths.append(float(env.task.progress(info) or 0.0))
            if terminated or truncated:
                break
        frames.append(renderer.render(data))
        renderer.close()
    finally:
        env.close()
    return frames, depths


def _label(frame: np.ndarray, text: str) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.fromarray(frame)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=max(8, frame.shape[0] // 22))
    draw.text((10, 8), text, fill=(255, 255, 255), font=font)
    return np.asarray(img)


def write_figures(s: FigureSettings) -> dict[str, Path]:
    """Render the episode and write ``peg_in_hole.png`` and ``peg_in_hole.gif`` into ``s.out``."""
    from PIL import Image

    frames, depths = render_episode(s)
    period = 0.05  # s, the task's control period
    s.out.mkdir(parents=True, exist_ok=True)
    n = len(frames)
    picks = sorted({0, round(0.3 * (n - 1)), round(0.5 * (n - 1)), n - 1})  # approach, entry, halfway in, held
    panels = [_label(frames[i], f"t = {i * period:.2f} s   depth {depths[i]:.1f} mm") for i in picks]
    png = s.out / "peg_in_hole.png"
    Image.fromarray(np.concatenate(panels, axis=1)).save(png, optimize=True)
    size = (max(1, int(s.width * s.gif_scale)), max(1, int(s.height * s.gif_scale)))
    small = [Image.fromarray(f).resize(size, Image.LANCZOS) for f in frames[:: max(1, s.gif_every)]]
    gif = s.out / "peg_in_hole.gif"
    small[0].save(gif, save_all=True, append_images=small[1:], duration=int(1000 * period * s.gif_every),
                  loop=0, optimize=True)
    return {"png": png, "gif": gif}


def write_videos(s: FigureSettings) -> dict[str, Path]:
    """``peg_in_hole.mp4`` and ``shadow_touch.mp4`` in ``s.out``: one protocol episode each (at most
    ``s.steps`` control steps), rendered as ``morl-robot evaluate --video`` renders them."""
    from morl_robot.evaluation.protocol import evaluate_policy, onnx_policy
    from morl_robot.rendering import EvaluationVideos, VideoSettings

    written = {}
    size = {"width": max(16, s.width - s.width % 2), "height": max(16, s.height - s.height % 2)}
    for key, path, seed in (("peg_in_hole", s.policy, s.seed), ("shadow_touch", s.shadow_policy, s.shadow_seed)):
        loaded = onnx_policy(path)
        tmp = s.out / f".{key}_video"
        videos = EvaluationVideos(tmp, VideoSettings(crf=s.video_crf, **size), policy=Path(path).name,
                                  preference=loaded.preference)
        overrides = {**loaded.task_overrides, "episode_duration": s.steps * 0.05}  # both tasks: 20 Hz
        evaluate_policy(loaded.act, loaded.task, 1, seed, loaded.description, task_overrides=overrides,
                        observer=videos)
        target = s.out / f"{key}.mp4"
        (tmp / f"episode_{seed}.mp4").replace(target)
        tmp.rmdir()
        written[f"{key}.mp4"] = target
    return written


def main(argv: list[str] | None = None) -> int:
    d = FigureSettings()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--policy", type=Path, default=d.policy, help="ONNX policy of the Sawyer peg-in-hole task")
    p.add_argument("--seed", type=int, default=d.seed, help="the episode's reset seed")
    p.add_argument("--steps", type=int, default=d.steps, help="control steps to render (20 Hz)")
    p.add_argument("--width", type=int, default=d.width, help="frame width in pixels")
    p.add_argument("--height", type=int, default=d.height, help="frame height in pixels")
    p.add_argument("--out", type=Path, default=d.out, help="output folder")
    a = p.parse_args(argv)
    if a.steps < 1 or a.width < 8 or a.height < 8:
        p.error("--steps must be >= 1 and --width/--height >= 8")
    settings = FigureSettings(policy=a.policy, seed=a.seed, steps=a.steps, width=a.width, height=a.height, out=a.out)
    written = {**write_figures(settings), **write_videos(settings)}
    for path in written.values():
        print(f"{path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
