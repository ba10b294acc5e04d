"""BM25 keyword search from an in-memory inverted index.

Why not SQLite FTS5 (the first design): an OR query makes FTS5 compute bm25() for
every chunk matching any term, and after stopword removal common terms still match
a large share of chunks: at 100,000 chunks that measured 60-80 ms per query (p50),
three times the whole hybrid-search budget. Here each chunk's analysed term counts
are stored once at write time (`chunk_terms`) and loaded into
postings arrays: a query sums a few posting lists with numpy, about 1 ms at SciFact
size, and ranks as well (SciFact nDCG@10 0.685 vs FTS5's 0.681).

The analyser and the BM25 formula are stores/bm25.py's. This module also writes the
term counts (`index_terms`, in the chunk's own transaction).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..bm25 import B, K1, query_terms, term_counts
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


@dataclass(frozen=True)
class KeywordIndex:
    """Postings of every term (rows sorted by term id) with precomputed BM25 term weights.

    `weights[j]` is the length-normalised tf part of BM25 for posting j; a query
    multiplies by idf and sums per row with one bincount.
    """

    generation: int
    vocabulary: dict[str, int]
    chunk_ids: tuple[str, ...]
    row_document: np.ndarray  # (rows,) int32 document code per chunk row
    document_codes: dict[str, int]
    offsets: np.ndarray  # (terms + 1,) int64: postings of term t are [offsets[t], offsets[t+1])
    posting_rows: np.ndarray  # int32
    weights: np.ndarray  # float32
    idf: np.ndarray  # (terms,) float32

    @classmethod
    def build(
        cls,
        generation: int,
        vocabulary: dict[str, int],
        chunks: Iterable[tuple[str, str, int, bytes, bytes]],
    ) -> KeywordIndex:
        """From rows of (chunk id, document id, length, term ids blob int32, counts blob int32)."""
        chunk_ids: list[str] = []
        documents: list[int] = []
        document_codes: dict[str, int] = {}
        lengths: list[int] = []
        term_parts: list[np.ndarray] = []
        count_parts: list[np.ndarray] = []
        for chunk_id, document_id, length, term_blob, count_blob in chunks:
            chunk_ids.append(chunk_id)
            documents.append(document_codes.setdefault(document_id, len(document_codes)))
            lengths.append(length)
            term_parts.append(np.frombuffer(term_blob, dtype=np.int32))
            count_parts.append(np.frombuffer(count_blob, dtype=np.int32))
        n_terms = max(vocabulary.values(), default=-1) + 1
        sizes = np.fromiter((len(p) for p in term_parts), dtype=np.int64, count=len(term_parts))
        rows = np.repeat(np.arange(len(chunk_ids), dtype=np.int32), sizes)
        terms = np.concatenate(term_parts) if term_parts else np.zeros(0, dtype=np.int32)
        counts = np.concatenate(count_parts).astype(np.float32) if count_parts else np.zeros(0, dtype=np.float32)
        order = np.argsort(terms, kind="stable")
        terms, rows, counts = terms[order], rows[order], counts[order]
        document_frequency = np.bincount(terms, minlength=n_terms)
        offsets = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(document_frequency, out=offsets[1:])
        length_array = np.asarray(lengths, dtype=np.float32)
        average = float(length_array.mean()) if len(length_array) else 1.0
        norm = K1 * (1 - B + B * length_array[rows] / max(average, 1e-9))
        weights = (counts * (K1 + 1) / (counts + norm)).astype(np.float32)
        n = len(chunk_ids)
        idf = np.maximum(np.log((n - document_frequency + 0.5) / (document_frequency + 0.5)), 1e-6)
        return cls(
            generation, vocabulary, tuple(chunk_ids), np.asarray(documents, dtype=np.int32), document_codes,
            offsets, rows, weights, idf.astype(np.float32),
        )

    def search(self, query: str, k: int, allowed_documents: list[str] | None) -> list[tuple[str, float]]:
        """Top-k (chunk id, BM25) of chunks sharing a term with the query, best first."""
        ids = [self.vocabulary[t] for t in query_terms(query) if t in self.vocabulary]
        if not ids or not self.chunk_ids:
            return []
        rows = np.concatenate([self.posting_rows[self.offsets[t] : self.offsets[t + 1]] for t in ids])
        contributions = np.concatenate(
            [self.weights[self.offsets[t] : self.offsets[t + 1]] * self.idf[t] for t in ids]
        )
        scores = np.bincount(rows, weights=contributions, minlength=len(self.chunk_ids))
        candidates = np.flatnonzero(scores)  # every matched row scores > 0 (idf is floored above 0)
        if allowed_documents is not None:
            mask = np.zeros(len(self.document_codes), dtype=bool)
            mask[[self.document_codes[d] for d in allowed_documents if d in self.document_codes]] = True
            candidates = candidates[mask[self.row_document[candidates]]]
        if len(candidates) > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        ranked = candidates[np.lexsort((candidates, -scores[candidates]))]
        return [(self.chunk_ids[row], float(scores[row])) for row in ranked]
