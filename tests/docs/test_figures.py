"""docs/make_figures.py (the README's picture) runs headless on a tiny budget and draws the scene."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[2]


def test_make_figures_renders_a_non_blank_picture_headless(tmp_path: Path) -> None:
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env.pop("DISPLAY", None)
    proc = subprocess.run([sys.executable, str(REPO / "docs" / "make_figures.py"), "--steps", "3", "--width", "96",
                           "--height", "72", "--out", str(tmp_path)], check=False, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    png = np.asarray(Image.open(tmp_path / "peg_in_hole.png").convert("RGB"), dtype=np.float64)
    assert png.shape[0] == 72 and png.shape[1] >= 96  # panels side by side
    assert png.std() > 10.0, "the picture is blank"
    assert len(np.unique(png.reshape(-1, 3), axis=0)) > 50, "the picture has almost no colours: nothing drawn"
    gif = Image.open(tmp_path / "peg_in_hole.gif")
    assert gif.n_frames >= 2  # step 0 and after the last step


def test_make_figures_refuses_an_empty_budget(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "docs" / "make_figures.py"), "--steps", "0", "--out",
                           str(tmp_path)], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--steps" in proc.stderr
