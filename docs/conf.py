"""Sphinx configuration of the morl_robot documentation (MyST Markdown).

Build: ``make docs`` (html into docs/_build/html).  The reference pages are generated from the
code at build time by the ``morl_docs`` extension in docs/_ext (see docs/_ext/morl_docs).
Warnings are errors in ``tests/docs/test_docs_build.py``.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, ROOT)  # morl_robot importable from a source checkout (rosdoc2, a bare sphinx-build)

project = "morl_robot"
author = "morl_robot maintainers"
copyright = "morl_robot maintainers"
try:  # the installed package's version; a bare checkout still builds
    from importlib.metadata import version as _version

    release = _version("morl_robot")
except Exception:  # noqa: BLE001 - any failure: no version shown
    release = ""

extensions = ["myst_parser", "morl_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "README.md"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_theme = "alabaster"

myst_enable_extensions = ["colon_fence", "deflist"]
# `[text](page.md#a-heading)` links resolve to headings down to level 4.
myst_heading_anchors = 4
