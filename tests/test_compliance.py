"""Contact made safe below the policy (issue 32): the force-limited admittance, its physics-rate
execution in both backends, and the safety layer's approach-speed limit near the fixture."""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from morl_robot.robots.compliance import ComplianceConfig, ForceLimitedAdmittance
from morl_robot.robots.config import load_robot_config
from morl_robot.safety.compiled import load_rules
from morl_robot.safety.rules import approach_limit, tool_box_separation

CFG = ComplianceConfig(stiffness=0.0, damping=100.0, force_limit=20.0, force_deadband=2.0)
vec3 = st.lists(st.floats(-50.0, 50.0, allow_nan=False), min_size=3, max_size=3).map(np.array)
vel3 = st.lists(st.floats(-0.3, 0.3, allow_nan=False), min_size=3, max_size=3).map(np.array)


# --- the law ------------------------------------------------------------------------------------
@given(vel3)
def test_free_motion_is_the_command(v):
    law = ForceLimitedAdmittance(CFG, max_speed=0.2)
    out = law.step(v, np.zeros(3), 0.002)
    speed = np.linalg.norm(v)
    np.testing.assert_allclose(out, v * min(1.0, 0.2 / speed) if speed > 0 else v, atol=1e-12)


@given(vel3, vec3, st.floats(0.0, 500.0))
@settings(max_examples=200)
def test_output_speed_bounded_and_never_pushes_harder_than_commanded(v, f, k):
    law = ForceLimitedAdmittance(dataclasses.replace(CFG, stiffness=k), max_speed=0.2)
    out = law.step(v, f, 0.002)
    assert np.linalg.norm(out) <= 0.2 + 1e-12
    norm = np.linalg.norm(f)
    if norm > CFG.force_deadband:
        n = f / norm  # the contact pushes the tool along n; moving along -n pushes into it
        assert -(out @ n) <= max(-(v @ n), 0.0) + 1e-12


@given(vec3.filter(lambda f: np.linalg.norm(f) > 25.0))
def test_above_the_limit_the_tool_backs_off(f):
    law = ForceLimitedAdmittance(CFG, max_speed=0.2)
    n = f / np.linalg.norm(f)
    out = law.step(-0.2 * n, f, 0.002)  # commanded straight into the contact at full speed
    assert out @ n > 0


@pytest.mark.parametrize("speed", [0.005, 0.02, 0.1, 0.2])
def test_a_persistent_push_settles_at_the_steady_force_below_the_limit(speed):
    """A 1-D push into a stiff surface (2e4 N/m, the servo and contact in series) at ``speed``: the
    force settles where the module docstring says (averaged over the last second: a slow push
    quantises to ~0.1 N steps per tick at this stiffness), below force_limit."""
    law = ForceLimitedAdmittance(CFG, max_speed=0.2)
    x, dt, k_surface = 0.0, 0.002, 2e4
    force, history = 0.0, []
    for _ in range(20_000):
        f = np.array([0.0, 0.0, force])
        v = law.step(np.array([0.0, 0.0, -speed]), f, dt)
        x += v[2] * dt
        force = max(-x, 0.0) * k_surface
        history.append(force)
    expected = ForceLimitedAdmittance.steady_force(CFG, speed)
    assert np.mean(history[-500:]) == pytest.approx(expected, rel=0.05)
    assert max(history) < CFG.force_limit


@functools.cache
def _approach():
    """The Sawyer's approach rules, compiled once (a property test's examples only read them)."""
    return load_rules("sawyer").approach


def test_stiffness_pulls_the_tool_back_to_the_commanded_path():
    law = ForceLimitedAdmittance(dataclasses.replace(CFG, stiffness=200.0), max_speed=0.2)
    for _ in range(200):
        law.step(np.zeros(3), np.array([10.0, 0.0, 0.0]), 0.002)
    pushed = law.offset.copy()
    assert pushed[0] > 0
    for _ in range(2000):
        law.step(np.zeros(3), np.zeros(3), 0.002)
    assert abs(law.offset[0]) < 0.05 * pushed[0]


@pytest.mark.parametrize("bad", [{"damping": 0.0}, {"force_limit": 1.0, "force_deadband": 2.0},
                                 {"stiffness": -1.0}, {"force_limit": float("nan")}])
