"""Contact physics of the Sawyer peg-in-hole scene, measured against known forces (issue 32).

The scene is loaded through the package (the task's :class:`~morl_robot.robots.mujoco_robot.MujocoRobot`),
the arm held by its position servos.  Known forces are applied with ``xfrc_applied`` (a force at a
point of a body; a generalized force in ``qfrc_applied``, e.g. from ``mj_applyFT``, would not show on
the force sensor, which sees only body forces) and compared with

* the wrist F/T sensor (``wrist_force``/``wrist_torque`` at site ``ft_sensor``: the wrench the arm
  exerts on the tool subtree, in the site frame), tared at rest and rotated to the world frame;
* the contact forces of ``mj_contactForce``;
* the penetration (``-contact.dist``) and the friction ratio of a sliding test.

docs/contact_physics.md reports the figures these tests pin (stiffness, penetration, friction).
Every test is deterministic and runs in well under 5 s.
"""
from __future__ import annotations

import mujoco
import numpy as np
import pytest
from sawyer_ik import peg_down_ik

from morl_robot.envs.mo_env import make_sim_robot
from morl_robot.robots.mujoco_robot import MujocoRobot
from morl_robot.tasks.registry import load_task

TASK = "sawyer_peg_in_hole"
G = 9.81
CLEARANCE = 0.0015  # m, radial: 27 mm square opening, 24 mm peg (sim/sawyer/peg_in_hole.xml)
MU = 0.6  # sliding friction of peg and fixture geoms (sim/sawyer/*.xml)

# Directions of the applied force (world frame): the axes both ways and two oblique ones.
DIRECTIONS = {
    "+x": (1, 0, 0), "-x": (-1, 0, 0), "+y": (0, 1, 0), "-y": (0, -1, 0),
    "+z": (0, 0, 1), "-z": (0, 0, -1), "xyz": (1, 1, 1), "x-y-z": (1, -1, -1),
}
MAGNITUDES = (5.0, 10.0, 20.0, 30.0)  # N; 30 N is the task's force threshold


# ----------------------------------------------------------------------------- fixtures / helpers
@pytest.fixture(scope="module")
def robot() -> MujocoRobot:
    r = make_sim_robot(load_task(TASK))
    r.set_control_mode("position")
    yield r
    r.close()


def _tool_mass(m: mujoco.MjModel) -> float:
    return float(m.body_subtreemass[m.site_bodyid[m.site("ft_sensor").id]])


