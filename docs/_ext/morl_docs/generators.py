"""Registry of the generated reference blocks (name -> renderer returning Markdown)."""
from __future__ import annotations

from collections.abc import Callable

GENERATORS: dict[str, Callable[[], str]] = {}