def test_bad_compliance_config_names_the_key(bad):
    from morl_robot.configuration import from_mapping
    from morl_robot.errors import ConfigError

    with pytest.raises(ConfigError, match=next(iter(bad))):
        from_mapping(ComplianceConfig, {**dataclasses.asdict(CFG), **bad}, "sawyer.yaml", "cartesian.compliance")


# --- the MuJoCo backend: pressing on the fixture ------------------------------------------------
def _press(compliant: bool, speed: float, steps: int = 80) -> tuple[float, float]:
    """Press the peg down onto the fixture's top face (no safety rules) from 3 mm above it at
    ``speed``; (peak contact force, mean tared force over the last 10 periods) in N.  The peak is the
    compliant controller's physics-rate one where it runs, else the 20 Hz reading's."""
    from morl_robot.envs.mo_env import MORobotEnv

    env = MORobotEnv("sawyer_peg_in_hole")
    if not compliant:
        env.robot.set_compliant(False)
    env.reset(seed=3)
    robot, task = env.robot, env.task
    hole = task._hole[:3]
    for _ in range(60):  # over the fixture's wall, 20 mm off the hole axis, 3 mm above its top
        tip = env.state.ee_pose[:3]
        env.step(np.clip(5.0 * (hole + np.array([0.02, 0.0, 0.003]) - tip) / 0.2, -1, 1))
    peaks, forces = [], []
    for _ in range(steps):
        state = robot.step(task.command(np.array([0.0, 0.0, -speed / 0.2]), robot, env.state))
        env._state = state
        sampled = float(np.linalg.norm(task.tared_wrench(state)[:3]))
        forces.append(sampled)
        peaks.append(max(sampled, state.contact_force_peak or 0.0))
    return max(peaks), float(np.mean(forces[-10:]))


def test_compliance_bounds_the_steady_force_a_stiff_arm_does_not():
    _, stiff = _press(compliant=False, speed=0.01)
    peak, soft = _press(compliant=True, speed=0.01)
    limit = load_robot_config("sawyer").cartesian.compliance.force_limit
    assert soft < limit
    assert peak < 40.0  # arriving at 10 mm/s
    assert stiff > 2 * limit  # the position servos wind up against the fixture


# --- the approach-speed limit -------------------------------------------------------------------
BOX_LO, BOX_HI = np.array([[0.0, 0.0, -0.1]]), np.array([[0.1, 0.1, 0.0]])  # top face at z = 0


@given(st.floats(1e-4, 0.2), st.floats(-0.2, 0.2), st.floats(-0.2, 0.2), st.floats(-0.3, 0.0))
@settings(max_examples=200)
def test_approach_speed_toward_a_box_is_bounded_by_its_distance(h, vx, vy, vz):
    tip = np.array([0.05, 0.05, h])
    v = np.array([vx, vy, vz])
    out, _ = approach_limit(v, tip, BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2)
    allowed = max(0.01, (h - 0.001) / 0.2)
    assert -out[2] <= allowed + 1e-9
    # the nearest such velocity: over the box's top face only the downward speed changes
    np.testing.assert_allclose(out[:2], v[:2], atol=1e-12)
    assert out[2] == pytest.approx(max(v[2], -allowed), abs=1e-9)


@given(vel3, st.floats(-0.05, 0.05), st.floats(-0.05, 0.05), st.floats(-0.04, 0.05))
@settings(max_examples=200)
def test_the_limited_velocity_meets_every_obstacle_and_is_the_nearest(v, dx, dy, h):
    """Over and in the hole (four walls, the floor): every box's approach bound holds, and the result
    is the nearest velocity that meets them all (checked against random feasible points), scaled down
    only by the whole-speed cap near a surface."""
    from morl_robot.safety.rules import project_halfspaces

    rules = _approach()
    hole = np.array([0.65, 0.0, -0.10])
    tip = hole + np.array([dx, dy, h])
    out, _ = rules.limit(v, tip)
    dists, dirs = tool_box_separation(tip, rules.lower, rules.upper, rules.radius, rules.length)
    allowed = np.maximum(rules.contact_speed, (dists - rules.margin) / rules.braking_time)
    assert np.all(dirs @ out <= allowed + 1e-9)
    projected = project_halfspaces(v, dirs, allowed)
    speed = np.linalg.norm(projected)
    if speed > 0:  # out = projected × a factor in (0, 1]
        factor = np.linalg.norm(out) / speed
        assert 0.0 < factor <= 1.0 + 1e-12
        np.testing.assert_allclose(out, projected * factor, atol=1e-12)
    rng = np.random.default_rng(0)
    for candidate in rng.uniform(-0.3, 0.3, size=(200, 3)):
        if np.all(dirs @ candidate <= allowed):
            assert np.linalg.norm(projected - v) <= np.linalg.norm(candidate - v) + 1e-9


