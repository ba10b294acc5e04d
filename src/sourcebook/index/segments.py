"""Immutable postings segments of the keyword index, and the one file a base segment is kept in.

A segment holds some chunks (rows, in ascending chunk seq) and, per term, the rows holding it
with their term frequency: postings sorted by term id, found through a sorted array of the
segment's term ids and their offsets (not a dense array over the whole vocabulary, so a delta
segment of one document costs what that document holds). A segment stores no BM25 weight: N,
avgdl and df move with every write, so index/keywords.py computes them at query time for the
query's terms only, and an incrementally maintained index scores exactly as a rebuilt one.

The base segment is saved beside the database in one file (`save` / `load`): a header (magic,
version, a JSON description of the arrays and the change mark the segment reflects) followed
by the raw arrays, 64-byte aligned. One file replaced by an atomic rename (temp file, fsync,
rename, fsync of the directory) means a reader sees the old segment or the new one, never a
mix of two, which a directory of .npy files cannot promise; the arrays are read through one
read-only memory map, so a cold open costs the header and the pages a query touches, and the
kernel may drop those pages again (RSS stays bounded at a million chunks).
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"SBKWSEG1"
_HEADER = struct.Struct("<8sQ")  # magic, length of the JSON description that follows
_ALIGN = 64
_MAX_COUNT = np.iinfo(np.uint16).max  # a term frequency is stored as uint16 (a chunk holds far fewer)

_ARRAYS: dict[str, np.dtype[Any]] = {
    "seqs": np.dtype(np.int64),
    "lengths": np.dtype(np.int32),
    "documents": np.dtype(np.int32),
    "id_bytes": np.dtype(np.uint8),
    "id_offsets": np.dtype(np.int64),
    "terms": np.dtype(np.int32),
    "term_offsets": np.dtype(np.int64),
    "posting_rows": np.dtype(np.int32),
    "posting_counts": np.dtype(np.uint16),
    "document_bytes": np.dtype(np.uint8),
    "document_offsets": np.dtype(np.int64),
}


class SegmentFileError(Exception):
    """A saved segment that cannot be used (missing, truncated, another format): rebuild it."""


@dataclass(frozen=True)
class ChunkRow:
    """One chunk as the index reads it: its seq, id, document id and stored term counts."""

    seq: int
    chunk_id: str
    document_id: str
    length: int
    term_ids: np.ndarray  # int32
    counts: np.ndarray  # int32, parallel to term_ids


@dataclass(frozen=True)
class Segment:
    """Chunks in ascending seq and their postings; `documents` are codes into the index's document table."""

    seqs: np.ndarray
    lengths: np.ndarray
    documents: np.ndarray
    id_bytes: np.ndarray
    id_offsets: np.ndarray
    terms: np.ndarray  # sorted distinct term ids
    term_offsets: np.ndarray  # postings of terms[i] are [term_offsets[i], term_offsets[i + 1])
    posting_rows: np.ndarray
    posting_counts: np.ndarray

    @property
    def size(self) -> int:
        return len(self.seqs)

    def chunk_ids(self, rows: np.ndarray) -> list[str]:
        """The chunk ids of `rows`, in their order (one gather of their bytes, not one slice each)."""
        starts, ends = self.id_offsets[rows], self.id_offsets[rows + 1]
        blob = self.id_bytes[_ranges(starts, ends)].tobytes()
        bounds = np.cumsum(ends - starts).tolist()
        return [blob[start:end].decode() for start, end in zip([0, *bounds[:-1]], bounds)]

    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, term frequencies) of the chunks holding `term_id`; empty when none does."""
        i = int(np.searchsorted(self.terms, term_id))
        if i == len(self.terms) or self.terms[i] != term_id:
            return _NO_ROWS, _NO_COUNTS
        start, end = self.term_offsets[i], self.term_offsets[i + 1]
        return self.posting_rows[start:end], self.posting_counts[start:end]

    @classmethod
    def from_rows(cls, rows: Sequence[ChunkRow], document_code: dict[str, int]) -> Segment:
        """A segment of `rows` (ascending seq); new documents get the next codes of `document_code`."""
        sizes = np.fromiter((len(r.term_ids) for r in rows), dtype=np.int64, count=len(rows))
        local_rows = np.repeat(np.arange(len(rows), dtype=np.int32), sizes)
        terms = np.concatenate([r.term_ids for r in rows]) if rows else np.zeros(0, np.int32)
        counts = np.concatenate([r.counts for r in rows]) if rows else np.zeros(0, np.int32)
        ids = [r.chunk_id.encode() for r in rows]
        return _assemble(
            seqs=np.fromiter((r.seq for r in rows), dtype=np.int64, count=len(rows)),
            lengths=np.fromiter((r.length for r in rows), dtype=np.int32, count=len(rows)),
            documents=np.fromiter(
                (document_code.setdefault(r.document_id, len(document_code)) for r in rows),
                dtype=np.int32, count=len(rows),
            ),
            id_bytes=np.frombuffer(b"".join(ids), dtype=np.uint8),
            id_offsets=_offsets(len(i) for i in ids),
            posting_terms=terms.astype(np.int32, copy=False),
            posting_rows=local_rows,
            posting_counts=counts,
        )


MERGE_STEP = 4_000_000
"""Postings a merge handles at a time: its temporaries stay near 100 MB whatever the corpus."""


def merge(parts: Sequence[tuple[Segment, np.ndarray | None]], recode: np.ndarray) -> Segment:
    """One segment of the live rows of `parts` (each a segment and its live mask, None = all live),
    which lie in ascending seq order; `recode` maps old document codes to new ones.

    No sort: every part is already sorted by term, so a posting's place in the result is its
    term's offset plus the live postings of that term in earlier parts and before it in its own.
    Two passes over the parts, a step of terms at a time (MERGE_STEP postings), count the live
    postings per term and then place them: beyond the result, memory is one step's temporaries
    (a base part may be the memory-mapped file), not a sort of every posting."""
    renumbers, first_row = [], 0
    for segment, live in parts:
        kept = segment.size if live is None else int(live.sum())
        renumber = np.arange(segment.size, dtype=np.int64) if live is None else np.cumsum(live, dtype=np.int64) - 1
        renumbers.append((renumber + first_row).astype(np.int32))
        first_row += kept
    vocabulary = max((int(segment.terms[-1]) + 1 for segment, _ in parts if len(segment.terms)), default=0)
    frequencies = np.zeros(vocabulary, dtype=np.int64)
    for (segment, live), renumber in zip(parts, renumbers):
        for terms, _, _ in _live_steps(segment, live, renumber):
            frequencies += np.bincount(terms, minlength=vocabulary)
    starts = np.zeros(vocabulary + 1, dtype=np.int64)
    np.cumsum(frequencies, out=starts[1:])
    rows = np.empty(int(starts[-1]), dtype=np.int32)
    counts = np.empty(int(starts[-1]), dtype=np.uint16)
    cursor = starts[:-1].copy()
    for (segment, live), renumber in zip(parts, renumbers):
        for terms, step_rows, step_counts in _live_steps(segment, live, renumber):
            first = np.flatnonzero(np.diff(terms, prepend=-1))  # the step's terms are ascending
            present, sizes = terms[first], np.diff(np.append(first, len(terms)))
            places = np.repeat(cursor[present] - first, sizes) + np.arange(len(terms), dtype=np.int64)
            rows[places], counts[places] = step_rows, step_counts
            cursor[present] += sizes
    present = np.flatnonzero(frequencies).astype(np.int32)
    return Segment(
        **_merged_rows(parts, recode), terms=present, term_offsets=np.append(starts[present], starts[-1]),
        posting_rows=rows, posting_counts=counts,
    )


def _live_steps(
    segment: Segment, live: np.ndarray | None, renumber: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(term ids, renumbered rows, counts) of the live postings, a run of whole terms at a time."""
    offsets = segment.term_offsets
    i = 0
    while i < len(segment.terms):
        j = max(i + 1, min(len(segment.terms), int(np.searchsorted(offsets, offsets[i] + MERGE_STEP, "right")) - 1))
        start, end = int(offsets[i]), int(offsets[j])
        terms = np.repeat(segment.terms[i:j], np.diff(offsets[i : j + 1]))
        rows, counts = segment.posting_rows[start:end], segment.posting_counts[start:end]
        if live is not None:
            keep = live[rows]
            terms, rows, counts = terms[keep], rows[keep], counts[keep]
        yield terms, renumber[rows], counts
        i = j


