"""The analysed term counts of each chunk, written in the chunk's own transaction.

Keyword search reads them (index/keywords.py builds its postings from these rows and catches
up from the new ones), so a write analyses only its own chunks and an index never re-analyses
text. The vocabulary (`terms`) is shared by every tenant of the file; the analyser is
stores/bm25.py's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np

from ..bm25 import term_counts
from ..common import indexed_text


def backfill_terms(conn: sqlite3.Connection) -> None:
    """Term counts for chunks written before keyword search used them (migration 3)."""
    rows = conn.execute(
        "SELECT c.seq, d.title, c.heading_path, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
    ).fetchall()
    index_terms(conn, [(seq, indexed_text(title, tuple(json.loads(path)), text)) for seq, title, path, text in rows])


def index_terms(conn: sqlite3.Connection, texts: Sequence[tuple[int, str]]) -> None:
    """Store the analysed term counts of chunks, given as (chunk seq, indexed text)."""
    rows = [(seq, *term_counts(text)) for seq, text in texts]
    vocabulary = _term_ids(conn, {term for _, counts, _ in rows for term in counts})
    conn.executemany(
        "INSERT INTO chunk_terms (chunk_seq, length, term_ids, counts) VALUES (?, ?, ?, ?)",
        [
            (seq, length, np.array([vocabulary[t] for t in counts], dtype=np.int32).tobytes(),
             np.array(list(counts.values()), dtype=np.int32).tobytes())
            for seq, counts, length in rows
        ],
    )


def drop_unused_terms(conn: sqlite3.Connection) -> int:
    """Delete the vocabulary's terms no chunk of any tenant holds (the table is shared); how many.

    A deleted id may be given to a new term later, which is safe: no chunk holds it, and
    the caller bumps the generation so in-memory indexes reload the vocabulary."""
    used: set[int] = set()
    for (term_ids,) in conn.execute("SELECT term_ids FROM chunk_terms"):
        used.update(np.frombuffer(term_ids, dtype=np.int32).tolist())
    unused = [term_id for (term_id,) in conn.execute("SELECT id FROM terms") if term_id not in used]
    conn.executemany("DELETE FROM terms WHERE id = ?", [(term_id,) for term_id in unused])
    return len(unused)


def _term_ids(conn: sqlite3.Connection, terms: set[str]) -> dict[str, int]:
    """Ids of `terms` in the vocabulary table, adding the new ones."""
    conn.executemany("INSERT OR IGNORE INTO terms (term) VALUES (?)", [(t,) for t in terms])
    query = "SELECT term, id FROM terms WHERE term IN (SELECT value FROM json_each(?))"
    return dict(conn.execute(query, (json.dumps(sorted(terms)),)))
