"""Sphinx extension: reference pages generated from the code at build time.

A page asks for a generated block with a fence of its own::

    ```{morl-reference} cli
    ```

At ``source-read`` the fence is replaced by the Markdown that ``GENERATORS[name]()`` renders
from the code (morl_robot's parser, dataclasses, constants), so the reference cannot drift.
Pages holding such a fence are re-read on every build.  An unknown name is a build error.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^```\{morl-reference\}[ \t]+(?P<name>[\w-]+)[ \t]*\n```[ \t]*$", re.MULTILINE)


def _generators() -> dict[str, Callable[[], str]]:
    """Name -> renderer (imported lazily: the renderers import morl_robot)."""
    from . import generators

    return generators.GENERATORS


def render(name: str) -> str:
    """The Markdown of generated block ``name`` (KeyError names the known blocks)."""
    gens = _generators()
    if name not in gens:
        raise KeyError(f"unknown morl-reference block {name!r}; known: {', '.join(sorted(gens))}")
    return gens[name]().rstrip() + "\n"


def expand(text: str) -> str:
    """``text`` with every morl-reference fence replaced by its generated Markdown."""
    return FENCE.sub(lambda m: render(m.group("name")), text)


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    if FENCE.search(source[0]):
        source[0] = expand(source[0])


def _always_outdated(app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Pages with generated blocks are re-read each build (the code they render may have changed)."""
    out = []
    for docname in env.found_docs:
        path = Path(env.doc2path(docname))
        try:
            if FENCE.search(path.read_text(encoding="utf-8")):
                out.append(docname)
        except OSError:
            continue
    return out


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _always_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
