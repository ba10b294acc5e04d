"""The SQLite store's vector index at scale: the approximate base against exact search, catching
up with writes without a rebuild, rebuilding from the file when the saved index is unusable, and
never losing or resurrecting a document across a crash (real SQLite files, small clustered data,
the ANN threshold lowered so a few hundred rows take the approximate path)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sourcebook.index import ann
from sourcebook.models import Chunk, DocumentStatus, SearchFilter
from sourcebook.stores import SQLiteStore

DIM = 32
CENTERS = 12
EVERYTHING = SearchFilter()
ANN = 50  # rows above which the test stores take the approximate path (the seeded set has ~600)
EXACT = 10**9


def vectors_near(rng: np.random.Generator, centers: np.ndarray, count: int, noise: float) -> np.ndarray:
    picked = centers[rng.integers(len(centers), size=count)] + noise * rng.standard_normal((count, DIM))
    return (picked / np.linalg.norm(picked, axis=1, keepdims=True)).astype(np.float32)


def put(store: SQLiteStore, document_id: str, vectors: np.ndarray, windows: list[np.ndarray], team: str = "red") -> None:
    store.upsert_document(document_id, collection="docs", source=document_id, title=document_id, media_type="text/plain",
                          metadata={"team": team}, status=DocumentStatus.PROCESSING)
    chunks = [Chunk(i, f"text {i}", 0, 6, (), None, 2, "") for i in range(len(vectors))]
    store.replace_chunks(document_id, content_hash=document_id + str(vectors.sum()), title=document_id,
                         chunks=chunks, vectors=vectors, windows=windows)


def seed(store: SQLiteStore, documents: int = 40, seed_value: int = 0) -> np.ndarray:
    """Clustered documents of 5 chunks with 2 window vectors each (about 15 rows a document)."""
    rng = np.random.default_rng(seed_value)
    centers = rng.standard_normal((CENTERS, DIM))
    store.ensure_collection("docs", "model", DIM)
    for d in range(documents):
        vectors = vectors_near(rng, centers, 5, 0.3)
        windows = [vectors_near(rng, vector[None, :], 2, 0.1) for vector in vectors]
        put(store, f"doc{d:03d}", vectors, windows, team="red" if d % 2 else "blue")
    return centers


def open_store(path: Path, ann_min_rows: int) -> SQLiteStore:
    store = SQLiteStore(path)
    store.ann_min_rows = ann_min_rows
    return store


def ids(store: SQLiteStore, query: np.ndarray, k: int = 10, filters: SearchFilter = EVERYTHING) -> list[str]:
    return [hit.chunk_id for hit in store.vector_search(query, k, filters)]


def assert_same_hits(approximate: SQLiteStore, exact: SQLiteStore, query: np.ndarray, k: int, filters: SearchFilter) -> None:
    """The approximate path's top k is the exact one's, up to float16 ties (scores within 2e-3),
    and each of its hits is an allowed chunk with its exact score."""
    every = {h.chunk_id: h.score for h in exact.vector_search(query, 10_000, filters)}
    found = approximate.vector_search(query, k, filters)
    for hit in found:
        assert hit.score == pytest.approx(every[hit.chunk_id], abs=2e-3)
    ranked = sorted(every.values(), reverse=True)
    boundary = ranked[k] if len(ranked) > k else -1.0
    certain = {chunk for chunk, score in every.items() if score > boundary + 2e-3}
    assert certain <= {hit.chunk_id for hit in found}


def index_of(store: SQLiteStore):  # noqa: ANN201 (the store's private index, for its counters)
    assert store._index is not None
    return store._index


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "kb.db"


@pytest.fixture
def seeded(db_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore, np.ndarray]]:
    """(approximate store, exact store) on one seeded file, and queries near its clusters."""
    with open_store(db_path, ANN) as approximate, open_store(db_path, EXACT) as exact:
        centers = seed(approximate)
        queries = vectors_near(np.random.default_rng(99), centers, 30, 0.3)
        yield approximate, exact, queries


def test_the_approximate_path_finds_what_exact_search_finds(seeded: tuple[SQLiteStore, SQLiteStore, np.ndarray]) -> None:
    approximate, exact, queries = seeded
    recalled = []
    for query in queries:
        found = approximate.vector_search(query, 10, EVERYTHING)
        expected = exact.vector_search(query, 10, EVERYTHING)
        recalled.append(len({h.chunk_id for h in found} & {h.chunk_id for h in expected}) / 10)
        scores = {h.chunk_id: h.score for h in expected}
        for hit in found:
            if hit.chunk_id in scores:  # rescored from every row of the chunk, in float16
                assert hit.score == pytest.approx(scores[hit.chunk_id], abs=2e-3)
    assert index_of(approximate).partitions[DIM].base is not None
    assert index_of(exact).partitions[DIM].base is None
    assert np.mean(recalled) >= 0.95


@pytest.fixture(params=["default", "few"])
def candidates(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The base's default candidate count (at the seeded size every chunk is rescored), or few
    enough that the graph answers (the ~200-chunk base would otherwise never be searched)."""
    if request.param == "few":
        monkeypatch.setattr(ann, "MIN_CANDIDATES", 20)
        monkeypatch.setattr(ann, "CANDIDATE_FACTOR", 2)
    return str(request.param)


