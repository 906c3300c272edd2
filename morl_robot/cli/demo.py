"""``morl-robot demo``: the main job on the embedded defaults — for now a short rollout of every
task in simulation with a random policy, printing each summary."""
from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the embedded default job (a rollout of every task)")
    p.add_argument("--steps", type=int, default=400, help="steps per task (default 400)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.envs.rollout import rollout
    from morl_robot.tasks.registry import task_names

    for name in task_names():
        env = MORobotEnv(name)
        try:
            summary = rollout(env, args.steps, seed=args.seed, policy="random", progress=True)
        finally:
            env.close()
        print(json.dumps(summary.to_dict()))
    return 0
