"""A robot's compiled MuJoCo model and its :class:`~morl_robot.robots.spec.RobotSpec`, without a simulator.

What MJCF expresses (joint ranges, actuator force ranges, couplings, sensors) is read from the
compiled model, what it cannot say from the robot YAML (:mod:`morl_robot.robots.config`).  Both
backends (:class:`~morl_robot.robots.mujoco_robot.MujocoRobot`, which steps the model, and
:class:`~morl_robot.robots.hardware.HardwareRobot`, which uses it for kinematics only) and the
safety rules (:mod:`morl_robot.safety.compiled`, which needs only the spec and the workspace
site's kinematics) build on :func:`load_model` and :func:`build_spec`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from morl_robot.errors import ConfigError
from morl_robot.resources import sim_path
from morl_robot.robots.config import RobotConfig, load_robot_config
from morl_robot.robots.spec import (
    WRENCH_LABELS,
    ActuatorSpec,
    CartesianSpec,
    ControlMode,
    JointSpec,
    RobotSpec,
    SensorSpec,
)

_SENSOR_UNITS = {
    mujoco.mjtSensor.mjSENS_TOUCH: "N",
    mujoco.mjtSensor.mjSENS_FORCE: "N",
    mujoco.mjtSensor.mjSENS_TORQUE: "N·m",
    mujoco.mjtSensor.mjSENS_JOINTPOS: "rad",
    mujoco.mjtSensor.mjSENS_JOINTVEL: "rad/s",
    mujoco.mjtSensor.mjSENS_FRAMEPOS: "m",
    mujoco.mjtSensor.mjSENS_FRAMEQUAT: "1",
}


def menagerie_root() -> Path | None:
    """MuJoCo Menagerie checkout, if the user has one (``$MENAGERIE_ROOT`` or the
    ``mujoco-menagerie`` cache folder); never required."""
    env = os.environ.get("MENAGERIE_ROOT")
    candidates = [Path(env)] if env else []
    candidates.append(Path.home() / ".cache" / "mujoco-menagerie")
    for c in candidates:
        if c.is_dir():
            return c
    return None


def _name(model: mujoco.MjModel, obj: mujoco.mjtObj, idx: int) -> str:
    return mujoco.mj_id2name(model, obj, idx) or ""


def _id(model: mujoco.MjModel, obj: mujoco.mjtObj, name: str, what: str, source: str) -> int:
    idx = mujoco.mj_name2id(model, obj, name)
    if idx < 0:
        raise ConfigError(f"{source}: the model has no {what} named '{name}'")
    return idx


def site_id(model: mujoco.MjModel, name: str, source: str) -> int:
    """The id of site ``name`` (a :class:`ConfigError` naming ``source`` if the model has none)."""
    return _id(model, mujoco.mjtObj.mjOBJ_SITE, name, "site", source)


def build_spec(model: mujoco.MjModel, config: RobotConfig, source: str) -> RobotSpec:
    """The robot's spec: names and velocity limits from its YAML, ranges and force limits from
    the compiled MJCF (one source for each fact)."""
    joints = []
    for jc in config.joints:
        jid = _id(model, mujoco.mjtObj.mjOBJ_JOINT, jc.name, "joint", source)
        lo, hi = (float(v) for v in model.jnt_range[jid])
        effort = float(model.jnt_actfrcrange[jid][1]) if model.jnt_actfrclimited[jid] else None
        joints.append(JointSpec(jc.name, lo, hi, jc.velocity_limit, effort))
    vel = {j.name: j.velocity_limit for j in joints}
    actuators = []
    for an in config.actuators:
        aid = _id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, an, "actuator", source)
        coupled = _actuator_joints(model, aid)
        lo, hi = (float(v) for v in model.actuator_ctrlrange[aid])
        if model.actuator_forcelimited[aid]:
            force = float(model.actuator_forcerange[aid][1])
        else:
            force = float(np.inf)
            for jn in coupled:
                jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, jn)
                if model.jnt_actfrclimited[jid]:
                    force = float(model.jnt_actfrcrange[jid][1])
        vlim = sum(vel.get(j, 0.0) for j in coupled) or 1.0
        actuators.append(ActuatorSpec(an, coupled, lo, hi, vlim, force))
        if not np.isfinite(force):
            raise ConfigError(f"{source}: actuator '{an}' has no force limit (forcerange or actuatorfrcrange)")
    sensors: list[SensorSpec] = []
    if config.wrench is not None:
        _id(model, mujoco.mjtObj.mjOBJ_SENSOR, config.wrench.force_sensor, "force sensor", source)
        _id(model, mujoco.mjtObj.mjOBJ_SENSOR, config.wrench.torque_sensor, "torque sensor", source)
        sensors.append(SensorSpec("wrench", "wrench", WRENCH_LABELS, ("N",) * 3 + ("N·m",) * 3, config.wrench.frame))
    if config.tactile is not None:
        for sn in config.tactile.sensors:
            _id(model, mujoco.mjtObj.mjOBJ_SENSOR, sn, "touch sensor", source)
        sensors.append(
            SensorSpec("tactile", "tactile", tuple(config.tactile.sensors), ("N",) * len(config.tactile.sensors), config.tactile.frame)
        )
    robot_sensor_names = set()
    if config.wrench is not None:
        robot_sensor_names |= {config.wrench.force_sensor, config.wrench.torque_sensor}
    if config.tactile is not None:
        robot_sensor_names |= set(config.tactile.sensors)
    for sid in range(model.nsensor):
        name = _name(model, mujoco.mjtObj.mjOBJ_SENSOR, sid)
        if not name or name in robot_sensor_names:
            continue
        dim = int(model.sensor_dim[sid])
        unit = _SENSOR_UNITS.get(model.sensor_type[sid], "")
        labels = tuple(f"{name}[{i}]" for i in range(dim)) if dim > 1 else (name,)
        sensors.append(SensorSpec(name, "scene", labels, (unit,) * dim, "world"))
    cartesian = None
    if config.cartesian is not None:
        _id(model, mujoco.mjtObj.mjOBJ_SITE, config.cartesian.site, "site", source)
        c = config.cartesian
        cartesian = CartesianSpec(c.site, c.base_frame, c.max_linear_velocity, c.max_angular_velocity)
    modes = tuple(ControlMode(m) for m in config.control_modes)
    return RobotSpec(
        name=config.name,
        joints=tuple(joints),
        actuators=tuple(actuators),
        control_modes=modes,
        default_control_mode=ControlMode(config.default_control_mode),
        sensors=tuple(sensors),
        cartesian=cartesian,
    )


def _actuator_joints(model: mujoco.MjModel, aid: int) -> tuple[str, ...]:
    trn = model.actuator_trntype[aid]
    target = int(model.actuator_trnid[aid][0])
    if trn == mujoco.mjtTrn.mjTRN_JOINT:
        return (_name(model, mujoco.mjtObj.mjOBJ_JOINT, target),)
    if trn == mujoco.mjtTrn.mjTRN_TENDON:
        adr, num = int(model.tendon_adr[target]), int(model.tendon_num[target])
        return tuple(
            _name(model, mujoco.mjtObj.mjOBJ_JOINT, int(model.wrap_objid[w]))
            for w in range(adr, adr + num)
            if model.wrap_type[w] == mujoco.mjtWrap.mjWRAP_JOINT
        )
    return ()


def model_path(config: RobotConfig, scene: str | os.PathLike[str] | None = None, model_source: str = "builtin") -> Path:
    """The MJCF file of ``config``'s robot: ``scene`` (relative to ``sim/`` or absolute) or the robot's
    own MJCF, from the package (``builtin``) or MuJoCo Menagerie (``menagerie``)."""
    if model_source == "menagerie":
        root = menagerie_root()
        if root is None or config.model.menagerie is None:
            raise ConfigError(
                "model_source 'menagerie' needs MuJoCo Menagerie (set MENAGERIE_ROOT) and a "
                f"'model.menagerie' entry in the {config.name} robot YAML"
            )
        return root / config.model.menagerie
    if model_source != "builtin":
        raise ConfigError(f"unknown model_source '{model_source}'; allowed: builtin, menagerie")
    path = Path(scene) if scene is not None else sim_path(config.model.mjcf)
    if not path.is_absolute() and not path.exists():
        path = sim_path(path)
    if not path.exists():
        raise ConfigError(f"MJCF file not found: {path}")
    return path


def load_model(path: str | os.PathLike[str]) -> mujoco.MjModel:
    """The compiled MJCF at ``path`` (a compile error is a :class:`ConfigError` naming the file)."""
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:  # mujoco reports XML/compile errors as ValueError
        raise ConfigError(f"{path}: MJCF does not compile: {exc}") from None


def is_static_world_body(m: mujoco.MjModel, body: int) -> bool:
    """Whether body id ``body`` is a fixed fixture: a child of the world with no joint — what a
    context may move (``body_offset``) and what a safety box may belong to (``approach ... body``)."""
    return m.body_parentid[body] == 0 and not m.body_jntnum[body]


@dataclass(frozen=True)
class RobotModel:
    """A robot's YAML, its compiled robot-only MJCF (never stepped) and the spec built from both."""

    config: RobotConfig
    model: mujoco.MjModel
    spec: RobotSpec
    path: Path


def load_robot_model(name_or_config: str | RobotConfig) -> RobotModel:
    """The robot's spec and kinematics model from its YAML (a robot name or path) and MJCF, without
    building a simulator."""
    config = load_robot_config(name_or_config) if isinstance(name_or_config, str) else name_or_config
    path = model_path(config)
    model = load_model(path)
    return RobotModel(config, model, build_spec(model, config, str(path)), path)
