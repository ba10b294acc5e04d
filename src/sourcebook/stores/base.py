"""The roles a store plays, as protocols, and `Store`: every role of one tenant's database.

A back end implements all of them (SQLite and Postgres do, and pass the conformance
suites shipped in `sourcebook.testing`); a consumer names the narrowest role it uses, so what it
needs from a database reads from its signature (retrieval.py takes a `SearchStore`,
enrichment.py a `ContextCache`). Scores returned by searches are "higher is better" in
every implementation: positive BM25 for keyword search, cosine similarity for vectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, Protocol, TypedDict, Unpack, runtime_checkable

import numpy as np

from ..apikeys import KeyStore
from ..graph.models import DocumentGraph, EntityRecord, RelationRecord
from ..models import Chunk, DocumentRecord, DocumentStatus, ScoredId, SearchFilter, StoredChunk, TermStatistics
from ..usage import UsageTally

ChunkBatch = tuple[Sequence[Chunk], np.ndarray, Sequence[np.ndarray] | None]
"""Chunks, their vectors and their window vectors (None: no windows), as `replace_chunks` takes them."""

@dataclass(frozen=True)
class CollectionInfo:
    name: str
    embedding_model: str
    dimension: int
    document_count: int
    chunk_count: int


@dataclass(frozen=True)
class ChatSessionRecord:
    id: str
    title: str
    created_at: str
    updated_at: str
    message_count: int
    collections: tuple[str, ...] = ()
    """The collections the session was created and asked in, sorted ("*": every collection), so
    a collection-scoped API key touches only sessions within its grants; () = none yet."""


@dataclass(frozen=True)
class ChatMessageRecord:
    """One turn of a chat session; `data` is the assistant's full answer (Answer.to_dict())."""

    session_id: str
    role: str
    content: str
    data: dict[str, Any] | None
    created_at: str


class DocumentFields(TypedDict):
    """A document's descriptive fields, as `DocumentStore.upsert_document` takes them (keywords)."""

    collection: str
    source: str
    title: str
    media_type: str
    metadata: dict[str, Any]
    status: DocumentStatus
    error: NotRequired[str | None]
    owner: NotRequired[str | None]
    """The process ingesting it (`owners.this_process()`), kept while pending or processing."""


class DocumentStore(Protocol):
    """Collections, documents, their chunks and the chunks' vectors (what ingestion writes)."""

    def ensure_collection(self, name: str, embedding_model: str, dimension: int) -> None:
        """Create the collection, or check that it was indexed with this model and dimension.

        Raises EmbeddingModelMismatchError when the recorded model or dimension differ.
        """

    def collections(self) -> list[CollectionInfo]: ...

    def delete_collection(self, name: str) -> None:
        """Remove the collection with its documents, chunks, vectors and keyword rows (one transaction).

        Raises CollectionNotFoundError when there is no such collection.
        """

    # Documents -----------------------------------------------------------
    def get_document(self, document_id: str) -> DocumentRecord | None: ...

    def find_document(self, collection: str, source: str) -> DocumentRecord | None: ...

    def list_documents(
        self, collection: str | None = None, status: DocumentStatus | None = None
    ) -> list[DocumentRecord]: ...

    def upsert_document(self, document_id: str, *, create: bool = True, **fields: Unpack[DocumentFields]) -> None:
        """Create the document row or update its descriptive fields and status.

        Never touches its chunks, content hash or chunk count: a document being
        re-processed stays searchable with its old chunks until `replace_chunks`.
        With `create=False` only an existing row is updated, else DocumentNotFoundError, in
        one statement: an ingestion job never brings back a document deleted meanwhile.
        """

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None, owner: str | None = None
    ) -> None:
        """Record a status (never `interrupted`, which is only read). `owner`, the process that
        works on the document (`owners.this_process()`), is kept with pending and processing and
        cleared by any other status, `replace_chunks` included.

        Reads (`get_document`, `find_document`, `list_documents` and its status filter, the
        counts of `stats`) report a pending or processing document whose owner has ended
        (`owners.owner_gone`) as `interrupted`, with `owners.interrupted_reason` as its error:
        status tells the truth after a killed ingestion, before anything repairs it.
        """

    def replace_chunks(
        self,
        document_id: str,
        *,
        content_hash: str,
        title: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        windows: Sequence[np.ndarray] | None = None,
    ) -> None:
        """Atomically swap the document's chunks, vectors and keyword rows for these.

        One transaction: readers see the old chunks or the new ones, never a mix.
        Sets status ready, error None, chunk_count and content_hash.
        `vectors` is float32 of shape (len(chunks), dimension), L2-normalised.
        `windows`, when given, holds one float32 array per chunk of shape (k, dimension),
        k >= 0: the vectors of the chunk's sentence windows (chunking/windows.py), which vector
        search scores the chunk by too.
        """

    def replace_chunks_in_batches(
        self, document_id: str, *, content_hash: str, title: str, batches: Iterable[ChunkBatch]
    ) -> None:
        """`replace_chunks` with the chunks given a batch at a time, read while the one
        transaction writes them: a document of any size is written atomically while only one
        batch is held in memory. A batch is (chunks, vectors, windows) as `replace_chunks`
        takes them; positions are unique across all batches. A malformed batch, or an
        exception raised by `batches` itself, rolls everything back: the old chunks stay.
        """

    def delete_document(self, document_id: str) -> None:
        """Remove the document, its chunks, vectors and keyword rows (one transaction)."""

    # Chunks and vectors --------------------------------------------------
    def vectors_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of chunks in `collection` whose content hash is in `hashes`."""

    def windows_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored window vectors, (k, dimension) with k >= 0, of chunks in `collection` whose
        content hash is in `hashes` (a chunk stored without windows has k = 0)."""

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]: ...

    def document_chunks(self, document_id: str) -> list[StoredChunk]:
        """The document's chunks in position order."""

    # Copying between stores (sourcebook copy) -----------------------------
    def export_chunks(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[np.ndarray]]:
        """The document's chunks as `replace_chunks` took them (position order), their
        vectors and their window vectors: what moving a knowledge base to another store
        needs, without re-embedding."""



