"""MP4 files of episodes: :class:`Mp4Writer` (imageio + imageio-ffmpeg, H.264, yuv420p),
:class:`EpisodeVideo` (one episode: subsampled frames with the overlay, the last frame always),
and the two producers: :class:`EvaluationVideos`, the evaluation protocol's per-step observer
(``morl-robot evaluate --video DIR``: ``DIR/episode_<seed>.mp4``), and :class:`RobotNodeVideos`,
the simulated robot node's (``video_dir``: one file per episode, a bare robot's per reset).
docs/howto/videos.md says how to use them and what they cost."""
from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from morl_robot.errors import UsageError
from morl_robot.rendering.overlay import OverlayState, draw_overlay


@dataclass
class VideoSettings:
    """Frame size (pixels; even), frame rate (None: every control step; else the nearest rate
    that keeps every n-th step, n = round(control rate / fps)), H.264 quality (CRF, lower is better)
    whether to draw the overlay, and shadows."""

    width: int = 640
    height: int = 480
    fps: float | None = None
    crf: int = 23
    overlay: bool = True
    shadows: bool = False  # ~30x the render cost under a software EGL (OffscreenRenderer)
    #: background rendering with a full queue: wait for room (lockstep: the simulation waits, no frame
    #: is lost) instead of dropping the frame (real time: the control loop never waits)
    wait: bool = False

    def validate(self) -> None:
        if self.width < 16 or self.height < 16 or self.width % 2 or self.height % 2:
            raise UsageError(f"video frames must be even and at least 16 x 16 pixels, got {self.width} x {self.height}")
        if self.fps is not None and not (self.fps > 0 and math.isfinite(self.fps)):
            raise UsageError(f"video fps must be a positive number, got {self.fps}")

    def every(self, control_period: float) -> int:
        """Keep every n-th control step."""
        return 1 if self.fps is None else max(1, round(1.0 / (control_period * self.fps)))


class Mp4Writer:
    """An H.264 (libx264, yuv420p: any player opens it) MP4 at ``fps`` frames per second."""

    def __init__(self, path: str | Path, fps: float, crf: int = 23) -> None:
        import imageio.v2 as imageio

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.frames = 0
        self._writer = imageio.get_writer(self.path, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                          pixelformat="yuv420p", macro_block_size=2, quality=None,
                                          ffmpeg_log_level="error",
                                          ffmpeg_params=["-crf", str(crf), "-preset", "veryfast"])

    def write(self, frame: np.ndarray) -> None:
        self._writer.append_data(frame)
        self.frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


@dataclass
class VideoStats:
    """What the videos cost: files written, frames, render / encode time per frame (ms)."""

    files: list[Path] = field(default_factory=list)
    frames: int = 0
    dropped: int = 0  # background rendering: frames not rendered because the queue was full
    render_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"files": [str(p) for p in self.files], "frames": self.frames, "dropped": self.dropped,
                "render_ms_median": float(np.median(self.render_ms)) if self.render_ms else None,
                "megabytes": round(sum(p.stat().st_size for p in self.files if p.exists()) / 1e6, 3)}


