"""``morl-robot bench env``: per task, environment steps/s with random actions versus the same
model's raw ``mujoco.mj_step`` at the same substeps, and their ratio (goal: ≤ 1.3×).

Both sides run the same scene for the same number of control periods; the raw side only calls
``mj_step(model, data, nstep=substeps)`` with constant controls.  Repeats are interleaved and the
median is reported, because the machines are shared and noisy.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import mujoco
import numpy as np


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, default=2000, help="control steps per measurement")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats (median reported)")
    p.add_argument("--task", action="append", help="only these tasks (repeatable)")
    p.add_argument("--json", action="store_true")


def _env_rate(env, steps: int, rng: np.random.Generator) -> float:
    env.reset(seed=0)
    d = env.action_space.shape[0]
    actions = rng.uniform(-1, 1, size=(steps, d))
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[i])
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def _raw_rate(model: mujoco.MjModel, substeps: int, steps: int) -> float:
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(model, data, nstep=substeps)
    return steps / (time.perf_counter() - start)


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
            env_rates.append(_env_rate(env, args.steps, rng))
            raw_rates.append(_raw_rate(robot.model, robot.substeps, args.steps))
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
