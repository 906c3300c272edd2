"""Sphinx configuration of the morl_robot documentation (MyST Markdown).

Build: ``make docs`` (html into docs/_build/html).  The reference pages are generated from the
code at build time by the ``morl_docs`` extension in docs/_ext (see docs/_ext/morl_docs).
Warnings are errors in ``tests/docs/test_docs_build.py``.  rosdoc2 (``rosdoc2.yaml``) runs this
file from its wrapping conf.py in a copy of docs/.
"""
from __future__ import annotations

import os
import sys

# The folder of this file (rosdoc2 runs it from a copy of docs/ beside its own conf.py, so this
# is that copy, _ext included); the package root above it, for a source checkout.
_here = os.path.dirname(os.path.abspath(globals().get("__file__") or os.path.join(os.getcwd(), "conf.py")))
sys.path.insert(0, os.path.join(_here, "_ext"))
if os.path.isdir(os.path.join(os.path.dirname(_here), "morl_robot")):
    sys.path.insert(1, os.path.dirname(_here))

project = "morl_robot"
author = "morl_robot maintainers"
copyright = "morl_robot maintainers, Apache-2.0"
try:  # the installed package's version; a bare checkout still builds
    from importlib.metadata import version as _version

    release = _version("morl_robot")
except Exception:  # noqa: BLE001 - any failure: no version shown
    release = ""

extensions = ["myst_parser", "morl_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_theme = "alabaster"

myst_enable_extensions = ["colon_fence", "deflist"]
# `[text](page.md#a-heading)` links resolve to headings down to level 4.
myst_heading_anchors = 4
