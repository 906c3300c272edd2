"""The compliant Sawyer's physics-rate loop (``CartesianController.run_period``, issue 36's `bench env`
speed-up) is bit-identical to the plain per-tick loop it replaced: 800 seeded env steps (random
actions that also press into the block, free motion and contact) give the same observations,
rewards, terminations and force peaks as with the reference loop below, on this machine."""
from __future__ import annotations

import mujoco
import numpy as np

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


def rollout(reference: bool) -> dict[str, np.ndarray]:
    env = MORobotEnv("sawyer_peg_in_hole")
    calls = [0]
    if reference:
        def advance() -> None:
            calls[0] += 1
            reference_advance(env.robot)
        env.robot.advance = advance
    rng = np.random.default_rng(7)
    obs, _ = env.reset(seed=3)
    out: dict[str, list] = {"obs": [obs], "reward": [], "done": [], "peak": []}
    d = env.action_space.shape[0]
    for i in range(STEPS):
        # random actions, and stretches that drive the peg down (contact: the admittance's own path)
        a = rng.uniform(-1, 1, d) if (i // 40) % 2 == 0 else np.clip(np.r_[rng.normal(0, 0.2, d - 1), -1.0], -1, 1)
        obs, reward, terminated, truncated, info = env.step(a)
        out["obs"].append(obs)
        out["reward"].append(reward)
        out["done"].append((terminated, truncated))
        out["peak"].append(info.get("force_peak", np.nan))
        if terminated or truncated:
            obs, _ = env.reset()
            out["obs"].append(obs)
    env.close()
    assert calls[0] >= STEPS or not reference  # the reference loop did run
    return {k: np.asarray(v) for k, v in out.items()}


def test_fast_compliant_loop_is_bit_identical_to_the_per_tick_reference():
    fast, ref = rollout(False), rollout(True)
    assert np.nanmax(ref["peak"]) > 2.0  # the reference run saw contact past the dead band (the admittance acts)
    for key in ref:
        assert fast[key].shape == ref[key].shape, key
        assert np.array_equal(fast[key], ref[key], equal_nan=True), key
