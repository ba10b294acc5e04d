"""Full-context mode: when the documents in scope are small, send them whole instead of top chunks.

Retrieval loses answers (a missed chunk, an irrelevant one ranked high); below a size the
model reads comfortably, whole documents answer better (the Chorus ADR: about 50 KB of
text). The documents are sent as their chunks in order, each chunk numbered like a
retrieved source so citations and their check work the same in both modes; the overlap
consecutive chunks share is trimmed, so the model reads each document once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import DocumentRecord, SearchFilter, StoredChunk
from ..stores.base import DocumentStore
from .prompts import Source

# Chunks are rarely shorter than this: a scope with more chunks than budget / this cannot
# fit, and is rejected without reading its text.
MIN_CHUNK_CHARS = 50
# Shorter common runs between consecutive chunks are coincidence, not overlap.
MIN_OVERLAP_CHARS = 16


def _same(actual: Any, wanted: Any) -> bool:
    """Metadata equality as the stores filter: JSON types must agree (True is not 1)."""
    if isinstance(actual, bool) != isinstance(wanted, bool) or isinstance(actual, str) != isinstance(wanted, str):
        return False
    return bool(actual == wanted)


def documents_in_scope(store: DocumentStore, filters: SearchFilter) -> list[DocumentRecord]:
    collections: Sequence[str | None] = filters.collections or (None,)
    records = [r for c in collections for r in store.list_documents(c) if r.chunk_count]
    if filters.document_ids:
        records = [r for r in records if r.id in filters.document_ids]
    return [r for r in records if all(_same(r.metadata.get(k), v) for k, v in filters.metadata)]


def trim_overlap(previous: str, text: str) -> str:
    """`text` without the beginning it repeats from the end of `previous`."""
    for size in range(min(len(previous), len(text)), MIN_OVERLAP_CHARS - 1, -1):
        if previous.endswith(text[:size]):
            return text[size:].lstrip()
    return text


def _document_sources(chunks: list[StoredChunk], first: int) -> list[Source]:
    sources: list[Source] = []
    previous = ""
    for chunk in chunks:
        text = trim_overlap(previous, chunk.text)
        previous = chunk.text
        if text.strip():
            sources.append(Source(first + len(sources), chunk, text))
    return sources


def full_context_sources(store: DocumentStore, filters: SearchFilter, budget_chars: int) -> list[Source] | None:
    """Every chunk of the documents in scope as numbered sources, or None when they exceed the budget."""
    records = documents_in_scope(store, filters)
    if not records or sum(r.chunk_count for r in records) * MIN_CHUNK_CHARS > budget_chars:
        return None
    sources: list[Source] = []
    for record in records:
        sources += _document_sources(store.document_chunks(record.id), len(sources) + 1)
        if sum(len(s.text) for s in sources) > budget_chars:
            return None
    return sources
