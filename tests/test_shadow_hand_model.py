"""Fast checks of the hand-written Shadow Dexterous Hand (E, right) MJCF and its task scenes.

Uses only mujoco + numpy (no morl_robot code).  Models: sim/shadow_hand/{right_hand,touch,turn,orient}.xml.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

SIM_DIR = Path(__file__).resolve().parents[1] / "sim" / "shadow_hand"
SCENES = ["right_hand", "touch", "turn", "orient"]

# Joint ranges in degrees, from Shadow's published table
# (shadow-robot/sr_dexterous_hand_documentation, docs/user_guide/md_ranges.rst) and the
# sr_description xacros (shadow-robot/sr_common, sr_description/hand/xacro/**), which agree.
_FINGER = {"J4": (-20, 20), "J3": (-15, 90), "J2": (0, 90), "J1": (0, 90)}
JOINT_RANGES_DEG = {
    "rh_WRJ2": (-28, 10),
    "rh_WRJ1": (-40, 28),
    **{f"rh_{f}{j}": r for f in ("FF", "MF", "RF") for j, r in _FINGER.items()},
    "rh_LFJ5": (0, 45),
    **{f"rh_LF{j}": r for j, r in _FINGER.items()},
    "rh_THJ5": (-60, 60),
    "rh_THJ4": (0, 70),
    "rh_THJ3": (-12, 12),
    "rh_THJ2": (-40, 40),
    "rh_THJ1": (-15, 90),
}
JOINTS = [
    "rh_WRJ2", "rh_WRJ1", "rh_FFJ4", "rh_FFJ3", "rh_FFJ2", "rh_FFJ1", "rh_MFJ4", "rh_MFJ3",
    "rh_MFJ2", "rh_MFJ1", "rh_RFJ4", "rh_RFJ3", "rh_RFJ2", "rh_RFJ1", "rh_LFJ5", "rh_LFJ4",
    "rh_LFJ3", "rh_LFJ2", "rh_LFJ1", "rh_THJ5", "rh_THJ4", "rh_THJ3", "rh_THJ2", "rh_THJ1",
]
ACTUATORS = [
    "rh_WRJ2", "rh_WRJ1", "rh_FFJ4", "rh_FFJ3", "rh_FFJ0", "rh_MFJ4", "rh_MFJ3", "rh_MFJ0",
    "rh_RFJ4", "rh_RFJ3", "rh_RFJ0", "rh_LFJ5", "rh_LFJ4", "rh_LFJ3", "rh_LFJ0",
    "rh_THJ5", "rh_THJ4", "rh_THJ3", "rh_THJ2", "rh_THJ1",
]
# Motor limits (N.m), calibrated to Shadow's motor units (right_hand_common.xml): small motors
# 65 N x 10 mm on J3/J4/LFJ5/THJ1-3, 65 N x ~6 mm on each of J1, J2 (the J0 tendon); large motors
# 190 N x 10 mm on THJ4/THJ5, 190 N x 15 mm on the wrist.
EFFORT = {"rh_WRJ2": 2.85, "rh_WRJ1": 2.85, "rh_THJ5": 1.9, "rh_THJ4": 1.9}
SMALL_MOTOR, J0_MOTOR = 0.65, 0.4
TOUCH = [
    f"rh_{f}{p}_touch"
    for p in ("distal", "middle", "proximal")
    for f in ("ff", "mf", "rf", "lf", "th")
]
BODIES = [
    "rh_forearm", "rh_wrist", "rh_palm", "rh_lfmetacarpal", "rh_thbase", "rh_thproximal",
    "rh_thhub", "rh_thmiddle", "rh_thdistal",
] + [f"rh_{f}{b}" for f in ("ff", "mf", "rf", "lf") for b in ("knuckle", "proximal", "middle", "distal")]
SCENE_EXTRA = {"right_hand": (0, 0), "touch": (0, 1), "turn": (1, 1), "orient": (7, 3)}  # (extra nq, sensors)


def load(name: str):
    model = mujoco.MjModel.from_xml_path(str(SIM_DIR / f"{name}.xml"))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    return model, data


@pytest.fixture(scope="module", params=SCENES)
def scene(request):
    return request.param, *load(request.param)


def sensor(model, data, name):
    """Scalar sensors as float, others as an array."""
    sen = model.sensor(name)
    vals = data.sensordata[sen.adr[0] : sen.adr[0] + sen.dim[0]]
    return float(vals[0]) if sen.dim[0] == 1 else vals.copy()


def step(model, data, seconds):
    for _ in range(round(seconds / model.opt.timestep)):
        mujoco.mj_step(model, data)


def ramp(model, data, targets: dict[str, float], seconds: float, frac: float = 0.7):
    """Move servo targets linearly over frac*seconds, then hold until `seconds`."""
    start = {k: data.ctrl[model.actuator(k).id] for k in targets}
    n = round(seconds / model.opt.timestep)
    for i in range(n):
        x = min(1.0, (i + 1) / (frac * n))
        for k, v in targets.items():
            data.ctrl[model.actuator(k).id] = start[k] + (v - start[k]) * x
        mujoco.mj_step(model, data)


# ----------------------------------------------------------------------------- structure


def test_structure(scene):
    name, model, _ = scene
    extra_nq, extra_sensors = SCENE_EXTRA[name]
    assert model.opt.timestep <= 0.002
    assert model.nq == 24 + extra_nq
    assert model.nu == 20
    assert model.nsensor == 15 + extra_sensors
    hinges = [model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE]
    assert hinges[:24] == JOINTS
    assert [model.actuator(i).name for i in range(model.nu)] == ACTUATORS
    for b in BODIES:
        model.body(b)  # raises if missing
    for s in TOUCH:
        assert model.sensor(s).type == mujoco.mjtSensor.mjSENS_TOUCH
    # hand joints come first in qpos
    assert [model.joint(j).qposadr[0] for j in JOINTS] == list(range(24))


def test_joint_ranges(scene):
    _, model, _ = scene
    for j, (lo, hi) in JOINT_RANGES_DEG.items():
        jid = model.joint(j).id
        assert model.jnt_limited[jid]
        np.testing.assert_allclose(model.jnt_range[jid], np.radians([lo, hi]), atol=1e-3, err_msg=j)


def test_actuators(scene):
    _, model, _ = scene
    for i, a in enumerate(ACTUATORS):
        act = model.actuator(a)
        kp = act.gainprm[0]
        assert kp > 0 and act.biasprm[1] == pytest.approx(-kp) and act.biasprm[2] <= 0
        assert model.actuator_biastype[i] == mujoco.mjtBias.mjBIAS_AFFINE
        if a.endswith("J0"):
            assert model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_TENDON
            np.testing.assert_allclose(act.ctrlrange, [0, math.pi], atol=1e-5)
        else:
            assert model.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT
            jid = act.trnid[0]
            assert model.joint(jid).name == a
            np.testing.assert_allclose(act.ctrlrange, model.jnt_range[jid], atol=1e-6)
        f = EFFORT.get(a, J0_MOTOR if a.endswith("J0") else SMALL_MOTOR)
        np.testing.assert_allclose(act.forcerange, [-f, f])
        assert model.actuator_forcelimited[i]


def test_scene_sensors():
    m, _ = load("touch")
    assert m.sensor("block_touch").type == mujoco.mjtSensor.mjSENS_TOUCH
    m.body("block")
    m, _ = load("turn")
    assert m.sensor("dial_angle").type == mujoco.mjtSensor.mjSENS_JOINTPOS
    assert m.joint("dial_hinge").type == mujoco.mjtJoint.mjJNT_HINGE
    np.testing.assert_allclose(m.joint("dial_hinge").axis, [0, 0, 1])
    m.body("dial")
    m, _ = load("orient")
    assert m.joint("peg_free").type == mujoco.mjtJoint.mjJNT_FREE
    assert m.sensor("peg_pos").type == mujoco.mjtSensor.mjSENS_FRAMEPOS
    assert m.sensor("peg_quat").type == mujoco.mjtSensor.mjSENS_FRAMEQUAT
    assert m.sensor("peg_touch").type == mujoco.mjtSensor.mjSENS_CONTACT  # hand–peg contacts only
    assert 0.05 <= m.body("peg").mass[0] <= 0.1


def test_mass():
    m, _ = load("right_hand")
    assert 3.5 < m.body("rh_forearm").subtreemass < 4.5
    assert 0.05 < m.body("rh_ffproximal").subtreemass < 0.1


# ----------------------------------------------------------------------------- home keyframe


def test_home_is_at_rest_and_untouched(scene):
    name, model, data = scene
    step(model, data, 0.3)
    for s in TOUCH:
        assert sensor(model, data, s) == 0.0, s
    assert np.all(np.abs(data.qvel[:24]) < 0.05)
    if name == "touch":
        assert sensor(model, data, "block_touch") == 0.0
    if name == "turn":
        assert abs(sensor(model, data, "dial_angle")) < 1e-3
    if name == "orient":
        assert sensor(model, data, "peg_touch")[0] == pytest.approx(0.0, abs=1e-6)  # resting on the table
        np.testing.assert_allclose(sensor(model, data, "peg_pos"), model.key("home").qpos[24:27], atol=2e-3)


# ----------------------------------------------------------------------------- coupling


@pytest.mark.parametrize("finger", ["FF", "MF", "RF", "LF"])
def test_j0_coupling(finger):
    model, data = load("right_hand")
    j1, j2 = (model.joint(f"rh_{finger}J{k}").qposadr[0] for k in (1, 2))
    data.ctrl[model.actuator(f"rh_{finger}J0").id] = 1.2
    step(model, data, 0.6)
    assert data.qpos[j1] == pytest.approx(0.6, abs=0.03)
    assert data.qpos[j2] == pytest.approx(0.6, abs=0.03)
    # sweep 0 -> pi -> 0: the two joints move together throughout
    worst = 0.0
    for target in np.concatenate([np.linspace(0, math.pi, 40), np.linspace(math.pi, 0, 40)]):
        data.ctrl[model.actuator(f"rh_{finger}J0").id] = target
        step(model, data, 0.02)
        worst = max(worst, abs(data.qpos[j1] - data.qpos[j2]))
    assert worst < 0.03
    step(model, data, 0.5)
    assert abs(data.qpos[j1]) < 0.03 and abs(data.qpos[j2]) < 0.03


def test_servo_tracking():
    model, data = load("right_hand")
    targets = {"rh_FFJ3": 0.8, "rh_WRJ1": 0.3, "rh_THJ5": 0.8, "rh_THJ1": 1.0, "rh_LFJ5": 0.5}
    for k, v in targets.items():
        data.ctrl[model.actuator(k).id] = v
    step(model, data, 1.2)  # ~2 rad/s velocity-limited (see joint damping), then ~0.1 s time constant
    for k, v in targets.items():
        assert data.qpos[model.joint(k).qposadr[0]] == pytest.approx(v, abs=0.02), k
    assert np.all(np.abs(data.qvel) < 0.02)


def test_speed_at_motor_limit():
    """Passive damping caps free-space joint speed near sr_description's velocity limits."""
    model, data = load("right_hand")
    lo, hi = model.actuator_ctrlrange.T
    vmax = np.zeros(model.nv)
    for k in range(6):
        data.ctrl[:] = hi if k % 2 == 0 else lo
        for _ in range(150):
            mujoco.mj_step(model, data)
            vmax = np.maximum(vmax, np.abs(data.qvel))
    assert np.all(vmax < 5.0)
    assert np.all(vmax[[model.joint(j).dofadr[0] for j in ("rh_FFJ3", "rh_MFJ3", "rh_THJ5")]] > 1.0)


