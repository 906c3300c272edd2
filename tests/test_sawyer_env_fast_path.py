"""The compliant Sawyer's control period in compiled code (``CartesianController.run_period``,
:mod:`morl_robot.robots.compiled_period`, issue 36) does the Python period's maths
(``run_period_reference``, itself bit-identical to the plain per-tick loop below):

* per period, from the same state, the same targets, physics state, admittance offset and force
  peak within 1e-9 (every host: the compiled sums are rounded like OpenBLAS's AVX2 kernels,
  elsewhere numpy's may differ in the last bits); random actions that also press into the block,
  free motion and contact, terminations; once with a stiffness (the admittance's other branch);
* compiled once per machine: a cold process compiles and caches the object code, a warm one loads
  it without numba;
* 800 seeded env steps bit-identical to the per-tick reference on hosts whose numpy rounds small
  dot products as the compiled code does (this machine and CI): observations, rewards,
  terminations, force peaks."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from morl_robot.envs.mo_env import MORobotEnv

STEPS = 800


def reference_advance(robot) -> None:
    """The per-tick loop as it was (MujocoRobot.advance before run_period): the F/T reading rotated
    and tared, one CartesianController.tick, the targets to the actuators, one mj_step; every tick
    through the admittance (in free motion too, over the speed limit or not)."""
    m, d, cart = robot.model, robot.data, robot._cartesian
    sensordata, qpos = d.sensordata, d.qpos
    cart._free_qdot = None  # no free-motion shortcut (begin_period's): the admittance's own step at every tick
    for _ in range(robot.substeps):
        force = cart.contact_force(cart.sensor_rotation(d), sensordata[robot._force])
        robot._target = cart.tick(robot._target, qpos[robot._qadr], force, m.opt.timestep)
        d.ctrl[robot._act] = robot._target
        mujoco.mj_step(m, d)


def actions(rng: np.random.Generator, i: int, d: int) -> np.ndarray:
    """Random actions, and stretches that drive the peg down (contact: the admittance's own path)."""
    return rng.uniform(-1, 1, d) if (i // 40) % 2 == 0 else np.clip(np.r_[rng.normal(0, 0.2, d - 1), -1.0], -1, 1)


def rollout(advance=None, steps: int = STEPS, env: MORobotEnv | None = None) -> dict[str, np.ndarray]:
    """Seeded env steps; ``advance(robot)`` replaces the robot's period when given."""
    env = env or MORobotEnv("sawyer_peg_in_hole")
    calls = [0]
    if advance is not None:
        def hooked() -> None:
            calls[0] += 1
            advance(env.robot)
        env.robot.advance = hooked
    rng = np.random.default_rng(7)
    obs, _ = env.reset(seed=3)
    out: dict[str, list] = {"obs": [obs], "reward": [], "done": [], "peak": []}
    d = env.action_space.shape[0]
    for i in range(steps):
        obs, reward, terminated, truncated, info = env.step(actions(rng, i, d))
        out["obs"].append(obs)
        out["reward"].append(reward)
        out["done"].append((terminated, truncated))
        out["peak"].append(info.get("force_peak", np.nan))
        if terminated or truncated:
            obs, _ = env.reset()
            out["obs"].append(obs)
    env.close()
    assert calls[0] >= steps or advance is None  # the replacement did run
    return {k: np.asarray(v) for k, v in out.items()}


def python_period(robot) -> None:
    robot._target = robot._cartesian.run_period_reference(robot.model, robot.data, robot._target, robot._act,
                                                          robot._force, robot.substeps)


def host_rounds_like_the_compiled_code() -> bool:
    """numpy's 3-vector dot and (n, 3) @ (3,) round as the compiled period's fused sums (OpenBLAS's
    AVX2 kernels): then the compiled period is bit-identical to the Python one."""
    from morl_robot.robots.compiled_period_kernel import probe_dot3, probe_rows3

    rng = np.random.default_rng(0)
    a, b, m = rng.normal(size=(200, 3)), rng.normal(size=(200, 3)), rng.normal(size=(200, 7, 3))
    dots = np.array([a[i] @ b[i] for i in range(200)])
    rows = np.stack([m[i] @ a[i] for i in range(200)])
    return np.array_equal(dots, probe_dot3(a, b)) and np.array_equal(rows.ravel(), probe_rows3(m, a))


def lockstep(env: MORobotEnv, steps: int) -> tuple[int, int]:
    """Every period twice from the same state, compiled and Python; compare; go on from the compiled
    one.  Returns (periods, periods with contact past the dead band)."""
    robot = env.robot
    m, d, cart = robot.model, robot.data, robot._cartesian
    adm = cart.admittance
    twin = mujoco.MjData(m)
    count = [0, 0]

    def both(robot) -> None:
        mujoco.mj_copyData(twin, m, d)
        target, offset, peak = robot._target.copy(), adm.offset.copy(), cart.period_peak
        out = cart.run_period(m, d, target, robot._act, robot._force, robot.substeps)
        got = (out, adm.offset.copy(), cart.period_peak, d.qpos.copy(), d.qvel.copy(), d.ctrl.copy(), d.sensordata.copy())
        adm.offset, cart.period_peak = offset.copy(), peak
        ref_out = cart.run_period_reference(m, twin, target, robot._act, robot._force, robot.substeps)
        want = (ref_out, adm.offset.copy(), cart.period_peak, twin.qpos, twin.qvel, twin.ctrl, twin.sensordata)
        for name, g, w in zip(("targets", "offset", "peak", "qpos", "qvel", "ctrl", "sensordata"), got, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=f"period {count[0]}: {name}")
        assert np.array_equal(target, robot._target)  # the input targets are not written
        robot._target, adm.offset, cart.period_peak = out, got[1], got[2]
        count[0] += 1
        count[1] += got[2] > adm.config.force_deadband

    rollout(both, steps, env)
    return count[0], count[1]


def test_compiled_period_matches_the_python_period_in_lockstep():
    periods, contact = lockstep(MORobotEnv("sawyer_peg_in_hole"), 400)
    assert periods >= 400 and contact >= 20, (periods, contact)  # contact past the dead band, and free motion


def test_compiled_period_matches_the_python_period_with_stiffness():
    env = MORobotEnv("sawyer_peg_in_hole")
    adm = env.robot._cartesian.admittance
    adm.config = dataclasses.replace(adm.config, stiffness=400.0)  # no free-motion shortcut: the law every tick
    periods, contact = lockstep(env, 200)
    assert periods >= 200 and contact >= 5, (periods, contact)


def test_python_period_is_bit_identical_to_the_per_tick_reference():
    period, ref = rollout(python_period), rollout(reference_advance)
    assert np.nanmax(ref["peak"]) > 2.0  # the reference run saw contact past the dead band (the admittance acts)
    for key in ref:
        assert period[key].shape == ref[key].shape, key
        assert np.array_equal(period[key], ref[key], equal_nan=True), key


def test_compiled_period_is_bit_identical_to_the_per_tick_reference():
    if not host_rounds_like_the_compiled_code():
        pytest.skip("this host's numpy rounds 3-vector dot products unlike the compiled code (not OpenBLAS AVX2): "
                    "the lockstep tests hold the maths")
    fast, ref = rollout(), rollout(reference_advance)
    assert np.nanmax(ref["peak"]) > 2.0
    for key in ref:
        assert fast[key].shape == ref[key].shape, key
        assert np.array_equal(fast[key], ref[key], equal_nan=True), key


def test_the_kernel_and_its_loader_agree_on_the_layout():
    from morl_robot.robots import compiled_period, compiled_period_kernel

    assert compiled_period.IX_HEADER == compiled_period_kernel.IX_HEADER
    assert compiled_period.F_HEADER == compiled_period_kernel.F_HEADER
    assert compiled_period.ENTRY == compiled_period_kernel.ENTRY


STEP_ONCE = ("import sys, numpy as np; from morl_robot.envs.mo_env import MORobotEnv; env = MORobotEnv('sawyer_peg_in_hole'); "
             "env.reset(seed=0); env.step(np.zeros(env.action_space.shape)); print('numba' in sys.modules)")


def test_compiled_once_per_machine_then_loaded_without_numba(tmp_path):
    env = {**os.environ, "MORL_ROBOT_CACHE_DIR": str(tmp_path)}
    cold = subprocess.run([sys.executable, "-c", STEP_ONCE], check=False, env=env, capture_output=True, text=True, timeout=900)
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.split() == ["True"]  # compiled here
    assert len(list((tmp_path / "compiled").glob("period-*.o"))) == 1
    warm = subprocess.run([sys.executable, "-c", STEP_ONCE], check=False, env=env, capture_output=True, text=True, timeout=900)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split() == ["False"]  # loaded: numba not imported