@pytest.mark.parametrize("filters", [
    SearchFilter(metadata=(("team", "red"),)),
    SearchFilter(document_ids=("doc003", "doc017", "doc030")),  # selective: the scan of the allowed rows
    SearchFilter(collections=("docs",)),
])
def test_filters_give_the_exact_search_hits(
    seeded: tuple[SQLiteStore, SQLiteStore, np.ndarray], filters: SearchFilter, candidates: str
) -> None:
    approximate, exact, queries = seeded
    for query in queries:
        assert_same_hits(approximate, exact, query, 5, filters)
    allowed = set(filters.document_ids) or None
    for query in queries:
        hits = ids(approximate, query, 5, filters)
        assert hits
        if allowed is not None:
            assert {hit.split("#")[0] for hit in hits} <= allowed


def test_writes_are_caught_up_without_a_rebuild(
    seeded: tuple[SQLiteStore, SQLiteStore, np.ndarray], candidates: str
) -> None:
    approximate, exact, queries = seeded
    first = ids(approximate, queries[0])
    index = index_of(approximate)
    assert (index.full_loads, index.builds) == (1, 1)
    target = np.zeros(DIM, np.float32)
    target[0] = 1.0
    put(approximate, "new", target[None, :], [np.zeros((0, DIM), np.float32)])
    assert ids(approximate, target, 1) == ["new#0"]
    approximate.delete_document(first[0].split("#")[0])
    assert not {hit.split("#")[0] for hit in ids(approximate, queries[0], 50)} & {first[0].split("#")[0]}
    assert (index.full_loads, index.builds) == (1, 1)
    for query in queries:
        assert_same_hits(approximate, exact, query, 10, EVERYTHING)


def test_a_saved_index_is_reopened_not_rebuilt(db_path: Path) -> None:
    with open_store(db_path, ANN) as store:
        seed(store)
        expected = ids(store, np.ones(DIM, np.float32))
    with open_store(db_path, ANN) as reopened:
        assert ids(reopened, np.ones(DIM, np.float32)) == expected
        assert index_of(reopened).builds == 0
        assert index_of(reopened).partitions[DIM].base is not None


@pytest.mark.parametrize("damage", ["missing", "corrupt", "truncated meta"])
def test_an_unusable_saved_index_is_rebuilt(db_path: Path, damage: str) -> None:
    with open_store(db_path, ANN) as store:
        seed(store)
        expected = ids(store, np.ones(DIM, np.float32))
    root = Path(f"{db_path}.indexes") / "default"
    (base,) = [entry for entry in root.iterdir() if entry.is_dir()]
    if damage == "missing":
        shutil.rmtree(base)
    elif damage == "corrupt":
        (base / "index.usearch").write_bytes(b"\x00" * 100)
    else:
        (base / "meta.json").write_text('{"format": 1, "rows"')
    with open_store(db_path, ANN) as reopened:
        assert ids(reopened, np.ones(DIM, np.float32)) == expected
        assert index_of(reopened).builds == 1


def test_an_index_of_a_replaced_database_is_not_used(db_path: Path) -> None:
    with open_store(db_path, ANN) as store:
        seed(store, seed_value=1)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    with open_store(db_path, ANN) as store:  # a new file at the same path, same seqs, other vectors
        seed(store, seed_value=2)
        expected = ids(open_store(db_path, EXACT), np.ones(DIM, np.float32))
        assert ids(store, np.ones(DIM, np.float32)) == expected
        assert index_of(store).builds == 1


