"""The `Store` contract, run against every implementation.

To add a back end, append a `pytest.param(factory, id=...)` to STORE_FACTORIES: a factory
takes the fixture request (for fixtures such as `tmp_path` or a fresh database) and returns
a fresh, empty store. Nothing else here names an implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest

from sourcebook.errors import (
    CollectionNotFoundError,
    DocumentNotFoundError,
    EmbeddingModelMismatchError,
    InvalidQueryError,
    StoreError,
)
from sourcebook.models import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    ScoredId,
    SearchFilter,
)
from sourcebook.stores import SQLiteStore, Store
from sourcebook.stores.postgres import PostgresStore

StoreFactory = Callable[[pytest.FixtureRequest], Store]

STORE_FACTORIES = [
    pytest.param(lambda request: SQLiteStore(request.getfixturevalue("tmp_path") / "conformance.db"), id="sqlite"),
    pytest.param(lambda request: PostgresStore(request.getfixturevalue("migrated_postgres_dsn")), id="postgres"),
]

DIM = 4
MODEL = "test-model"
EVERYTHING = SearchFilter()


@pytest.fixture(params=STORE_FACTORIES)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    factory: StoreFactory = request.param
    instance = factory(request)
    instance.ensure_collection("docs", MODEL, DIM)
    yield instance
    instance.close()


# Helpers ------------------------------------------------------------------------------
def unit(*components: float) -> np.ndarray:
    """A unit vector of dimension DIM from its first components."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(components)] = components
    return vector / np.linalg.norm(vector)


def make_chunks(texts: Sequence[str], heading: str = "Section") -> list[Chunk]:
    return [
        Chunk(position=i, text=text, start=0, end=len(text), heading_path=(heading,), page=None,
              token_count=len(text.split()), prefix=f"Doc > {heading}")
        for i, text in enumerate(texts)
    ]


def add_document(
    store: Store,
    document_id: str,
    texts: Sequence[str],
    *,
    vectors: Sequence[np.ndarray] | None = None,
    collection: str = "docs",
    title: str = "A title",
    heading: str = "Section",
    metadata: dict | None = None,
) -> list[Chunk]:
    """Create a ready document whose chunks hold `texts` (vectors default to one direction)."""
    store.upsert_document(
        document_id, collection=collection, source=f"{document_id}.txt", title=title,
        media_type="text/plain", metadata=metadata or {}, status=DocumentStatus.PROCESSING,
    )
    chunks = make_chunks(texts, heading)
    matrix = np.stack(vectors if vectors is not None else [unit(1.0)] * len(texts)).astype(np.float32)
    store.replace_chunks(document_id, content_hash=f"hash-{document_id}", title=title, chunks=chunks, vectors=matrix)
    return chunks


def stored_record(store: Store, document_id: str) -> DocumentRecord:
    found = store.get_document(document_id)
    assert found is not None, f"document {document_id} is missing"
    return found


def ids(results: list[ScoredId]) -> list[str]:
    return [r.chunk_id for r in results]


def documents_of(results: list[ScoredId]) -> set[str]:
    return {r.chunk_id.split("#")[0] for r in results}


def search(store: Store, mode: str, filters: SearchFilter, k: int = 50) -> list[ScoredId]:
    """Both retrievers, asked for everything: every filter test runs once per mode."""
    if mode == "keyword":
        return store.keyword_search("shared", k, filters)
    return store.vector_search(unit(1.0), k, filters)


# Collections ----------------------------------------------------------------------------
def test_implements_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_ensure_collection_is_idempotent_and_listed(store: Store) -> None:
    store.ensure_collection("docs", MODEL, DIM)
    store.ensure_collection("other", "another-model", 8)
    add_document(store, "d1", ["one", "two"])
    infos = {info.name: info for info in store.collections()}
    assert set(infos) == {"docs", "other"}
    assert (infos["docs"].embedding_model, infos["docs"].dimension) == (MODEL, DIM)
    assert (infos["docs"].document_count, infos["docs"].chunk_count) == (1, 2)
    assert (infos["other"].document_count, infos["other"].chunk_count) == (0, 0)


