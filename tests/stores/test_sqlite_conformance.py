"""The SQLite store against the conformance suites of `sourcebook.testing`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook.apikeys import KeyStore
from sourcebook.stores import SQLiteStore, Store
from sourcebook.stores.sqlite_keys import SQLiteKeyStore
from sourcebook.testing import StoreConformance


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def empty_store(self, tmp_path: Path) -> Iterator[Store]:
        store = SQLiteStore(tmp_path / "conformance.db")
        yield store
        store.close()

    @pytest.fixture
    def key_store(self, tmp_path: Path) -> Iterator[KeyStore]:
        keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
        yield keys
        keys.close()
