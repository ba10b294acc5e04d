"""A store declaring `concurrent_searches` has a hybrid search's keyword search run in a worker
while the query is embedded and the vector search runs (retrieval.py, overlap.py): the same hits
as one after the other, on the real SQLite and Postgres stores, in every fused mode and under
filters; the same typed errors; the query cache unchanged."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sourcebook import KnowledgeBase, overlap
from sourcebook.copying import copy_store
from sourcebook.errors import InvalidQueryError, StoreError
from sourcebook.models import SearchFilter
from sourcebook.query_cache import QueryCache
from sourcebook.retrieval import Retriever, SearchOptions
from sourcebook.stores.base import Store
from sourcebook.stores.postgres import PostgresStore
from sourcebook.stores.sqlite import SQLiteStore

QUERIES = (
    "daily meal allowance per diem abroad",
    "password manager",
    "How many days of paid holiday does a full-time employee get?",
    "incident severity escalation on call",
    "the",
)


def option_cases(store: Store) -> list[SearchOptions]:
    some_document = store.list_documents()[0].id
    return [
        SearchOptions(),
        SearchOptions(fusion="rrf", top_k=7, per_document=0),
        SearchOptions(mode="graph"),
        SearchOptions(graph=True, min_score=-1.0),
        SearchOptions(filters=SearchFilter.build(collections="default")),
        SearchOptions(filters=SearchFilter.build(document_ids=[some_document]), per_document=0),
        SearchOptions(filters=SearchFilter.build(metadata={"lang": "xx"})),
        SearchOptions(mode="keyword"),
        SearchOptions(mode="vector"),
    ]


@pytest.fixture
def postgres_copy(example_kb: KnowledgeBase, migrated_postgres_dsn: str) -> Iterator[PostgresStore]:
    """The example knowledge base's chunks and vectors in a Postgres database (no re-embedding)."""
    with PostgresStore(migrated_postgres_dsn) as store:
        copy_store(example_kb._store, store)
        yield store


def keyword_threads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads `store.keyword_search` runs on, from now on."""
    names: list[str] = []
    search = store.keyword_search

    def recorded(*args: Any) -> Any:
        names.append(threading.current_thread().name)
        return search(*args)

    monkeypatch.setattr(store, "keyword_search", recorded)
    return names


def assert_same_hits_either_way(store: Store, example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every query and option case: the hits with the searches overlapped (and the query
    embedded, or given) equal those of one search after the other, field for field."""
    retriever = Retriever(store, lambda: example_kb.embedder)
    threads = keyword_threads(store, monkeypatch)
    vectors = retriever.embed_queries(QUERIES)
    for options in option_cases(store):
        for query, vector in zip(QUERIES, vectors):
            for given in (None, vector):
                monkeypatch.setattr(store, "concurrent_searches", False)
                sequential = retriever.search(query, options, given)
                monkeypatch.setattr(store, "concurrent_searches", True)
                assert retriever.search(query, options, given) == sequential, (query, options)
    overlapped = [name for name in threads if name.startswith("sourcebook-overlap")]
    assert overlapped, "no keyword search ran in a worker"


def test_postgres_declares_concurrent_searches_and_overlaps_them(
    postgres_copy: PostgresStore, example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert PostgresStore.concurrent_searches is True
    threads = keyword_threads(postgres_copy, monkeypatch)
    hits = Retriever(postgres_copy, lambda: example_kb.embedder).search("password manager", SearchOptions())
    assert hits and threads and threads[0].startswith("sourcebook-overlap")
    assert_same_hits_either_way(postgres_copy, example_kb, monkeypatch)


def test_sqlite_gives_the_same_hits_overlapped(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite does not declare it (it measured no faster at low load), but its searches are
    thread-safe: overlapped, its hits are the same, so the choice is only one of speed."""
    assert SQLiteStore.concurrent_searches is False
    assert_same_hits_either_way(example_kb._store, example_kb, monkeypatch)


@pytest.mark.parametrize("concurrent", [False, True])
def test_typed_errors_surface_as_in_order(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, concurrent: bool
) -> None:
    """A keyword search's error wins over the vector search's (the sequential order), each the
    same object of its own type, whether the keyword search ran in a worker or not."""
    store = example_kb._store
    monkeypatch.setattr(store, "concurrent_searches", concurrent)
    retriever = Retriever(store, lambda: example_kb.embedder)
    keyword_error, vector_error = StoreError("keyword"), InvalidQueryError("vector")

    def fail(error: Exception) -> Any:
        def raising(*args: Any) -> Any:
            raise error
        return raising

    monkeypatch.setattr(store, "vector_search", fail(vector_error))
    with pytest.raises(InvalidQueryError) as raised:
        retriever.search("password manager", SearchOptions())
    assert raised.value is vector_error
    monkeypatch.setattr(store, "keyword_search", fail(keyword_error))
    with pytest.raises(StoreError) as raised:
        retriever.search("password manager", SearchOptions())
    assert raised.value is keyword_error


def test_the_query_cache_serves_an_overlapped_search_again(
    postgres_copy: PostgresStore, example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache keys are the sequential path's: the second identical search runs no search and
    no embedding, and a sequential retriever on the same cache is served the same hits."""
    cache = QueryCache(100)
    threads = keyword_threads(postgres_copy, monkeypatch)
    first = Retriever(postgres_copy, lambda: example_kb.embedder, cache=lambda: cache).search("password manager", SearchOptions())
    assert len(threads) == 1
    monkeypatch.setattr(postgres_copy, "concurrent_searches", False)
    again = Retriever(postgres_copy, lambda: example_kb.embedder, cache=lambda: cache).search("password manager", SearchOptions())
    assert again == first and len(threads) == 1
    stats = cache.stats()
    assert stats["hits"]["search"] == 1 and stats["misses"]["embedding"] == 1 and stats["hits"]["embedding"] == 0


def test_stores_opened_searched_and_closed_leave_no_threads(example_kb: KnowledgeBase) -> None:
    """The pool is the process's: however many stores are opened, searched and closed, the
    threads added stay within its few workers."""
    before = {thread.ident for thread in threading.enumerate()}
    for _ in range(6):
        with SQLiteStore(example_kb.settings.db) as store:
            store.concurrent_searches = True
            assert Retriever(store, lambda: example_kb.embedder).search("password manager", SearchOptions())
    added = [thread for thread in threading.enumerate() if thread.ident not in before]
    assert all(thread.name.startswith("sourcebook-overlap") for thread in added), added
    assert len(added) <= overlap.WORKERS