@pytest.mark.parametrize(("model", "dimension"), [("other-model", DIM), (MODEL, 8)])
def test_ensure_collection_refuses_another_model(store: Store, model: str, dimension: int) -> None:
    with pytest.raises(EmbeddingModelMismatchError) as caught:
        store.ensure_collection("docs", model, dimension)
    message = str(caught.value)
    for expected in ("docs", MODEL, str(DIM), model, str(dimension), "re-index"):
        assert expected in message


# Documents ------------------------------------------------------------------------------
def test_upsert_get_find_and_list_documents(store: Store) -> None:
    store.ensure_collection("other", MODEL, DIM)
    store.upsert_document("d1", collection="docs", source="a.md", title="A", media_type="text/markdown",
                          metadata={"lang": "en"}, status=DocumentStatus.PENDING)
    store.upsert_document("d2", collection="other", source="b.md", title="B", media_type="text/markdown",
                          metadata={}, status=DocumentStatus.PROCESSING)
    record = stored_record(store, "d1")
    assert (record.collection, record.source, record.title, record.media_type) == ("docs", "a.md", "A", "text/markdown")
    assert (record.status, record.error, record.chunk_count, record.content_hash) == (DocumentStatus.PENDING, None, 0, None)
    assert record.metadata == {"lang": "en"}
    assert record.created_at and record.updated_at
    assert store.find_document("docs", "a.md") == record
    assert store.find_document("other", "a.md") is None
    assert store.get_document("missing") is None
    assert [d.id for d in store.list_documents()] == ["d1", "d2"]
    assert [d.id for d in store.list_documents(collection="other")] == ["d2"]
    assert [d.id for d in store.list_documents(status=DocumentStatus.PENDING)] == ["d1"]
    assert store.list_documents(collection="docs", status=DocumentStatus.READY) == []


def test_status_transitions(store: Store) -> None:
    store.upsert_document("d1", collection="docs", source="a", title="A", media_type="text/plain",
                          metadata={}, status=DocumentStatus.PENDING)
    store.set_status("d1", DocumentStatus.PROCESSING)
    assert stored_record(store, "d1").status == DocumentStatus.PROCESSING
    store.set_status("d1", DocumentStatus.ERROR, "parse failed")
    record = stored_record(store, "d1")
    assert (record.status, record.error) == (DocumentStatus.ERROR, "parse failed")
    with pytest.raises(DocumentNotFoundError):
        store.set_status("missing", DocumentStatus.READY)


def test_upsert_keeps_chunks_and_hash_while_reprocessing(store: Store) -> None:
    add_document(store, "d1", ["the original text"], metadata={"v": 1})
    store.upsert_document("d1", collection="docs", source="d1.txt", title="Renamed", media_type="text/plain",
                          metadata={"v": 2}, status=DocumentStatus.PROCESSING)
    record = stored_record(store, "d1")
    assert (record.title, record.metadata, record.status) == ("Renamed", {"v": 2}, DocumentStatus.PROCESSING)
    assert (record.chunk_count, record.content_hash) == (1, "hash-d1")
    assert ids(store.keyword_search("original", 5, EVERYTHING)) == ["d1#0"]


# Chunks -----------------------------------------------------------------------------------
def test_replace_chunks_then_read_them_back(store: Store) -> None:
    store.upsert_document("d1", collection="docs", source="a.txt", title="Old title", media_type="text/plain",
                          metadata={}, status=DocumentStatus.PROCESSING)
    store.set_status("d1", DocumentStatus.ERROR, "earlier failure")
    chunks = make_chunks(["first part", "second part", "third part"], heading="Intro")
    vectors = np.stack([unit(1.0), unit(0.0, 1.0), unit(0.0, 0.0, 1.0)])
    store.replace_chunks("d1", content_hash="h1", title="New title", chunks=chunks, vectors=vectors)

    record = stored_record(store, "d1")
    assert (record.status, record.error, record.chunk_count, record.content_hash, record.title) == (
        DocumentStatus.READY, None, 3, "h1", "New title")
    stored = store.document_chunks("d1")
    assert [c.id for c in stored] == ["d1#0", "d1#1", "d1#2"]
    first = stored[0]
    assert (first.document_id, first.collection, first.source, first.title) == ("d1", "docs", "a.txt", "New title")
    assert (first.position, first.text, first.heading_path, first.page, first.prefix) == (
        0, "first part", ("Intro",), None, "Doc > Intro")
    assert store.get_chunks(["d1#2", "d1#0", "missing#9"]) == {"d1#2": stored[2], "d1#0": stored[0]}
    assert store.document_chunks("missing") == []


