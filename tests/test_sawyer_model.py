"""Fast checks of the hand-written Sawyer MJCF and its peg-in-hole scene.

Uses only mujoco + numpy + yaml (not the morl_robot package).  Runs in a few seconds.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from sawyer_ik import peg_down_ik

ROOT = Path(__file__).resolve().parents[1]
ROBOT_XML = ROOT / "sim" / "sawyer" / "sawyer.xml"
SCENE_XML = ROOT / "sim" / "sawyer" / "peg_in_hole.xml"
ROBOT_YAML = ROOT / "config" / "robots" / "sawyer.yaml"

# Published joint table: RethinkRobotics/sawyer_robot, sawyer_description/urdf/sawyer_base.urdf.xacro
# (commit 2fe61d91482d1844e7532acc796be08a7fcb94ec), <limit lower upper effort velocity>.
PUBLISHED = {
    #            lower     upper    effort velocity
    "right_j0": (-3.0503, 3.0503, 80.0, 1.74),
    "right_j1": (-3.8095, 2.2736, 80.0, 1.328),
    "right_j2": (-3.0426, 3.0426, 40.0, 1.957),
    "right_j3": (-3.0439, 3.0439, 40.0, 1.957),
    "right_j4": (-2.9761, 2.9761, 9.0, 3.485),
    "right_j5": (-2.9761, 2.9761, 9.0, 3.485),
    "right_j6": (-4.7124, 4.7124, 9.0, 4.545),
}
# Link masses from the same URDF (kg).
PUBLISHED_MASS = {
    "right_l0": 5.3213, "right_l1": 4.505, "right_l2": 1.745, "right_l3": 2.5097,
    "right_l4": 1.1136, "right_l5": 1.5625, "right_l6": 0.3292, "head": 1.5795,
}
JOINTS = list(PUBLISHED)
G = 9.81


# ----------------------------------------------------------------------------- fixtures / helpers
@pytest.fixture(scope="module")
def robot() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(ROBOT_XML))


@pytest.fixture(scope="module")
def scene() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(SCENE_XML))


def _home(m: mujoco.MjModel) -> mujoco.MjData:
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("home").id)
    mujoco.mj_forward(m, d)
    return d


def _tool_mass(m: mujoco.MjModel) -> float:
    """Mass of everything below the F/T sensor: the subtree of the body holding site ft_sensor."""
    return float(m.body_subtreemass[m.site_bodyid[m.site("ft_sensor").id]])


def _ik(m: mujoco.MjModel, q_start: np.ndarray, tip_target: np.ndarray, iters: int = 60) -> np.ndarray:
    """Joint targets putting peg_tip at tip_target with the peg pointing along world -z (tests/sawyer_ik.py)."""
    return peg_down_ik(m, q_start, tip_target, iters, tolerance=1e-7, damping=1e-4)


def _descend(m, d, xy, z_from, z_to, seconds, hold=0.5):
    """Stream IK joint targets moving the tip straight down from z_from to z_to, then hold."""
    q = d.qpos.copy()
    n = int(seconds / m.opt.timestep)
    for i in range(n):
        if i % 10 == 0:  # new waypoint every 20 ms
            z = z_from + (z_to - z_from) * min(1.0, (i + 10) / n)
            q = _ik(m, q, np.array([xy[0], xy[1], z]), iters=20)
            d.ctrl[:] = q
        mujoco.mj_step(m, d)
    for _ in range(int(hold / m.opt.timestep)):
        mujoco.mj_step(m, d)


# ----------------------------------------------------------------------------- structure
def test_both_files_compile(robot, scene):
    assert robot.nq == 7 and robot.nv == 7 and robot.nu == 7
    assert scene.nq == 7 and scene.nv == 7 and scene.nu == 7  # nothing else with joints in the scene
    for m in (robot, scene):
        assert m.opt.timestep == pytest.approx(0.002)
        assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        base = m.body("base")
        assert base.parentid[0] == 0
        np.testing.assert_allclose(base.pos, 0.0)
        np.testing.assert_allclose(base.quat, [1, 0, 0, 0])


def test_joints_match_published_urdf(robot, scene):
    for m in (robot, scene):
        for i, name in enumerate(JOINTS):
            j = m.joint(name)
            lo, hi, effort, _ = PUBLISHED[name]
            assert j.id == i and j.type[0] == mujoco.mjtJoint.mjJNT_HINGE
            assert j.limited[0]
            np.testing.assert_allclose(j.range, [lo, hi], atol=1e-9)  # radians, not degrees
            assert m.jnt_actfrclimited[j.id]
            np.testing.assert_allclose(m.jnt_actfrcrange[j.id], [-effort, effort])
            assert m.jnt_actgravcomp[j.id]


def test_velocity_limits_in_config_match_urdf():
    cfg = yaml.safe_load(ROBOT_YAML.read_text())
    vel = {j["name"]: j["velocity_limit"] for j in cfg["joints"]}
    assert list(vel) == JOINTS
    for name in JOINTS:
        assert vel[name] == pytest.approx(PUBLISHED[name][3])


def test_link_masses_match_urdf(robot):
    for body, mass in PUBLISHED_MASS.items():
        assert robot.body(body).mass[0] == pytest.approx(mass, rel=1e-6)
    # Sawyer arm is ~19 kg.
    assert 17.0 < robot.body_subtreemass[robot.body("right_l0").id] < 21.0


def test_actuators_are_position_servos(robot):
    assert [robot.actuator(i).name for i in range(robot.nu)] == JOINTS
    for i, name in enumerate(JOINTS):
        a = robot.actuator(name)
        lo, hi, effort, _ = PUBLISHED[name]
        assert robot.actuator_trnid[i, 0] == robot.joint(name).id
        assert a.biastype[0] == mujoco.mjtBias.mjBIAS_AFFINE
        kp = a.gainprm[0]
        assert kp > 0 and a.biasprm[0] == 0 and a.biasprm[1] == -kp and a.biasprm[2] < 0
        np.testing.assert_allclose(a.ctrlrange, [lo, hi], atol=1e-9)
        np.testing.assert_allclose(a.forcerange, [-effort, effort])


def test_sites_sensors_and_gravcomp(robot):
    for s in ("right_hand", "ft_sensor", "peg_tip"):
        robot.site(s)
    assert robot.sensor("wrist_force").type[0] == mujoco.mjtSensor.mjSENS_FORCE
    assert robot.sensor("wrist_torque").type[0] == mujoco.mjtSensor.mjSENS_TORQUE
    for s in ("wrist_force", "wrist_torque"):
        assert robot.sensor(s).objid[0] == robot.site("ft_sensor").id
    tool = robot.body("tool")
    assert robot.site("ft_sensor").bodyid[0] == tool.id
    assert robot.jnt_bodyid.tolist().count(tool.id) == 0  # welded
    assert robot.body_gravcomp[tool.id] == 1  # payload compensated; the F/T still reads its weight (static-load test)
    for i in range(7):
        assert robot.body_gravcomp[robot.body(f"right_l{i}").id] == 1
    assert 0.3 <= _tool_mass(robot) <= 0.5


# ----------------------------------------------------------------------------- home pose / statics
def test_home_pose_geometry(scene):
    d = _home(scene)
    np.testing.assert_allclose(d.ctrl, d.qpos)
    assert d.ncon == 0
    tip, top = d.site("peg_tip").xpos, d.site("hole_top").xpos
    z_axis = d.site("peg_tip").xmat.reshape(3, 3)[:, 2]
    assert np.dot(z_axis, [0, 0, -1]) > 0.999  # peg points straight down
    np.testing.assert_allclose(tip[:2], top[:2], atol=2e-3)
    assert 0.10 <= tip[2] - top[2] <= 0.15
    depth = top[2] - d.site("hole_bottom").xpos[2]
    assert depth >= 0.04
    # comfortably away from joint limits
    lo, hi = scene.jnt_range[:, 0], scene.jnt_range[:, 1]
    assert np.min(np.minimum(d.qpos - lo, hi - d.qpos)) > 0.3


def test_holds_home_and_reads_tool_weight(scene):
    d = _home(scene)
    tip0 = d.site("peg_tip").xpos.copy()
    for _ in range(int(2.0 / scene.opt.timestep)):
        mujoco.mj_step(scene, d)
        assert d.ncon == 0
    assert np.linalg.norm(d.site("peg_tip").xpos - tip0) < 1e-3
    assert np.linalg.norm(d.qvel) < 1e-3
    f = np.linalg.norm(d.sensor("wrist_force").data)
    assert f == pytest.approx(_tool_mass(scene) * G, rel=0.02)


def test_a_resting_step_stays_cheap(scene):
    """What keeps mj_step cheap, checked without a clock (the time itself is `morl-robot bench env`'s
    raw mj_step/s): at home the arm touches nothing and the solver converges well inside its limit."""
    d = _home(scene)
    contacts, iterations = 0, 0
    for _ in range(2000):
        mujoco.mj_step(scene, d)
        contacts = max(contacts, d.ncon)
        iterations = max(iterations, int(d.solver_niter[0]))
    assert contacts == 0  # no self-collision of the arm at rest, nothing resting on anything
    assert iterations < scene.opt.iterations // 2


# ----------------------------------------------------------------------------- contact
def test_pressing_on_fixture_raises_wrist_force(scene):
    d = _home(scene)
    top = d.site("hole_top").xpos.copy()
    static = _tool_mass(scene) * G
    xy = top[:2] + np.array([0.037, 0.0])  # peg fully on the +x wall, beside the opening
    # command the tip 10 mm into the top surface
    _descend(scene, d, xy, d.site("peg_tip").xpos[2], top[2] - 0.010, seconds=1.0)
    peg = scene.geom("peg").id
    assert any(peg in (c.geom1, c.geom2) for c in d.contact[: d.ncon])
    assert d.site("peg_tip").xpos[2] > top[2] - 0.003  # stopped by the surface
    f = np.linalg.norm(d.sensor("wrist_force").data)
    assert f > 5.0 * static


def test_insertion_straight_down_reaches_below_hole_top(scene):
    d = _home(scene)
    top = d.site("hole_top").xpos.copy()
    bottom = d.site("hole_bottom").xpos.copy()
    _descend(scene, d, top[:2], d.site("peg_tip").xpos[2], bottom[2] + 0.005, seconds=1.5)
    tip = d.site("peg_tip").xpos
    assert tip[2] < top[2] - 0.03
    assert np.linalg.norm(tip[:2] - top[:2]) < 0.0015 + 1e-4  # inside the clearance


def test_misaligned_peg_jams_on_rim(scene):
    """3 mm off-centre (1.5 mm more than the radial clearance): the flat peg end lands on the rim and stays."""
    d = _home(scene)
    top = d.site("hole_top").xpos.copy()
    _descend(scene, d, top[:2] + np.array([0.003, 0.0]), d.site("peg_tip").xpos[2], top[2] - 0.02, seconds=1.0)
    assert d.site("peg_tip").xpos[2] > top[2] - 0.002
    assert np.linalg.norm(d.sensor("wrist_force").data) > 5.0 * _tool_mass(scene) * G


def test_the_last_millimetres_of_depth_cost_contact_force():
    """The task's one force-for-reward trade once the peg is in (README, the conditioned front): the
    scripted controller holds the tip 2 mm above the hole's floor without contact; pushing on to the
    floor earns more task reward per step (depth fraction 0.96 → ~1) and costs wrist force; pushing
    at full speed no longer trips the 30 N threshold: the compliant controller (robot YAML
    cartesian.compliance) stops pressing at its force limit."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.evaluation.protocol import scripted_policy

    policy = scripted_policy("sawyer_peg_in_hole")
    env = MORobotEnv("sawyer_peg_in_hole")
    try:
        obs, _ = env.reset(seed=10000)
        for _ in range(100):
            obs, held, *_, info = env.step(policy.act(obs))
        assert info["success"] and info["insertion_depth"] == pytest.approx(0.048, abs=2e-4)
        assert info["force_norm"] < 0.1 and held[1] > -0.1
        for _ in range(20):  # a slow push down: the floor
            action = policy.act(obs)
            action[2] = -0.02
            obs, pressed, terminated, _, info = env.step(action)
        assert not terminated and info["insertion_depth"] > 0.0495
        assert pressed[0] - held[0] > 0.015 and pressed[1] < held[1] - 0.05  # more task per step, for force
        for _ in range(20):  # a firm push: the compliant controller holds the force below its limit
            action = policy.act(obs)
            action[2] = -1.0
            obs, _, terminated, _, info = env.step(action)
            assert not terminated
        limit = env.robot.config.cartesian.compliance.force_limit
        assert 1.0 < info["force_norm"] < limit
    finally:
        env.close()
