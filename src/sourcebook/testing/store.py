"""`StoreConformance`: every role suite at once, for a back end that is a whole `Store`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sourcebook.apikeys import KeyStore
from sourcebook.stores import Store

from .chat import ChatStoreSuite, ContextCacheSuite
from .documents import DocumentStoreSuite
from .graph import GraphStoreSuite
from .keys import KeyStoreSuite
from .search import SearchStoreSuite
from .summaries import SummaryCacheSuite
from .tenants import TenancySuite
from .usage import UsageStoreSuite


class StoreConformance(
    DocumentStoreSuite,
    SearchStoreSuite,
    ChatStoreSuite,
    ContextCacheSuite,
    SummaryCacheSuite,
    UsageStoreSuite,
    GraphStoreSuite,
    KeyStoreSuite,
    TenancySuite,
):
    """The whole contract: subclass it and override `empty_store`; the key suite runs on the
    store's own key store (`api_keys()`, the KeyStoreProvider role)."""

    @pytest.fixture
    def key_store(self, empty_store: Store) -> Iterator[KeyStore]:
        keys = empty_store.api_keys()
        yield keys
        keys.close()

    def test_implements_the_protocol(self, store: Store) -> None:
        assert isinstance(store, Store)