def test_replace_with_fewer_chunks_leaves_nothing_stale(store: Store) -> None:
    old = add_document(store, "d1", ["alpha words", "beta words", "gamma words"],
                       vectors=[unit(1.0), unit(0.0, 1.0), unit(0.0, 0.0, 1.0)])
    new = make_chunks(["delta words"])
    store.replace_chunks("d1", content_hash="h2", title="T", chunks=new, vectors=np.stack([unit(0.0, 0.0, 0.0, 1.0)]))

    assert [c.text for c in store.document_chunks("d1")] == ["delta words"]
    assert store.get_chunks(["d1#1", "d1#2"]) == {}
    assert store.keyword_search("beta gamma", 10, EVERYTHING) == []
    assert ids(store.keyword_search("words", 10, EVERYTHING)) == ["d1#0"]
    assert ids(store.vector_search(unit(0.0, 1.0), 10, EVERYTHING)) == ["d1#0"]
    assert store.vectors_for_hashes("docs", [c.content_hash for c in old]) == {}
    assert stored_record(store, "d1").chunk_count == 1


def test_vectors_for_hashes(store: Store) -> None:
    store.ensure_collection("other", MODEL, DIM)
    chunks = add_document(store, "d1", ["one", "two"], vectors=[unit(1.0), unit(0.0, 1.0)])
    add_document(store, "d2", ["one"], vectors=[unit(0.0, 0.0, 1.0)], collection="other")
    found = store.vectors_for_hashes("docs", [chunks[1].content_hash, chunks[0].content_hash, "unknown"])
    assert set(found) == {chunks[0].content_hash, chunks[1].content_hash}
    np.testing.assert_allclose(found[chunks[1].content_hash], unit(0.0, 1.0))
    assert found[chunks[0].content_hash].dtype == np.float32
    np.testing.assert_allclose(store.vectors_for_hashes("other", [chunks[0].content_hash])[chunks[0].content_hash],
                               unit(0.0, 0.0, 1.0))
    assert store.vectors_for_hashes("docs", []) == {}


def test_many_ids_and_hashes_in_one_call(store: Store) -> None:
    texts = [f"chunk number {i}" for i in range(1203)]
    chunks = add_document(store, "big", texts)
    assert len(store.vectors_for_hashes("docs", [c.content_hash for c in chunks])) == len(texts)
    assert len(store.get_chunks([f"big#{i}" for i in range(len(texts))])) == len(texts)


# Keyword search ---------------------------------------------------------------------------
@pytest.fixture
def corpus(store: Store) -> Store:
    """Enough chunks that BM25's IDF separates rare terms from common ones."""
    add_document(store, "common", ["the cat sat on the mat", "the dog sat on the log", "the bird sat on the fence"])
    add_document(store, "rare", ["the aardvark sat on the mat", "a fox was running in the field"])
    add_document(store, "other", ["an owl sat in the tree", "a fish swam in the pond"], title="Zoology notes",
                 heading="Marine life")
    return store