@given(st.floats(-0.03, 0.03), st.floats(-0.03, 0.03), st.floats(-0.01, 0.03), vel3)
@settings(max_examples=200)
def test_the_limit_is_continuous_in_the_tool_position(dx, dy, h, v):
    """A reading that differs by a micrometre changes the limited velocity by little: no limit
    switches on or off at a threshold (the graph and its in-process twin stay together)."""
    rules = _approach()
    tip = np.array([0.65, 0.0, -0.10]) + np.array([dx, dy, h])
    a, _ = rules.limit(v, tip)
    b, _ = rules.limit(v, tip + np.array([1e-6, -1e-6, 1e-6]))
    assert np.linalg.norm(a - b) < 0.01


@given(st.floats(1e-3, 0.2), st.floats(-0.3, -1e-3), st.floats(0.0, 0.5), st.floats(0.0, 0.5))
@settings(max_examples=200)
def test_an_old_reading_adds_to_the_stopping_time(h, vz, age, older):
    """A reading ``age`` s old (a slow driver link): the tool may already be closer by what it moved
    since, so the bound is (d − margin) / (braking_time + age), ISO/TS 15066's reaction time — a
    speed within it still stops before the surface; an older reading never allows a faster approach."""
    tip, v = np.array([0.05, 0.05, h]), np.array([0.0, 0.0, vz])
    out, _ = approach_limit(v, tip, BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2, age=age)
    allowed = max(0.01, (h - 0.001) / (0.2 + age))
    assert out[2] == pytest.approx(max(vz, -allowed), abs=1e-9)
    if -out[2] > 0.01 + 1e-9:  # above the contact speed: it stops within the gap the reading saw
        assert -out[2] * (0.2 + age) <= h - 0.001 + 1e-9
    slower, _ = approach_limit(v, tip, BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2, age=age + older)
    assert -slower[2] <= -out[2] + 1e-12
    fresh, _ = approach_limit(v, tip, BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2)
    np.testing.assert_array_equal(fresh, approach_limit(v, tip, BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2, age=0.0)[0])


def test_moving_away_or_far_off_is_not_limited():
    v = np.array([0.1, 0.0, 0.2])  # up, away from the top face
    out, limited = approach_limit(v, np.array([0.05, 0.05, 0.001]), BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2)
    np.testing.assert_array_equal(out, v)
    assert not np.isfinite(limited).any()
    v = np.array([0.0, 0.0, -0.2])  # down, but 20 cm beside the box
    out, _ = approach_limit(v, np.array([0.35, 0.05, 0.01]), BOX_LO, BOX_HI, 0.0, 0.1, 0.001, 0.01, 0.2)
    np.testing.assert_array_equal(out, v)


def test_a_peg_over_a_wall_is_as_far_as_its_face_is_high():
    """The tool is a vertical cylinder: over a box it is as far away as its lower face is high,
    although its tip (the cylinder's axis) is beside the box."""
    tip = np.array([-0.005, 0.05, 0.004])  # axis 5 mm beside the box, radius 12 mm: the face overlaps it
    dist, direction = tool_box_separation(tip, BOX_LO, BOX_HI, 0.012, 0.1)
    assert dist[0] == pytest.approx(0.004)
    np.testing.assert_allclose(direction[0], [0.0, 0.0, -1.0])


def test_in_a_tight_hole_every_motion_is_slow():
    walls_lo = np.array([[0.0135, -0.06, -0.05]])
    walls_hi = np.array([[0.06, 0.06, 0.0]])
    v = np.array([0.0, 0.0, -0.2])  # straight down the hole, along the wall
    out, _ = approach_limit(v, np.array([0.0, 0.0, -0.02]), walls_lo, walls_hi, 0.012, 0.1, 0.001, 0.01, 0.2,
                            sliding_gap=0.002, sliding_speed=0.04)
    assert np.linalg.norm(out) == pytest.approx(0.04)
    np.testing.assert_allclose(out / np.linalg.norm(out), [0.0, 0.0, -1.0])  # still straight down


