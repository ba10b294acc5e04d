"""A tenant's vector index: per dimension, an approximate base up to a mark plus an exact delta.

Why this shape (the issue "Scale"): reloading every vector after any write cost 31 s at 100k
chunks, and holding them as float32 cost 1.4 GB. Here a partition (one vector dimension) is

* below `ann_min_rows` rows: all its rows in an `ExactRows`, float32 as stored, searched
  exactly (at that size a scan is a few milliseconds and needs no file);
* above it: an `AnnRows` base (HNSW over the chunks' own vectors as int8 codes, memory-mapped
  from files beside the database, every row kept as float16 for rescoring) covering the rows
  up to the base's mark, plus an `ExactRows` delta of the rows
  added since; deleted chunks are flagged dead in the base and dropped from the delta.

Every search first catches up (`catch_up`, inside the store's read transaction): the chunks
with a seq above the mark it has seen are appended to the delta, the chunks deleted since are
flagged, so a write costs its own size. The base is rebuilt (from the store, in seq order)
only when the delta or the dead rows outgrow a share of it, when the change log was compacted
past its mark, or when its files are missing, corrupt or of another database. A base that
exists is rebuilt on a thread of its own, from its own read snapshot (`rebuild_source`), while
searches go on over the old base and the delta; the next catch-up swaps the new base in,
flags what was deleted after its mark and keeps in the delta only the rows above it. Only a
first build (no usable base at all) runs inside the search that needs it. The base's
candidates are rescored from the float16 copy of every row of each candidate chunk, so scores
equal the exact search's to about 1e-3, and the store returns only chunks it still holds.
Several processes may share the files: a base is published by an atomic rename of ``current.json`` under a lock file, and each process keeps its own delta and marks.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .ann import AnnRows, build_ann, open_ann
from .vectors import ChunkScores, ExactRows, RowBatch, merge_top

# Below this many rows (about 10k chunks with windows) exact search stays: it scans 50k rows in
# about 7 ms of CPU here and needs no build, and SciFact (48,844 rows) and pydocs stay exact, so
# their quality figures hold by construction (README, "Vectors at scale").
ANN_MIN_ROWS = 50_000
DELTA_SHARE = 0.05  # the delta (scanned exactly) may grow to this share of the base before a rebuild
DEAD_SHARE = 0.2  # deleted rows the base may carry before a rebuild
CURRENT = "current.json"
FORMAT = 1

Mark = tuple[int, int]  # (last chunk seq, last deletion id): stores/sqlite/changes.py's ChangeMark
_log = logging.getLogger(__name__)


class RowSource(Protocol):
    """What the index reads from the store, inside one read transaction."""

    def mark(self) -> Mark:
        """The store's position now."""

    def deleted_since(self, mark: Mark) -> np.ndarray | None:
        """Sorted seqs of the chunks deleted after `mark`, or None when the log no longer reaches it."""

    def dimensions(self) -> list[int]:
        """The vector dimensions of the tenant's collections."""

    def rows(self, after: int, upto: int, dimension: int | None) -> Iterator[tuple[int, RowBatch]]:
        """(dimension, rows) of the tenant's chunks with after < seq <= upto, in seq order."""

    def live_seqs(self, upto: int) -> np.ndarray:
        """Sorted seqs of the tenant's chunks with seq <= upto (what a base may still hold)."""

    def row_count(self, dimension: int) -> int:
        """How many rows (chunk and window vectors) the tenant has of this dimension."""

    def chunk_id(self, seq: int) -> str | None:
        """The id of the chunk with this seq, None when there is none."""



@dataclass
class Partition:
    """One dimension's rows: an optional approximate base and the exact rows beside it."""

    base: AnnRows | None
    delta: ExactRows