# ----------------------------------------------------------------------------- tasks


def test_touch_press_block():
    """The block lies out of reach of the fingers alone: pressing it needs the wrist flexed too."""
    model, data = load("touch")
    fingers = {f"rh_{f}J3": 1.57 for f in ("FF", "MF", "RF", "LF")}
    for j0 in (0.0, 0.6, 1.5):
        mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
        ramp(model, data, {**fingers, **{f"rh_{f}J0": j0 for f in ("FF", "MF", "RF", "LF")}}, 1.0)
        assert sensor(model, data, "block_touch") == 0.0
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    ramp(model, data, {"rh_WRJ1": 0.49, "rh_FFJ3": 0.9, "rh_FFJ0": 0.3}, 1.5)
    assert sensor(model, data, "block_touch") > 5.0
    assert sensor(model, data, "rh_ffdistal_touch") > 0.0
    # all forces within motor limits
    assert np.all(np.abs(data.actuator_force) <= model.actuator_forcerange[:, 1] + 1e-9)


def test_turn_dial():
    """One finger alone barely reaches the paddle; the fingers with the wrist flexed turn it past
    the task's target (config/tasks/shadow_turn.yaml: 1.05 rad)."""
    model, data = load("turn")
    ramp(model, data, {"rh_FFJ3": 0.9, "rh_FFJ0": 0.6}, 1.2)
    assert abs(sensor(model, data, "dial_angle")) < 0.3
    fingers = {f"rh_{f}J3": 1.2 for f in ("FF", "MF", "RF", "LF")} | {f"rh_{f}J0": 0.0 for f in ("FF", "MF", "RF", "LF")}
    ramp(model, data, {"rh_WRJ1": 0.49, **fingers}, 1.2)
    angle = sensor(model, data, "dial_angle")
    assert angle > 1.0
    step(model, data, 0.5)  # dial stays put once released by the finger
    assert sensor(model, data, "dial_angle") == pytest.approx(angle, abs=0.02)


