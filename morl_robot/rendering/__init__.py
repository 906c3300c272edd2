"""Videos of what the robot does: MuJoCo's offscreen renderer (headless: EGL, else OSMesa), a
camera per task that frames the work, a text overlay (objectives so far, contact force, the
active preference, safety events) and an H.264 MP4 writer.  No ROS; used by the evaluation
protocol (``morl-robot evaluate --video``) and the simulated robot node (``video_dir``).
How to use it: docs/howto/videos.md."""
from morl_robot.rendering.camera import CameraView, task_camera
from morl_robot.rendering.gl import RenderingError, gl_backend
from morl_robot.rendering.overlay import OverlayState, draw_overlay
from morl_robot.rendering.renderer import OffscreenRenderer
from morl_robot.rendering.video import (
    EpisodeVideos,
    EvaluationVideos,
    Mp4Writer,
    RobotNodeVideos,
    VideoSettings,
)

__all__ = [
    "CameraView",
    "EpisodeVideos",
    "EvaluationVideos",
    "Mp4Writer",
    "OffscreenRenderer",
    "OverlayState",
    "RenderingError",
    "RobotNodeVideos",
    "VideoSettings",
    "draw_overlay",
    "gl_backend",
    "task_camera",
]
