"""What changed in the chunks since an index was built: the catch-up log of the derived indexes.

SQLite is the truth; the vector and keyword indexes are derived from it (DESIGN.md, "Storage").
Rebuilding one from every row after each write costs the corpus's size (31 s at 100k chunks), so
an index records a `ChangeMark` (the chunk seqs and deletions it reflects) and catches up by
reading only what came after it:

* added chunks are those with ``seq > mark.chunk_seq``: ``chunks.seq`` is AUTOINCREMENT, never
  reused, and SQLite has one writer at a time, so a snapshot never shows a gap that fills later;
* removed chunks are the ``chunk_deletions`` rows after ``mark.deletion_id``, written by a trigger
  on every delete of a chunk (a document's re-ingest, its deletion, a collection's, cascades).

`compact` empties the log and raises its floor; an index whose mark lies below the floor can no
longer catch up and rebuilds (`deletions_since` returns None). A rewritten chunk is a deletion
plus an addition, so no change escapes the two counters.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, order=True)
class ChangeMark:
    """The position of an index in the file's history: the last chunk seq and deletion it reflects."""

    chunk_seq: int
    deletion_id: int


def current_mark(conn: sqlite3.Connection) -> ChangeMark:
    """The file's position now (inside the read transaction that reads the rows the index takes)."""
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
    deletion = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunk_deletions'").fetchone()
    floor = _deletion_floor(conn)
    return ChangeMark(int(seq[0]) if seq else 0, max(int(deletion[0]) if deletion else 0, floor))


def deletions_since(conn: sqlite3.Connection, mark: ChangeMark) -> np.ndarray | None:
    """Seqs of the chunks deleted after `mark` (int64, any tenant's), or None when the log was
    emptied past it and the index must rebuild from the rows."""
    if mark.deletion_id < _deletion_floor(conn):
        return None
    rows = conn.execute("SELECT chunk_seq FROM chunk_deletions WHERE id > ?", (mark.deletion_id,)).fetchall()
    return np.fromiter((seq for (seq,) in rows), dtype=np.int64, count=len(rows))


def clear_deletion_log(conn: sqlite3.Connection) -> int:
    """Empty the log (in `compact`'s write transaction); indexes older than now rebuild. How many rows."""
    last = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunk_deletions'").fetchone()
    removed = conn.execute("DELETE FROM chunk_deletions").rowcount
    if last:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'deletion_log_floor'", (int(last[0]),))
    return removed


def _deletion_floor(conn: sqlite3.Connection) -> int:
    """The last deletion id `compact` dropped from the log: marks below it cannot catch up."""
    return int(conn.execute("SELECT value FROM meta WHERE key = 'deletion_log_floor'").fetchone()[0])