class SearchStore(Protocol):
    """Keyword and vector search over the chunks, and the chunks the hits name."""

    concurrent_searches: bool
    """True when `keyword_search` and `vector_search` may run at the same time on two threads
    and a hybrid search gains from it: the retriever then runs the keyword search in a shared
    worker while it embeds the query and runs the vector search (retrieval.py, overlap.py).
    Declare it only for searches that are thread-safe and spend much of their time outside the
    GIL (a database server's round trips, native index code), and only if it measures faster. The
    Postgres store declares it (two pooled connections, two server processes); the SQLite store
    does not (in-process searches that mostly hold the GIL: no faster measured; README,
    "Overlapped keyword and vector retrieval", has both measurements). A store without the attribute is searched sequentially; `SearchStoreSuite`
    checks a store that declares it."""

    def keyword_search(self, query: str, k: int, filters: SearchFilter) -> list[ScoredId]:
        """BM25 over prefix + text. Any-term (OR) matching; empty list for a query with no terms."""

    def term_statistics(self, query: str) -> TermStatistics:
        """The live chunk count and, for each of the query's keyword terms (as `keyword_search`
        analyses them), how many live chunks hold it: over the whole tenant, whatever a search's
        filters, because it asks whether the knowledge base names a thing at all (answering/evidence.py)."""

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilter) -> list[ScoredId]:
        """Cosine similarity of `vector` (normalised) against the chunks passing `filters`; a
        chunk with window vectors scores the best of its own cosine and its windows'."""

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]: ...

    def search_generation(self) -> int:
        """A number that moves on with every committed write that can change what a search of this
        tenant returns (documents, chunks, collections, the graph), whichever process wrote it:
        the query cache (query_cache.py) keys on it, so a write never serves a stale result."""


class ChatStore(Protocol):
    """Stored chat sessions and their turns.

    A session carries the collections it was used in (`ChatSessionRecord.collections`): every
    write adds its `collections` to the session's set, which never shrinks."""

    def create_chat_session(self, session_id: str, title: str, collections: Sequence[str] = ()) -> None:
        """Create an empty session used in `collections`. Raises StoreError when the id is taken."""

    def get_chat_session(self, session_id: str) -> ChatSessionRecord | None: ...

    def list_chat_sessions(self) -> list[ChatSessionRecord]:
        """Most recently updated first."""

    def add_chat_message(
        self, session_id: str, role: str, content: str, data: dict[str, Any] | None = None, collections: Sequence[str] = ()
    ) -> None:
        """Append a turn ("user" or "assistant") answered from `collections` (added to the session's).
        Raises ChatSessionNotFoundError for an unknown session."""

    def chat_messages(self, session_id: str) -> list[ChatMessageRecord]:
        """The session's turns in order. Raises ChatSessionNotFoundError for an unknown session."""

    def delete_chat_session(self, session_id: str) -> None:
        """Remove the session and its turns. Raises ChatSessionNotFoundError for an unknown session."""


class ContextCache(Protocol):
    """Situating sentences of the contextual enrichment, by chunk hash and generator."""

    def get_chunk_contexts(self, chunk_hashes: Sequence[str], generator: str) -> dict[str, str]:
        """Situating sentences `generator` wrote earlier, by the content hash of the plain chunk."""

    def put_chunk_contexts(self, contexts: dict[str, str], generator: str) -> None:
        """Remember situating sentences (chunk hash -> sentence) so re-ingestion does not pay twice."""



class SummaryCache(Protocol):
    """Summaries (answering/summaries.py) by subject and summarizer, valid for one content hash.

    `subject` is a document id or "collection:NAME"; `content_hash` is what the summary was
    made from (the document's content hash, or a hash of the collection's documents' hashes),
    so a changed subject misses and the next `put_summary` replaces the stale row."""

    def get_summary(self, subject: str, content_hash: str, summarizer: str) -> dict[str, Any] | None:
        """The cached summary (`Summary.to_dict()`), or None when absent or made from other content."""

    def put_summary(self, subject: str, content_hash: str, summarizer: str, data: dict[str, Any]) -> None:
        """Keep `data` as the subject's summary by `summarizer`, replacing any older one."""


