"""What every store implementation shares: input checks, ids, and the typed errors it raises.

One place, so the SQLite and Postgres stores reject the same inputs with the same
messages, and a chunk is keyword-indexed on the same text in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from ..errors import (
    ChatSessionNotFoundError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    EmbeddingModelMismatchError,
    InvalidQueryError,
    StoreError,
)
from ..embedders.base import INT8_SUFFIX
from ..models import Chunk


def check_chunks_and_vectors(chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
    """Reject malformed input before the transaction starts (a caller bug, hence ValueError)."""
    if not isinstance(vectors, np.ndarray) or vectors.dtype != np.float32 or vectors.ndim != 2:
        raise ValueError("vectors must be a 2-d float32 numpy array")
    if vectors.shape[0] != len(chunks):
        raise ValueError(f"got {vectors.shape[0]} vectors for {len(chunks)} chunks")
    positions = [chunk.position for chunk in chunks]
    if len(set(positions)) != len(positions):
        raise ValueError("chunk positions must be unique within a document")


def check_windows(chunks: Sequence[Chunk], vectors: np.ndarray, windows: Sequence[np.ndarray] | None) -> list[np.ndarray]:
    """Each chunk's window vectors (chunking/windows.py) as (k, dimension) float32, k >= 0; None = no windows."""
    dimension = vectors.shape[1]
    if windows is None:
        return [np.zeros((0, dimension), np.float32)] * len(chunks)
    if len(windows) != len(chunks):
        raise ValueError(f"got window vectors for {len(windows)} chunks, expected {len(chunks)}")
    for matrix in windows:
        if not isinstance(matrix, np.ndarray) or matrix.dtype != np.float32 or matrix.ndim != 2:
            raise ValueError("window vectors must be 2-d float32 numpy arrays")
        if len(matrix) and matrix.shape[1] != dimension:
            raise ValueError(f"window vectors of dimension {matrix.shape[1]} for chunk vectors of dimension {dimension}")
    return [matrix if len(matrix) else np.zeros((0, dimension), np.float32) for matrix in windows]


def check_vector_dimension(document_id: str, expected: int, vectors: np.ndarray) -> None:
    if vectors.shape[1] != expected:
        raise ValueError(
            f"document {document_id!r} is in a collection of {expected}-dimensional vectors, "
            f"got vectors of dimension {vectors.shape[1]}"
        )


def unit_query(vector: np.ndarray) -> np.ndarray:
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(query))
    if not np.isfinite(norm) or norm == 0.0:
        raise InvalidQueryError("the query vector is zero or not finite")
    return query / norm


def check_k(k: int) -> None:
    if k < 1:
        raise InvalidQueryError(f"k must be at least 1, got {k}")


def chunk_id(document_id: str, position: int) -> str:
    return f"{document_id}#{position}"


def document_of(chunk_id: str) -> str:
    """The document id in a chunk id made by `chunk_id` (a store with ids of its own shape is
    still right: the retriever checks it against the fetched chunk before relying on it)."""
    return chunk_id.rpartition("#")[0]


def section(heading_path: tuple[str, ...]) -> str:
    return " > ".join(heading_path)


def indexed_text(title: str, heading_path: tuple[str, ...], text: str) -> str:
    """What keyword search matches a chunk on: its document's title, heading path and text."""
    return f"{title}\n{section(heading_path)}\n{text}"


def now() -> str:
    return datetime.now(UTC).isoformat()


# Errors -------------------------------------------------------------------------------
def model_mismatch(name: str, recorded: tuple[str, int], embedding_model: str, dimension: int) -> EmbeddingModelMismatchError:
    remedy = "use the matching model"
    if recorded[0].removesuffix(INT8_SUFFIX) == embedding_model.removesuffix(INT8_SUFFIX):
        # The same model at another precision: a knowledge base built before int8 became the default.
        precision = "int8" if recorded[0].endswith(INT8_SUFFIX) else "fp32"
        remedy = f'set embedding_precision = "{precision}" (SOURCEBOOK_EMBEDDING_PRECISION={precision})'
    return EmbeddingModelMismatchError(
        f"collection {name!r} was indexed with embedding model {recorded[0]!r} ({recorded[1]} dimensions), "
        f"but the configured model is {embedding_model!r} ({dimension} dimensions); "
        f"{remedy}, or re-index into a new collection"
    )


def query_dimension_mismatch(collection: str, expected: int, got: int) -> InvalidQueryError:
    return InvalidQueryError(
        f"collection {collection!r} holds {expected}-dimensional vectors but the query vector has {got}; "
        f"embed the query with the collection's model"
    )


def collection_not_found(name: str) -> CollectionNotFoundError:
    return CollectionNotFoundError(f"no collection named {name!r}; list them with `sourcebook status`")


def missing_collection(collection: str) -> StoreError:
    return StoreError(f"collection {collection!r} does not exist; create it with ensure_collection first")


def source_taken(source: str, collection: str, document_id: str) -> StoreError:
    return StoreError(
        f"{source!r} is already in collection {collection!r} as document {document_id!r}; update that document instead"
    )


def document_id_taken(document_id: str) -> StoreError:
    return StoreError(f"document id {document_id!r} is taken; derive ids with sourcebook.identity.document_id")


def session_taken(session_id: str) -> StoreError:
    return StoreError(f"a chat session with id {session_id!r} exists already; open it or pick another id")


def no_session(session_id: str) -> ChatSessionNotFoundError:
    return ChatSessionNotFoundError(f"no chat session with id {session_id!r}; list the sessions to find its id")


def not_found(document_id: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(f"no document with id {document_id!r}; list the documents to find its id")
