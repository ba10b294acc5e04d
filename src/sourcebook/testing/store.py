"""`StoreConformance`: every role suite at once, for a back end that is a whole `Store`."""

from __future__ import annotations

from sourcebook.stores import Store

from .chat import ChatStoreSuite, ContextCacheSuite
from .documents import DocumentStoreSuite
from .graph import GraphStoreSuite
from .keys import KeyStoreSuite
from .search import SearchStoreSuite
from .tenants import TenancySuite


class StoreConformance(
    DocumentStoreSuite,
    SearchStoreSuite,
    ChatStoreSuite,
    ContextCacheSuite,
    GraphStoreSuite,
    KeyStoreSuite,
    TenancySuite,
):
    """The whole contract: subclass it and override both `empty_store` and `key_store`."""

    def test_implements_the_protocol(self, store: Store) -> None:
        assert isinstance(store, Store)