def test_a_crash_after_the_commit_neither_loses_nor_resurrects(db_path: Path) -> None:
    """The index saved before the writes is older than the file: catching up from its mark
    shows the added document and not the deleted one, also after compact emptied the log."""
    with open_store(db_path, ANN) as store:
        seed(store)
        victim = ids(store, np.ones(DIM, np.float32))[0].split("#")[0]
    target = np.zeros(DIM, np.float32)
    target[1] = 1.0
    with open_store(db_path, EXACT) as writer:  # commits, never touches the saved index
        writer.delete_document(victim)
        put(writer, "added", target[None, :], [np.zeros((0, DIM), np.float32)])
    with open_store(db_path, ANN) as reopened:
        assert ids(reopened, target, 1) == ["added#0"]
        assert victim not in {hit.split("#")[0] for hit in ids(reopened, np.ones(DIM, np.float32), 200)}
        assert index_of(reopened).builds == 0
        reopened.compact()
    with open_store(db_path, ANN) as after_compact:
        assert victim not in {hit.split("#")[0] for hit in ids(after_compact, np.ones(DIM, np.float32), 200)}
        assert ids(after_compact, target, 1) == ["added#0"]
        assert index_of(after_compact).builds == 0  # the log is gone: its dead rows come from comparing seqs, no rebuild


def test_two_stores_on_one_file_see_each_others_writes(db_path: Path) -> None:
    with open_store(db_path, ANN) as one, open_store(db_path, ANN) as two:
        seed(one)
        ids(one, np.ones(DIM, np.float32))
        ids(two, np.ones(DIM, np.float32))
        target = np.zeros(DIM, np.float32)
        target[2] = 1.0
        put(one, "from-one", target[None, :], [np.zeros((0, DIM), np.float32)])
        assert ids(two, target, 1) == ["from-one#0"]
        two.delete_document("from-one")
        assert "from-one#0" not in ids(one, target, 5)


def test_a_due_rebuild_runs_beside_searches_and_is_swapped_in(seeded: tuple[SQLiteStore, SQLiteStore, np.ndarray]) -> None:
    """A base outgrown by its delta is rebuilt on the index's thread, not inside the search that
    finds it due; the next search swaps it in, flags what was deleted after its snapshot and
    keeps in the delta only the rows written after it."""
    approximate, exact, queries = seeded
    ids(approximate, queries[0])
    index = index_of(approximate)
    assert index.builds == 1
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((CENTERS, DIM))
    for number in range(4):  # 60 rows: past the delta's share of the ~600-row base
        vectors = vectors_near(rng, centers, 5, 0.3)
        put(approximate, f"late{number}", vectors, [vectors_near(rng, v[None, :], 2, 0.1) for v in vectors])
    ids(approximate, queries[1])
    assert index.builds == 1  # the search that found the rebuild due did not build
    index.wait_for_rebuilds(60)
    approximate.delete_document("late0")  # deleted after the rebuild's snapshot: must not come back
    target = np.zeros(DIM, np.float32)
    target[0] = 1.0
    put(approximate, "newest", target[None, :], [np.zeros((0, DIM), np.float32)])
    assert ids(approximate, target, 1) == ["newest#0"]
    assert index.builds == 2
    assert len(index.partitions[DIM].delta) == 1  # only the row written after the rebuild's snapshot
    assert not any(hit.startswith("late0#") for hit in ids(approximate, queries[0], 10_000))
    for query in queries[:10]:
        assert_same_hits(approximate, exact, query, 10, EVERYTHING)


def test_the_graph_holds_one_node_per_chunk_and_windows_score_through_it(
    seeded: tuple[SQLiteStore, SQLiteStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph has a node per chunk (its own vector), not per row: a chunk's windows are read
    only to rescore it, so its best window still decides its score and rank. Few candidates
    are asked for here, so the graph (not the scan of every chunk) answers."""
    monkeypatch.setattr(ann, "MIN_CANDIDATES", 20)
    monkeypatch.setattr(ann, "CANDIDATE_FACTOR", 2)
    monkeypatch.setattr(ann, "EXPANSION_CHUNKS", 50)  # a large graph: ef grows with it
    approximate, exact, queries = seeded
    target = np.zeros(DIM, np.float32)
    target[3] = 1.0
    near = target + 0.3 * np.random.default_rng(5).standard_normal(DIM).astype(np.float32)
    put(approximate, "windowed", (near / np.linalg.norm(near))[None, :], [target[None, :]])
    ids(approximate, queries[0])  # builds the base, the windowed chunk in it
    base = index_of(approximate).partitions[DIM].base
    assert base is not None and len(base.index) == len(base.seqs) < len(base)
    asked = []
    search = base.index.search
    monkeypatch.setattr(base.index, "search", lambda *args, **kwargs: asked.append(args[1]) or search(*args, **kwargs))
    hit = approximate.vector_search(target, 1, EVERYTHING)[0]
    assert (hit.chunk_id, round(hit.score, 3)) == ("windowed#0", 1.0)
    for query in queries:
        assert_same_hits(approximate, exact, query, 10, EVERYTHING)
    assert asked and max(asked) < len(base.seqs)
    assert base.index.expansion_search == ann.EXPANSION_SEARCH * len(base.seqs) // 50
