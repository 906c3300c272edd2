"""README.md stays an entry point: at most 12 KB, its picture is the project's own, and every
relative link in it resolves (the README is not part of the Sphinx build that checks the docs' links)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_readme_is_at_most_12_kb() -> None:
    size = README.stat().st_size
    assert size <= 12 * 1024, f"README.md is {size} bytes: move detail into docs/ (limit 12 KB)"


def test_readme_links_resolve() -> None:
    broken = []
    for target in LINK.findall(README.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the README itself
        path = target.split("#", 1)[0]
        if not (ROOT / path).exists():
            broken.append(target)
    assert not broken, f"README.md links to files that do not exist: {broken}"


def test_readme_shows_the_picture_made_by_docs_make_figures() -> None:
    text = README.read_text(encoding="utf-8")
    assert "](docs/_static/peg_in_hole.gif)" in text
    assert (ROOT / "docs" / "make_figures.py").is_file()