def test_rare_term_ranks_first(corpus: Store) -> None:
    results = corpus.keyword_search("the aardvark sat", 10, EVERYTHING)
    assert results[0].chunk_id == "rare#0"
    assert [r.rank for r in results] == list(range(1, len(results) + 1))
    assert all(r.score > 0 for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_stemming_matches_word_forms(corpus: Store) -> None:
    assert ids(corpus.keyword_search("run", 10, EVERYTHING)) == ["rare#1"]
    assert ids(corpus.keyword_search("runs", 10, EVERYTHING)) == ["rare#1"]


def test_any_term_matches(corpus: Store) -> None:
    assert set(ids(corpus.keyword_search("aardvark fox", 10, EVERYTHING))) == {"rare#0", "rare#1"}
    assert set(ids(corpus.keyword_search("aardvark unicorn", 10, EVERYTHING))) == {"rare#0"}


def test_title_and_heading_are_searchable(corpus: Store) -> None:
    assert set(ids(corpus.keyword_search("zoology", 10, EVERYTHING))) == {"other#0", "other#1"}
    assert set(ids(corpus.keyword_search("marine", 10, EVERYTHING))) == {"other#0", "other#1"}


def test_k_limits_results(corpus: Store) -> None:
    assert len(corpus.keyword_search("the", 2, EVERYTHING)) == 2


@pytest.mark.parametrize("query", ["", "   ", "?!...", "-- ** ()"])
def test_query_without_terms_finds_nothing(corpus: Store, query: str) -> None:
    assert corpus.keyword_search(query, 10, EVERYTHING) == []


@pytest.mark.parametrize("query", ['"aardvark', "aardvark AND NOT", "NEAR(aardvark", "aardvark* -fox", "col:aardvark"])
def test_query_syntax_is_inert(corpus: Store, query: str) -> None:
    assert "rare#0" in ids(corpus.keyword_search(query, 10, EVERYTHING))


# Vector search ----------------------------------------------------------------------------
def test_vector_search_orders_by_cosine(store: Store) -> None:
    add_document(store, "d1", ["x", "y", "z"], vectors=[unit(1.0), unit(1.0, 1.0), unit(0.0, 1.0)])
    add_document(store, "d2", ["w"], vectors=[unit(-1.0)])
    results = store.vector_search(unit(1.0, 0.2), 10, EVERYTHING)
    assert ids(results) == ["d1#0", "d1#1", "d1#2", "d2#0"]
    assert [r.rank for r in results] == [1, 2, 3, 4]
    query = unit(1.0, 0.2)
    for result, vector in zip(results, [unit(1.0), unit(1.0, 1.0), unit(0.0, 1.0), unit(-1.0)]):
        assert result.score == pytest.approx(float(query @ vector), abs=1e-5)
    assert ids(store.vector_search(unit(0.0, 1.0), 2, EVERYTHING)) == ["d1#2", "d1#1"]


def test_vector_search_of_an_empty_store(store: Store) -> None:
    assert store.vector_search(unit(1.0), 5, EVERYTHING) == []


# Filters, in both searches ------------------------------------------------------------------
@pytest.fixture
def filtered(store: Store) -> Store:
    store.ensure_collection("archive", MODEL, DIM)
    add_document(store, "en2020", ["shared words"], metadata={"lang": "en", "year": 2020, "draft": True})
    add_document(store, "de2021", ["shared words"], metadata={"lang": "de", "year": 2021, "draft": False})
    add_document(store, "en2021", ["shared words"], metadata={"lang": "en", "year": 2021.0, "rating": 1})
    add_document(store, "old", ["shared words"], collection="archive", metadata={"lang": "en", "year": 1999})
    return store


FILTER_CASES = [
    pytest.param(SearchFilter(), {"en2020", "de2021", "en2021", "old"}, id="none"),
    pytest.param(SearchFilter.build(collections="archive"), {"old"}, id="collection"),
    pytest.param(SearchFilter.build(collections=["docs", "archive"]), {"en2020", "de2021", "en2021", "old"},
                 id="collections"),
    pytest.param(SearchFilter.build(document_ids=["en2020", "old"]), {"en2020", "old"}, id="document-ids"),
    pytest.param(SearchFilter.build(metadata={"lang": "en"}), {"en2020", "en2021", "old"}, id="metadata-str"),
    pytest.param(SearchFilter.build(metadata={"year": 2021}), {"de2021", "en2021"}, id="metadata-int"),
    pytest.param(SearchFilter.build(metadata={"year": 2020.0}), {"en2020"}, id="metadata-float"),
    pytest.param(SearchFilter.build(metadata={"draft": True}), {"en2020"}, id="metadata-true"),
    pytest.param(SearchFilter.build(metadata={"draft": False}), {"de2021"}, id="metadata-false"),
    pytest.param(SearchFilter.build(metadata={"rating": True}), set(), id="true-is-not-1"),
    pytest.param(SearchFilter.build(metadata={"year": "2021"}), set(), id="string-is-not-number"),
    pytest.param(SearchFilter.build(collections="docs", metadata={"lang": "en", "year": 2021}), {"en2021"},
                 id="combined"),
    pytest.param(SearchFilter.build(document_ids=["en2020"], metadata={"lang": "de"}), set(), id="disjoint"),
    pytest.param(SearchFilter.build(collections="nonexistent"), set(), id="unknown-collection"),
]


@pytest.mark.parametrize("mode", ["keyword", "vector"])
@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
def test_filters(filtered: Store, mode: str, filters: SearchFilter, expected: set[str]) -> None:
    assert documents_of(search(filtered, mode, filters)) == expected


# Delete -----------------------------------------------------------------------------------
def test_delete_removes_everything(store: Store) -> None:
    chunks = add_document(store, "gone", ["vanishing words here"], vectors=[unit(1.0)])
    add_document(store, "kept", ["staying words"], vectors=[unit(0.0, 1.0)])
    store.delete_document("gone")
    assert store.get_document("gone") is None
    assert store.document_chunks("gone") == []
    assert store.get_chunks(["gone#0"]) == {}
    assert store.keyword_search("vanishing", 10, EVERYTHING) == []
    assert ids(store.vector_search(unit(1.0), 10, EVERYTHING)) == ["kept#0"]
    assert store.vectors_for_hashes("docs", [chunks[0].content_hash]) == {}
    assert {(i.name, i.document_count, i.chunk_count) for i in store.collections()} == {("docs", 1, 1)}
    with pytest.raises(DocumentNotFoundError):
        store.delete_document("gone")


def test_delete_collection_removes_its_documents_only(store: Store) -> None:
    store.ensure_collection("other", MODEL, DIM)
    add_document(store, "gone", ["vanishing words here"], vectors=[unit(1.0)], collection="other")
    add_document(store, "kept", ["staying words"], vectors=[unit(0.0, 1.0)])
    store.delete_collection("other")
    assert [i.name for i in store.collections()] == ["docs"]
    assert store.get_document("gone") is None
    assert store.keyword_search("vanishing", 10, EVERYTHING) == []
    assert ids(store.vector_search(unit(1.0), 10, EVERYTHING)) == ["kept#0"]
    with pytest.raises(CollectionNotFoundError):
        store.delete_collection("other")


# Atomicity ----------------------------------------------------------------------------------
class FailingChunks(Sequence[Chunk]):
    """Chunks whose later items raise when read: a failure in the middle of a write."""

    def __init__(self, chunks: list[Chunk], fail_at: int) -> None:
        self._chunks = chunks
        self._fail_at = fail_at

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, int) and index >= self._fail_at:
            raise RuntimeError("simulated failure while writing chunks")
        return self._chunks[index]


