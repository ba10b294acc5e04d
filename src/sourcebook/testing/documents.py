"""The DocumentStore role: collections, documents, chunks and their vectors, read back whole.

Atomicity is part of the contract: a `replace_chunks` that fails, whether on bad input or
midway through the write, leaves the document's old chunks exactly as they were.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import pytest

from sourcebook.errors import (
    CollectionNotFoundError,
    DocumentNotFoundError,
    EmbeddingModelMismatchError,
    StoreError,
)
from sourcebook.models import Chunk, DocumentStatus
from sourcebook.owners import this_process
from sourcebook.stores import Store
from sourcebook.stores.base import ChunkBatch

from .helpers import (
    DIM,
    EVERYTHING,
    MODEL,
    StoreFixtures,
    add_document,
    add_windowed_document,
    ended_process_owner,
    ids,
    make_chunks,
    stored_record,
    unit,
)


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


class DocumentStoreSuite(StoreFixtures):
    """The DocumentStore contract: subclass it and override `empty_store` (see sourcebook.testing)."""

    # Collections ----------------------------------------------------------------------------
    def test_ensure_collection_is_idempotent_and_listed(self, store: Store) -> None:
        store.ensure_collection("docs", MODEL, DIM)
        store.ensure_collection("other", "another-model", 8)
        add_document(store, "d1", ["one", "two"])
        infos = {info.name: info for info in store.collections()}
        assert set(infos) == {"docs", "other"}
        assert (infos["docs"].embedding_model, infos["docs"].dimension) == (MODEL, DIM)
        assert (infos["docs"].document_count, infos["docs"].chunk_count) == (1, 2)
        assert (infos["other"].document_count, infos["other"].chunk_count) == (0, 0)

    @pytest.mark.parametrize(("model", "dimension"), [("other-model", DIM), (MODEL, 8)])
    def test_ensure_collection_refuses_another_model(self, store: Store, model: str, dimension: int) -> None:
        with pytest.raises(EmbeddingModelMismatchError) as caught:
            store.ensure_collection("docs", model, dimension)
        message = str(caught.value)
        for expected in ("docs", MODEL, str(DIM), model, str(dimension), "re-index"):
            assert expected in message

    # Documents ------------------------------------------------------------------------------
    def test_upsert_get_find_and_list_documents(self, store: Store) -> None:
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

    def test_status_transitions(self, store: Store) -> None:
        store.upsert_document("d1", collection="docs", source="a", title="A", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PENDING)
        store.set_status("d1", DocumentStatus.PROCESSING)
        assert stored_record(store, "d1").status == DocumentStatus.PROCESSING
        store.set_status("d1", DocumentStatus.ERROR, "parse failed")
        record = stored_record(store, "d1")
        assert (record.status, record.error) == (DocumentStatus.ERROR, "parse failed")
        with pytest.raises(DocumentNotFoundError):
            store.set_status("missing", DocumentStatus.READY)

    def test_unfinished_document_of_an_ended_process_reads_interrupted(self, store: Store) -> None:
        gone = ended_process_owner()
        store.upsert_document("d1", collection="docs", source="a", title="A", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PENDING, owner=gone)
        store.upsert_document("d2", collection="docs", source="b", title="B", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PENDING)
        store.set_status("d2", DocumentStatus.PROCESSING, owner=this_process())
        add_document(store, "d3", ["ready"])
        record = stored_record(store, "d1")
        assert record.status == DocumentStatus.INTERRUPTED and "interrupted" in (record.error or "")
        assert store.find_document("docs", "a") == record
        store.set_status("d1", DocumentStatus.PROCESSING, owner=gone)
        assert stored_record(store, "d1").status == DocumentStatus.INTERRUPTED
        assert stored_record(store, "d2").status == DocumentStatus.PROCESSING  # its owner, this process, lives
        assert [d.id for d in store.list_documents(status=DocumentStatus.INTERRUPTED)] == ["d1"]
        assert [d.id for d in store.list_documents(status=DocumentStatus.PROCESSING)] == ["d2"]
        counts = store.stats()["documents"]
        assert (counts["interrupted"], counts["processing"], counts["pending"], counts["ready"]) == (1, 1, 0, 1)

    def test_a_final_status_forgets_the_owner(self, store: Store) -> None:
        gone = ended_process_owner()
        store.upsert_document("d1", collection="docs", source="a", title="A", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PROCESSING, owner=gone)
        store.set_status("d1", DocumentStatus.ERROR, "failed", owner=gone)
        assert stored_record(store, "d1").status == DocumentStatus.ERROR
        store.set_status("d1", DocumentStatus.PROCESSING, owner=gone)
        store.replace_chunks("d1", content_hash="h", title="A", chunks=make_chunks(["x"]), vectors=np.stack([unit(1.0)]))
        store.set_status("d1", DocumentStatus.PENDING)  # queued again, by no process of this host
        assert stored_record(store, "d1").status == DocumentStatus.PENDING

    def test_upsert_keeps_chunks_and_hash_while_reprocessing(self, store: Store) -> None:
        add_document(store, "d1", ["the original text"], metadata={"v": 1})
        store.upsert_document("d1", collection="docs", source="d1.txt", title="Renamed", media_type="text/plain",
                              metadata={"v": 2}, status=DocumentStatus.PROCESSING)
        record = stored_record(store, "d1")
        assert (record.title, record.metadata, record.status) == ("Renamed", {"v": 2}, DocumentStatus.PROCESSING)
        assert (record.chunk_count, record.content_hash) == (1, "hash-d1")
        assert ids(store.keyword_search("original", 5, EVERYTHING)) == ["d1#0"]

    def test_an_update_only_upsert_never_creates_the_document(self, store: Store) -> None:
        fields = dict(collection="docs", source="d1.txt", title="Renamed", media_type="text/plain", metadata={"v": 1},
                      status=DocumentStatus.PENDING, owner=this_process())
        with pytest.raises(DocumentNotFoundError):
            store.upsert_document("d1", create=False, **fields)  # type: ignore[arg-type]
        assert store.get_document("d1") is None
        add_document(store, "d1", ["kept words"])
        acme = store.for_tenant("acme")
        acme.ensure_collection("docs", MODEL, DIM)
        with pytest.raises(DocumentNotFoundError):  # another tenant's document is not there to update
            acme.upsert_document("d1", create=False, **fields)  # type: ignore[arg-type]
        store.upsert_document("d1", create=False, **fields)  # type: ignore[arg-type]
        record = stored_record(store, "d1")
        assert (record.title, record.metadata, record.status, record.chunk_count) == ("Renamed", {"v": 1}, "pending", 1)
        assert ids(store.keyword_search("kept", 5, EVERYTHING)) == ["d1#0"]

    # Chunks -----------------------------------------------------------------------------------
    def test_replace_chunks_then_read_them_back(self, store: Store) -> None:
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

    def test_replace_with_fewer_chunks_leaves_nothing_stale(self, store: Store) -> None:
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

    def test_vectors_for_hashes(self, store: Store) -> None:
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

    def test_many_ids_and_hashes_in_one_call(self, store: Store) -> None:
        texts = [f"chunk number {i}" for i in range(1203)]
        chunks = add_document(store, "big", texts)
        assert len(store.vectors_for_hashes("docs", [c.content_hash for c in chunks])) == len(texts)
        assert len(store.get_chunks([f"big#{i}" for i in range(len(texts))])) == len(texts)

    # Delete -----------------------------------------------------------------------------------
    def test_delete_removes_everything(self, store: Store) -> None:
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

    def test_delete_collection_removes_its_documents_only(self, store: Store) -> None:
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
    @pytest.mark.parametrize("vectors", BAD_VECTORS)
    def test_bad_vectors_change_nothing(self, store: Store, vectors: np.ndarray) -> None:
        add_document(store, "d1", ["old alpha", "old beta"], vectors=[unit(1.0), unit(0.0, 1.0)])
        with pytest.raises((ValueError, StoreError)):
            store.replace_chunks("d1", content_hash="new", title="T", chunks=make_chunks(["n1", "n2", "n3"]),
                                 vectors=vectors)
        assert_old_chunks_intact(store)

    def test_failure_midway_changes_nothing(self, store: Store) -> None:
        add_document(store, "d1", ["old alpha", "old beta"], vectors=[unit(1.0), unit(0.0, 1.0)])
        chunks = FailingChunks(make_chunks(["new one", "new two", "new three"]), fail_at=2)
        with pytest.raises(RuntimeError):
            store.replace_chunks("d1", content_hash="new", title="T", chunks=chunks,
                                 vectors=np.stack([unit(1.0)] * 3))
        assert_old_chunks_intact(store)

    def test_chunks_written_in_batches_read_back_as_one_write(self, store: Store) -> None:
        add_document(store, "d1", ["old alpha", "old beta"], vectors=[unit(1.0), unit(0.0, 1.0)])
        chunks = make_chunks(["one words", "two words", "three words", "four words", "five words"])
        vectors = np.stack([unit(1.0), unit(0.0, 1.0), unit(0.0, 0.0, 1.0), unit(1.0, 1.0), unit(0.0, 1.0, 1.0)])
        windows = [np.stack([unit(0.0, 0.0, 0.0, 1.0)]) if i == 3 else np.zeros((0, DIM), np.float32) for i in range(5)]
        batches = [(chunks[first : first + 2], vectors[first : first + 2], windows[first : first + 2]) for first in (0, 2, 4)]
        store.replace_chunks_in_batches("d1", content_hash="h5", title="T", batches=iter(batches))

        record = stored_record(store, "d1")
        assert (record.status, record.chunk_count, record.content_hash) == (DocumentStatus.READY, 5, "h5")
        exported, matrix, got = store.export_chunks("d1")
        assert exported == chunks and np.array_equal(matrix, vectors)
        assert [len(w) for w in got] == [0, 0, 0, 1, 0]
        assert ids(store.vector_search(unit(0.0, 0.0, 0.0, 1.0), 1, EVERYTHING)) == ["d1#3"]
        assert ids(store.keyword_search("five", 5, EVERYTHING)) == ["d1#4"]
        assert store.keyword_search("alpha", 5, EVERYTHING) == []

    def test_a_batch_that_fails_midway_keeps_the_old_chunks(self, store: Store) -> None:
        add_document(store, "d1", ["old alpha", "old beta"], vectors=[unit(1.0), unit(0.0, 1.0)])
        chunks = make_chunks(["new one", "new two", "new three"])

        def batches_then_failure() -> Iterator[ChunkBatch]:
            yield chunks[:2], np.stack([unit(1.0)] * 2), None
            raise RuntimeError("simulated failure between two batches (the caller's reading)")

        with pytest.raises(RuntimeError):
            store.replace_chunks_in_batches("d1", content_hash="new", title="T", batches=batches_then_failure())
        assert_old_chunks_intact(store)
        malformed = [(chunks[:2], np.stack([unit(1.0)] * 2), None), (chunks[2:], np.zeros((1, DIM + 1), np.float32), None)]
        with pytest.raises(ValueError):
            store.replace_chunks_in_batches("d1", content_hash="new", title="T", batches=malformed)
        assert_old_chunks_intact(store)

    def test_replace_chunks_of_unknown_document(self, store: Store) -> None:
        with pytest.raises(DocumentNotFoundError):
            store.replace_chunks("missing", content_hash="h", title="T", chunks=make_chunks(["x"]),
                                 vectors=np.stack([unit(1.0)]))

    # Housekeeping --------------------------------------------------------------------------------
    def test_stats(self, store: Store) -> None:
        add_document(store, "d1", ["one", "two"])
        store.upsert_document("d2", collection="docs", source="b", title="B", media_type="text/plain",
                              metadata={}, status=DocumentStatus.ERROR, error="boom")
        stats = store.stats()
        assert stats["documents"]["ready"] == 1 and stats["documents"]["error"] == 1
        assert stats["chunks"] == 2
        assert [c["name"] for c in stats["collections"]] == ["docs"]
        assert isinstance(stats["size_bytes"], int)
        assert stats["path"]

    def test_compact_drops_only_cache_rows_no_stored_chunk_uses(self, store: Store) -> None:
        kept = add_document(store, "d1", ["kept text"])
        gone = add_document(store, "d2", ["deleted text"])
        enriched = make_chunks(["enriched text"])
        plain_hash = enriched[0].content_hash  # what enrichment caches a sentence under
        enriched = [replace(enriched[0], prefix=f"{enriched[0].prefix}\nIt situates the chunk.")]
        store.upsert_document("d3", collection="docs", source="d3.txt", title="T", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PROCESSING)
        store.replace_chunks("d3", content_hash="h3", title="T", chunks=enriched, vectors=np.stack([unit(1.0)]))
        store.put_graph_extractions({c.content_hash: {"n": 1} for c in (*kept, *gone, *enriched)}, "x")
        store.put_chunk_contexts({plain_hash: "It situates the chunk.", kept[0].content_hash: "k",
                                  gone[0].content_hash: "g"}, "gen")
        store.delete_document("d2")
        assert store.get_graph_extractions([gone[0].content_hash], "x") != {}  # kept by design until compact
        dropped = store.compact()
        assert (dropped["graph_extractions"], dropped["chunk_contexts"]) == (1, 1)
        assert dropped["terms"] >= 0 and dropped["size_bytes_after"] > 0
        live = [kept[0].content_hash, enriched[0].content_hash]
        assert set(store.get_graph_extractions([*live, gone[0].content_hash], "x")) == set(live)
        assert set(store.get_chunk_contexts([plain_hash, kept[0].content_hash, gone[0].content_hash], "gen")) == {
            plain_hash, kept[0].content_hash}
        assert ids(store.keyword_search("kept", 5, EVERYTHING)) == ["d1#0"]
        assert store.compact()["graph_extractions"] == 0

    # Copying between stores ------------------------------------------------------------------------
    def test_export_chunks_gives_back_what_was_written(self, store: Store) -> None:
        vectors = [unit(1.0), unit(0.5, 1.0)]
        chunks = add_document(store, "d1", ["first", "second"], vectors=vectors)
        exported, matrix, windows = store.export_chunks("d1")
        assert exported == chunks
        assert matrix.dtype == np.float32 and np.array_equal(matrix, np.stack(vectors))
        assert [w.shape for w in windows] == [(0, DIM), (0, DIM)]
        assert store.export_chunks("missing")[0] == []

    def test_export_chunks_gives_back_window_vectors(self, store: Store) -> None:
        windows = [np.stack([unit(0.0, 1.0), unit(0.0, 0.0, 1.0)]), np.zeros((0, DIM), np.float32)]
        chunks = add_windowed_document(store, "d1", ["a b. c d. e f.", "short"], [unit(1.0), unit(1.0)], windows)
        exported, _, got = store.export_chunks("d1")
        assert exported == chunks
        assert len(got) == 2 and np.allclose(got[0], windows[0]) and got[1].shape == (0, DIM)

    # Sentence-window vectors ---------------------------------------------------------------------
    def test_windows_for_hashes(self, store: Store) -> None:
        windows = [np.stack([unit(0.0, 1.0), unit(1.0)]), np.zeros((0, DIM), np.float32)]
        chunks = add_windowed_document(store, "d1", ["one", "two"], [unit(1.0), unit(1.0)], windows)
        found = store.windows_for_hashes("docs", [chunks[0].content_hash, chunks[1].content_hash, "unknown"])
        assert set(found) == {chunks[0].content_hash, chunks[1].content_hash}
        assert np.allclose(found[chunks[0].content_hash], windows[0]) and found[chunks[1].content_hash].shape == (0, DIM)
        assert store.windows_for_hashes("other", [chunks[0].content_hash]) == {}
        assert store.for_tenant("acme").windows_for_hashes("docs", [chunks[0].content_hash]) == {}

    def test_malformed_windows_are_refused_and_keep_the_old_chunks(self, store: Store) -> None:
        add_document(store, "d1", ["old"])
        chunks, vectors = make_chunks(["new"]), np.stack([unit(1.0)]).astype(np.float32)
        for windows in ([], [np.zeros((1, DIM + 1), np.float32)], [np.zeros((1, DIM), np.float64)]):
            with pytest.raises(ValueError):
                store.replace_chunks("d1", content_hash="h", title="T", chunks=chunks, vectors=vectors, windows=windows)
        assert [c.text for c in store.document_chunks("d1")] == ["old"]
