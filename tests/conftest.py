"""Every test gets its own empty table cache, never the user's."""

from __future__ import annotations

import pytest

from solver.storage import CACHE_ENV


@pytest.fixture(autouse=True)
def private_table_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "tables"))
    return tmp_path / "tables"