def assert_old_chunks_intact(store: Store) -> None:
    assert [c.text for c in store.document_chunks("d1")] == ["old alpha", "old beta"]
    assert set(ids(store.keyword_search("alpha beta", 10, EVERYTHING))) == {"d1#0", "d1#1"}
    assert ids(store.vector_search(unit(0.0, 1.0), 1, EVERYTHING)) == ["d1#1"]
    record = stored_record(store, "d1")
    assert (record.status, record.chunk_count, record.content_hash) == (DocumentStatus.READY, 2, "hash-d1")


BAD_VECTORS = [
    pytest.param(np.zeros((2, DIM), dtype=np.float32), id="too-few-rows"),
    pytest.param(np.zeros((3, DIM + 1), dtype=np.float32), id="wrong-dimension"),
    pytest.param(np.zeros((3, DIM), dtype=np.float64), id="float64"),
    pytest.param(np.zeros(DIM, dtype=np.float32), id="one-dimensional"),
]


@pytest.mark.parametrize("vectors", BAD_VECTORS)
def test_bad_vectors_change_nothing(store: Store, vectors: np.ndarray) -> None:
    add_document(store, "d1", ["old alpha", "old beta"], vectors=[unit(1.0), unit(0.0, 1.0)])
    with pytest.raises((ValueError, StoreError)):
        store.replace_chunks("d1", content_hash="new", title="T", chunks=make_chunks(["n1", "n2", "n3"]),
                             vectors=vectors)
    assert_old_chunks_intact(store)


