"""A document's embedded chunks, kept until the whole document is written in one transaction.

Ingestion embeds a long document a slice at a time, but readers must see its old chunks or
all of its new ones (`DocumentStore.replace_chunks_in_batches`). Holding every slice's
vectors and window vectors until the end would make memory grow with the document (about
20-40 MB per MB of prose), so the slices go to an unnamed temporary file once there are more
than `HELD_CHUNKS` chunks, and are read back one batch at a time while the store writes them.
The file has no name: it is gone when closed or when the process ends, even by kill -9, so
an interrupted ingestion leaves nothing behind.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from typing import IO

from .stores.base import ChunkBatch

HELD_CHUNKS = 512
"""Chunks kept in memory before the spool moves to a temporary file: a document of a few
hundred chunks (most of them) never touches the disk."""


class ChunkSpool:
    """Batches of (chunks, vectors, windows) in the order they were appended."""

    def __init__(self, held_chunks: int = HELD_CHUNKS) -> None:
        self._held_chunks = held_chunks
        self._held: list[ChunkBatch] = []
        self._held_count = 0
        self._file: IO[bytes] | None = None
        self._spilled = 0

    def append(self, batch: ChunkBatch) -> None:
        self._held.append(batch)
        self._held_count += len(batch[0])
        if self._file is not None or self._held_count > self._held_chunks:
            self._spill()

    def batches(self) -> Iterator[ChunkBatch]:
        """Every batch appended, in order, one at a time (to hand to the store's write)."""
        if self._file is not None:
            self._file.seek(0)
            for _ in range(self._spilled):
                yield pickle.load(self._file)
        yield from self._held

    def close(self) -> None:
        """Drop what is held and remove the file."""
        self._held.clear()
        if self._file is not None:
            self._file.close()
            self._file = None

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="sourcebook-spool-")
        self._file.seek(0, 2)
        for batch in self._held:
            pickle.dump(batch, self._file, protocol=pickle.HIGHEST_PROTOCOL)
            self._spilled += 1
        self._held.clear()
        self._held_count = 0
