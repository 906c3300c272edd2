"""Shard 3 of the docs' command runs (see tests/docs/test_doc_commands.py: a file per shard so
that pytest-xdist's --dist loadfile spreads the runs over its workers)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.test_doc_commands import run_page, shard


@pytest.mark.parametrize("page", shard(3))
def test_doc_commands_run(page: str, tmp_path: Path, domain_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    run_page(page, tmp_path, domain_id, monkeypatch)
