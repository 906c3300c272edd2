"""``morl-robot bench NAME``: benchmarks that print their figures (never timed unit tests).

Each benchmark lives in ``morl_robot.bench.<name>`` and exposes ``add_arguments(parser)`` and
``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
from typing import Any

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
    "record": "steps/s of a lockstep training session with and without --record; recorder drops and MB/s",
    "learning-speed": "env steps/s of the in-process training loop: MO-MPO next to CAPQL, same env and steps",
}


class LazyBenchParser(argparse.ArgumentParser):
    """A benchmark's parser whose options are added (its module, often torch, imported) on first use:
    ``morl-robot`` itself does not pay for importing every benchmark (see :func:`register`)."""

    def __init__(self, *args: Any, module: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bench_module = module

    def load(self) -> None:
        if self._bench_module:
            name, self._bench_module = self._bench_module, ""
            _add(self, importlib.import_module(name))
            from morl_robot.cli.options import group_options

            group_options(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.load()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.load()
        return super().format_help()

    def format_usage(self) -> str:
        self.load()
        return super().format_usage()


def _add(parser: argparse.ArgumentParser, module: Any) -> None:
    module.add_arguments(parser)
    parser.set_defaults(func=module.run)


def register(sub: argparse._SubParsersAction) -> None:
    """The benchmarks' parsers; ``sub.lazy`` (``build_parser(lazy=True)``, the console script): each
    benchmark's module is imported only when its parser is used."""
    parser = sub.add_parser("bench", help="run a benchmark and print its figures")
    lazy = bool(getattr(sub, "lazy", False))
    bench_sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK",
                                      parser_class=LazyBenchParser if lazy else argparse.ArgumentParser)
    bench_sub.required = True
    for name, help_text in BENCHMARKS.items():
        module_name = f"morl_robot.bench.{name.replace('-', '_')}"
        if lazy:
            if importlib.util.find_spec(module_name) is not None:
                bench_sub.add_parser(name, help=help_text, module=module_name)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        _add(bench_sub.add_parser(name, help=help_text), module)