def test_failure_midway_changes_nothing(store: Store) -> None:
    add_document(store, "d1", ["old alpha", "old beta"], vectors=[unit(1.0), unit(0.0, 1.0)])
    chunks = FailingChunks(make_chunks(["new one", "new two", "new three"]), fail_at=2)
    with pytest.raises(RuntimeError):
        store.replace_chunks("d1", content_hash="new", title="T", chunks=chunks,
                             vectors=np.stack([unit(1.0)] * 3))
    assert_old_chunks_intact(store)


def test_replace_chunks_of_unknown_document(store: Store) -> None:
    with pytest.raises(DocumentNotFoundError):
        store.replace_chunks("missing", content_hash="h", title="T", chunks=make_chunks(["x"]),
                             vectors=np.stack([unit(1.0)]))


# Housekeeping --------------------------------------------------------------------------------
def test_stats(store: Store) -> None:
    add_document(store, "d1", ["one", "two"])
    store.upsert_document("d2", collection="docs", source="b", title="B", media_type="text/plain",
                          metadata={}, status=DocumentStatus.ERROR, error="boom")
    stats = store.stats()
    assert stats["documents"]["ready"] == 1 and stats["documents"]["error"] == 1
    assert stats["chunks"] == 2
    assert [c["name"] for c in stats["collections"]] == ["docs"]
    assert isinstance(stats["size_bytes"], int)
    assert stats["path"]


# Copying between stores ------------------------------------------------------------------------
def test_export_chunks_gives_back_what_was_written(store: Store) -> None:
    vectors = [unit(1.0), unit(0.5, 1.0)]
    chunks = add_document(store, "d1", ["first", "second"], vectors=vectors)
    exported, matrix, windows = store.export_chunks("d1")
    assert exported == chunks
    assert matrix.dtype == np.float32 and np.array_equal(matrix, np.stack(vectors))
    assert [w.shape for w in windows] == [(0, DIM), (0, DIM)]
    assert store.export_chunks("missing")[0] == []


def test_export_chunks_gives_back_window_vectors(store: Store) -> None:
    windows = [np.stack([unit(0.0, 1.0), unit(0.0, 0.0, 1.0)]), np.zeros((0, DIM), np.float32)]
    chunks = add_windowed_document(store, "d1", ["a b. c d. e f.", "short"], [unit(1.0), unit(1.0)], windows)
    exported, _, got = store.export_chunks("d1")
    assert exported == chunks
    assert len(got) == 2 and np.allclose(got[0], windows[0]) and got[1].shape == (0, DIM)


# Sentence-window vectors ---------------------------------------------------------------------
def add_windowed_document(
    store: Store, document_id: str, texts: Sequence[str], vectors: Sequence[np.ndarray], windows: Sequence[np.ndarray]
) -> list[Chunk]:
    store.upsert_document(
        document_id, collection="docs", source=f"{document_id}.txt", title="T",
        media_type="text/plain", metadata={}, status=DocumentStatus.PROCESSING,
    )
    chunks = make_chunks(texts)
    store.replace_chunks(document_id, content_hash=f"hash-{document_id}", title="T", chunks=chunks,
                         vectors=np.stack(vectors).astype(np.float32), windows=[w.astype(np.float32) for w in windows])
    return chunks


