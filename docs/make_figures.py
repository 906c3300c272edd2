"""Render the README's picture: the committed demo policy inserting the peg (MuJoCo offscreen).

Writes ``peg_in_hole.gif`` (the episode) and ``peg_in_hole.png`` (four moments side by side) to
``--out`` (default ``docs/_static``).  Headless: set ``MUJOCO_GL=egl`` (the default here) or
``osmesa``.  The episode is the evaluation protocol's: the ONNX policy's served action through the
Sawyer's safety rules, seed 10000 (the first evaluation seed of ``results/demo``)::

    .venv/bin/python docs/make_figures.py                      # 6-50 s (a shared 2-core machine)
    .venv/bin/python docs/make_figures.py --steps 4 --out /tmp/fig --width 64 --height 48   # a smoke run
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_POLICY = REPO / "results" / "demo" / "seed0" / "policy.onnx"


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


def _camera(mujoco: object) -> object:
    """A free camera looking at the hole fixture from the front left, the peg's approach in frame."""
    cam = mujoco.MjvCamera()  # type: ignore[attr-defined]
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE  # type: ignore[attr-defined]
    cam.lookat[:] = (0.65, 0.0, -0.02)  # m, world frame: above the fixture at (0.65, 0)
    cam.distance = 0.7
    cam.azimuth = 140.0
    cam.elevation = -12.0
    return cam


def render_episode(s: FigureSettings) -> tuple[list[np.ndarray], list[float]]:
    """The episode's frames (one per control step, HxWx3 uint8, step 0 first) and each frame's
    insertion depth in mm.  The fixture is drawn translucent so the peg shows inside the hole."""
    import mujoco

    from morl_robot.evaluation.protocol import onnx_policy
    from morl_robot.safety.shield import SafetyShield

    policy = onnx_policy(s.policy)
    env = policy.make_env()
    try:
        model, data = env.robot.model, env.robot.data
        fixture = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MATERIAL, "fixture")
        if fixture >= 0:
            model.mat_rgba[fixture, 3] = 0.35  # drawing only: physics does not read material colours
        renderer = mujoco.Renderer(model, s.height, s.width)
        cam = _camera(mujoco)
        shield = SafetyShield(env)
        obs, info = env.reset(seed=s.seed)
        shield.begin(env.state)
        frames: list[np.ndarray] = []
        depths: list[float] = [0.0]
        for _ in range(s.steps):
            renderer.update_scene(data, cam)
            frames.append(renderer.render().copy())
            action = shield.filter(np.asarray(policy.act(np.asarray(obs, np.float64)), np.float64), env.state.stamp)
            obs, _, terminated, truncated, info = env.step(action)
            shield.observe(env.state)
            depths.append(float(env.task.progress(info) or 0.0))
            if terminated or truncated:
                break
        renderer.update_scene(data, cam)
        frames.append(renderer.render().copy())
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
    written = write_figures(FigureSettings(policy=a.policy, seed=a.seed, steps=a.steps, width=a.width,
                                           height=a.height, out=a.out))
    for path in written.values():
        print(f"{path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
