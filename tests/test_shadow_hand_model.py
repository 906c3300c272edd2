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
# Motor limits (N.m), sr_description <limit effort=...>.
EFFORT = {"rh_WRJ2": 10, "rh_WRJ1": 30, "rh_THJ5": 5, "rh_THJ4": 3, "rh_THJ3": 2, "rh_THJ2": 2, "rh_THJ1": 1}
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
    for _ in range(int(round(seconds / model.opt.timestep))):
        mujoco.mj_step(model, data)


def ramp(model, data, targets: dict[str, float], seconds: float, frac: float = 0.7):
    """Move servo targets linearly over frac*seconds, then hold until `seconds`."""
    start = {k: data.ctrl[model.actuator(k).id] for k in targets}
    n = int(round(seconds / model.opt.timestep))
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
        f = EFFORT.get(a, 2.0)
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
    assert m.sensor("peg_touch").type == mujoco.mjtSensor.mjSENS_TOUCH
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
        assert sensor(model, data, "peg_touch") == pytest.approx(0.0, abs=1e-6)
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
    model, data = load("touch")
    ramp(model, data, {"rh_FFJ3": 0.9, "rh_FFJ0": 0.6}, 0.8)
    assert sensor(model, data, "block_touch") > 5.0
    assert sensor(model, data, "rh_ffdistal_touch") > 0.0
    # all forces within motor limits
    assert np.all(np.abs(data.actuator_force) <= model.actuator_forcerange[:, 1] + 1e-9)


def test_turn_dial():
    model, data = load("turn")
    ramp(model, data, {"rh_FFJ3": 0.9, "rh_FFJ0": 0.6}, 1.2)
    angle = sensor(model, data, "dial_angle")
    assert abs(angle) > 0.3
    step(model, data, 0.5)  # dial stays put once released by the finger
    assert sensor(model, data, "dial_angle") == pytest.approx(angle, abs=0.02)


def test_orient_touch_and_lift_peg():
    model, data = load("orient")
    step(model, data, 0.2)
    z0 = sensor(model, data, "peg_pos")[2]
    ramp(model, data, {"rh_THJ5": 0.72, "rh_THJ2": -0.31, "rh_THJ1": -0.08}, 0.3)
    ramp(model, data, {"rh_THJ4": 1.09}, 0.4)
    close = {"rh_FFJ3": 1.3, "rh_FFJ0": 1.03, "rh_MFJ3": 1.3, "rh_MFJ0": 1.03, "rh_FFJ4": 0.06}
    ramp(model, data, close, 0.8)
    assert sensor(model, data, "peg_touch") > 0.0
    assert sensor(model, data, "rh_ffdistal_touch") > 0.0
    assert sensor(model, data, "rh_thdistal_touch") > 0.0
    ramp(model, data, {"rh_WRJ1": -0.6}, 1.0)
    z1 = sensor(model, data, "peg_pos")[2]
    assert z1 - z0 > 0.03, f"peg lifted only {z1 - z0:.3f} m"
    q = sensor(model, data, "peg_quat")
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-6)