def _merged_rows(parts: Sequence[tuple[Segment, np.ndarray | None]], recode: np.ndarray) -> dict[str, np.ndarray]:
    """The per-row arrays of a merge: the live rows of every part, in order."""
    seqs, lengths, documents, id_parts, id_sizes = [], [], [], [], []
    for segment, live in parts:
        kept_rows = np.arange(segment.size) if live is None else np.flatnonzero(live)
        seqs.append(segment.seqs[kept_rows])
        lengths.append(segment.lengths[kept_rows])
        documents.append(recode[segment.documents[kept_rows]])
        starts, ends = segment.id_offsets[kept_rows], segment.id_offsets[kept_rows + 1]
        id_sizes.append(ends - starts)
        id_parts.append(segment.id_bytes[_ranges(starts, ends)])
    return {
        "seqs": np.concatenate(seqs).astype(np.int64), "lengths": np.concatenate(lengths).astype(np.int32),
        "documents": np.concatenate(documents).astype(np.int32),
        "id_bytes": np.concatenate(id_parts).astype(np.uint8),
        "id_offsets": _offsets(np.concatenate(id_sizes).tolist()),
    }


def _assemble(
    *, seqs: np.ndarray, lengths: np.ndarray, documents: np.ndarray, id_bytes: np.ndarray, id_offsets: np.ndarray,
    posting_terms: np.ndarray, posting_rows: np.ndarray, posting_counts: np.ndarray,
) -> Segment:
    """Sort postings by term (rows stay ascending within a term: the sort is stable)."""
    order = np.argsort(posting_terms, kind="stable")
    sorted_terms = posting_terms[order]
    terms, first = np.unique(sorted_terms, return_index=True)
    term_offsets = np.append(first, len(sorted_terms)).astype(np.int64)
    return Segment(
        seqs=seqs.astype(np.int64, copy=False), lengths=lengths.astype(np.int32, copy=False),
        documents=documents.astype(np.int32, copy=False), id_bytes=id_bytes.astype(np.uint8, copy=False),
        id_offsets=id_offsets, terms=terms.astype(np.int32, copy=False), term_offsets=term_offsets,
        posting_rows=posting_rows[order].astype(np.int32, copy=False),
        posting_counts=np.minimum(posting_counts[order], _MAX_COUNT).astype(np.uint16),
    )