class EpisodeVideos:
    """Renders one model's episodes into MP4 files, one per episode, every ``every``-th step and the
    last; shared by the two producers below.

    ``background``: render, draw and encode on a thread of its own (the GL context lives there) from
    the pose taken at the step (joint positions, mocap bodies: its own data, forward kinematics), so
    the caller's loop pays a few µs; at most
    ``queue_size`` frames wait, more are dropped and counted (:attr:`VideoStats.dropped`)."""

    def __init__(self, out_dir: str | Path, settings: VideoSettings, model: Any, data: Any, task: Any,
                 control_period: float, title: str, preference: str | None = None, background: bool = False,
                 queue_size: int = 64) -> None:
        from morl_robot.rendering.camera import task_camera

        settings.validate()
        self.out_dir, self.settings, self.model, self.data = Path(out_dir), settings, model, data
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.control_period, self.title, self.preference = control_period, title, preference
        self.every = settings.every(control_period)
        self.fps = 1.0 / (control_period * self.every)
        self.view = task_camera(task, model)
        self.stats = VideoStats()
        self._writer: Mp4Writer | None = None
        self._last_event: tuple[float, str] | None = None
        self.renderer: Any = None
        self._queue: Any = None
        self._pose_data: Any = None
        if not background:
            self.renderer = self._open_renderer()
            return
        import queue
        import threading

        self._queue = queue.Queue(maxsize=queue_size)
        started: queue.Queue[BaseException | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, args=(started,), name="video", daemon=True)
        self._thread.start()
        error = started.get()
        if error is not None:
            raise error

    @property
    def backend(self) -> str:
        from morl_robot.rendering.gl import gl_backend

        return gl_backend()[1]

    def begin(self, name: str) -> None:
        """Start the file ``<out_dir>/<name>.mp4`` (ending the open one)."""
        self._last_event = None
        self._call(self._begin, self.out_dir / f"{name}.mp4")

    def frame(self, overlay: OverlayState, last: bool = False) -> None:
        """Render the model's current data with ``overlay`` if step ``overlay.step`` is kept (or ``last``)."""
        if overlay.events:
            self._last_event = (overlay.time_s, overlay.events[-1])
        overlay.last_event = self._last_event
        if not last and overlay.step % self.every:
            return
        if self._queue is None:
            self._frame(self.data, overlay)
            return
        import queue

        pose = (self.data.qpos.copy(), self.data.mocap_pos.copy(), self.data.mocap_quat.copy())  # a few µs
        try:
            self._queue.put((self._frame, (pose, overlay)), block=self.settings.wait)
        except queue.Full:
            self.stats.dropped += 1

    def end(self) -> None:
        """Finish the open file; one cut before its first step (a single frame, e.g. at shutdown) is removed."""
        self._call(self._end)

    def close(self) -> None:
        self.end()
        if self._queue is not None:
            self._queue.put((None, ()))
            self._thread.join(timeout=60.0)
            self._queue = None
        elif self.renderer is not None:
            self.renderer.close()
            self.renderer = None

    # --- the work (on the caller's thread, or on the video thread) --------------------------------
    def _open_renderer(self) -> Any:
        from morl_robot.rendering.renderer import OffscreenRenderer

        return OffscreenRenderer(self.model, self.view, self.settings.width, self.settings.height,
                                 self.settings.shadows)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        if self._queue is None:
            fn(*args)
        else:
            self._queue.put((fn, args))  # begin and end wait for room: never dropped

    def _work(self, started: Any) -> None:
        try:
            self.renderer = self._open_renderer()
        except BaseException as e:  # noqa: BLE001 - handed to the constructor's thread
            started.put(e)
            return
        started.put(None)
        while True:
            fn, args = self._queue.get()
            if fn is None:
                break
            fn(*args)
        self.renderer.close()

    def _begin(self, path: Path) -> None:
        self._end()
        self._writer = Mp4Writer(path, self.fps, self.settings.crf)
        self.stats.files.append(self._writer.path)

    def _frame(self, data: Any, overlay: OverlayState) -> None:
        if self._writer is None:
            return
        t = time.perf_counter()
        if isinstance(data, tuple):  # a pose taken at the step: the video thread's own data, posed
            import mujoco

            if self._pose_data is None:
                self._pose_data = mujoco.MjData(self.model)
            d = self._pose_data
            d.qpos[:], d.mocap_pos[:], d.mocap_quat[:] = data
            mujoco.mj_kinematics(self.model, d)
            mujoco.mj_camlight(self.model, d)
            data = d
        image = self.renderer.render(data)
        if self.settings.overlay:
            image = draw_overlay(image, overlay)
        self.stats.render_ms.append(1e3 * (time.perf_counter() - t))
        self._writer.write(image)
        self.stats.frames += 1

    def _end(self) -> None:
        if self._writer is not None:
            self._writer.close()
            if self._writer.frames < 2:
                self._writer.path.unlink(missing_ok=True)
                self.stats.files.remove(self._writer.path)
            self._writer = None


def describe_violation(v: Any) -> str:
    """A safety :class:`~morl_robot.safety.rules.Violation` in a few words: rule/level, value, threshold."""
    if getattr(v, "detail", ""):
        return f"{v.rule}/{v.level} {v.key}"
    return f"{v.rule}/{v.level} {v.key} {v.value:.3g} / {v.threshold:.3g} {v.unit}"