def test_a_chunk_scores_the_best_of_its_vector_and_its_windows(store: Store) -> None:
    none = np.zeros((0, DIM), np.float32)
    # d1's chunk points away from the query but one of its windows points at it; d2 is halfway.
    add_windowed_document(store, "d1", ["far"], [unit(0.0, 0.0, 0.0, 1.0)], [np.stack([unit(0.0, 1.0), unit(1.0)])])
    add_windowed_document(store, "d2", ["half"], [unit(1.0, 1.0)], [none])
    hits = store.vector_search(unit(1.0), 5, EVERYTHING)
    assert [h.chunk_id for h in hits] == ["d1#0", "d2#0"]  # each chunk once, by its best vector
    assert hits[0].score == pytest.approx(1.0) and hits[1].score == pytest.approx(2 ** -0.5)
    assert [h.rank for h in hits] == [1, 2]
    # filters keep a chunk's windows with it
    assert [h.chunk_id for h in store.vector_search(unit(1.0), 5, SearchFilter(document_ids=("d2",)))] == ["d2#0"]
    # k counts chunks, not windows
    assert [h.chunk_id for h in store.vector_search(unit(1.0), 1, EVERYTHING)] == ["d1#0"]


def test_windows_are_replaced_and_deleted_with_their_chunks(store: Store) -> None:
    add_windowed_document(store, "d1", ["x"], [unit(0.0, 0.0, 0.0, 1.0)], [np.stack([unit(1.0)])])
    add_document(store, "d2", ["y"], vectors=[unit(1.0, 1.0)])
    assert store.vector_search(unit(1.0), 1, EVERYTHING)[0].chunk_id == "d1#0"
    assert store.stats()["window_vectors"] == 1
    add_document(store, "d1", ["x"], vectors=[unit(0.0, 0.0, 0.0, 1.0)])  # re-indexed without windows
    assert store.vector_search(unit(1.0), 1, EVERYTHING)[0].chunk_id == "d2#0"
    add_windowed_document(store, "d1", ["x"], [unit(0.0, 0.0, 0.0, 1.0)], [np.stack([unit(1.0)])])
    store.delete_document("d1")
    assert [h.chunk_id for h in store.vector_search(unit(1.0), 5, EVERYTHING)] == ["d2#0"]
    assert store.stats()["window_vectors"] == 0


def test_windows_for_hashes(store: Store) -> None:
    windows = [np.stack([unit(0.0, 1.0), unit(1.0)]), np.zeros((0, DIM), np.float32)]
    chunks = add_windowed_document(store, "d1", ["one", "two"], [unit(1.0), unit(1.0)], windows)
    found = store.windows_for_hashes("docs", [chunks[0].content_hash, chunks[1].content_hash, "unknown"])
    assert set(found) == {chunks[0].content_hash, chunks[1].content_hash}
    assert np.allclose(found[chunks[0].content_hash], windows[0]) and found[chunks[1].content_hash].shape == (0, DIM)
    assert store.windows_for_hashes("other", [chunks[0].content_hash]) == {}
    assert store.for_tenant("acme").windows_for_hashes("docs", [chunks[0].content_hash]) == {}


def test_malformed_windows_are_refused_and_keep_the_old_chunks(store: Store) -> None:
    add_document(store, "d1", ["old"])
    chunks, vectors = make_chunks(["new"]), np.stack([unit(1.0)]).astype(np.float32)
    for windows in ([], [np.zeros((1, DIM + 1), np.float32)], [np.zeros((1, DIM), np.float64)]):
        with pytest.raises(ValueError):
            store.replace_chunks("d1", content_hash="h", title="T", chunks=chunks, vectors=vectors, windows=windows)
    assert [c.text for c in store.document_chunks("d1")] == ["old"]


def test_tenants_lists_every_tenant_with_rows(store: Store) -> None:
    store.for_tenant("acme").ensure_collection("docs", MODEL, DIM)
    store.for_tenant("globex").create_chat_session("s", "t")
    assert store.tenants() == ["acme", "default", "globex"]


@pytest.mark.parametrize("mode", ["keyword", "vector"])
@pytest.mark.parametrize("metadata", [{"\x00key": 1}, {"": 1}, {"key": [1]}])
def test_unusable_metadata_filters_are_invalid_queries(filtered: Store, mode: str, metadata: dict) -> None:
    with pytest.raises(InvalidQueryError):
        search(filtered, mode, SearchFilter.build(metadata=metadata))


@pytest.mark.parametrize("mode", ["keyword", "vector"])
def test_a_metadata_value_with_nul_matches_nothing(filtered: Store, mode: str) -> None:
    assert search(filtered, mode, SearchFilter.build(metadata={"lang": "en\x00"})) == []
