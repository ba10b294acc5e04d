"""What every suite shares: the fixture a back end provides, and helpers that write rows.

The helpers are public so that a back end's own tests (of what only it has) can build the
same documents the suites build.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from sourcebook.models import Chunk, DocumentRecord, DocumentStatus, ScoredId, SearchFilter
from sourcebook.owners import owner_token
from sourcebook.stores import Store

DIM = 4
MODEL = "test-model"
EVERYTHING = SearchFilter()


class StoreFixtures:
    """The fixtures of every store suite: `empty_store` comes from the back end, `store` from here."""

    @pytest.fixture
    def empty_store(self) -> Store:
        """A fresh store without a row, closed after the test: a back end's subclass overrides this."""
        pytest.fail(
            f"{type(self).__name__} must override the `empty_store` fixture: yield a fresh, empty store "
            "of your back end, then close it (see sourcebook.testing)"
        )

    @pytest.fixture
    def store(self, empty_store: Store) -> Store:
        """The store most tests start from: empty but for the collection "docs" (MODEL, DIM)."""
        empty_store.ensure_collection("docs", MODEL, DIM)
        return empty_store


def unit(*components: float) -> np.ndarray:
    """A unit vector of dimension DIM from its first components."""
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(components)] = components
    return vector / np.linalg.norm(vector)


def make_chunks(texts: Sequence[str], heading: str = "Section") -> list[Chunk]:
    return [
        Chunk(position=i, text=text, start=0, end=len(text), heading_path=(heading,), page=None,
              token_count=len(text.split()), prefix=f"Doc > {heading}")
        for i, text in enumerate(texts)
    ]


def add_document(
    store: Store,
    document_id: str,
    texts: Sequence[str],
    *,
    vectors: Sequence[np.ndarray] | None = None,
    collection: str = "docs",
    title: str = "A title",
    heading: str = "Section",
    metadata: dict | None = None,
) -> list[Chunk]:
    """Create a ready document whose chunks hold `texts` (vectors default to one direction)."""
    store.upsert_document(
        document_id, collection=collection, source=f"{document_id}.txt", title=title,
        media_type="text/plain", metadata=metadata or {}, status=DocumentStatus.PROCESSING,
    )
    chunks = make_chunks(texts, heading)
    matrix = np.stack(vectors if vectors is not None else [unit(1.0)] * len(texts)).astype(np.float32)
    store.replace_chunks(document_id, content_hash=f"hash-{document_id}", title=title, chunks=chunks, vectors=matrix)
    return chunks


def add_windowed_document(
    store: Store, document_id: str, texts: Sequence[str], vectors: Sequence[np.ndarray], windows: Sequence[np.ndarray]
) -> list[Chunk]:
    """Create a ready document in "docs" whose chunk i also has the sentence-window vectors `windows[i]`."""
    store.upsert_document(
        document_id, collection="docs", source=f"{document_id}.txt", title="T",
        media_type="text/plain", metadata={}, status=DocumentStatus.PROCESSING,
    )
    chunks = make_chunks(texts)
    store.replace_chunks(document_id, content_hash=f"hash-{document_id}", title="T", chunks=chunks,
                         vectors=np.stack(vectors).astype(np.float32), windows=[w.astype(np.float32) for w in windows])
    return chunks


def stored_record(store: Store, document_id: str) -> DocumentRecord:
    found = store.get_document(document_id)
    assert found is not None, f"document {document_id} is missing"
    return found


def ids(results: list[ScoredId]) -> list[str]:
    return [r.chunk_id for r in results]


def documents_of(results: list[ScoredId]) -> set[str]:
    return {r.chunk_id.split("#")[0] for r in results}


def search(store: Store, mode: str, filters: SearchFilter, k: int = 50) -> list[ScoredId]:
    """Both retrievers, asked for everything: every filter test runs once per mode."""
    if mode == "keyword":
        return store.keyword_search("shared", k, filters)
    return store.vector_search(unit(1.0), k, filters)


def ended_process_owner() -> str:
    """The owner token of a process of this host that has ended (a document it held is interrupted)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return owner_token(socket.gethostname(), child.pid, "")


def heeds_ctrl_c() -> None:
    """`preexec_fn` for a child a test stops with SIGINT: a job started in the background without
    job control (`(pytest &)` in a script) runs with SIGINT ignored, and its children inherit
    that, so Ctrl-C would never reach the child and the test would wait it out."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
