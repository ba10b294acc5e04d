"""The SQLite store's keyword index (index/keywords.py, stores/sqlite/keywords.py) on real files:
it catches up with writes instead of rebuilding, scores exactly as a rebuild does, and its
saved base is used, or rebuilt when it cannot be."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from sourcebook.index import keywords as index_keywords
from sourcebook.index import segments
from sourcebook.models import Chunk, DocumentStatus, SearchFilter
from sourcebook.stores import SQLiteStore
from sourcebook.stores.bm25 import B, K1, query_terms
from sourcebook.stores.sqlite import keywords as sqlite_keywords

EVERYTHING = SearchFilter()
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def put(store: SQLiteStore, document_id: str, texts: list[str], collection: str = "docs") -> None:
    store.ensure_collection(collection, "model", 2)
    if store.get_document(document_id) is None:
        store.upsert_document(document_id, collection=collection, source=document_id, title=f"Title {document_id}",
                              media_type="text/plain", metadata={}, status=DocumentStatus.PROCESSING)
    chunks = [Chunk(i, text, 0, len(text), (), None, 2, "") for i, text in enumerate(texts)]
    store.replace_chunks(document_id, content_hash=str(texts), title=f"Title {document_id}", chunks=chunks,
                         vectors=np.ones((len(texts), 2), dtype=np.float32))


def rebuilt_search(store: SQLiteStore, query: str, k: int, allowed: list[str] | None = None) -> list[tuple[str, float]]:
    """What a full rebuild from every stored row answers (no file, no earlier index)."""
    with store._read() as conn:
        index = sqlite_keywords.caught_up(conn, None, store.tenant, None)
        term_ids = sqlite_keywords._term_ids(conn, query_terms(query))
    return index.search(term_ids, k, allowed, K1, B)


def searched(store: SQLiteStore, query: str, k: int, filters: SearchFilter = EVERYTHING) -> list[tuple[str, float]]:
    return [(hit.chunk_id, hit.score) for hit in store.keyword_search(query, k, filters)]


def random_text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS[: rng.randint(3, len(WORDS))]) for _ in range(rng.randint(1, 12)))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("merging", [False, True])
def test_incremental_index_scores_exactly_as_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, merging: bool
) -> None:
    """Random adds, re-ingests and deletes; after each write the caught-up index returns the same
    ids, scores and order as a rebuild, with and without merges of the delta into the base."""
    if merging:
        monkeypatch.setattr(index_keywords, "MIN_DELTA_ROWS", 2)
        monkeypatch.setattr(index_keywords, "DELTA_SHARE", 2)
        monkeypatch.setattr(index_keywords, "DEAD_SHARE", 3)
        monkeypatch.setattr(segments, "MERGE_STEP", 3)  # several steps per merge
        monkeypatch.setattr(sqlite_keywords, "_BATCH_ROWS", 2)  # several batches per rebuild
    else:
        monkeypatch.setattr(index_keywords.KeywordIndex, "needs_merge", lambda self: False)
    rng = random.Random(seed)
    store = SQLiteStore(tmp_path / "kb.db")
    queries = ["alpha", "beta gamma", "kappa mu zeta", "title", "delta epsilon eta theta iota", "lambda d3"]
    documents: list[str] = []
    texts: dict[str, list[str]] = {}
    for step in range(30):
        if documents and rng.random() < 0.3:
            texts.pop(gone := documents.pop(rng.randrange(len(documents))))
            store.delete_document(gone)
        else:
            document_id = rng.choice(documents) if documents and rng.random() < 0.3 else f"d{step}"
            texts[document_id] = [random_text(rng) for _ in range(rng.randint(1, 4))]
            put(store, document_id, texts[document_id])
            documents = sorted(set(documents) | {document_id})
        live = [set(text.split()) for chunks in texts.values() for text in chunks]
        stats = store.term_statistics(" ".join(WORDS))  # document frequencies: from whatever layout, the live truth
        assert (stats.chunks, stats.frequencies) == (len(live), {w: sum(w in t for t in live) for w in WORDS}), step
        for query in queries:
            k = rng.choice([1, 3, 50])
            assert searched(store, query, k) == rebuilt_search(store, query, k), (step, query)
        if documents:
            allowed = rng.sample(documents, min(2, len(documents)))
            filtered = searched(store, "alpha beta", 50, SearchFilter(document_ids=tuple(allowed)))
            assert filtered == rebuilt_search(store, "alpha beta", 50, allowed)
    assert store._keywords is not None and store._keywords.rebuilds == 1
    assert store._keywords.merges > 0 if merging else store._keywords.merges == 0
    store.close()


def test_a_one_document_write_catches_up_without_a_rebuild(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kb.db")
    for i in range(20):
        put(store, f"d{i}", [f"alpha text {i}", "beta"])
    assert len(searched(store, "alpha", 50)) == 20
    before = store._keywords
    assert before is not None and before.rebuilds == 1 and before.delta.size == 0
    put(store, "new", ["alpha zebra"])
    assert searched(store, "zebra", 5)[0][0] == "new#0"
    after = store._keywords
    assert after is not None and after.rebuilds == 1 and after.delta.size == 1
    assert after.base is before.base  # the base segment was not rebuilt
    store.delete_document("d3")
    assert "d3#0" not in [chunk_id for chunk_id, _ in searched(store, "alpha", 50)]
    assert store._keywords is not None and store._keywords.rebuilds == 1
    store.close()


def test_a_reopened_store_maps_the_saved_base_and_catches_up(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    with SQLiteStore(path) as store:
        put(store, "d1", ["alpha", "beta"])
        expected = searched(store, "alpha beta", 5)
    segment = Path(f"{path}.indexes") / "default" / "keywords.segment"
    assert segment.is_file()
    with SQLiteStore(path) as writer:  # a write while no index is open: the saved base is behind
        put(writer, "d2", ["alpha gamma"])
    with SQLiteStore(path) as store:
        hits = searched(store, "alpha beta", 5)
        assert store._keywords is not None and store._keywords.rebuilds == 0
        assert hits == rebuilt_search(store, "alpha beta", 5)
        assert {chunk_id for chunk_id, _ in hits} == {chunk_id for chunk_id, _ in expected} | {"d2#0"}


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage", "empty"])
def test_a_missing_or_corrupt_saved_base_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "kb.db"
    with SQLiteStore(path) as store:
        put(store, "d1", ["alpha", "beta"])
        expected = searched(store, "alpha beta", 5)
    segment = Path(f"{path}.indexes") / "default" / "keywords.segment"
    data = segment.read_bytes()
    if damage == "delete":
        segment.unlink()
    elif damage == "truncate":
        segment.write_bytes(data[: len(data) - 70])
    elif damage == "garbage":
        segment.write_bytes(b"\x00garbage" * 50)
    else:
        segment.write_bytes(b"")
    with SQLiteStore(path) as store:
        assert searched(store, "alpha beta", 5) == expected
        assert store._keywords is not None and store._keywords.rebuilds == 1
    assert segment.read_bytes() == data  # written again


def test_a_saved_base_of_another_file_under_the_same_path_is_not_used(tmp_path: Path) -> None:
    """A database deleted and created anew reuses seqs: the saved base's last chunk tells them apart."""
    path = tmp_path / "kb.db"
    with SQLiteStore(path) as store:
        put(store, "old", ["alpha", "beta"])
        searched(store, "alpha", 5)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with SQLiteStore(path) as store:
        put(store, "new", ["alpha", "beta", "gamma"])
        assert [chunk_id for chunk_id, _ in searched(store, "alpha beta", 5)] == ["new#0", "new#1"]
        assert store._keywords is not None and store._keywords.rebuilds == 1


