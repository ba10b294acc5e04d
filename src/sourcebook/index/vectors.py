"""Vector rows in memory and exact search over them: the small-collection path and the ANN's delta.

A *row* is one vector of a chunk: the chunk's own, or one of its sentence windows'. Rows come
grouped by chunk and in ascending chunk ``seq`` (the store reads them in that order, and
``seq`` only grows), so a chunk's rows are contiguous and the rows' seqs are sorted: a chunk
scores the best of its rows with one ``maximum.reduceat``, and deleting a chunk finds its rows
with a binary search.

`ExactRows` holds float32 rows exactly as stored, so its scores are the exact search's. It
grows by appending blocks (a write adds one document's rows, not a copy of the matrix) and
shrinks by dropping the rows of deleted chunks; the blocks are joined lazily at the next search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RowBatch:
    """Rows read from the store, grouped by chunk in ascending seq, each chunk's own vector first
    (then its windows'): what the indexes are fed; the approximate base graphs the first rows."""

    vectors: np.ndarray  # (n, dimension) float32
    seqs: np.ndarray  # (n,) int64: the chunk seq of each row, non-decreasing
    documents: list[str]  # (n,) the document id of each row


@dataclass(frozen=True)
class ChunkScores:
    """Chunks (by seq) and their scores, in no particular order."""

    seqs: np.ndarray  # int64
    scores: np.ndarray  # float32

    @staticmethod
    def empty() -> ChunkScores:
        return ChunkScores(np.zeros(0, np.int64), np.zeros(0, np.float32))


class DocumentCodes:
    """Document ids as small integers, so a filter becomes one boolean lookup per row."""

    def __init__(self, ids: list[str] | None = None) -> None:
        self.ids: list[str] = list(ids or [])
        self.codes: dict[str, int] = {document: code for code, document in enumerate(self.ids)}

    def encode(self, documents: list[str]) -> np.ndarray:
        codes = self.codes
        for document in documents:
            if document not in codes:
                codes[document] = len(self.ids)
                self.ids.append(document)
        return np.fromiter((codes[d] for d in documents), dtype=np.int32, count=len(documents))

    def allowed_mask(self, allowed: list[str]) -> np.ndarray:
        """One flag per code: is that document among `allowed`."""
        mask = np.zeros(len(self.ids), dtype=bool)
        mask[[self.codes[d] for d in allowed if d in self.codes]] = True
        return mask


class ExactRows:
    """A growable set of float32 rows of one dimension, searched exactly."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.documents = DocumentCodes()
        self._vectors = np.zeros((0, dimension), np.float32)
        self._seqs = np.zeros(0, np.int64)
        self._codes = np.zeros(0, np.int32)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def __len__(self) -> int:
        return len(self._seqs) + sum(len(seqs) for _, seqs, _ in self._pending)

    def add(self, batch: RowBatch) -> None:
        """Append rows whose seqs are above every row held (the store's catch-up order)."""
        if len(batch.seqs):
            self._pending.append((batch.vectors, batch.seqs, self.documents.encode(batch.documents)))

    def remove(self, deleted: np.ndarray) -> int:
        """Drop the rows of the chunks whose seqs are in `deleted` (sorted int64); how many rows went."""
        self._join()
        keep = ~np.isin(self._seqs, deleted, assume_unique=False)
        removed = len(keep) - int(keep.sum())
        if removed:
            self._vectors, self._seqs, self._codes = self._vectors[keep], self._seqs[keep], self._codes[keep]
        return removed

    def drop_through(self, seq: int) -> None:
        """Drop the rows of chunks with seqs up to `seq` (a new base holds them now)."""
        self._join()
        keep = self._seqs > seq
        self._vectors, self._seqs, self._codes = self._vectors[keep], self._seqs[keep], self._codes[keep]

    def search(self, query: np.ndarray, k: int, allowed: list[str] | None) -> ChunkScores:
        """The `k` best chunks among the rows (of allowed documents), a chunk scoring its best row."""
        self._join()
        rows = None
        if allowed is not None:
            rows = np.flatnonzero(self.documents.allowed_mask(allowed)[self._codes]) if len(self._codes) else self._codes
        scores = _scores(self._vectors, query, rows)
        return best_chunks(self._seqs if rows is None else self._seqs[rows], scores, k)

    def _join(self) -> None:
        if self._pending:
            parts = [(self._vectors, self._seqs, self._codes), *self._pending]
            self._vectors = np.concatenate([p[0] for p in parts])
            self._seqs = np.concatenate([p[1] for p in parts])
            self._codes = np.concatenate([p[2] for p in parts])
            self._pending = []


def best_chunks(row_seqs: np.ndarray, scores: np.ndarray, k: int) -> ChunkScores:
    """The `k` best chunks of rows grouped by chunk (`row_seqs` non-decreasing), each scoring its best row."""
    chunks, best = best_per_chunk(row_seqs, scores)
    top = top_indices(best, k)
    return ChunkScores(chunks[top], best[top])


def best_per_chunk(row_seqs: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(seq of each chunk, its best score) for rows grouped by chunk (`row_seqs` non-decreasing)."""
    if len(row_seqs) == 0:
        return row_seqs, scores
    starts = np.flatnonzero(np.concatenate(([True], row_seqs[1:] != row_seqs[:-1])))
    if len(starts) == len(row_seqs):  # no windows among these rows
        return row_seqs, scores
    return row_seqs[starts], np.maximum.reduceat(scores, starts)


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first: argpartition, then sort only those k."""
    if k < len(scores):
        candidates = np.argpartition(scores, len(scores) - k)[-k:]
    else:
        candidates = np.arange(len(scores))
    return candidates[np.argsort(-scores[candidates], kind="stable")]


def merge_top(parts: list[ChunkScores], k: int) -> ChunkScores:
    """The `k` best of several segments' chunks (each chunk lives in one segment)."""
    seqs = np.concatenate([p.seqs for p in parts]) if parts else np.zeros(0, np.int64)
    scores = np.concatenate([p.scores for p in parts]) if parts else np.zeros(0, np.float32)
    top = top_indices(scores, k)
    return ChunkScores(seqs[top], scores[top])


def _scores(matrix: np.ndarray, query: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Dot products for `rows` (all rows when None). Gathering a small subset first is cheaper
    than a full pass; gathering most of the matrix would copy more than the pass reads."""
    if rows is None:
        return matrix @ query
    if 2 * len(rows) < len(matrix):
        return matrix[rows] @ query
    return (matrix @ query)[rows]
