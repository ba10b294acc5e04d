"""The catch-up log the derived indexes read (stores/sqlite/changes.py), on a real file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sourcebook.models import Chunk
from sourcebook.stores.sqlite import SQLiteStore
from sourcebook.stores.sqlite.changes import current_mark, deletions_since


def _chunks(text: str, n: int) -> list[Chunk]:
    return [Chunk(i, f"{text} {i}", 0, len(text), ("A",), None, 3, "") for i in range(n)]


def _add(store: SQLiteStore, document_id: str, n: int) -> None:
    store.ensure_collection("c", "model", 4)
    store.upsert_document(document_id, collection="c", source=f"{document_id}.md", title=document_id,
                          media_type="text/markdown", metadata={}, status="processing")
    store.replace_chunks(document_id, content_hash=f"{document_id}{n}", title=document_id,
                         chunks=_chunks(document_id, n), vectors=np.eye(4, dtype=np.float32)[:n])


def _seqs(store: SQLiteStore, document_id: str) -> list[int]:
    with store._read() as conn:
        return [seq for (seq,) in conn.execute("SELECT seq FROM chunks WHERE document_id = ? ORDER BY seq", (document_id,))]


def test_a_mark_sees_later_additions_and_every_deletion(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kb.db")
    _add(store, "a", 2)
    with store._read() as conn:
        mark = current_mark(conn)
    old = _seqs(store, "a")
    assert mark.chunk_seq == max(old)
    _add(store, "a", 3)  # a re-ingest: every old chunk deleted, three new ones after the mark
    store.delete_document("a")
    with store._read() as conn:
        deleted = deletions_since(conn, mark)
        now = current_mark(conn)
    assert deleted is not None and sorted(deleted.tolist()) == sorted(old + list(range(mark.chunk_seq + 1, now.chunk_seq + 1)))
    assert now > mark


def test_compact_empties_the_log_and_older_marks_must_rebuild(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kb.db")
    _add(store, "a", 2)
    with store._read() as conn:
        before = current_mark(conn)
    store.delete_document("a")
    store.compact()
    with store._read() as conn:
        assert deletions_since(conn, before) is None
        after = current_mark(conn)
        assert deletions_since(conn, after) is not None and len(deletions_since(conn, after)) == 0
    _add(store, "b", 1)
    store.delete_document("b")
    with store._read() as conn:
        assert len(deletions_since(conn, after)) == 1
