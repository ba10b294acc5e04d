"""The SQLite store against the conformance suites of `sourcebook.testing`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook.stores import SQLiteStore, Store
from sourcebook.testing import StoreConformance


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def empty_store(self, tmp_path: Path) -> Iterator[Store]:
        store = SQLiteStore(tmp_path / "conformance.db")
        yield store
        store.close()
