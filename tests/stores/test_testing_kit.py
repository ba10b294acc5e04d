"""`sourcebook.testing` as a third party uses it: a back end Sourcebook has never heard of,
reached only through `register_store` and `open_store`, passes the suites of its roles."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook.stores import SQLiteStore, Store, open_store, register_store
from sourcebook.testing import ChatStoreSuite, ContextCacheSuite, DocumentStoreSuite

SCHEME = "kitstore"


class KitStore(SQLiteStore):
    """Stands in for a third party's back end: its own class, its own URL scheme."""


def open_kit_store(url: str) -> Store:
    return KitStore(url.removeprefix(f"{SCHEME}://"))


class TestAThirdPartyStore(DocumentStoreSuite, ChatStoreSuite, ContextCacheSuite):
    @pytest.fixture
    def empty_store(self, tmp_path: Path) -> Iterator[Store]:
        register_store(SCHEME, open_kit_store)
        store = open_store(f"{SCHEME}://{tmp_path / 'kit.db'}")
        assert type(store) is KitStore
        yield store
        store.close()
