"""``morl-robot demo``: the main job on the embedded defaults (what ``make demo`` runs).

A short training session through the ROS graph on the Sawyer peg-in-hole task (robot node in
lockstep, safety monitor, an exploring policy server, the MO-MPO learner node), then the trained
policy served through robot node + safety monitor + policy server in simulation and compared with
its in-process evaluation on the same seeds (the sim-to-sim check).  Everything lands in ``--out``.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the embedded default job: a short training session, then a sim-to-sim deploy check")
    p.add_argument("--task", default="sawyer_peg_in_hole")
    p.add_argument("--steps", type=int, default=3000, help="training env steps (default 3000)")
    p.add_argument("--episodes", type=int, default=2, help="deploy check episodes (default 2)")
    p.add_argument("--out", default="runs/demo")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from morl_robot.cli import deploy, train

    out = Path(args.out)
    train_args = argparse.Namespace(
        task=args.task, backend="sim", actors=1, steps=args.steps, config="train", learner_config=None,
        out=str(out), seed=args.seed, namespace="demo", domain_id=None, role="all", first_actor=0,
        discovery="localhost", no_progress=False)
    rc = train.run(train_args)
    if rc != 0:
        return rc
    deploy_args = argparse.Namespace(
        policy=str(out / "policy.onnx"), robot=None, backend="sim", episodes=args.episodes, timing=None,
        compare=str(out), seed=args.seed, duration=0.0, config="deploy", out=str(out / "deploy"), domain_id=None)
    return deploy.run(deploy_args)
