"""A learner run assembled from the cores: :class:`LearnerSession` (what both drivers share:
restore, experience intake, demonstrations, snapshots, checkpoints, metrics) and the in-process
:func:`train` loop.  May import learning, envs, acting, evaluation, serving, reward_machines and
tasks; see docs/explanation/architecture.md for the layers.
"""
from morl_robot.training.loop import TrainResult, evaluate, train
from morl_robot.training.session import LearnerSession, session_for_task

__all__ = ["LearnerSession", "TrainResult", "evaluate", "session_for_task", "train"]