def _wrench_world(d: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
    """Wrist force and torque (about the sensor site) rotated from the site frame to the world frame."""
    rot = d.site("ft_sensor").xmat.reshape(3, 3)
    return rot @ d.sensor("wrist_force").data, rot @ d.sensor("wrist_torque").data


def _ik(m: mujoco.MjModel, q_start: np.ndarray, tip: np.ndarray, iters: int = 200) -> np.ndarray:
    """Joint positions putting site peg_tip at ``tip`` with the peg along world -z (tests/sawyer_ik.py)."""
    return peg_down_ik(m, q_start, tip, iters)


def _hold(robot: MujocoRobot, tip: np.ndarray) -> None:
    """The arm at rest with the peg tip at ``tip`` (peg down), the servos holding exactly that pose."""
    m, d = robot.model, robot.data
    robot.reset()
    q = _ik(m, d.qpos.copy(), np.asarray(tip, dtype=float))
    d.qpos[:] = q
    d.qvel[:] = 0.0
    d.ctrl[:] = q
    d.xfrc_applied[:] = 0.0
    mujoco.mj_forward(m, d)


def _apply(m: mujoco.MjModel, d: mujoco.MjData, body: str, point: np.ndarray, force: np.ndarray) -> None:
    """``force`` (world) acting at world ``point`` of ``body``: xfrc_applied is a force at the body's
    centre of mass plus a torque, so the point enters as the moment (point − com) × force."""
    b = m.body(body).id
    d.xfrc_applied[:] = 0.0
    d.xfrc_applied[b, :3] = force
    d.xfrc_applied[b, 3:] = np.cross(point - d.xipos[b], force)


def _press(robot: MujocoRobot, body: str, site: str, force: np.ndarray, seconds: float) -> None:
    """Step with ``force`` applied at the current position of ``site`` (re-applied every step)."""
    m, d = robot.model, robot.data
    for _ in range(round(seconds / m.opt.timestep)):
        _apply(m, d, body, d.site(site).xpos.copy(), force)
        mujoco.mj_step(m, d)


def _peg_contacts(m: mujoco.MjModel, d: mujoco.MjData, geom: str = "peg") -> tuple[np.ndarray, float, int, set[str]]:
    """Total contact force on ``geom`` (world frame), deepest penetration (m), contact count, other geoms."""
    gid = m.geom(geom).id
    total, depth, n, others = np.zeros(3), 0.0, 0, set()
    f6 = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        if gid not in (c.geom1, c.geom2):
            continue
        mujoco.mj_contactForce(m, d, i, f6)
        f = c.frame.reshape(3, 3).T @ f6[:3]  # contact frame → world; the force geom1 exerts on geom2
        total += f if c.geom2 == gid else -f
        depth = max(depth, -float(c.dist))
        n += 1
        others.add(m.geom(c.geom1 if c.geom2 == gid else c.geom2).name)
    return total, depth, n, others


def _tare(robot: MujocoRobot, tip: np.ndarray) -> np.ndarray:
    """Wrist force (world) at rest with nothing touching the tool, at ``tip``: the tool's weight."""
    _hold(robot, tip)
    mujoco.mj_step(robot.model, robot.data, nstep=250)
    assert robot.data.ncon == 0
    return _wrench_world(robot.data)[0]


def _surface_points(robot: MujocoRobot) -> dict[str, np.ndarray]:
    robot.reset()
    d = robot.data
    top, bottom = d.site("hole_top").xpos.copy(), d.site("hole_bottom").xpos.copy()
    return {
        # peg face fully on the +x wall beside the opening (peg spans x = +25..+49 mm of the axis)
        "fixture_top": top + np.array([0.037, 0.0, 0.0]),
        # peg inserted, its end face on the base plate at the hole's axis
        "hole_bottom": bottom.copy(),
    }


# ----------------------------------------------------------------------------- (a) free air
def test_wrist_reads_the_tool_weight_at_rest(robot):
    """Sign convention: the sensor reports what the arm exerts on the tool; at rest that holds the tool up."""
    m = robot.model
    f0 = _tare(robot, _surface_points(robot)["fixture_top"] + [0.0, 0.0, 0.05])
    np.testing.assert_allclose(f0, [0.0, 0.0, _tool_mass(m) * G], atol=1e-6)
    site_f = robot.data.sensor("wrist_force").data
    np.testing.assert_allclose(site_f, [0.0, 0.0, -_tool_mass(m) * G], atol=1e-3)  # peg (site z) points down


@pytest.mark.parametrize("magnitude", MAGNITUDES)
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_force_at_the_peg_tip_reads_at_the_wrist(robot, direction, magnitude):
    """A known force at the peg tip, arm held by its servos: the tared wrist force is its negative
    (the arm holds the tool against it) and the wrist torque is its moment about the sensor.

    Tolerance 0.5 % + 0.02 N: at rest the simulated sensor is exact (the tool's equilibrium, error
    < 1e-9 N measured); the allowance covers the residual motion after the 1 s settle
    (0.35 kg x 0.05 m/s² ≈ 0.02 N), far below what a real wrist sensor resolves."""
    m, d = robot.model, robot.data
    start = _surface_points(robot)["fixture_top"] + [0.0, 0.0, 0.05]  # 50 mm above the fixture
    f0 = _tare(robot, start)
    unit = np.asarray(DIRECTIONS[direction], dtype=float)
    force = magnitude * unit / np.linalg.norm(unit)
    _hold(robot, start)
    _press(robot, "tool", "peg_tip", force, seconds=1.0)

    assert d.ncon == 0
    assert np.abs(d.qvel).max() < 1e-3  # at rest
    limit = m.actuator_forcerange[:, 1]
    assert np.all(np.abs(d.actuator_force) < 0.95 * limit)  # held by the servos, none saturated
    f, t = _wrench_world(d)
    np.testing.assert_allclose(f - f0, -force, atol=0.005 * magnitude + 0.02)
    # torque about the sensor site: the tool's equilibrium (applied force at the tip, its weight at its com)
    site = d.site("ft_sensor").xpos
    com = d.xipos[m.body("tool").id]
    expected_t = -(np.cross(d.site("peg_tip").xpos - site, force) + np.cross(com - site, [0.0, 0.0, -_tool_mass(m) * G]))
    np.testing.assert_allclose(t, expected_t, atol=0.005 * magnitude * 0.12 + 0.002)


# ----------------------------------------------------------------------------- (b) in contact
@pytest.mark.parametrize("magnitude", MAGNITUDES)
@pytest.mark.parametrize("surface", ["fixture_top", "hole_bottom"])
def test_peg_pressed_on_a_surface_reads_the_force_at_the_wrist(robot, surface, magnitude):
    """The peg tip rests on the fixture top (beside the opening) or on the hole's bottom, the servos
    holding it there; the wrist is pushed down with a known force (applied to the flange, above the
    sensor, as the arm would).  At rest the tared wrist force equals minus the contact force on the
    peg from mj_contactForce (same body, same equilibrium), and both equal the push.

    Tolerances: wrist vs contact 0.1 % + 0.01 N (one equilibrium, read two ways); wrist vs push
    2 % + 0.05 N: the held arm is a spring — pushed at the flange it deflects about the pinned tip
    and its servos' restoring torques reach the contact too (measured 0.85–1.45 %, mostly a
    sideways friction load at the flat face)."""
    m, d = robot.model, robot.data
    tip = _surface_points(robot)[surface]
    f0 = _tare(robot, tip + [0.0, 0.0, 0.02])
    push = np.array([0.0, 0.0, -magnitude])
    _hold(robot, tip)
    _press(robot, "right_l6", "right_hand", push, seconds=1.5)

    contact, depth, n, others = _peg_contacts(m, d)
    expected = {"fixture_top": {"fixture_px"}, "hole_bottom": {"fixture_base"}}[surface]
    assert others == expected and n >= 3  # the flat end face rests on the surface (multi-point contact)
    assert np.abs(d.qvel).max() < 1e-3
    wrist = _wrench_world(d)[0] - f0
    np.testing.assert_allclose(wrist, -contact, atol=1e-3 * magnitude + 0.01)
    np.testing.assert_allclose(wrist, push, atol=0.02 * magnitude + 0.05)
    assert contact[2] == pytest.approx(magnitude, rel=0.01)  # normal force
    assert depth < 1e-6  # < 1 µm at up to 30 N (see the stiffness test)


def test_wrist_reads_the_contact_not_the_push_when_the_servos_share_the_load(robot):
    """Peg 25 mm deep in the hole, its side against the +x wall, pushed sideways at the flange: the
    servos carry part of a sideways push (the wrist bends), so the wrist reads less than the push —
    and still exactly the contact force.  The wrist measures what passes through the tool."""
    m, d = robot.model, robot.data
    top = _surface_points(robot)["hole_bottom"] + [0.0, 0.0, 0.05]
    tip = top + [CLEARANCE, 0.0, -0.025]  # touching the +x wall's inner face
    f0 = _tare(robot, tip + [-CLEARANCE, 0.0, 0.0])
    push = np.array([20.0, 0.0, 0.0])
    _hold(robot, tip)
    _press(robot, "right_l6", "right_hand", push, seconds=1.5)
    contact, _, n, others = _peg_contacts(m, d)
    assert others == {"fixture_px"} and n >= 1
    wrist = _wrench_world(d)[0] - f0
    np.testing.assert_allclose(wrist, -contact, atol=0.02)
    assert 0.5 * push[0] < wrist[0] < 0.9 * push[0]  # measured 0.67 of the push


# ----------------------------------------------------------------------------- (c) physics sanity
def test_static_contact_stiffness_and_penetration(robot):
    """Effective normal stiffness of the peg face on the fixture top (held arm, flange pushed down):
    linear in the load and ~1e8 N/m (docs/contact_physics.md); at the task's 30 N force threshold
    the peg sinks in by well under a micrometre — four orders of magnitude below the clearance."""
    m, d = robot.model, robot.data
    tip = _surface_points(robot)["fixture_top"]
    stiffness = {}
    for load in (10.0, 30.0):
        _hold(robot, tip)
        _press(robot, "right_l6", "right_hand", np.array([0.0, 0.0, -load]), seconds=1.5)
        contact, depth, _, _ = _peg_contacts(m, d)
        stiffness[load] = contact[2] / depth
        assert depth < 1e-3 * CLEARANCE
    assert stiffness[10.0] == pytest.approx(stiffness[30.0], rel=0.1)  # linear
    assert 5e7 < stiffness[30.0] < 2e8  # documented: 1.0e8 N/m


@pytest.mark.parametrize("speed", [0.05, 0.1, 0.2])
def test_impact_penetration_stays_well_below_the_clearance(robot, speed):
    """The peg lands flat on the fixture top at ``speed`` (0.2 m/s: the Sawyer's Cartesian speed limit,
    config/robots/sawyer.yaml), started within one physics step of the surface at four phases.

    Contacts are found only once the geoms overlap (margin 0), so the landing overlap is up to one
    step of travel, speed × timestep; the 5 ms contact time constant adds little and pushes it out.
    Worst case at 0.2 m/s: 0.40 mm, a quarter of the 1.5 mm clearance."""
    m, d = robot.model, robot.data
    dt = m.opt.timestep
    tip = _surface_points(robot)["fixture_top"]
    worst = 0.0
    for phase in (0.0, 0.25, 0.5, 0.75):
        _hold(robot, tip + [0.0, 0.0, phase * speed * dt])
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jacSite(m, d, jp, jr, m.site("peg_tip").id)
        d.qvel[:] = np.linalg.lstsq(np.vstack([jp, jr]), [0.0, 0.0, -speed, 0.0, 0.0, 0.0], rcond=None)[0]
        d.ctrl[:] = _ik(m, d.qpos.copy(), tip - [0.0, 0.0, 0.002])  # servos driving 2 mm into the surface
        for _ in range(100):
            mujoco.mj_step(m, d)
            worst = max(worst, _peg_contacts(m, d)[1])
        assert _peg_contacts(m, d)[1] < 0.01 * CLEARANCE  # pushed back out within 0.2 s
    assert worst <= speed * dt + 5e-5
    assert worst < CLEARANCE / 3


@pytest.mark.parametrize(("overlap_mm", "depth_mm", "vertical"), [
    (0.8, 0.4, True), (0.4, 0.2, True), (0.2, 0.1, True),
    (0.1, 0.2, False), (0.2, 0.4, False), (0.05, 0.1, False),
])
def test_no_chamfer_rim_overlap_resolved_by_the_shallower_direction(robot, overlap_mm, depth_mm, vertical):
    """The fixture has no chamfer: a peg landing with its face ``overlap_mm`` over the rim should jam.
    MuJoCo's convex collider pushes along the least penetration, so a rim overlap smaller than the
    landing depth gets a sideways normal (toward the hole axis) instead: a numerical chamfer about as
    wide as the landing overlap (≤ speed × timestep, 0.4 mm at 0.2 m/s; docs/contact_physics.md)."""
    m, d = robot.model, robot.data
    top = _surface_points(robot)["hole_bottom"] + [0.0, 0.0, 0.05]
    _hold(robot, top + [CLEARANCE + overlap_mm * 1e-3, 0.0, -depth_mm * 1e-3])  # peg face over the +x rim
    normals = [d.contact[i].frame[:3] for i in range(d.ncon) if m.geom("peg").id in (d.contact[i].geom1, d.contact[i].geom2)]
    assert normals
    for n in normals:
        if vertical:
            assert abs(n[2]) > 0.99
        else:
            assert abs(n[0]) > 0.99  # along x: the rim pushes the peg sideways, into the hole


def _friction_probe(robot: MujocoRobot) -> tuple[mujoco.MjModel, float]:
    """The scene (same file, options and fixture) plus a free copy of the peg geom — same size,
    friction, solref, solimp, condim — standing on the fixture's -x wall, away from the arm."""
    m0, d0 = robot.model, robot.data
    robot.reset()
    peg = m0.geom("peg").id
    wall = m0.geom("fixture_nx").id
    half_length = float(m0.geom_size[peg][1])
    wall_top = d0.geom_xpos[wall] + [0.0, 0.0, m0.geom_size[wall][2]]
    spec = mujoco.MjSpec.from_file(str(robot.model_path))
    body = spec.worldbody.add_body(name="probe", pos=wall_top + [0.0, 0.0, half_length + 1e-4])
    body.add_freejoint()
    body.add_geom(
        name="probe_peg", type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=m0.geom_size[peg].copy(),
        friction=m0.geom_friction[peg].copy(), solref=m0.geom_solref[peg].copy(),
        solimp=m0.geom_solimp[peg].copy(), condim=int(m0.geom_condim[peg]), mass=_tool_mass(m0),
    )
    return spec.compile(), half_length


@pytest.mark.parametrize("angle", [90.0, 270.0, 45.0])
def test_sliding_friction_matches_the_xml(robot, angle):
    """Sliding test: the peg copy pressed onto the fixture with 20 N, a sideways force at its face
    ramped from 0 to 0.8 x the normal load.  Coulomb: friction / normal force of its contacts
    (mj_contactForce) never exceeds the friction coefficient and equals it while the peg slips.
    The scene uses MuJoCo's default pyramidal cone: its 4 edges bound the friction force by a
    diamond in the contact frame, |f_x| + |f_y| ≤ μ f_n, so the coefficient is 0.6 sliding along
    the contact frame's axes (the fixture's x/y edges here) and μ/√2 = 0.42 sliding diagonally.
    (The free 0.35 kg copy slides in stick-slip, its contact breaking for a step every ~10 steps,
    so the force is at the limit only part of the time: the test takes the maximum and checks that
    it is reached repeatedly.)  docs/contact_physics.md."""
    m, half_length = _friction_probe(robot)
    d = mujoco.MjData(m)
    d.qpos[:7] = robot.model.key("home").qpos
    d.ctrl[:] = robot.model.key("home").ctrl
    mujoco.mj_forward(m, d)
    body = m.body("probe").id
    dof = m.body_dofadr[body]
    normal_push = 20.0
    normal = normal_push + _tool_mass(robot.model) * G
    u = np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle)), 0.0])
    for _ in range(300):  # settle on the wall under the normal load
        d.xfrc_applied[body] = [0.0, 0.0, -normal_push, 0.0, 0.0, 0.0]
        mujoco.mj_step(m, d)
    diamond, magnitude, sliding_since = [], [], None
    steps = 1000
    for k in range(steps):
        force = np.array([0.0, 0.0, -normal_push]) + 0.8 * normal * (k / steps) * u
        face = d.xpos[body] - d.xmat[body].reshape(3, 3)[:, 2] * (half_length - 5e-4)  # 0.5 mm above the face
        d.xfrc_applied[body, :3] = force
        d.xfrc_applied[body, 3:] = np.cross(face - d.xipos[body], force)
        mujoco.mj_step(m, d)
        if sliding_since is None and np.linalg.norm(d.qvel[dof:dof + 2]) > 0.01:
            sliding_since = k
        if sliding_since is not None:
            contact, _, n, others = _peg_contacts(m, d, "probe_peg")
            if n == 4 and others == {"fixture_nx"}:
                for i in range(d.ncon):  # contact frame: normal up, tangents along the fixture's edges
                    frame = d.contact[i].frame.reshape(3, 3)
                    assert abs(frame[0, 2]) > 0.999 and max(abs(frame[1, 0]), abs(frame[1, 1])) > 0.999
                diamond.append((abs(contact[0]) + abs(contact[1])) / contact[2])
                magnitude.append(np.linalg.norm(contact[:2]) / contact[2])
            if k - sliding_since >= 30:
                break
    assert sliding_since is not None
    assert 0.8 * sliding_since / steps < MU + 0.02  # broke away by μ x normal load (creep starts it earlier)
    diamond, magnitude = np.array(diamond), np.array(magnitude)
    assert len(diamond) >= 15
    assert diamond.max() == pytest.approx(MU, abs=0.003)  # never outside the cone, reaching it ...
    at_limit = np.abs(diamond - MU) < 0.003
    assert at_limit.sum() >= 3  # ... repeatedly while slipping
    expected = MU if angle % 90.0 == 0.0 else MU / np.sqrt(2.0)
    assert np.median(magnitude[at_limit]) == pytest.approx(expected, abs=0.005)
