"""The ``morl-robot`` command line: one module per subcommand under ``morl_robot.cli``.

Each subcommand module exposes ``register(subparsers)`` which adds its parser and sets
``func=<callable(args) -> int>``.  Errors this package raises on purpose (bad config, unknown
task, bad command) are printed as one clear line and exit with status 2.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

from morl_robot.errors import MorlRobotError

# Subcommand modules, in the order `morl-robot --help` lists them.
SUBCOMMANDS = ("tasks", "rollout", "train", "deploy", "safety_test", "release", "export", "inspect_policy", "evaluate",
               "bench", "experiment", "epic", "rm", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="morl-robot",
        description="Multi-objective RL on the Sawyer and the Shadow Hand: simulation, training, deployment.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"morl_robot.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"morl_robot.cli.{name}":
                continue  # subcommand not built yet
            raise
        module.register(sub)
    return parser


def _stop_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM / SIGHUP end a command the way Ctrl-C does (nodes stopped cleanly)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from morl_robot.evaluation.provenance import record_command

    record_command(argv)  # every results file written records the command run
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _stop_signal)
    try:
        return int(args.func(args) or 0)
    except MorlRobotError as exc:
        print(f"morl-robot {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"morl-robot {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
