"""``morl-robot bench env``: per task, environment steps/s with random actions versus the same
model's raw ``mujoco.mj_step`` at the same substeps, and their ratio (goal: ≤ 1.3×).

Both sides integrate the same physics: the env run records the actuator controls it produced
each control period and the raw side replays them from the same start state with nothing but
``data.ctrl[:] = u; mj_step(model, data, nstep=substeps)``, so the ratio is the wrapper's cost
(task, resolved-rate control, state reading, observation, reward) and not a difference in
contacts; episode resets are repeated on the raw side too (keyframe + the same settling
steps).  Repeats are interleaved and the median is reported (the machines are shared and noisy).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import mujoco
import numpy as np

from morl_robot.cli.options import add_set


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, default=2000, help="control steps per measurement")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats (median reported)")
    p.add_argument("--task", action="append", help="only these tasks (repeatable) (default: every task)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    add_set(p, ("task", "robot"))


def _env_rate(env, steps: int, rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray, list[int]]:
    """Env steps/s with random actions; also the start state, the per-period controls it used
    and the steps after which it reset (the raw side repeats the resets' settling physics)."""
    env.reset(seed=0)
    data = env.robot.data
    start_state = np.concatenate([data.qpos, data.qvel])
    d = env.action_space.shape[0]
    actions = rng.uniform(-1, 1, size=(steps, d))
    ctrls = np.empty((steps, env.robot.model.nu))
    resets = []
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[i])
        ctrls[i] = data.ctrl
        if terminated or truncated:
            env.reset()
            resets.append(i)
    rate = steps / (time.perf_counter() - start)
    return rate, start_state, ctrls, resets


def _raw_rate(model: mujoco.MjModel, substeps: int, settle: int, start_state: np.ndarray, ctrls: np.ndarray, resets: list[int]) -> float:
    data = mujoco.MjData(model)
    data.qpos[:] = start_state[: model.nq]
    data.qvel[:] = start_state[model.nq :]
    reset_after = set(resets)
    start = time.perf_counter()
    for i, u in enumerate(ctrls):
        data.ctrl[:] = u
        mujoco.mj_step(model, data, nstep=substeps)
        if i in reset_after:  # the same physics an env reset runs: keyframe, then settling
            mujoco.mj_resetDataKeyframe(model, data, 0)
            mujoco.mj_forward(model, data)
            if settle:
                mujoco.mj_step(model, data, nstep=settle)
    return len(ctrls) / (time.perf_counter() - start)


def run(args: argparse.Namespace) -> int:
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.tasks.registry import task_names

    rows = []
    for name in args.task or task_names():
        env = MORobotEnv(name)
        robot = env.robot
        rng = np.random.default_rng(0)
        env_rates, raw_rates = [], []
        _env_rate(env, min(200, args.steps), rng)  # warm-up
        for _ in range(args.repeats):
            rate, start_state, ctrls, resets = _env_rate(env, args.steps, rng)
            env_rates.append(rate)
            settle = round(robot.settle_time / robot.model.opt.timestep)
            raw_rates.append(_raw_rate(robot.model, robot.substeps, settle, start_state, ctrls, resets))
        env_med, raw_med = statistics.median(env_rates), statistics.median(raw_rates)
        rows.append(
            {
                "task": name,
                "substeps": robot.substeps,
                "timestep_s": robot.model.opt.timestep,
                "env_steps_per_s": round(env_med, 1),
                "raw_mj_steps_per_s": round(raw_med * robot.substeps, 1),
                "raw_control_periods_per_s": round(raw_med, 1),
                "ratio_raw_over_env": round(raw_med / env_med, 3),
            }
        )
        env.close()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'task':<20} {'substeps':>8} {'env steps/s':>12} {'raw periods/s':>14} {'raw mj_step/s':>14} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['task']:<20} {r['substeps']:>8} {r['env_steps_per_s']:>12.0f} {r['raw_control_periods_per_s']:>14.0f} "
            f"{r['raw_mj_steps_per_s']:>14.0f} {r['ratio_raw_over_env']:>6.2f}"
        )
    print("ratio = raw physics rate / env rate at the same substeps (goal <= 1.3); medians of interleaved repeats")
    return 0
