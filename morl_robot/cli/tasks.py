"""``morl-robot tasks``: list every task with its robot, objectives, sizes and control rate;
``--recipes``: each task's learner profiles, what each is for and its committed result
(:mod:`morl_robot.tasks.recipes`)."""
from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="list the tasks")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--recipes", action="store_true",
                   help="list each task's learner profiles (the recipe `train --task T` trains first), what each "
                        "is for, how it is trained and its committed result (docs/howto/choose_learner.md)")
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


def print_recipes(as_json: bool) -> None:
    """Each task's recipes (:func:`morl_robot.tasks.recipes.recipes`), the default first."""
    import dataclasses

    from morl_robot.tasks.recipes import recipes

    rows = recipes()
    if as_json:
        print(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    task = None
    for r in rows:
        if r.task != task:
            task = r.task
            print(f"{task}:")
        what = f"{r.learner} + session {r.session}" if r.session else r.learner
        print(f"  {r.goal + (' (default)' if r.default else ''):<26} {what}")
        if r.about:
            print(f"      for:      {r.about}")
        print(f"      train:    {r.command}")
        result = r.result or "none committed"
        print(f"      result:   {result}{f' ({r.measured})' if r.measured else ''}")


def run(args: argparse.Namespace) -> int:
    if args.recipes:
        print_recipes(args.json)
        return 0
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