def test_orient_touch_and_lift_peg():
    model, data = load("orient")
    step(model, data, 0.2)
    z0 = sensor(model, data, "peg_pos")[2]
    ramp(model, data, {"rh_THJ5": 0.72, "rh_THJ2": -0.31, "rh_THJ1": -0.08}, 0.3)
    ramp(model, data, {"rh_THJ4": 1.2}, 0.4)
    close = {"rh_FFJ3": 1.3, "rh_FFJ0": 1.03, "rh_MFJ3": 1.3, "rh_MFJ0": 1.03, "rh_FFJ4": 0.06}
    ramp(model, data, close, 0.8)
    assert sensor(model, data, "peg_touch")[0] > 0.0
    assert sensor(model, data, "rh_ffdistal_touch") > 0.0
    assert sensor(model, data, "rh_thdistal_touch") > 0.0
    ramp(model, data, {"rh_WRJ1": -0.6}, 1.0)
    z1 = sensor(model, data, "peg_pos")[2]
    assert z1 - z0 > 0.03, f"peg lifted only {z1 - z0:.3f} m"
    # the pinch holds the peg near its end: peg_touch counts it (the old touch site's ellipsoid read 0 N)
    assert sensor(model, data, "peg_touch")[0] > 1.0
    q = sensor(model, data, "peg_quat")
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-6)


