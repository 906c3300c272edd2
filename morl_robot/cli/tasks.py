"""``morl-robot tasks``: list every task with its robot, objectives, sizes and control rate."""
from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="list the tasks")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def describe_tasks() -> list[dict]:
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.tasks.registry import task_names

    rows = []
    for name in task_names():
        env = MORobotEnv(name)
        rows.append(
            {
                "task": name,
                "robot": env.task.robot_name,
                "objectives": list(env.objective_names),
                "action_size": int(env.action_space.shape[0]),
                "observation_size": int(env.observation_space.shape[0]),
                "control_rate_hz": env.task.control_rate,
                "control_mode": env.task.control_mode.value,
                "episode_s": env.task.config.episode_duration,
            }
        )
        env.close()
    return rows


def run(args: argparse.Namespace) -> int:
    rows = describe_tasks()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = f"{'task':<20} {'robot':<12} {'objectives':<22} {'action':>6} {'obs':>5} {'rate':>7} {'mode':<19} {'episode':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['task']:<20} {r['robot']:<12} {','.join(r['objectives']):<22} {r['action_size']:>6} "
            f"{r['observation_size']:>5} {r['control_rate_hz']:>5.0f}Hz {r['control_mode']:<19} {r['episode_s']:>6.1f}s"
        )
    return 0
