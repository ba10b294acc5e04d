"""The approximate vector index of a large partition: usearch's HNSW graph over chunk vectors.

`AnnRows` is immutable once built: the chunks of one dimension up to a `mark` (the chunk seq
and deletion the store had then). What changed after the mark lives elsewhere: added rows in
the exact delta (vectors.py), deleted chunks as a `dead` mask kept here.

The graph holds one node per chunk, its own vector (int8 codes), keyed by the chunk's number;
its sentence windows are not in the graph. A search asks the graph for several times more
chunks than it returns and rescores each candidate from every one of its rows (its vector and
its windows', float16), so a returned score is the exact search's (a chunk scores its best
row, to float16 precision, about 1e-3) and a chunk SQLite no longer has is never returned. Why
not a node per row: at 1M chunks that is 4.7M nodes in clusters of near-duplicates (a chunk's
windows sit next to it), and ef 1024 reached only 81% of the exact top 10 (README); one node
per chunk is a fifth of the graph, and a chunk's windows are found through the chunk.

On disk a base is a directory of six files, written into a temporary directory, fsynced and
renamed into place (a reader never sees half a base): ``index.usearch`` (the graph and its int8
vectors, memory-mapped with ``view``, never loaded whole); ``seqs.npy``, ``codes.npy`` and
``starts.npy`` (each chunk's seq, document code and first row); ``meta.json`` (the mark, the
document ids of the codes, the counts); and ``f16.bin``, every row as float16 in chunk order.
The candidates' rows are read from it with ``pread``, a few kilobytes each: they go through the
kernel's page cache (shared between processes, dropped under pressure) instead of being mapped
into the process, whose memory would otherwise grow with every chunk ever rescored (3.6 GB of
rows at 1M chunks). Rescoring from the SQLite blobs instead cost 141 ms of a 300 ms search at
k=200 (B-tree and overflow pages per chunk).
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
from typing import IO, TYPE_CHECKING

import numpy as np

from .vectors import ChunkScores, DocumentCodes, RowBatch, top_indices

FORMAT = 3  # 3: one graph node per chunk, every row in f16.bin (2: a node per row)
CONNECTIVITY = 32  # HNSW's M: 16 left some near-duplicate neighbours unreachable (README)
EXPANSION_ADD = 128  # efConstruction, usearch's default: 64 left 1.5% of the true top 10 out of reach at 30k chunks (README)
EXPANSION_SEARCH = 1024  # ef at query time up to EXPANSION_CHUNKS chunks, in proportion beyond (and at least the chunks asked)
EXPANSION_CHUNKS = 500_000  # at 1M chunks ef 1024 reached 92.6% of the exact top 10, 2048 96.5% (README)
CANDIDATE_FACTOR = 2  # chunks rescored per chunk returned
MIN_CANDIDATES = 100  # ... and at least this many (README: recall against the candidates rescored)
MAX_GRAPH_CHUNKS = 16_384  # beyond this many chunks asked of the graph, a scan of the allowed chunks is cheaper
PARALLEL_ADD_CHUNKS = 2048  # smaller batches (the store reads 4,096 chunks a batch) go in on one thread: deterministic
SCAN_BLOCK_ROWS = 65_536  # rows converted to float32 at a time (100 MB at 384 dimensions)

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


class HalfRows:
    """Every row of a base as float16, in chunk order, read by row ranges: from its file with
    ``pread`` (see the module docstring), or from memory for a base without files."""

    def __init__(self, dimension: int, file: IO[bytes] | None = None, memory: np.ndarray | None = None) -> None:
        self.dimension = dimension
        self.file = file
        self.memory = memory

    def read(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Rows [starts[i], ends[i]) for each i, one after another, as float32 (ranges sorted)."""
        counts = ends - starts
        total = int(counts.sum())
        if self.memory is not None:
            offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
            return self.memory[np.repeat(starts - offsets, counts) + np.arange(total)].astype(np.float32)
        assert self.file is not None
        row_bytes = 2 * self.dimension
        buffer = bytearray(total * row_bytes)
        view = memoryview(buffer)
        runs = np.flatnonzero(starts[1:] != ends[:-1]) + 1  # adjacent ranges are read in one call
        position = 0
        for first, last in zip(starts[np.concatenate(([0], runs))], ends[np.concatenate((runs - 1, [len(ends) - 1]))]):
            size = int(last - first) * row_bytes
            if os.preadv(self.file.fileno(), [view[position : position + size]], int(first) * row_bytes) != size:
                raise OSError(f"{self.file.name} is shorter than its index says")
            position += size
        return np.frombuffer(buffer, dtype=np.float16).reshape(total, self.dimension).astype(np.float32)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class AnnRows:
    """One dimension's chunks up to a mark: a graph of their vectors, their rows, documents and dead flags."""

    def __init__(
        self, index: Index, seqs: np.ndarray, codes: np.ndarray, starts: np.ndarray, halves: HalfRows,
        documents: DocumentCodes, mark: tuple[int, int], last_chunk_id: str | None,
    ) -> None:
        self.index = index  # graph node i: chunk i's own vector
        self.seqs = seqs  # (chunks,) int64, increasing: chunk -> seq
        self.codes = codes  # (chunks,) int32: chunk -> document code
        self.starts = starts  # (chunks + 1,) int64: chunk i's rows are starts[i]:starts[i + 1] of `halves`
        self.halves = halves
        self.documents = documents
        self.mark = mark
        self.last_chunk_id = last_chunk_id  # the id of the last chunk: tells this database's base from another's
        self.dead = np.zeros(len(seqs), dtype=bool)
        self.dead_chunks = 0
        self.dead_rows = 0

    @property
    def dimension(self) -> int:
        return self.halves.dimension

    def __len__(self) -> int:
        """Rows (chunk and window vectors): what the rebuild thresholds compare with the delta."""
        return int(self.starts[-1])

    def kill(self, deleted: np.ndarray) -> int:
        """Flag the deleted chunks (seqs, sorted); how many of the base's rows were newly flagged."""
        if not len(deleted) or not len(self.seqs):
            return 0
        chunks = np.searchsorted(self.seqs, deleted)
        inside = chunks < len(self.seqs)
        chunks = chunks[inside][self.seqs[chunks[inside]] == deleted[inside]]
        chunks = chunks[~self.dead[chunks]]
        self.dead[chunks] = True
        self.dead_chunks += len(chunks)
        newly = int((self.starts[chunks + 1] - self.starts[chunks]).sum())
        self.dead_rows += newly
        return newly

    def search(self, query: np.ndarray, k: int, allowed: list[str] | None) -> ChunkScores:
        """The `k` best live chunks (of allowed documents), each scored by the best of its rows.

        The graph is asked for enough chunks to hold the candidates after the dead and filtered
        ones are dropped (oversampled by the share that passes); when that is more than a scan
        of the passing chunks would cost, or the graph came back short, every passing chunk is
        rescored instead, so a filter never loses a hit the exact search would find.
        """
        passing = None if allowed is None else self.documents.allowed_mask(allowed)[self.codes] & ~self.dead
        live = len(self.seqs) - self.dead_chunks if passing is None else int(passing.sum())
        if live == 0:
            return ChunkScores.empty()
        wanted = max(CANDIDATE_FACTOR * k, MIN_CANDIDATES)
        asked = math.ceil(wanted * len(self.seqs) / live)
        if asked < min(MAX_GRAPH_CHUNKS, live):
            chunks = self._graph_candidates(query, asked, passing, wanted)
            if len(chunks) >= min(wanted, live):
                return self._rescored(chunks, query, k)
        return self._rescored(np.flatnonzero(~self.dead if passing is None else passing), query, k)

    def _graph_candidates(self, query: np.ndarray, asked: int, passing: np.ndarray | None, wanted: int) -> np.ndarray:
        """Up to `wanted` passing chunks with the best approximate scores of their own vectors."""
        self.index.expansion_search = max(EXPANSION_SEARCH, EXPANSION_SEARCH * len(self.seqs) // EXPANSION_CHUNKS, asked)
        matches = self.index.search(query, asked, threads=1)
        chunks = np.asarray(matches.keys, dtype=np.int64)
        keep = ~self.dead[chunks] if passing is None else passing[chunks]
        return chunks[keep][:wanted]  # usearch returns them best first

    def _rescored(self, chunks: np.ndarray, query: np.ndarray, k: int) -> ChunkScores:
        """The `k` best of these chunks, each scored by the best of all its rows (float16), read
        in blocks of about SCAN_BLOCK_ROWS rows and in file order."""
        chunks = np.sort(chunks)
        starts, ends = self.starts[chunks], self.starts[chunks + 1]
        counts = ends - starts
        cuts = np.searchsorted(np.cumsum(counts), np.arange(SCAN_BLOCK_ROWS, int(counts.sum()), SCAN_BLOCK_ROWS))
        best = []
        for block in np.split(np.arange(len(chunks)), cuts):
            if len(block):
                # einsum rather than `@`: OpenBLAS spreads a product of a few thousand rows over its
                # threads, which on a busy machine cost 8 ms of CPU against einsum's 1.3 (1,880 rows)
                scores = np.einsum("ij,j->i", self.halves.read(starts[block], ends[block]), query)
                best.append(np.maximum.reduceat(scores, np.concatenate(([0], np.cumsum(counts[block])[:-1]))))
        scores = np.concatenate(best) if best else np.zeros(0, np.float32)
        top = top_indices(scores, k)
        return ChunkScores(self.seqs[chunks[top]], scores[top])

    def close(self) -> None:
        """Unmap the graph and close the rows' file (the numpy maps go with their last reference)."""
        self.index.reset()
        self.halves.close()


def build_ann(
    batches: Iterable[RowBatch], dimension: int, mark: tuple[int, int], chunk_id: Callable[[int], str | None],
    directory: Path | None,
) -> AnnRows:
    """Build the graph from the store's rows (streamed, in seq order); saved into `directory`
    (written in a temporary directory, fsynced, renamed into place) and opened from it, or kept
    in memory when None. The float16 rows stream to their file as they come, so the build
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
    counts: list[np.ndarray] = []
    chunks = 0
    with open(temporary / "f16.bin", "wb") if temporary is not None else io.BytesIO() as halves_out:
        for batch in batches:
            firsts = np.flatnonzero(np.concatenate(([True], batch.seqs[1:] != batch.seqs[:-1])))
            threads = 0 if len(firsts) >= PARALLEL_ADD_CHUNKS else 1  # 0: every core
            index.add(np.arange(chunks, chunks + len(firsts), dtype=np.uint64), batch.vectors[firsts], threads=threads)
            seqs.append(batch.seqs[firsts])
            codes.append(documents.encode([batch.documents[i] for i in firsts]))
            counts.append(np.diff(np.append(firsts, len(batch.seqs))))
            halves_out.write(batch.vectors.astype(np.float16).tobytes())
            chunks += len(firsts)
        in_memory = halves_out.getvalue() if isinstance(halves_out, io.BytesIO) else b""
    chunk_seqs = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
    chunk_codes = np.concatenate(codes) if codes else np.zeros(0, np.int32)
    starts = np.concatenate(([0], np.cumsum(np.concatenate(counts)))).astype(np.int64) if counts else np.zeros(1, np.int64)
    last_chunk_id = chunk_id(int(chunk_seqs[-1])) if len(chunk_seqs) else None
    if directory is None or temporary is None:
        halves = HalfRows(dimension, memory=np.frombuffer(in_memory, dtype=np.float16).reshape(-1, dimension))
        return AnnRows(index, chunk_seqs, chunk_codes, starts, halves, documents, mark, last_chunk_id)
    index.save(str(temporary / "index.usearch"))
    index.reset()
    np.save(temporary / "seqs.npy", chunk_seqs)
    np.save(temporary / "codes.npy", chunk_codes)
    np.save(temporary / "starts.npy", starts)
    meta = {"format": FORMAT, "dimension": dimension, "mark": list(mark), "rows": int(starts[-1]), "chunks": chunks,
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
    """Open a saved base, or None when it is missing, of another format, or does not read back whole."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != FORMAT:
            return None
        seqs = np.load(directory / "seqs.npy", mmap_mode="r")
        codes = np.load(directory / "codes.npy", mmap_mode="r")
        starts = np.load(directory / "starts.npy")
        rows, chunks, dimension = int(meta["rows"]), int(meta["chunks"]), int(meta["dimension"])
        if (directory / "f16.bin").stat().st_size != 2 * rows * dimension:
            return None
        index = _index_class().restore(str(directory / "index.usearch"), view=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None
    if index is None or len(index) != chunks or len(seqs) != chunks or len(codes) != chunks or len(starts) != chunks + 1 \
            or int(starts[-1]) != rows:
        return None
    halves = HalfRows(dimension, file=open(directory / "f16.bin", "rb"))  # noqa: SIM115 (closed by AnnRows.close)
    mark = (int(meta["mark"][0]), int(meta["mark"][1]))
    return AnnRows(index, seqs, codes, starts, halves, DocumentCodes(meta["documents"]), mark, meta["last_chunk_id"])


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