# ----------------------------------------------------------------------------- calibration

# Fingertip force of one finger at full command, from Shadow's published motor-unit figures
# (sr_dexterous_hand_documentation, docs/user_guide/md_motor_unit.rst: small motor, 65 N max
# continuous safe tendon load, 110 N at full power) through our 10 mm J3 tendon moment arm
# (an estimate, see right_hand_common.xml): tau_J3 in [0.65, 1.1] N.m acting over the lever from
# J3 to the fingertip pad, 96 mm (straight finger) down to ~70 mm (pad contact of a bent finger).
TIP_FORCE_RANGE = (65 * 0.010 / 0.096, 110 * 0.010 / 0.070)  # ~(6.8, 15.7) N


def test_fingertip_force_in_published_range():
    """Drive the first finger against the block at full command (J3 at its flexion limit, the J0
    motor at several targets) with the wrist still, and read the distal touch pad: the largest
    static force lies in the range derived from Shadow's tendon loads (the uncalibrated 2 N.m
    motors pressed 28-40 N)."""
    model, data = load("touch")
    block = model.body("block").id
    model.body_pos[block, 2] += 0.135 - 0.075  # block top back within reach of the still hand
    peak = 0.0
    for j0 in (0.0, 0.5, 1.0, 1.5):
        mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
        data.ctrl[model.actuator("rh_FFJ3").id] = model.actuator("rh_FFJ3").ctrlrange[1]
        data.ctrl[model.actuator("rh_FFJ0").id] = j0
        step(model, data, 2.0)
        pad = sensor(model, data, "rh_ffdistal_touch")
        assert sensor(model, data, "block_touch") == pytest.approx(pad, rel=0.05, abs=0.05)
        peak = max(peak, pad)
    lo, hi = TIP_FORCE_RANGE
    assert lo <= peak <= hi, f"fingertip force {peak:.1f} N outside {lo:.1f}..{hi:.1f} N"
