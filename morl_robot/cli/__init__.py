"""The ``morl-robot`` command line: one module per subcommand under ``morl_robot.cli``.

Each subcommand module exposes ``register(subparsers)`` which adds its parser and sets
``func=<callable(args) -> int>``; shared option helpers (the one vocabulary: ``--learner``,
``--session``, ``--task-config``, positional ``POLICY``, ``--processes``, ``--epsilon``, ``--set``)
live in :mod:`morl_robot.cli.options`.  Errors this package raises on purpose (bad config, unknown
task, bad command) are printed as one clear line and exit with status 2 (every code:
:mod:`morl_robot.cli.exit_codes`).
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading

from morl_robot.errors import MorlRobotError

# Subcommand modules, in the order `morl-robot --help` lists them.
SUBCOMMANDS = ("tasks", "rollout", "train", "deploy", "safety_test", "replay", "release", "export", "inspect_policy", "evaluate",
               "bench", "experiment", "epic", "prism", "rm", "demo", "generalization")


def build_parser(lazy: bool = False) -> argparse.ArgumentParser:
    """The whole ``morl-robot`` parser.  ``lazy`` (the console script): a benchmark's options are
    added when its parser is used (``morl-robot`` and every other command start without importing
    torch); the default builds every parser fully (docs, tests)."""
    from morl_robot.cli.options import HelpFormatter, finish_parser

    parser = argparse.ArgumentParser(
        prog="morl-robot",
        description="Multi-objective RL on the Sawyer and the Shadow Hand: simulation, training, deployment.",
        epilog="`morl-robot COMMAND --help` shows a command's options. Without a command (and `bench`, "
               "`experiment`, `rm` without theirs) the help is printed and the exit status is 0, as with `ros2`; "
               "exit codes: docs/reference/exit_codes.md.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the package version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.lazy = lazy  # type: ignore[attr-defined]  # read by cli/bench.py
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"morl_robot.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"morl_robot.cli.{name}":
                continue  # subcommand not built yet
            raise
        module.register(sub)
    finish_parser(parser)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("morl_robot")
    except PackageNotFoundError:
        return "unknown (not installed)"


def parse(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """``argv`` through the real parser, late defaults filled (a positional POLICY that may also come
    from the deprecated ``--policy``); a missing required one is a :class:`UsageError`."""
    from morl_robot.cli.options import apply_late_defaults

    args = (parser or build_parser()).parse_args(argv)
    apply_late_defaults(args)
    return args


def _stop_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM / SIGHUP end a command the way Ctrl-C does (nodes stopped cleanly)


def main(argv: list[str] | None = None) -> int:
    from morl_robot.cli.options import apply_late_defaults, set_overrides

    parser = build_parser(lazy=True)
    args = parser.parse_args(argv)
    command = " ".join(filter(None, ["morl-robot", args.command]))
    from morl_robot.evaluation.provenance import record_command

    record_command(argv)  # every results file written records the command run
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _stop_signal)
    try:
        apply_late_defaults(args)
        with set_overrides(args):
            return int(args.func(args) or 0)
    except MorlRobotError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