class TenantVectors:
    """The vector index of one tenant of one database (see the module docstring)."""

    def __init__(self, root: Path | None, ann_min_rows: int = ANN_MIN_ROWS,
                 rebuild_source: Callable[[], AbstractContextManager[RowSource]] | None = None) -> None:
        """`rebuild_source` opens a read snapshot of the store for a rebuild on another thread
        (None: rebuild inside the search that finds one due, as an in-memory database does)."""
        self.root = root  # <db>.indexes/<tenant>/, None for an in-memory database
        self.ann_min_rows = ann_min_rows
        self.partitions: dict[int, Partition] = {}
        self.seen: Mark | None = None
        self.full_loads = 0  # reads of every row of the tenant (open, or a compacted log): tests watch it
        self.builds = 0  # approximate bases built
        self._rebuild_source = rebuild_source
        self._rebuilding: dict[int, threading.Thread] = {}
        self._rebuilt: dict[int, AnnRows] = {}  # built on their threads, not swapped in yet
        self._rebuilt_lock = threading.Lock()  # guards _rebuilt and _closed (the builders' side)
        self._closed = False

    def catch_up(self, source: RowSource) -> None:
        """Reflect the store's current state: load on first use, else apply what changed since;
        then swap in a base rebuilt in the background, and start the rebuilds now due."""
        now = source.mark()
        if self.seen != now:
            deleted = None if self.seen is None or now < self.seen else source.deleted_since(self.seen)
            if self.seen is None or deleted is None:
                self._load(source, now)
                return
            for dimension, batch in source.rows(self.seen[0], now[0], None):
                self._partition(dimension).delta.add(batch)
            if len(deleted):
                for partition in self.partitions.values():
                    partition.delta.remove(deleted)
                    if partition.base is not None:
                        partition.base.kill(deleted)
            self.seen = now
        self._swap_in_rebuilt(source)
        self._build_where_due(source, now)

    def wait_for_rebuilds(self, timeout: float | None = None) -> None:
        """Block until the background rebuilds under way end (tests, benchmarks, shutdown)."""
        for thread in list(self._rebuilding.values()):
            thread.join(timeout)

    def search(self, source: RowSource, query: np.ndarray, k: int, allowed: list[str] | None) -> ChunkScores:
        """The `k` best chunks for a unit `query` among the allowed documents (None: all)."""
        partition = self.partitions.get(len(query))
        if partition is None:
            return ChunkScores.empty()
        found = [partition.delta.search(query, k, allowed)]
        if partition.base is not None:
            found.append(partition.base.search(query, k, allowed))
        return merge_top(found, k)

    def close(self) -> None:
        """Let go of every base; a rebuild still running publishes its files and is then dropped."""
        with self._rebuilt_lock:
            self._closed = True
            ready, self._rebuilt = self._rebuilt, {}
        for base in ready.values():
            base.close()
        self._close_partitions()

    def _close_partitions(self) -> None:
        for partition in self.partitions.values():
            if partition.base is not None:
                partition.base.close()
        self.partitions = {}
        self.seen = None

    def _partition(self, dimension: int) -> Partition:
        return self.partitions.setdefault(dimension, Partition(None, ExactRows(dimension)))

    def _load(self, source: RowSource, now: Mark) -> None:
        """Open the published bases that are still valid and read every row after them."""
        self._close_partitions()
        self.full_loads += 1
        published = self._published()
        for dimension in source.dimensions():
            base = self._open_base(source, published.get(str(dimension)), dimension, now)
            if base is None and source.row_count(dimension) >= self.ann_min_rows:
                self.partitions[dimension] = Partition(None, ExactRows(dimension))
                self._build(source, dimension, now)  # streamed: the rows are never all in memory
                continue
            delta = ExactRows(dimension)
            for _, batch in source.rows(base.mark[0] if base else 0, now[0], dimension):
                delta.add(batch)
            self.partitions[dimension] = Partition(base, delta)
        self.seen = now
        self._build_where_due(source, now)

    def _open_base(self, source: RowSource, name: str | None, dimension: int, now: Mark) -> AnnRows | None:
        """The published base of `dimension` with its deletions flagged, or None when it is unusable:
        missing or corrupt, of another dimension, newer than the store, from another database
        (its last chunk is not the store's chunk of that seq) or smaller than this index's
        threshold (a process told to search exactly does). When `compact` emptied the change log
        past the base's mark, its dead rows are found by comparing its seqs with the file's."""
        if self.root is None or name is None:
            return None
        base = open_ann(self.root / name)
        if base is None:
            return None
        usable = base.dimension == dimension and base.mark[0] <= now[0] and len(base) >= self.ann_min_rows
        deleted = source.deleted_since(base.mark) if usable else None
        if usable and deleted is None:  # the log was compacted past the base: compare with the rows
            deleted = base.seqs[~np.isin(base.seqs, source.live_seqs(base.mark[0]), assume_unique=True)]
        if deleted is None or not _same_database(source, base, deleted):
            base.close()
            return None
        base.kill(deleted)
        return base

    def _build_where_due(self, source: RowSource, now: Mark) -> None:
        for dimension, partition in list(self.partitions.items()):
            base, delta = partition.base, len(partition.delta)
            if base is None:
                due = delta >= self.ann_min_rows
            else:
                due = delta > max(self.ann_min_rows // 2, DELTA_SHARE * len(base)) or base.dead_rows > DEAD_SHARE * len(base)
            if due and base is not None and self._rebuild_source is not None:
                self._rebuild_in_background(dimension)
            elif due:
                self._build(source, dimension, now)

    def _build(self, source: RowSource, dimension: int, now: Mark) -> None:
        """Build the dimension's base from every row up to `now`, publish it, empty the delta."""
        old = self.partitions[dimension].base
        base = self._built_base(source, dimension, now)
        if old is not None:
            old.close()
        self.partitions[dimension] = Partition(base, ExactRows(dimension))
        self.builds += 1

    def _built_base(self, source: RowSource, dimension: int, now: Mark) -> AnnRows:
        """A new base of the dimension's rows up to `now`, published when the index has files."""
        rows = (batch for _, batch in source.rows(0, now[0], dimension))
        if self.root is None:
            return build_ann(rows, dimension, now, source.chunk_id, None)
        with self._locked():
            name = f"d{dimension}-{now[0]}-{now[1]}-{uuid.uuid4().hex[:8]}"
            base = build_ann(rows, dimension, now, source.chunk_id, self.root / name)
            self._publish(dimension, name)
        return base

    def _rebuild_in_background(self, dimension: int) -> None:
        running = self._rebuilding.get(dimension)
        if running is not None and running.is_alive():
            return
        with self._rebuilt_lock:
            if dimension in self._rebuilt:  # built, waiting for the next catch-up to swap it in
                return
        thread = threading.Thread(target=self._rebuild, args=(dimension,), name=f"sourcebook-index-d{dimension}", daemon=True)
        self._rebuilding[dimension] = thread
        thread.start()

    def _rebuild(self, dimension: int) -> None:
        """The rebuild thread: a base from the store's state when it starts, left for `_swap_in_rebuilt`."""
        assert self._rebuild_source is not None
        try:
            with self._rebuild_source() as source:
                base = self._built_base(source, dimension, source.mark())
        except Exception:  # the old base and the delta keep serving; the next catch-up tries again
            _log.exception("rebuilding the vector index of dimension %d failed", dimension)
            return
        with self._rebuilt_lock:
            if not self._closed:
                self._rebuilt[dimension] = base
                return
        base.close()

    def _swap_in_rebuilt(self, source: RowSource) -> None:
        """Put the bases rebuilt in the background in place (inside the caller's read transaction,
        after catching up to it): each flags the chunks deleted after its mark, and the delta
        keeps only the rows above that mark. One built from a snapshot newer than this one waits
        for a later catch-up; one older than the base in place, or whose deletions the change log
        no longer reaches, is dropped."""
        with self._rebuilt_lock:
            ready, self._rebuilt = self._rebuilt, {}
        for dimension, base in ready.items():
            if self.seen is not None and base.mark > self.seen:  # built from a newer snapshot than this search's
                with self._rebuilt_lock:
                    self._rebuilt.setdefault(dimension, base)
                continue
            partition = self.partitions.get(dimension)
            deleted = source.deleted_since(base.mark)
            current = None if partition is None else partition.base
            if partition is None or deleted is None or (current is not None and current.mark >= base.mark):
                base.close()
                continue
            base.kill(deleted)
            partition.delta.drop_through(base.mark[0])
            if current is not None:
                current.close()
            partition.base = base
            self.builds += 1

    def _published(self) -> dict[str, str]:
        """The base directory of each dimension named by ``current.json`` ({} when none or unreadable)."""
        if self.root is None:
            return {}
        try:
            current = json.loads((self.root / CURRENT).read_text())
        except (OSError, ValueError):
            return {}
        bases = current.get("bases") if isinstance(current, dict) and current.get("format") == FORMAT else None
        return {str(k): str(v) for k, v in bases.items()} if isinstance(bases, dict) else {}

    def _publish(self, dimension: int, name: str) -> None:
        """Point ``current.json`` at the new base (atomic rename) and delete unreferenced ones
        (a process still mapping a deleted base keeps its pages until it lets go)."""
        assert self.root is not None
        bases = self._published()
        bases[str(dimension)] = name
        temporary = self.root / f".{CURRENT}.{uuid.uuid4().hex[:8]}"
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump({"format": FORMAT, "bases": bases}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.root / CURRENT)
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.name not in bases.values():
                shutil.rmtree(entry, ignore_errors=True)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the directory's lock file: one process builds and publishes at a time."""
        assert self.root is not None
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _same_database(source: RowSource, base: AnnRows, deleted: np.ndarray) -> bool:
    """Whether the base was built from this database: its last chunk is still the store's chunk of
    that seq, or was deleted since (a file replaced by a new database reuses seqs from 1)."""
    if not len(base.seqs):
        return True
    last = int(base.seqs[-1])
    if np.isin(last, deleted):
        return True
    return source.chunk_id(last) == base.last_chunk_id
