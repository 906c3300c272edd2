"""``morl-robot bench NAME``: benchmarks that print their figures (never timed unit tests).

Each benchmark lives in ``morl_robot.bench.<name>`` and exposes ``add_arguments(parser)`` and
``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib

BENCHMARKS = {
    "env": "environment steps/s per task vs. raw mujoco.mj_step",
    "learner": "MO-MPO learner updates/s and share of time in torch kernels",
    "train": "env steps/s and learner updates/s of a training session: per-step graph vs vectorized actors",
    "graph": "env steps/s through the ROS graph (lockstep) vs. in-process; learner ingest rate",
    "safety": "safety trip latency (sensor stamp to stopped command) in-process and across processes",
    "serve": "policy inference latency (onnxruntime, torch, TorchScript) and through the policy server",
    "soak": "a deploy session under a randomised fault schedule: faults detected, time to detect, unsafe commands",
    "scale-invariance": "MO-MPO with one objective x20 through the whole learner: gradient vs exact temperatures",
    "preference-live": "an ε-conditioned policy's force preference changed live mid-episode: force traces vs controls",
    "contact": "insertion and peak contact force per policy on held-out seeds: scripted, hostile press, ONNX policies",
    "epic": "EPIC sample estimator run time for a K-objective vector reward at the paper's N_V x N_M",
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("bench", help="run a benchmark and print its figures")
    bench_sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    bench_sub.required = True
    for name, help_text in BENCHMARKS.items():
        try:
            module = importlib.import_module(f"morl_robot.bench.{name.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            if exc.name == f"morl_robot.bench.{name.replace('-', '_')}":
                continue
            raise
        p = bench_sub.add_parser(name, help=help_text)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