class GraphStore(Protocol):
    """The knowledge graph (graph/) and its extraction cache.

    Nodes merge across documents by key; provenance is per chunk, so deleting a document
    or replacing its chunks removes its mentions and supports and prunes every node and
    edge left without any. All of it is scoped to the store's tenant.
    """

    def get_graph_extractions(self, chunk_hashes: Sequence[str], extractor: str) -> dict[str, dict[str, Any]]:
        """Cached per-chunk extractions (ChunkExtraction JSON) by chunk content hash."""

    def put_graph_extractions(self, extractions: dict[str, dict[str, Any]], extractor: str) -> None:
        """Cache extractions (chunk hash -> ChunkExtraction JSON) so re-ingestion does not pay twice."""

    def replace_document_graph(self, graph: DocumentGraph) -> None:
        """Atomically swap the document's mentions, links and aliases for `graph`'s.

        Mentions and links name chunks by id; ones naming chunks the document no longer has
        are ignored. An alias whose key already has a node merges that node into the
        canonical one. Raises DocumentNotFoundError for an unknown document.
        """

    def graph_documents(self) -> dict[str, tuple[str, str]]:
        """Documents whose graph is built: document id -> (extractor, content hash it was built from)."""

    def list_entities(
        self, query: str | None = None, type: str | None = None, limit: int | None = 50, offset: int = 0
    ) -> list[EntityRecord]:
        """Entities, most mentioned first; `query` is a case-insensitive substring of name, key or alias."""

    def find_entities(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        """The entities named by these keys or alias keys, keyed by the key asked for (absent when unknown)."""

    def entity_relations(self, keys: Sequence[str] | None = None, limit: int | None = None) -> list[RelationRecord]:
        """Relations touching any of the entity keys (every relation when None), heaviest first."""

    def entity_chunks(
        self, keys: Sequence[str], filters: SearchFilter = SearchFilter()
    ) -> list[tuple[str, str, str, int]]:
        """(entity key, chunk id, document id, mention count) for the chunks mentioning these
        entities within `filters`, by key, then most mentions first."""

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """chunk id -> {entity key: mention count}, for those of the chunks that mention any entity."""

    def graph_stats(self) -> dict[str, int]:
        """Counts of entities, relations and documents with a built graph."""


class KeyStoreProvider(Protocol):
    """Holds the API keys of the HTTP service beside its documents."""

    def api_keys(self) -> KeyStore:
        """The key store kept in this store's database (global: keys say which tenant a request is)."""


@runtime_checkable
class UsageStore(Protocol):
    """Requests and model calls per tenant, UTC day and API key (usage.py counts them)."""

    def record_usage(self, day: str, api_key: str, tally: UsageTally) -> None:
        """Add `tally` to the tenant's row of (`day`, `api_key`); concurrent adds sum. An empty tally writes nothing."""

    def usage(self, since: str | None = None, until: str | None = None) -> list[dict[str, int | str]]:
        """The tenant's rows with `since` <= day <= `until` (YYYY-MM-DD, inclusive), by day then key:
        {"tenant", "day", "api_key", "requests", "llm_calls", "input_tokens", "output_tokens",
        "embedding_calls", "embedded_texts"}."""


class Store(DocumentStore, SearchStore, ChatStore, ContextCache, SummaryCache, UsageStore, GraphStore, KeyStoreProvider, Protocol):
    """Every role, on one database scoped to one tenant.

    Every method sees and changes only the rows of `tenant`; `for_tenant` gives the same
    database scoped to another tenant (sharing connections), which is how a server that
    serves many tenants holds one store.
    """

    tenant: str

    def for_tenant(self, tenant: str) -> Store:
        """The same database scoped to `tenant`. Raises InvalidTenantError for a bad name."""

    def tenants(self) -> list[str]:
        """Every tenant holding rows in this database, sorted (not only this view's).

        Raises StoreError when this connection may not see other tenants (Postgres: a DSN
        whose role is subject to row-level security)."""

    # Housekeeping --------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts by status, chunk and vector counts, the file/DSN and its size."""

    def compact(self) -> dict[str, int]:
        """Drop what no stored chunk uses any more, and say how much of each went.

        Deleting or re-ingesting a document keeps the tenant's cached graph extractions and
        situating sentences (adding it back pays no LLM call) and, on SQLite, the shared
        term list; this drops those rows no live chunk can use and gives the space back (SQLite:
        VACUUM); summaries of documents and collections that are gone go too. Returns counts of
        "graph_extractions", "chunk_contexts", "summaries" and "terms" dropped, and "size_bytes_before" / "size_bytes_after".
        """

    def close(self) -> None: ...
