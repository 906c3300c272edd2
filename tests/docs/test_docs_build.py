"""The documentation builds with warnings as errors: broken relative links, pages missing from a
toctree, unknown cross-references, bad generated reference blocks (docs/_ext/morl_docs).

One ``sphinx-build -W --keep-going -n`` of docs/ into a temporary folder (``make docs`` is the same
build into docs/_build/html)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_docs_build_without_warnings(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-E", "-b", "html",
           "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    proc = subprocess.run(cmd, check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (f"docs build failed (rc {proc.returncode}); fix the pages or links named below:\n"
                                  f"{proc.stderr[-6000:]}")
    for page in ("index", "reference/cli", "reference/configs", "reference/topics", "reference/policy_contract",
                 "reference/run_directory", "reference/exit_codes", "reference/tasks"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page


def test_generated_reference_covers_the_code() -> None:
    """Every subcommand, task, topic, node, session key and command with its own exit codes appears in
    the generated reference."""
    import argparse

    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from morl_docs import render
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    from morl_robot.cli import build_parser
    from morl_robot.nodes import wire
    from morl_robot.tasks.registry import task_names

    cli = render("cli")

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    if child.prog.split()[-1] == name:
                        assert f"`{' '.join(path + [name])}`" in cli, path + [name]
                        walk(child, path + [name])

    walk(build_parser(), ["morl-robot"])
    tasks = render("tasks")
    for name in task_names():
        assert f"## `{name}`" in tasks
    topics = render("topics")
    for topic in wire.TOPICS:
        assert f"`{topic.name}`" in topics
    from morl_robot.node_settings import NODE_SETTINGS
    from morl_robot.session.config import SessionConfig

    for node in NODE_SETTINGS:
        assert f"### `{node}`" in topics
    configs = render("configs")
    for field in dataclasses.fields(SessionConfig):
        assert f"| `{field.name}` |" in configs, field.name
    from morl_robot.cli.exit_codes import EXIT_CODES

    codes = render("exit_codes")
    for command in EXIT_CODES:
        assert command == "*" or f"`morl-robot {command}`" in codes, command
