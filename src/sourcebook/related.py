"""Related content: documents like a document or a chunk, and what an answer did not cite.

"More like this" needs no embedding call: a document's vector is the normalised mean of its
chunks' stored vectors (a chunk's is its own), searched against every chunk the filters allow.
Hits are pooled per document (its best chunk's cosine), the document itself left out; the store
keeps the tenant's rows only, and `collections` narrows further (the API passes the caller's
readable collections, so a scoped key never hears of a document it may not read).

Under an answer, "you may also want to read" lists documents among the retrieved hits the
answer did not cite: the retrieval already judged them relevant, and they cost nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .errors import ChunkNotFoundError
from .models import Answer, RelatedDocument, ScoredId, SearchFilter, StoredChunk
from .stores.base import DocumentStore, SearchStore

OVERFETCH = 4
"""Chunks fetched per wanted document, beyond the subject's own (several chunks of one document
often rank together)."""
SUGGESTIONS = 3
"""Most "you may also want to read" documents under an answer."""


class RelatedStore(DocumentStore, SearchStore, Protocol):
    """What related content needs of a store: stored vectors, and vector search."""


def related_documents(
    store: RelatedStore, document_id: str, *, top_k: int = 5, collections: Sequence[str] | None = None
) -> list[RelatedDocument]:
    """Documents most like `document_id` (not itself), best first, within `collections` (None: all)."""
    chunks, vectors, _ = store.export_chunks(document_id)
    if not len(chunks):
        return []
    return _nearest(store, _normalised(vectors.mean(axis=0)), document_id, len(chunks), top_k, collections)


def related_to_chunk(
    store: RelatedStore, chunk_id: str, *, top_k: int = 5, collections: Sequence[str] | None = None
) -> list[RelatedDocument]:
    """Documents with passages most like the chunk `chunk_id` (its own document left out)."""
    chunk = _chunk(store, chunk_id)
    chunks, vectors, _ = store.export_chunks(chunk.document_id)
    position = next(i for i, stored in enumerate(chunks) if stored.position == chunk.position)
    return _nearest(store, _normalised(vectors[position]), chunk.document_id, len(chunks), top_k, collections)


def you_may_also_read(answer: Answer, limit: int = SUGGESTIONS) -> tuple[RelatedDocument, ...]:
    """Documents of the answer's hits it did not cite, in retrieval order (none for an abstention,
    whose hits were judged not relevant)."""
    if answer.abstained:
        return ()
    cited = {c.document_id for c in answer.citations}
    found: dict[str, RelatedDocument] = {}
    for hit in answer.hits:
        c = hit.chunk
        if c.document_id in cited or c.document_id in found:
            continue
        score = hit.vector_score if hit.vector_score is not None else hit.score
        found[c.document_id] = RelatedDocument(c.document_id, c.source, c.title, c.collection, float(score), c.id)
    return tuple(list(found.values())[:limit])


def _chunk(store: RelatedStore, chunk_id: str) -> StoredChunk:
    chunk = store.get_chunks([chunk_id]).get(chunk_id)
    if chunk is None:
        raise ChunkNotFoundError(f"no chunk with id {chunk_id!r}")
    return chunk


def _normalised(vector: np.ndarray) -> np.ndarray:
    return (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)


def _nearest(
    store: RelatedStore, vector: np.ndarray, own_document: str, own_chunks: int, top_k: int,
    collections: Sequence[str] | None,
) -> list[RelatedDocument]:
    """The `top_k` other documents whose best chunk is closest to `vector`."""
    if collections is not None and not collections:
        return []
    filters = SearchFilter.build(list(collections) if collections else None)
    scored: list[ScoredId] = store.vector_search(vector, own_chunks + top_k * OVERFETCH, filters)
    chunks = store.get_chunks([s.chunk_id for s in scored])
    best: dict[str, RelatedDocument] = {}
    for result in scored:  # best first
        chunk = chunks.get(result.chunk_id)
        if chunk is None or chunk.document_id == own_document or chunk.document_id in best:
            continue
        best[chunk.document_id] = RelatedDocument(
            chunk.document_id, chunk.source, chunk.title, chunk.collection, float(result.score), chunk.id
        )
    return list(best.values())[:top_k]