def test_the_safety_yaml_obstacles_are_the_scene_geoms():
    """config/safety/sawyer.yaml's obstacle boxes are the axis-aligned boxes of the MJCF scene."""
    from morl_robot.envs.mo_env import MORobotEnv

    rules = load_rules("sawyer")
    assert rules.approach is not None
    env = MORobotEnv("sawyer_peg_in_hole")
    m, d = env.robot.model, env.robot.data
    for name, lo, hi in zip(rules.approach.names, rules.approach.lower, rules.approach.upper):
        gid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)
        assert gid >= 0, name
        centre, half = d.geom_xpos[gid], m.geom_size[gid]
        np.testing.assert_allclose(d.geom_xmat[gid].reshape(3, 3), np.eye(3), atol=1e-12)
        np.testing.assert_allclose(lo, centre - half, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(hi, centre + half, atol=1e-6, err_msg=name)


def test_the_monitor_reports_the_approach_limit_as_a_clamp():
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.safety.monitor import SafetyMonitor

    env = MORobotEnv("sawyer_peg_in_hole")
    env.reset(seed=0)
    state = env.state
    monitor = SafetyMonitor(load_rules("sawyer"), None, watchdogs=False, now=0.0, action_labels=("vx", "vy", "vz"))
    monitor.on_joint_state(env.robot.spec.joint_names, state.position, state.velocity, state.effort, 0.0, 0.0)
    monitor.on_wrench(state.wrench, 0.0, 0.0)
    assert monitor.reset(0.0)[0]
    far = monitor.on_command([0.0, 0.0, -0.2], ("vx", "vy", "vz"), 0.05)
    assert far.command.values[2] == pytest.approx(-0.2)  # 12 cm above the hole: full speed
    # the same command with the tip 2 mm above the fixture's wall
    monitor._ee = env.task._hole[:3] + np.array([0.03, 0.0, 0.002])
    near = monitor.on_command([0.0, 0.0, -0.2], ("vx", "vy", "vz"), 0.1)
    assert -near.command.values[2] <= 0.01 + 1e-9
    assert any(v.rule == "approach" and v.key == "fixture_px" for v in near.violations)


# --- the hostile case, end to end through the safety rules ---------------------------------------
def test_full_speed_into_the_fixture_peaks_below_the_collision_level():
    """A policy commanding the permitted -0.2 m/s straight down, through the robot's safety rules as
    evaluated and deployed: the physics-rate peak force stays below the 40 N collision level, every
    time (10 held-out starts; `morl-robot bench contact` measures 100)."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.safety.shield import SafetyShield

    env = MORobotEnv("sawyer_peg_in_hole")
    shield = SafetyShield(env)
    for seed in range(70_000, 70_010):
        env.reset(seed=seed)
        shield.begin(env.state)
        peak = 0.0
        for _ in range(100):
            action = shield.filter(np.array([0.0, 0.0, -1.0]), env.state.stamp)
            _, _, terminated, truncated, info = env.step(action)
            shield.observe(env.state)
            peak = max(peak, env.task.contact_force(info))
            if terminated or truncated:
                break
        assert peak < 40.0, (seed, peak)


def test_the_press_policy_through_the_cli(capsys):
    """`morl-robot evaluate press --task sawyer_peg_in_hole` (the README's hostile-case command) through
    the real parser: the force block says no episode reached 30 N."""
    import json

    from morl_robot.cli import build_parser

    args = build_parser().parse_args(["evaluate", "press", "--task", "sawyer_peg_in_hole", "--episodes", "2",
                                      "--seed", "70100", "--json", "--no-progress"])
    assert args.func(args) in (0, None)
    got = json.loads(capsys.readouterr().out)
    assert got["force"]["threshold"]["count"] == 0 and got["force"]["peak"]["max"] < 30.0
    assert got["force"]["peak"]["max"] > 5.0  # it did press on the fixture


@given(vel3, st.lists(st.lists(st.floats(-1, 1), min_size=3, max_size=3), min_size=1, max_size=6),
       st.lists(st.floats(0.001, 0.3), min_size=6, max_size=6))
@settings(max_examples=200)
def test_the_projection_is_feasible_and_nearest(v, raw_normals, raw_bounds):
    from morl_robot.safety.rules import project_halfspaces

    normals = np.array(raw_normals, dtype=np.float64)
    norms = np.linalg.norm(normals, axis=1)
    normals = normals[norms > 0.1] / norms[norms > 0.1, None]
    bounds = np.array(raw_bounds[:len(normals)])
    x = project_halfspaces(v, normals, bounds)
    assert np.all(normals @ x <= bounds + 1e-8)
    rng = np.random.default_rng(1)
    for candidate in rng.uniform(-0.5, 0.5, size=(300, 3)):
        if np.all(normals @ candidate <= bounds):
            assert np.linalg.norm(x - v) <= np.linalg.norm(candidate - v) + 1e-9


def test_bench_contact_through_the_cli(tmp_path, capsys):
    """`morl-robot bench contact` on a tiny budget: the rows print with finite figures and the
    results file and plot are written."""
    import json

    from morl_robot.cli import parse

    args = parse(["bench", "contact", "--episodes", "1", "--seed", "70200", "--no-progress",
                                      "--out", str(tmp_path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "scripted" in out and "press, no safety rules" in out
    data = json.loads((tmp_path / "results.json").read_text())
    assert [r["name"] for r in data["rows"]] == ["scripted", "press", "press, no safety rules"]
    assert all(np.isfinite(r["summary"]["force"]["peak"]["max"]) for r in data["rows"])
    assert (tmp_path / "peak_force.png").stat().st_size > 1000


def test_the_inner_layer_applies_the_approach_limit_on_the_newest_reading():
    """The robot's own loop (TaskRunner with the inner layer, as the robot node runs it) slows a
    full-speed twist near the fixture, on its own reading, even if the monitor did not."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.envs.task_runner import TaskRunner
    from morl_robot.safety.inner import InnerSafety

    env = MORobotEnv("sawyer_peg_in_hole")
    inner = InnerSafety.load("sawyer")
    runner = TaskRunner(env.robot, env, seed=70_300, inner=inner)
    runner.reset()
    labels = ("vx", "vy", "vz")
    far = inner.limit_approach(np.array([0.0, 0.0, -0.2]), labels, env.state.position)
    np.testing.assert_array_equal(far, [0.0, 0.0, -0.2])  # 12 cm above the hole: untouched
    peak = 0.0
    for _ in range(200):  # full speed down, the monitor left out: only the inner layer limits
        rec = runner.step(np.array([0.0, 0.0, -0.2]), labels)
        peak = max(peak, env.task.contact_force(rec.info) or 0.0)
        if rec.done:
            break
    assert inner.approach_limits > 0
    assert rec.state.ee_pose[2] < env.task._hole[2] + 0.003  # it did arrive, slowly
    assert 1.0 < peak < 30.0  # physics-rate peak (without the inner layer: ~500 N)


@pytest.mark.parametrize("argv", [
    ["evaluate", "scripted", "--task", "sawyer_peg_in_hole", "--seed", "120000"],
    ["evaluate", "press", "--task", "sawyer_peg_in_hole", "--seed", "120000", "--no-safety"],
    ["evaluate", "results/demo/seed0/policy.onnx", "--seed", "120000"],
], ids=["scripted", "press-no-safety", "policy"])
def test_the_contact_evaluations_run_through_the_real_cli(argv, capsys):
    """The evaluations docs/explanation/contact_control.md compares (the scripted controller, the
    hostile press without the safety monitor, the demo policy), through the CLI's own parser on a
    one-episode budget.  (The page's command lines themselves are parsed and run by
    tests/docs/test_doc_commands.py; no test reads README prose.)"""
    from morl_robot.cli import build_parser

    root = Path(__file__).resolve().parents[1]
    argv = [str(root / a) if a.endswith(".onnx") else a for a in argv] + ["--episodes", "1", "--no-progress"]
    args = build_parser().parse_args(argv)
    assert args.func(args) in (0, None)
    assert "sawyer_peg_in_hole" in capsys.readouterr().out
