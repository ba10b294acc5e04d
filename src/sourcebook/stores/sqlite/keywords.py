"""Keyword search on the SQLite store: the postings of index/keywords.py, caught up on each search.

Every search first brings the tenant's index to the file's current `ChangeMark` inside its
read transaction (changes.py): the chunks with a higher seq join the delta segment, the
logged deletions clear live bits. That also sees other processes' writes, so several
processes on one file each stay correct. The index is rebuilt from every stored term row
only when it cannot catch up: none yet and no usable saved base, the deletion log was
compacted past its mark, or the saved base belongs to another history of the file.

The base segment is saved beside the database, in ``<db>.indexes/<tenant>/keywords.segment``,
so a cold open maps it instead of rebuilding (a ":memory:" database keeps it in memory);
a missing, unreadable or stale file is rebuilt and rewritten. The query's terms are looked
up in the vocabulary table, so the index holds no vocabulary; the numpy scoring runs outside
the connection's lock on an immutable snapshot.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from dataclasses import replace
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ...index.keywords import DocumentTable, KeywordIndex
from ...index.segments import ChunkRow, Segment, SegmentFileError, load, save
from ...models import ScoredId, SearchFilter, TermStatistics
from ..bm25 import B, K1, query_terms
from ..common import check_k
from ..sql.base import SharedSql
from .changes import ChangeMark, current_mark, deletions_since
from .filters import allowed_documents

_log = logging.getLogger(__name__)

_BATCH_ROWS = 50_000
"""Rows read into Python objects at a time; each batch is compacted into a segment before the next."""

SEGMENT_FORMAT = 1
"""Bumped when what a saved segment means changes (the file is then rebuilt)."""

_ROWS_AFTER = """SELECT c.seq, c.id, c.document_id, t.length, t.term_ids, t.counts
    FROM chunks c CROSS JOIN documents d CROSS JOIN chunk_terms t
    WHERE c.seq > ? AND d.id = c.document_id AND d.tenant = ? AND t.chunk_seq = c.seq
    ORDER BY c.seq"""
"""The tenant's chunks above a seq with their term counts, driven by the chunks' seq range (the
CROSS JOINs keep SQLite from starting at all of the tenant's documents)."""


class SQLiteKeywords(SharedSql):
    """The keyword half of the `SearchStore` role."""

    _keywords: KeywordIndex | None
    _keyword_lock: threading.Lock

    def keyword_search(self, query: str, k: int, filters: SearchFilter) -> list[ScoredId]:
        """BM25 over title, heading path and text (what a chunk's prefix + text hold).

        Terms are OR-ed: a chunk sharing any term with the query is a candidate.
        """
        check_k(k)
        terms = query_terms(query)
        with self._keyword_lock, self._read() as conn:
            index = self._keywords = caught_up(conn, self._keywords, self.tenant, self._keyword_file())
            term_ids = _term_ids(conn, terms)
            allowed = allowed_documents(conn, self.tenant, filters)
        if allowed == []:
            return []
        hits = index.search(term_ids, k, allowed, K1, B)
        return [ScoredId(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(hits, 1)]

    def term_statistics(self, query: str) -> TermStatistics:
        """The tenant's live chunk count and each query term's document frequency, read from the
        caught-up index (the postings `keyword_search` scores with), never from the vocabulary
        table alone: that table is shared by every tenant of the file."""
        terms = query_terms(query)
        with self._keyword_lock, self._read() as conn:
            index = self._keywords = caught_up(conn, self._keywords, self.tenant, self._keyword_file())
            ids = _term_id_map(conn, terms)
        known = [t for t in terms if t in ids]
        counts = dict(zip(known, index.document_frequencies([ids[t] for t in known]), strict=True))
        return TermStatistics(index.live_count, {t: counts.get(t, 0) for t in terms})

    def _keyword_file(self) -> Path | None:
        """Where this tenant's base segment is saved; None for an in-memory database."""
        if self.path == ":memory:":
            return None
        return Path(f"{self.path}.indexes") / self.tenant / "keywords.segment"


def caught_up(conn: sqlite3.Connection, index: KeywordIndex | None, tenant: str, file: Path | None) -> KeywordIndex:
    """`index` brought to the file's current mark (inside the caller's read transaction): caught
    up from the change log when it can be, else loaded from `file` or rebuilt (and saved)."""
    mark = current_mark(conn)
    if index is None:
        index = _saved(conn, tenant, file, mark)
    if index is not None and index.mark == mark:
        return index
    deleted = None if index is None or not _behind(index.mark, mark) else deletions_since(conn, index.mark)
    if index is None or deleted is None:
        rebuilds = 0 if index is None else index.rebuilds
        rows = _rows_after(conn, tenant, 0)
        updated = KeywordIndex.build(mark, rows, rebuilds)
    else:
        updated = index.caught_up(mark, _rows_after(conn, tenant, index.mark.chunk_seq), deleted)
    if updated.unsaved_base:  # just built or merged: the base is every live row at the mark
        mapped = None if file is None else _saved_and_mapped(file, updated, tenant)
        updated = replace(updated, base=mapped or updated.base, unsaved_base=False)
    return updated


def _saved_and_mapped(file: Path, index: KeywordIndex, tenant: str) -> Segment | None:
    """Save the base and map it back, so its pages are the file's (the kernel may drop them)
    rather than process memory. A failure (read-only directory, full disk) costs a rebuild at
    the next cold open, never a search, so it is logged rather than raised; None then."""
    try:
        return save(file, index.base, index.documents.ordered(), _description(index.mark, tenant, index))
    except (OSError, SegmentFileError) as exc:
        _log.warning("cannot save the keyword index to %s (%s); it is rebuilt at the next open", file, exc)
        return None


def _behind(old: ChangeMark, new: ChangeMark) -> bool:
    """`old` is a past position of the file that reads `new` now (else the file was replaced)."""
    return old.chunk_seq <= new.chunk_seq and old.deletion_id <= new.deletion_id


def _rows_after(conn: sqlite3.Connection, tenant: str, seq: int) -> Iterator[list[ChunkRow]]:
    """The tenant's chunks with a seq above `seq`, ascending, in batches (a rebuild reads them all)."""
    cursor = conn.execute(_ROWS_AFTER, (seq, tenant))
    while batch := cursor.fetchmany(_BATCH_ROWS):
        yield [
            ChunkRow(seq, chunk_id, document_id, length, np.frombuffer(term_ids, dtype=np.int32),
                     np.frombuffer(counts, dtype=np.int32))
            for seq, chunk_id, document_id, length, term_ids, counts in batch
        ]


def _term_ids(conn: sqlite3.Connection, terms: list[str]) -> list[int]:
    """Vocabulary ids of the query's terms that some chunk holds, in query order."""
    found = _term_id_map(conn, terms)
    return [found[t] for t in terms if t in found]


def _term_id_map(conn: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    """Vocabulary id of each of `terms` the vocabulary holds (of any tenant)."""
    if not terms:
        return {}
    return dict(conn.execute("SELECT term, id FROM terms WHERE term IN (SELECT value FROM json_each(?))",
                             (json.dumps(terms),)))


def _description(mark: ChangeMark, tenant: str, index: KeywordIndex) -> dict[str, object]:
    """What a saved base says about itself: the mark it reflects and its last chunk (to tell a
    file replaced under the same path from the one the segment was built from)."""
    base = index.base
    last = [int(base.seqs[-1]), base.chunk_ids(np.array([base.size - 1]))[0]] if base.size else None
    return {"format": SEGMENT_FORMAT, "tenant": tenant, "mark": [mark.chunk_seq, mark.deletion_id], "last": last}


def _saved(conn: sqlite3.Connection, tenant: str, file: Path | None, mark: ChangeMark) -> KeywordIndex | None:
    """The saved base as an index, if it is this tenant's and a past state of this file; else None."""
    if file is None:
        return None
    try:
        base, documents, description = load(file)
        saved_mark = ChangeMark(*(int(v) for v in description["mark"]))
        matches = description.get("format") == SEGMENT_FORMAT and description.get("tenant") == tenant
    except (SegmentFileError, KeyError, TypeError, ValueError):
        return None
    if not matches or not _behind(saved_mark, mark) or not _same_history(conn, description.get("last"), saved_mark):
        return None
    return KeywordIndex.from_base(saved_mark, base, DocumentTable(documents))


def _same_history(conn: sqlite3.Connection, last: object, mark: ChangeMark) -> bool:
    """The segment's last chunk is still in the file under its id, or was deleted after its mark."""
    if last is None:
        return True
    seq, chunk_id = last  # type: ignore[misc]
    row = conn.execute("SELECT id FROM chunks WHERE seq = ?", (seq,)).fetchone()
    if row is not None:
        return bool(row[0] == chunk_id)
    deleted = deletions_since(conn, mark)
    return deleted is not None and bool(np.isin(seq, deleted))
