"""The approximate vector index of a large partition: usearch's HNSW graph over int8 codes.

`AnnRows` is immutable once built: the rows of one dimension up to a `mark` (the chunk seq
and deletion the store had then), each row a chunk's vector or one of its windows', keyed by
its row number. What changed after the mark lives elsewhere: added rows in the exact delta
(vectors.py), deleted chunks as a `dead` mask kept here. Search is a candidate generator only:
the caller rescores the candidates' chunks with their full-precision vectors (every row of the
chunk), so a returned score is the exact search's score, and a chunk SQLite no longer has is
never returned.

On disk a base is a directory of five files, written into a temporary directory, fsynced and
renamed into place (a reader never sees half a base): ``index.usearch`` (HNSW + int8 vectors,
memory-mapped with ``view``, never loaded whole), ``seqs.npy`` and ``codes.npy`` (each row's
chunk seq and document code, memory-mapped), ``meta.json`` (the mark, the document ids of the
codes, the counts) and ``f16.bin``: the rows as float16, memory-mapped, from which the
candidates are rescored (every row of each candidate chunk, so its score is the exact search's
to float16 precision, about 1e-3) and very selective filters are scanned. Rescoring from the
SQLite blobs instead cost 141 ms of a 300 ms search at k=200 (B-tree and overflow pages per
chunk); usearch's ``get`` took 0.19 s for 20,000 rows.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .vectors import ChunkScores, DocumentCodes, RowBatch, best_chunks, best_per_chunk, top_indices

FORMAT = 2  # 2: float16 rows instead of int8 codes
CONNECTIVITY = 32  # HNSW's M: 16 left some of the near-duplicate rows of a cluster unreachable (README)
EXPANSION_ADD = 128  # efConstruction, usearch's default: 64 left 1.5% of the true top 10 out of reach at 30k chunks (README)
EXPANSION_SEARCH = 1024  # ef at query time: 300 found 82% of the true top 10 at 100k chunks, 1200 95%, for 1.5 ms
MAX_ANN_ROWS = 16_384  # beyond this many rows asked of the graph, a scan of the allowed rows is cheaper
PARALLEL_ADD_ROWS = 8192  # smaller batches go in on one thread: not worth the threads, and deterministic
SCAN_BLOCK_ROWS = 65_536  # rows converted to float32 at a time by the scan (100 MB at 384 dimensions)

if TYPE_CHECKING:
    from usearch.index import Index


def _index_class() -> type[Index]:
    """usearch's Index, imported on first use and after onnxruntime when that is installed:
    importing onnxruntime 1.32 after usearch 2.26 crashes the process (SIGSEGV in onnxruntime's
    module init), the other order works. Small collections never import usearch at all."""
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


class AnnRows:
    """One dimension's rows up to a mark in an HNSW graph, plus their seqs, documents and dead flags."""

    def __init__(
        self, index: Index, seqs: np.ndarray, codes: np.ndarray, halves: np.ndarray, documents: DocumentCodes,
        mark: tuple[int, int], chunks: int, last_chunk_id: str | None,
    ) -> None:
        self.index = index
        self.seqs = seqs  # (n,) int64, non-decreasing: row -> chunk seq
        self.codes = codes  # (n,) int32: row -> document code
        self.halves = halves  # (n, dimension) float16: the rows, for rescoring and the selective-filter scan
        self.documents = documents
        self.mark = mark
        self.chunks = chunks
        self.last_chunk_id = last_chunk_id  # the id of the chunk of the last row: tells this database's base from another's
        self.dead = np.zeros(len(seqs), dtype=bool)
        self.dead_rows = 0

    @property
    def dimension(self) -> int:
        return int(self.halves.shape[1])

    def __len__(self) -> int:
        return len(self.seqs)

    def kill(self, deleted: np.ndarray) -> int:
        """Flag the rows of the deleted chunks (seqs, sorted); how many rows were newly flagged."""
        if not len(deleted) or not len(self.seqs):
            return 0
        starts = np.searchsorted(self.seqs, deleted, side="left")
        ends = np.searchsorted(self.seqs, deleted, side="right")
        newly = 0
        for start, end in zip(starts[ends > starts], ends[ends > starts]):
            newly += int(end - start - self.dead[start:end].sum())
            self.dead[start:end] = True
        self.dead_rows += newly
        return newly

    def candidates(self, query: np.ndarray, wanted: int, allowed: list[str] | None) -> ChunkScores:
        """About `wanted` chunks with the best approximate scores (live, of allowed documents).

        The graph is asked for enough rows to hold `wanted` chunks after the dead and filtered
        rows are dropped (oversampled by the share that passes); when that is more rows than
        a scan of the passing rows would cost, or the graph came back short, the passing rows
        are scanned instead, so a filter never loses a hit the exact search would find.
        """
        passing = None if allowed is None else self.documents.allowed_mask(allowed)[self.codes] & ~self.dead
        live = len(self) - self.dead_rows if passing is None else int(passing.sum())
        if live == 0:
            return ChunkScores.empty()
        rows_per_chunk = len(self) / max(self.chunks, 1)
        asked = math.ceil(1.5 * wanted * rows_per_chunk * len(self) / live)
        if asked < min(MAX_ANN_ROWS, live):
            found = self._graph_candidates(query, asked, passing, wanted)
            if len(found.seqs) >= min(wanted, live // math.ceil(rows_per_chunk)):
                return found
        rows = np.flatnonzero(~self.dead if passing is None else passing)
        scores = np.concatenate([self.halves[block].astype(np.float32) @ query
                                 for block in np.array_split(rows, max(1, len(rows) // SCAN_BLOCK_ROWS))])
        return best_chunks(self.seqs[rows], scores, wanted)

    def _graph_candidates(self, query: np.ndarray, asked: int, passing: np.ndarray | None, wanted: int) -> ChunkScores:
        self.index.expansion_search = max(EXPANSION_SEARCH, asked)
        matches = self.index.search(query, asked, threads=1)
        rows = np.asarray(matches.keys, dtype=np.int64)
        scores = 1.0 - np.asarray(matches.distances, dtype=np.float32)
        keep = ~self.dead[rows] if passing is None else passing[rows]
        rows, scores = rows[keep], scores[keep]
        order = np.argsort(rows, kind="stable")  # group by chunk: rows of a chunk are contiguous
        chunks, best = best_per_chunk(self.seqs[rows[order]], scores[order])
        top = top_indices(best, wanted)
        return ChunkScores(chunks[top], best[top])

    def rescore(self, seqs: np.ndarray, query: np.ndarray) -> ChunkScores:
        """The live ones of these chunks, each scored by the best of all its rows (float16)."""
        seqs = np.unique(seqs)
        starts = np.searchsorted(self.seqs, seqs, side="left")
        ends = np.searchsorted(self.seqs, seqs, side="right")
        keep = ends > starts
        keep[keep] = ~self.dead[starts[keep]]  # a dead chunk has all its rows flagged
        seqs, starts, counts = seqs[keep], starts[keep], (ends - starts)[keep]
        if not len(seqs):
            return ChunkScores.empty()
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        rows = np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()))
        scores = self.halves[rows].astype(np.float32) @ query
        return ChunkScores(seqs, np.maximum.reduceat(scores, offsets))

    def close(self) -> None:
        """Unmap the graph (the numpy maps go with their last reference)."""
        self.index.reset()


def build_ann(
    batches: Iterable[RowBatch], dimension: int, mark: tuple[int, int], chunk_id: Callable[[int], str | None],
    directory: Path | None,
) -> AnnRows:
    """Build the graph from the store's rows (streamed, in seq order); saved into `directory`
    (written in a temporary directory, fsynced, renamed into place) and mapped back from it, or
    kept in memory when None. The float16 rows stream to their file as they come, so the build
    holds the graph and one batch, not the rows."""
    index = _index_class()(ndim=dimension, metric="cos", dtype="i8", connectivity=CONNECTIVITY,
                           expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
    temporary = None if directory is None else directory.with_name(f".tmp-{directory.name}")
    if temporary is not None:
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir(parents=True)
    documents = DocumentCodes()
    seqs: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    total = 0
    with open(temporary / "f16.bin", "wb") if temporary is not None else io.BytesIO() as halves_out:
        for batch in batches:
            threads = 0 if len(batch.seqs) >= PARALLEL_ADD_ROWS else 1  # 0: every core
            index.add(np.arange(total, total + len(batch.seqs), dtype=np.uint64), batch.vectors, threads=threads)
            seqs.append(batch.seqs)
            codes.append(documents.encode(batch.documents))
            halves_out.write(batch.vectors.astype(np.float16).tobytes())
            total += len(batch.seqs)
        in_memory = halves_out.getvalue() if isinstance(halves_out, io.BytesIO) else b""
    row_seqs = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
    row_codes = np.concatenate(codes) if codes else np.zeros(0, np.int32)
    chunks = int(len(np.unique(row_seqs)))
    last_chunk_id = chunk_id(int(row_seqs[-1])) if len(row_seqs) else None
    if directory is None or temporary is None:
        halves = np.frombuffer(in_memory, dtype=np.float16).reshape(-1, dimension)
        return AnnRows(index, row_seqs, row_codes, halves, documents, mark, chunks, last_chunk_id)
    index.save(str(temporary / "index.usearch"))
    index.reset()
    np.save(temporary / "seqs.npy", row_seqs)
    np.save(temporary / "codes.npy", row_codes)
    meta = {"format": FORMAT, "dimension": dimension, "mark": list(mark), "rows": total, "chunks": chunks,
            "last_chunk_id": last_chunk_id, "documents": documents.ids}
    (temporary / "meta.json").write_text(json.dumps(meta))
    for path in temporary.iterdir():
        _fsync(path)
    os.rename(temporary, directory)
    _fsync(directory.parent)
    loaded = open_ann(directory)
    if loaded is None:
        raise OSError(f"the vector index just written to {directory} does not read back")
    return loaded


def open_ann(directory: Path) -> AnnRows | None:
    """Map a saved base, or None when it is missing, of another format, or does not read back whole."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != FORMAT:
            return None
        seqs = np.load(directory / "seqs.npy", mmap_mode="r")
        codes = np.load(directory / "codes.npy", mmap_mode="r")
        rows, dimension = int(meta["rows"]), int(meta["dimension"])
        halves = (np.memmap(directory / "f16.bin", dtype=np.float16, mode="r", shape=(rows, dimension)) if rows
                  else np.zeros((0, dimension), np.float16))
        index = _index_class().restore(str(directory / "index.usearch"), view=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None
    if index is None or len(index) != rows or len(seqs) != rows or len(codes) != rows:
        return None
    mark = (int(meta["mark"][0]), int(meta["mark"][1]))
    return AnnRows(index, seqs, codes, halves, DocumentCodes(meta["documents"]), mark, int(meta["chunks"]),
                   meta["last_chunk_id"])


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
