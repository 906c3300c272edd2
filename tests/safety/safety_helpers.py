"""Shared builders for the safety tests (imported by them): the real robot models and configs, built once."""
from __future__ import annotations

from functools import cache

from morl_robot.robots.model import RobotModel, load_robot_model
from morl_robot.safety.compiled import compile_rules
from morl_robot.safety.config import SafetyConfig, load_safety_config
from morl_robot.safety.monitor import SafetyMonitor
from morl_robot.safety.rules import SiteKinematics


@cache
def _robot(name: str) -> RobotModel:
    return load_robot_model(name)


@cache
def _config(name: str) -> SafetyConfig:
    return load_safety_config(name)[0]


def new_monitor(robot: str = "sawyer", config: SafetyConfig | None = None, watchdogs: bool = True,
                control_mode: str | None = None, now: float = 0.0) -> SafetyMonitor:
    """A fresh monitor on the real robot model (cached) with ``config`` (default: the shipped YAML),
    accepting the robot's task's action components as the sessions configure it (Sawyer: vx,vy,vz)."""
    r = _robot(robot)
    cfg = config if config is not None else _config(robot)
    kin = SiteKinematics(r.model, cfg.workspace.site, r.spec.joint_names, "base") if cfg.workspace else None
    actions = ("vx", "vy", "vz") if robot == "sawyer" else None
    return SafetyMonitor(compile_rules(cfg, r.spec, kin), control_mode, watchdogs, now, action_labels=actions)