def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        put(first, "d1", ["alpha"])
        assert [c for c, _ in searched(second, "alpha", 5)] == ["d1#0"]
        put(second, "d2", ["alpha beta"])
        assert [c for c, _ in searched(first, "beta", 5)] == ["d2#0"]
        first.delete_document("d2")
        assert [c for c, _ in searched(second, "alpha beta", 5)] == ["d1#0"]
        assert searched(first, "alpha beta", 5) == searched(second, "alpha beta", 5) == rebuilt_search(first, "alpha beta", 5)
        assert first._keywords is not None and second._keywords is not None
        # second built the index and saved its base; first mapped that file and caught up from it
        assert (first._keywords.rebuilds, second._keywords.rebuilds) == (0, 1)


def test_tenants_and_filters_stay_apart_through_catch_up(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kb.db")
    other = store.for_tenant("other")
    put(store, "mine", ["alpha shared"])
    put(other, "theirs", ["alpha shared"])
    assert [c for c, _ in searched(store, "alpha", 5)] == ["mine#0"]
    assert [c for c, _ in searched(other, "alpha", 5)] == ["theirs#0"]
    put(other, "theirs2", ["alpha more"], collection="extra")
    other.delete_document("theirs")  # another tenant's deletions leave this index's rows alone
    assert [c for c, _ in searched(store, "alpha", 5)] == ["mine#0"]
    assert [c for c, _ in searched(other, "alpha", 5)] == ["theirs2#0"]
    put(store, "mine2", ["alpha again"], collection="extra")
    assert [c for c, _ in searched(store, "alpha", 5, SearchFilter.build(collections="extra"))] == ["mine2#0"]
    assert [c for c, _ in searched(store, "alpha", 5, SearchFilter(document_ids=("mine",)))] == ["mine#0"]
    assert searched(store, "alpha", 5, SearchFilter(document_ids=("theirs2",))) == []
    indexes = tmp_path / "kb.db.indexes"
    assert sorted(p.name for p in indexes.iterdir()) == ["default", "other"]
    store.close()


def test_compact_past_the_index_mark_rebuilds_it(tmp_path: Path) -> None:
    """An index whose mark lies below the emptied log's floor cannot catch up: it rebuilds, right."""
    path = tmp_path / "kb.db"
    with SQLiteStore(path) as reader, SQLiteStore(path) as writer:
        put(writer, "d1", ["alpha"])
        put(writer, "d2", ["alpha beta"])
        searched(reader, "alpha", 5)
        writer.delete_document("d1")
        writer.compact()
        assert [c for c, _ in searched(reader, "alpha", 5)] == ["d2#0"]
        assert reader._keywords is not None and reader._keywords.rebuilds == 2


def test_an_index_that_cannot_be_saved_still_searches(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "kb.db"
    Path(f"{path}.indexes").write_text("a file where the index directory would go")
    with SQLiteStore(path) as store:
        put(store, "d1", ["alpha"])
        assert [c for c, _ in searched(store, "alpha", 5)] == ["d1#0"]
        put(store, "d2", ["alpha beta"])
        assert [c for c, _ in searched(store, "beta", 5)] == ["d2#0"]
    assert "cannot save the keyword index" in caplog.text
