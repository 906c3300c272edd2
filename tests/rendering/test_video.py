"""Videos (issue 39), headless: ``evaluate --video`` through the real CLI (one short episode),
frames decoded back from the MP4; the renderer and overlay on their own; ``deploy --backend sim
--video`` through the graph (one short run)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from morl_robot.cli import main
from tests.conftest import run_cli

imageio = pytest.importorskip("imageio.v2")

SEED = 7
DURATION = 1.5  # s of robot time: 30 control steps at 20 Hz


def _frames(path) -> tuple[list[np.ndarray], dict]:
    reader = imageio.get_reader(path)
    try:
        return [np.asarray(f) for f in reader], reader.get_meta_data()
    finally:
        reader.close()


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """One scripted Sawyer episode, shortened, evaluated with --video: (video dir, EVAL json)."""
    out = tmp_path_factory.mktemp("video")
    video = out / "video"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["evaluate", "scripted", "--task", "sawyer_peg_in_hole", "--episodes", "1", "--seed", str(SEED),
                   "--set", f"task.episode_duration={DURATION}", "--json", "--no-progress", "--video", str(video)])
    assert rc == 0
    return video, json.loads(buf.getvalue())


def test_evaluate_video_one_mp4_per_episode(evaluated):
    video, result = evaluated
    assert sorted(p.name for p in video.iterdir()) == [f"episode_{SEED}.mp4"]
    frames, meta = _frames(video / f"episode_{SEED}.mp4")
    steps = result["per_episode"][0]["steps"]
    assert steps == round(DURATION / 0.05)
    assert len(frames) == steps + 1  # the reset state, then every control step (fps = control rate)
    assert meta["fps"] == pytest.approx(20.0)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p")
    assert meta["duration"] == pytest.approx((steps + 1) / 20.0, abs=0.06)
    assert frames[0].shape == (480, 640, 3)


def test_the_robot_moves_in_the_video(evaluated):
    video, _ = evaluated
    frames, _ = _frames(video / f"episode_{SEED}.mp4")
    first, last = (f[200:].astype(np.int16) for f in (frames[0], frames[-1]))  # below the overlay
    changed = np.mean(np.abs(first - last).max(axis=2) > 40)
    assert changed > 0.005, f"only {changed:.2%} of the pixels changed between the first and last frame"
    assert frames[0].std() > 20  # a scene, not a blank frame


def test_overlay_is_drawn(evaluated):
    """Frame 0 against the reset state rendered without the overlay: the text box differs, the rest matches."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.rendering import OffscreenRenderer, task_camera

    video, _ = evaluated
    frames, _ = _frames(video / f"episode_{SEED}.mp4")
    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        env.reset(seed=SEED)
        with OffscreenRenderer(env.robot.model, task_camera(env.task, env.robot.model)) as r:
            bare = r.render(env.robot.data).astype(np.int16)
    finally:
        env.close()
    diff = np.abs(frames[0].astype(np.int16) - bare).mean(axis=2)
    assert diff[5:60, 5:200].mean() > 3 * diff[300:, :].mean() + 5  # text box vs the codec's noise elsewhere
    assert diff[300:, :].mean() < 6


def test_shadow_camera_frames_the_hand():
    """The Shadow tasks' camera: the hand and the block fill a good part of the frame (the default one barely
    showed the hand): many pixels differ from the empty floor's grey."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.rendering import OffscreenRenderer, task_camera

    env = MORobotEnv("shadow_touch")
    try:
        env.reset(seed=0)
        view = task_camera(env.task, env.robot.model)
        assert view is type(env.task).camera
        with OffscreenRenderer(env.robot.model, view, 160, 120) as r:
            frame = r.render(env.robot.data)
    finally:
        env.close()
    grey = np.abs(frame.astype(np.int16) - frame.astype(np.int16).mean(axis=2, keepdims=True)).max(axis=2) < 12
    dark = frame.max(axis=2) < 60
    assert np.mean(~grey) > 0.03 or np.mean(dark) > 0.15


def test_video_needs_the_sim_backend(tmp_path, capsys):
    rc = main(["deploy", "results/demo/seed0/policy.onnx", "--backend", "hardware", "--video", str(tmp_path)])
    assert rc == 2
    assert "--video renders the simulated robot" in capsys.readouterr().err


@pytest.mark.skipif(not os.environ.get("RMW_IMPLEMENTATION"), reason="needs the ROS test environment")
def test_deploy_sim_video(tmp_path):
    """deploy --backend sim --video: the robot node renders its episode (10 fps, the overlay)."""
    video = tmp_path / "video"
    res = run_cli(["deploy", "results/demo/seed0/policy.onnx", "--duration", "4", "--out", str(tmp_path / "deploy"),
                   "--video", str(video)], timeout=120, out=tmp_path / "deploy")
    assert res.returncode == 0, res.stderr[-3000:]
    files = sorted(video.glob("episode_*.mp4"))
    assert files, res.stderr[-2000:]
    frames, meta = _frames(files[0])
    assert meta["fps"] == pytest.approx(10.0)
    assert len(frames) >= 2 and frames[0].shape == (480, 640, 3)
    assert "video: " in res.stderr


def test_gl_backend_falls_back_to_osmesa_and_names_every_failure(monkeypatch):
    """EGL failing: OSMesa is tried next; both failing: one error naming each backend and why."""
    from morl_robot.rendering import gl

    real = gl._load("egl")

    def load(name):
        if name == "egl":
            raise RuntimeError("eglInitialize failed")
        return real  # stands in for OSMesa's context on a machine that has EGL only

    monkeypatch.setattr(gl, "_CHOSEN", None)
    monkeypatch.setattr(gl, "_forget_opengl", lambda: None)
    monkeypatch.setattr(gl, "_load", load)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    assert gl.gl_backend() == (real, "osmesa")

    def fail(name):
        raise OSError(f"lib{name} not found")

    monkeypatch.setattr(gl, "_CHOSEN", None)
    monkeypatch.setattr(gl, "_load", fail)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    with pytest.raises(gl.RenderingError, match=r"egl: OSError: libegl not found; osmesa: OSError: libosmesa"):
        gl.gl_backend()


def test_robot_node_videos_one_file_per_episode(tmp_path):
    """The robot node's producer on its real core (no ROS): a file per episode named by its reset seed,
    every 2nd step at 10 fps, a re-sent step not drawn twice, lockstep waiting for every frame."""
    from morl_robot.envs.robot_session import open_runner
    from morl_robot.rendering import RobotNodeVideos, VideoSettings
    from morl_robot.session.config import RobotNodeSettings

    runner = open_runner(RobotNodeSettings(task="sawyer_peg_in_hole", seed=3))
    videos = RobotNodeVideos(tmp_path, runner, VideoSettings(width=96, height=72, fps=10.0, wait=True))
    zero = np.zeros(len(runner.action_labels))
    try:
        for _ in range(2):
            rec = runner.reset()
            videos.on_record(rec)
            videos.on_record(rec)  # lockstep re-sends the newest step while no command comes
            for _ in range(6):
                videos.on_record(runner.step(zero, runner.action_labels))
    finally:
        videos.close()
        runner.close()
    files = sorted(p.name for p in tmp_path.glob("*.mp4"))
    assert files == [f"episode_{runner.episode_seed(1)}.mp4", f"episode_{runner.episode_seed(2)}.mp4"]
    frames, meta = _frames(tmp_path / files[0])
    assert len(frames) == 4  # steps 0, 2, 4, 6
    assert meta["fps"] == pytest.approx(10.0) and frames[0].shape == (72, 96, 3)
    assert videos.videos.stats.dropped == 0
