"""The conformance suites a store back end must pass: Sourcebook's own and third parties'.

Each suite is a class of pytest tests for one role of the store; a back end's test module
subclasses it and provides a fixture that yields a fresh, empty store of that back end, the
way Haystack's `haystack.testing.document_store` works. The suites never name a back end.

    # tests/test_my_store.py of a package that adds a back end
    import pytest
    from sourcebook.testing import StoreConformance

    from my_package import MyStore

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def empty_store(self, tmp_path):
            store = MyStore(tmp_path / "kb")
            yield store
            store.close()

`StoreConformance` runs the API-key suite on the store's own key store (`api_keys()`); a
key store that stands alone subclasses `KeyStoreSuite` and overrides its `key_store` fixture.

A back end that fills only some roles subclasses only their suites:

- `DocumentStoreSuite`: collections, documents, chunks with their vectors and sentence windows,
  `vectors_for_hashes` / `windows_for_hashes`, `export_chunks`, atomic `replace_chunks` (and `replace_chunks_in_batches`);
- `SearchStoreSuite`: `keyword_search` (BM25, inert query syntax), `term_statistics` and `vector_search` (cosine,
  windows), both under every kind of `SearchFilter`, and both run on several threads at once when the
  store declares `concurrent_searches`;
- `ChatStoreSuite`: chat sessions and their messages;
- `ContextCacheSuite`: `get_chunk_contexts` / `put_chunk_contexts`;
- `SummaryCacheSuite`: `get_summary` / `put_summary`, and `compact` dropping summaries of what is gone;
- `UsageStoreSuite`: `record_usage` / `usage`, summed by concurrent writers, per tenant;
- `GraphStoreSuite`: the knowledge graph and its extraction cache;
- `KeyStoreSuite`: API keys (its fixture is `key_store`, a fresh, empty key store);
- `TenancySuite`: no tenant sees or changes another's rows (needs a whole store);
- `StoreConformance`: all of the above.

`empty_store` is the one fixture every suite except `KeyStoreSuite` needs; the suites derive
`store` from it (the same store holding an empty collection "docs" of `MODEL`, `DIM`). The
helpers in `sourcebook.testing.helpers` (`add_document`, `unit`, ...) write the same rows the
suites write, for a back end's tests of what only it has.

The suites need pytest and numpy, which the `sourcebook` package itself does not import: import
`sourcebook.testing` from tests only.
"""

from __future__ import annotations

import pytest

# Before the suites are imported: their plain `assert`s then report values the way a test's do.
pytest.register_assert_rewrite(
    "sourcebook.testing.chat",
    "sourcebook.testing.documents",
    "sourcebook.testing.graph",
    "sourcebook.testing.helpers",
    "sourcebook.testing.keys",
    "sourcebook.testing.search",
    "sourcebook.testing.store",
    "sourcebook.testing.summaries",
    "sourcebook.testing.tenants",
    "sourcebook.testing.usage",
)

from .chat import ChatStoreSuite, ContextCacheSuite  # noqa: E402
from .documents import DocumentStoreSuite  # noqa: E402
from .graph import GraphStoreSuite  # noqa: E402
from .keys import KeyStoreSuite  # noqa: E402
from .search import SearchStoreSuite  # noqa: E402
from .store import StoreConformance  # noqa: E402
from .summaries import SummaryCacheSuite  # noqa: E402
from .tenants import TenancySuite  # noqa: E402
from .usage import UsageStoreSuite  # noqa: E402

__all__ = [
    "ChatStoreSuite",
    "ContextCacheSuite",
    "DocumentStoreSuite",
    "GraphStoreSuite",
    "KeyStoreSuite",
    "SearchStoreSuite",
    "StoreConformance",
    "SummaryCacheSuite",
    "TenancySuite",
    "UsageStoreSuite",
]