def _offsets(sizes: Iterable[int]) -> np.ndarray:
    sized = np.fromiter(sizes, dtype=np.int64)
    offsets = np.zeros(len(sized) + 1, dtype=np.int64)
    np.cumsum(sized, out=offsets[1:])
    return offsets


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenated index ranges [starts[i], ends[i]) (the kept chunks' id bytes)."""
    sizes = ends - starts
    out_starts = np.cumsum(sizes) - sizes
    return np.repeat(starts - out_starts, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)


_NO_ROWS = np.zeros(0, dtype=np.int32)
_NO_COUNTS = np.zeros(0, dtype=np.uint16)


def save(path: Path, segment: Segment, documents: Sequence[str], description: dict[str, Any]) -> Segment:
    """Write `segment`, the document table its codes index and `description` (JSON) to `path`
    atomically; returns the segment mapped from the file written.

    The temporary file has a name of its own (several stores of one process, or several
    processes, may save at once) and is mapped before it is renamed: the mapping is of the
    bytes written here, whichever save's file `path` names a moment later."""
    encoded = [d.encode() for d in documents]
    arrays: dict[str, np.ndarray] = {
        **{name: getattr(segment, name) for name in _ARRAYS if not name.startswith("document_")},
        "document_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "document_offsets": _offsets(len(e) for e in encoded),
    }
    layout: dict[str, list[int]] = {}
    position = 0
    for name, array in arrays.items():
        layout[name] = [position, len(array)]
        position = _aligned(position + array.nbytes)
    header = json.dumps({**description, "arrays": layout}).encode()
    data_start = _aligned(_HEADER.size + len(header))
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(_HEADER.pack(MAGIC, len(header)) + header)
            for name, array in arrays.items():
                out.seek(data_start + layout[name][0])
                out.write(np.ascontiguousarray(array, dtype=_ARRAYS[name]).tobytes())
            out.truncate(data_start + position)
            out.flush()
            os.fsync(out.fileno())
        mapped = load(temporary)[0]
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return mapped


def load(path: Path) -> tuple[Segment, list[str], dict[str, Any]]:
    """The segment, document table and description `save` wrote; SegmentFileError if unusable."""
    try:
        with open(path, "rb") as source:
            mapped = mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # missing, unreadable, or empty (mmap refuses length 0)
        raise SegmentFileError(f"{path}: {exc}") from exc
    try:
        magic, header_size = _HEADER.unpack_from(mapped, 0)
        if magic != MAGIC:
            raise SegmentFileError(f"{path} is not a keyword segment of this version")
        description = json.loads(bytes(mapped[_HEADER.size : _HEADER.size + header_size]))
        data_start = _aligned(_HEADER.size + header_size)
        arrays = {}
        for name, dtype in _ARRAYS.items():
            offset, count = description["arrays"][name]
            if data_start + offset + count * dtype.itemsize > len(mapped):
                raise SegmentFileError(f"{path} is truncated ({name})")
            arrays[name] = np.frombuffer(mapped, dtype=dtype, count=count, offset=data_start + offset)
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise SegmentFileError(f"{path}: unreadable header: {exc}") from exc
    document_bytes, document_offsets = arrays.pop("document_bytes"), arrays.pop("document_offsets")
    segment = Segment(**arrays)
    _check_shapes(path, segment, len(document_offsets) - 1)
    raw = bytes(document_bytes)
    documents = [raw[start:end].decode() for start, end in zip(document_offsets[:-1], document_offsets[1:])]
    return segment, documents, description


def _check_shapes(path: Path, segment: Segment, documents: int) -> None:
    """The sizes the arrays must agree on (cheap: the postings' pages are not read)."""
    n = segment.size
    consistent = (
        len(segment.lengths) == n and len(segment.documents) == n and len(segment.id_offsets) == n + 1
        and int(segment.id_offsets[-1]) == len(segment.id_bytes)
        and len(segment.term_offsets) == len(segment.terms) + 1
        and int(segment.term_offsets[-1]) == len(segment.posting_rows) == len(segment.posting_counts)
        and documents >= 0
    )
    if not consistent:
        raise SegmentFileError(f"{path}: the arrays' sizes disagree")


def _aligned(position: int) -> int:
    return -(-position // _ALIGN) * _ALIGN
