"""``morl-robot rollout [random|zero] --task NAME --steps N [--seed S] [--set task.KEY=VALUE]``: run a task in
simulation and print one JSON object (task, steps, episodes, returns by objective,
terminations by reason, steps_per_second)."""
from __future__ import annotations

import argparse
import json

from morl_robot.cli.options import add_policy, add_set, deprecated
from morl_robot.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rollout", help="run a task in simulation with a fixed policy, print a JSON summary")
    add_policy(p, "random | zero: the fixed policy that acts", default="random")
    p.add_argument("--task", default=None,
                   help="task name (see `morl-robot tasks`) (default: the task of --task-config, a YAML naming its class)")
    p.add_argument("--task-config", default=None, metavar="NAME|PATH",
                   help="task YAML to use instead of config/tasks/<task>.yaml (default: the task's own)")
    p.add_argument("--steps", type=int, default=1000, help="environment steps (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode's reset (default 0)")
    p.add_argument("--model", default="builtin", choices=["builtin", "menagerie"], help="robot model source")
    add_set(p, ("task", "robot"))
    deprecated(p, "--config", "--task-config")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.envs.rollout import rollout

    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    from morl_robot.tasks.registry import resolve_task_name

    task = args.task or resolve_task_name(None, args.task_config)  # a name given: load_task checks the YAML against it
    env = MORobotEnv(task, config_file=args.task_config, model_source=args.model)
    try:
        summary = rollout(env, args.steps, seed=args.seed, policy=args.policy)
    finally:
        env.close()
    print(json.dumps(summary.to_dict()))
    return 0