class EvaluationVideos:
    """The evaluation protocol's episode observer (:func:`~morl_robot.evaluation.protocol.run_episode`):
    ``<out_dir>/episode_<seed>.mp4`` per episode, at the control rate unless ``settings.fps`` says less.
    ``preference``: an ε-conditioned policy's active preference, one ε per objective (None: not conditioned)."""

    def __init__(self, out_dir: str | Path, settings: VideoSettings | None = None, policy: str = "",
                 preference: Sequence[float] | None = None, log: Callable[[str], None] | None = None) -> None:
        self.out_dir, self.settings = Path(out_dir), settings or VideoSettings()
        self.settings.validate()
        self.policy, self.log = policy, log
        self._preference = None if preference is None else tuple(float(x) for x in preference)
        self.preference: str | None = None
        self.videos: EpisodeVideos | None = None
        self._env: Any = None

    def begin(self, env: Any, seed: int) -> None:
        if self.videos is None or self._env is not env:
            if self.videos is not None:
                self.videos.close()
            self.videos = EpisodeVideos(self.out_dir, self.settings, env.robot.model, env.robot.data, env.task,
                                        env.task.config.control_period, f"{env.task.name}  {self.policy}".strip(),
                                        self.preference)
            self._env = env
            if self.log is not None:
                self.log(f"video: rendering with {self.videos.backend} at {self.settings.width}x{self.settings.height}, "
                         f"{self.videos.fps:g} fps -> {self.out_dir}")
        self._names = tuple(env.objective_names)
        if self._preference is not None:  # (the overlay's font has no Greek: "eps")
            pairs = zip(self._names, self._preference) if len(self._names) == len(self._preference) else \
                ((f"#{k}", x) for k, x in enumerate(self._preference))
            self.preference = "preference eps  " + "   ".join(f"{n} {x:g}" for n, x in pairs)
        self._returns = np.zeros(len(self._names))
        self._events: Counter[str] = Counter()
        self._seed, self._step = int(seed), 0
        self.videos.begin(f"episode_{seed}")
        self.videos.frame(self._overlay(env, None, (), None))

    def step(self, env: Any, reward: np.ndarray, info: dict[str, Any], done: bool, shield: Any = None) -> None:
        assert self.videos is not None, "begin() first"
        self._step += 1
        self._returns += np.asarray(reward, np.float64)
        events: tuple[str, ...] = ()
        if shield is not None:
            now = Counter(shield.events)
            events = tuple(f"{k} began" for k in now if now[k] > self._events[k])
            self._events = now
        force = env.task.contact_force(info)
        self.videos.frame(self._overlay(env, force, events, info.get("termination") if done else None), last=done)

    def end(self) -> None:
        if self.videos is not None:
            self.videos.end()

    def close(self) -> None:
        if self.videos is not None:
            self.videos.close()

    def _overlay(self, env: Any, force: float | None, events: tuple[str, ...], termination: str | None) -> OverlayState:
        return OverlayState(self.videos.title if self.videos else "", f"seed {self._seed}", self._step,
                            self._step * env.task.config.control_period,
                            tuple(zip(self._names, map(float, self._returns))), force, self.preference, events,
                            termination=termination)


class RobotNodeVideos:
    """The simulated robot node's videos (``video_dir``): one file per episode of its task
    (``episode_<seed>.mp4``, the episode's reset seed), or for a bare robot one per reset
    (``<control mode>_segment_<n>.mp4``), at ``settings.fps`` (10 by default), rendered on a thread of
    its own from the pose at the step (the control loop pays a few µs; docs/howto/videos.md).  ``runner``: the node's
    :class:`~morl_robot.envs.task_runner.TaskRunner`."""

    def __init__(self, out_dir: str | Path, runner: Any, settings: VideoSettings | None = None) -> None:
        self.runner = runner
        robot = runner.robot
        task = runner.env.task if runner.env is not None else None
        period = task.config.control_period if task is not None else robot.control_period
        name = task.name if task is not None else robot.spec.name
        self.videos = EpisodeVideos(out_dir, settings or VideoSettings(fps=10.0), robot.model, robot.data, task,
                                    period, f"{name}  (robot node, sim)", background=True)
        self._episode: int | None = None
        self._seen: tuple[int, int] | None = None
        self._estop = False

    @property
    def backend(self) -> str:
        return self.videos.backend

    def on_record(self, rec: Any, estop: bool = False) -> None:
        """One published :class:`~morl_robot.envs.task_runner.StepRecord` (and the e-stop state)."""
        if (rec.episode, rec.step) == self._seen:  # a re-sent step (lockstep, while no command comes)
            return
        self._seen = (rec.episode, rec.step)
        if rec.episode != self._episode:
            self._episode = rec.episode
            env = self.runner.env
            mode = getattr(self.runner.robot.control_mode, "value", self.runner.robot.control_mode)
            self.videos.begin(f"episode_{self.runner.episode_seed(rec.episode)}" if env is not None
                              else f"{mode}_segment_{rec.episode}")
        events = [describe_violation(v) for v in rec.held]
        if estop and not self._estop:
            events.append("e-stop engaged")
        self._estop = estop
        names = self.runner.objective_names if self.runner.env is not None else ()
        returns = () if rec.returns is None else tuple(zip(names, map(float, rec.returns)))
        force = None
        if self.runner.env is not None and rec.info:
            force = self.runner.env.task.contact_force(rec.info)
        elif rec.state.wrench is not None:
            force = float(np.linalg.norm(rec.state.wrench[:3]))
        elif rec.state.tactile is not None and np.size(rec.state.tactile):
            force = float(np.max(rec.state.tactile))
        overlay = OverlayState(self.videos.title, f"seed {self.runner.episode_seed(rec.episode)}"
                               if self.runner.env is not None else f"segment {rec.episode}",
                               rec.step, rec.step * self.videos.control_period, returns, force, None, tuple(events),
                               termination=rec.termination if rec.done else None)
        self.videos.frame(overlay, last=rec.done)
        if rec.done:
            self.videos.end()

    def close(self) -> None:
        self.videos.close()
