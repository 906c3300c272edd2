"""Registry of the generated reference blocks (name -> renderer returning Markdown)."""
from __future__ import annotations

from collections.abc import Callable

from . import cli, configs, contract, exit_codes, run_directory, tasks, topics

GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli.render,
    "configs": configs.render,
    "topics": topics.render,
    "policy_contract": contract.render,
    "run_directory": run_directory.render,
    "exit_codes": exit_codes.render,
    "tasks": tasks.render,
}
