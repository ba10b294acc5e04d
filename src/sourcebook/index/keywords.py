"""BM25 keyword search over postings segments that catch up with each write instead of rebuilding.

Why our own postings (bench/keyword_options.py at 100,000 chunks, 2026-11-25; table in the
README, "Keyword index"): each alternative misses a requirement of the embedded tier.

* The index before this one rebuilt itself from every row after any write: 24-30 s for the
  first search after adding one document, and a cold open paid the same.
* SQLite FTS5 (the first design): an OR query computes bm25() for every chunk matching any
  term; p50 544 ms under load (60-80 ms idle) at 100,000 chunks, linear in the matches.
* bm25s 0.3.16 precomputes each (chunk, term) score with the corpus's idf and average length
  baked in, so it has no incremental add or remove: one added document re-indexed everything
  (111 s), and it peaked at 1.5 GB.
* tantivy 0.27 answers fastest (p50 0.6 ms) and adds a document in 0.3-0.7 s, but its BM25
  keeps deleted documents in df and the average length until a merge (scores drift from a
  rebuild's and from the Postgres store's), it stems with Snowball English rather than the
  analyser both stores share (pre-analysed terms work around that), and it allows one writer per
  index directory, while any process writing the SQLite file must be able to bring the index
  up to date (it would need a lock protocol of its own). Its query speed is what this index
  does not match yet: the README lists it as the open question.

Design. Each chunk's analysed term counts are stored at write time (`chunk_terms`); the index
holds a base segment (index/segments.py, memory-mapped from a file beside the database) and
one small in-memory delta segment of the chunks added since, each with a live mask for
deleted rows. A search catches up first (stores/sqlite/keywords.py): the chunks with a seq
above the index's `ChangeMark` become part of the delta and the logged deletions clear live
bits, so a write costs what it changed. When the delta outgrows a share of the base, or the
base holds too many dead rows, both merge into a new base (no sort: both are sorted by term,
so each posting's place is computed; segments.merge), which is saved again.

Scores equal a full rebuild's exactly: no BM25 statistic is stored. N and the summed length
are kept as integers; df, idf and the length norms are computed at query time for the
query's terms only, from the live postings, in the same order whatever the segment layout;
ties break on the chunk seq (rows are in seq order across segments).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from .segments import ChunkRow, Segment, merge

if TYPE_CHECKING:
    from ..stores.sqlite.changes import ChangeMark

MIN_DELTA_ROWS = 4096
"""A delta of at most this many rows never triggers a merge (cheap to rebuild on each catch-up)."""
DELTA_SHARE = 32
"""Beyond MIN_DELTA_ROWS, the delta merges into the base once it exceeds 1/DELTA_SHARE of it."""
DEAD_SHARE = 4
"""The base is rewritten without its deleted rows once they exceed 1/DEAD_SHARE of it."""


class DocumentTable:
    """Document ids by code, append-only: snapshots share it, each reading its own first codes."""

    def __init__(self, documents: Sequence[str] = ()) -> None:
        self.codes: dict[str, int] = {document: code for code, document in enumerate(documents)}

    def __len__(self) -> int:
        return len(self.codes)

    def ordered(self) -> list[str]:
        return list(self.codes)


@dataclass(frozen=True)
class KeywordIndex:
    """An immutable snapshot: the base and delta segments, their live masks and the corpus's totals.

    Searches run on a snapshot outside the store's lock; `caught_up` returns a new one.
    """

    mark: ChangeMark
    base: Segment
    delta: Segment
    base_live: np.ndarray | None  # bool per base row; None = every row live
    delta_live: np.ndarray | None
    documents: DocumentTable
    document_count: int  # codes below it are this snapshot's
    live_count: int
    live_length: int  # summed lengths of the live rows (an integer: avgdl exact)
    rebuilds: int = 0  # full builds from every row in this index's history (tests count them)
    merges: int = 0
    unsaved_base: bool = False  # the base was just built or merged: the store may save it

    @classmethod
    def build(cls, mark: ChangeMark, batches: Iterable[Sequence[ChunkRow]], rebuilds: int = 0) -> KeywordIndex:
        """A fresh index of the rows of `batches` (ascending seq), all in the base.

        Each batch becomes a compact segment before the next is read, and `merge` joins them
        without a sort: memory stays near the index's own size, not the rows' Python objects."""
        documents = DocumentTable()
        base = _joined([Segment.from_rows(batch, documents.codes) for batch in batches], len(documents))
        return replace(cls.from_base(mark, base, documents, rebuilds=rebuilds + 1), unsaved_base=True)

    @classmethod
    def from_base(cls, mark: ChangeMark, base: Segment, documents: DocumentTable, *, rebuilds: int = 0) -> KeywordIndex:
        """An index whose base holds every live chunk at `mark` (as `build` makes and the file keeps)."""
        empty = Segment.from_rows([], {})
        return cls(
            mark, base, empty, None, None, documents, len(documents), base.size, int(base.lengths.sum(dtype=np.int64)),
            rebuilds=rebuilds,
        )

    @property
    def dead_base_rows(self) -> int:
        return 0 if self.base_live is None else self.base.size - int(self.base_live.sum())

    def caught_up(
        self, mark: ChangeMark, added: Iterable[Sequence[ChunkRow]], deleted_seqs: np.ndarray
    ) -> KeywordIndex:
        """This index after the chunks `added` (batches of rows with seqs above this mark, ascending)
        and the deletions of `deleted_seqs` (any tenant's: seqs this index does not hold are ignored)."""
        delta, delta_live = self.delta, self.delta_live
        new = [Segment.from_rows(batch, self.documents.codes) for batch in added]
        if new:
            delta = merge([(self.delta, self.delta_live), *((segment, None) for segment in new)],
                          np.arange(len(self.documents), dtype=np.int32))
            delta_live = None
        live_count = self.live_count + sum(segment.size for segment in new)
        live_length = self.live_length + sum(int(segment.lengths.sum(dtype=np.int64)) for segment in new)
        base_live, removed_base, removed_length = _without(self.base, self.base_live, deleted_seqs)
        delta_live, removed_delta, removed_delta_length = _without(delta, delta_live, deleted_seqs)
        updated = replace(
            self, mark=mark, delta=delta, base_live=base_live, delta_live=delta_live,
            document_count=len(self.documents), live_count=live_count - removed_base - removed_delta,
            live_length=live_length - removed_length - removed_delta_length,
        )
        return updated.merged() if updated.needs_merge() else updated

    def needs_merge(self) -> bool:
        delta_rows = self.delta.size
        return (delta_rows > MIN_DELTA_ROWS and delta_rows * DELTA_SHARE > self.base.size) or (
            self.dead_base_rows * DEAD_SHARE > self.base.size
        )

    def merged(self) -> KeywordIndex:
        """One base of every live row, the document table renumbered to the live documents."""
        parts = [(self.base, self.base_live), (self.delta, self.delta_live)]
        used = np.zeros(max(len(self.documents), 1), dtype=bool)
        for segment, live in parts:
            used[segment.documents if live is None else segment.documents[live]] = True
        recode = np.cumsum(used, dtype=np.int64).astype(np.int32) - 1
        old_ids = self.documents.ordered()
        documents = DocumentTable([old_ids[code] for code in np.flatnonzero(used[: len(old_ids)])])
        base = merge(parts, recode)
        return replace(
            KeywordIndex.from_base(self.mark, base, documents, rebuilds=self.rebuilds),
            merges=self.merges + 1, unsaved_base=True,
        )

    def search(
        self, term_ids: Sequence[int], k: int, allowed_documents: list[str] | None, k1: float, b: float
    ) -> list[tuple[str, float]]:
        """Top-k (chunk id, Okapi BM25) of the live chunks holding any of `term_ids`, best first
        (ties: lower seq first); `allowed_documents` None = every document."""
        if not term_ids or not self.live_count:
            return []
        _raise_malloc_mmap_threshold()
        average_length = self.live_length / self.live_count
        # BM25's tf part, tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl)), in fewer passes
        constant, per_length = k1 * (1 - b), k1 * b / average_length
        rows: list[np.ndarray] = []
        contributions: list[np.ndarray] = []
        for term_id in dict.fromkeys(term_ids):
            term_rows, frequencies, lengths = [], [], []
            for segment, first_row, found, counts in self._live_postings(term_id):
                term_rows.append(found + first_row if first_row else found)
                frequencies.append(counts)
                lengths.append(segment.lengths[found])
            document_frequency = sum(len(r) for r in term_rows)
            if not document_frequency:
                continue
            idf = max(math.log((self.live_count - document_frequency + 0.5) / (document_frequency + 0.5)), 1e-6)
            tf = _joined_arrays(frequencies).astype(np.float32)  # float32 as before: half the memory traffic
            norm = _joined_arrays(lengths).astype(np.float32)
            norm *= per_length
            norm += tf
            norm += constant
            tf *= idf * (k1 + 1)
            tf /= norm
            contributions.append(tf)
            rows.append(_joined_arrays(term_rows))
        if not rows:
            return []
        scores = np.bincount(np.concatenate(rows), weights=np.concatenate(contributions),
                             minlength=self.base.size + self.delta.size)
        candidates = np.flatnonzero(scores)  # every live posting scores > 0 (idf is floored above 0)
        if allowed_documents is not None:
            candidates = candidates[self._allowed_rows(candidates, allowed_documents)]
        if len(candidates) > k:  # every tie of the k-th score stays, so the cut is by seq, not by layout
            kth_score = -np.partition(-scores[candidates], k - 1)[k - 1]
            candidates = candidates[scores[candidates] >= kth_score]
        ranked = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
        return list(zip(self._chunk_ids(ranked), scores[ranked].tolist()))

    def document_frequencies(self, term_ids: Sequence[int]) -> list[int]:
        """How many live chunks hold each of `term_ids` (BM25's n, as `search` counts it).

        The answerer asks this to tell a question about something the documents never name
        from one retrieval merely ranked badly; it costs one postings lookup per term."""
        return [sum(len(found) for *_, found, _ in self._live_postings(term_id)) for term_id in term_ids]

    def _live_postings(self, term_id: int) -> Iterator[tuple[Segment, int, np.ndarray, np.ndarray]]:
        """Per segment holding live postings of `term_id`: (the segment, its first row number
        across both segments, the live rows within it, their term counts)."""
        parts = ((self.base, self.base_live, 0), (self.delta, self.delta_live, self.base.size))
        for segment, live, first_row in parts:
            found, counts = segment.postings(term_id)
            if live is not None and len(found):
                keep = live[found]
                found, counts = found[keep], counts[keep]
            if len(found):
                yield segment, first_row, found, counts

    def _allowed_rows(self, rows: np.ndarray, allowed_documents: list[str]) -> np.ndarray:
        """Which of `rows` (ascending) belong to one of the allowed documents."""
        mask = np.zeros(self.document_count + 1, dtype=bool)
        codes = self.documents.codes
        mask[[c for c in (codes.get(d, -1) for d in allowed_documents) if 0 <= c < self.document_count]] = True
        split = int(np.searchsorted(rows, self.base.size))
        document_codes = np.concatenate(
            [self.base.documents[rows[:split]], self.delta.documents[rows[split:] - self.base.size]]
        )
        return mask[document_codes]

    def _chunk_ids(self, rows: np.ndarray) -> list[str]:
        """Ids of `rows` (in any order) of either segment."""
        in_base = rows < self.base.size
        ids = np.empty(len(rows), dtype=object)
        ids[in_base] = self.base.chunk_ids(rows[in_base])
        ids[~in_base] = self.delta.chunk_ids(rows[~in_base] - self.base.size)
        return ids.tolist()


def _without(
    segment: Segment, live: np.ndarray | None, deleted_seqs: np.ndarray
) -> tuple[np.ndarray | None, int, int]:
    """`live` with the rows of `deleted_seqs` cleared: (the new mask, rows newly dead, their lengths)."""
    if not len(deleted_seqs) or not segment.size:
        return live, 0, 0
    positions = np.searchsorted(segment.seqs, deleted_seqs)
    inside = positions < segment.size
    positions = positions[inside]
    hits = positions[segment.seqs[positions] == deleted_seqs[inside]]
    if live is not None:
        hits = hits[live[hits]]
    hits = np.unique(hits)
    if not len(hits):
        return live, 0, 0
    updated = np.ones(segment.size, dtype=bool) if live is None else live.copy()
    updated[hits] = False
    return updated, len(hits), int(segment.lengths[hits].sum(dtype=np.int64))


def _joined(segments: list[Segment], documents: int) -> Segment:
    """The segments (in seq order, every row live) as one."""
    if len(segments) == 1:
        return segments[0]
    if not segments:
        return Segment.from_rows([], {})
    return merge([(segment, None) for segment in segments], np.arange(max(documents, 1), dtype=np.int32))


def _joined_arrays(arrays: list[np.ndarray]) -> np.ndarray:
    """One array of `arrays` (most terms have postings in the base only: no copy then)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


@cache
def _raise_malloc_mmap_threshold() -> None:
    """Let a search's temporaries (a score per chunk, arrays the size of its posting lists: up
    to several MB) come from the heap instead of fresh mmap'd pages that fault on every query.

    glibc serves blocks above M_MMAP_THRESHOLD (128 KB at start) with mmap, and raises that
    threshold to the size of an mmap'd block when one is freed (up to 32 MB; man mallopt). A
    process that built its index in memory did that as a side effect; one that maps a saved
    segment does not, and its searches measured 3-5x slower on this machine (page faults: p50
    7.7 vs 2.3 ms at 100,000 chunks). Freeing one untouched 16 MB block once costs nothing and
    does not change what any allocator other than glibc does."""
    block = np.empty(16 << 20, dtype=np.uint8)
    del block
