"""The `KnowledgeBase` facade: the one object the CLI, the HTTP API and users call.

It holds the user's API only: what it runs on (store, model, LLM clients, ingestion
runner) is built by wiring.py, and the store stays private, so no caller reaches past it.
The embedding model loads lazily: listing documents or removing one does not pay for it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

from .apikeys import KeyStore
from .answering.llm import Answerer, AnswerStream, Question
from .answering.summaries import DEFAULT_SENTENCES, Summarizer
from .chat import ChatSession
from .copying import CopyReport, ProgressCallback, copy_into
from .embedders.base import Embedder
from .errors import (
    ChatSessionNotFoundError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentNotFoundError,
    InvalidQueryError,
)
from .generators import Generator, Message
from .graph.browse import EntityView, entity_view
from .graph.builder import Extractor, GraphBuilder, GraphBuildReport, GraphProgress, OfflineExtractor
from .graph.export import FORMATS as GRAPH_FORMATS
from .graph.export import graph_graphml, graph_json
from .graph.llm import LLMExtractor
from .graph.models import EntityRecord
from .identity import document_id, move_document, normalize_source, source_readable
from .ingest import ProgressHandler
from .jobs import IngestionRunner
from .loaders import READER_METADATA, RawSource, identify_source
from .models import (
    Answer,
    DocumentRecord,
    DocumentStatus,
    Hit,
    IngestResult,
    RelatedDocument,
    SearchFilter,
    StoredChunk,
    Summary,
    checked_metadata,
)
from .refresh import refresh_urls
from .related import related_documents, related_to_chunk
from .retrieval import Retriever, SearchOptions
from .settings import AnswerMode, RetrievalMode, Settings
from .stores.base import ChatSessionRecord, CollectionInfo, Store
from .usage import UsageTally, recorded, today
from .wiring import Components

DEFAULT_COLLECTION = "default"
ANSWER_PER_DOCUMENT = 3
"""Most chunks of one document an answer's sources take before other documents' (then topped up to
answer_sources): at 2 the third entry of the page that answers lost to other pages' near misses
(README, "Answers": gold locus in the top 5 on the dev questions 0.963 at 2, 0.988 at 3)."""


def ingested_ids(results: Sequence[IngestResult]) -> list[str]:
    """Documents that `add` left ready (added, updated or unchanged): what `add --graph` builds."""
    return [r.document_id for r in results if r.document_id and r.action not in ("failed", "queued")]


def _served_again(answer: Answer) -> Answer:
    """The copy of an answer the query cache serves: no LLM call made it, so it reports no usage
    (and /metrics counts no tokens for it) beyond saying where it came from."""
    return replace(answer, usage={"cached": True})


class AskOptions(TypedDict, total=False):
    """What `ask` and `ask_stream` take besides the question and the LLM (see `question`)."""

    collection: str | Sequence[str] | None
    document_ids: Sequence[str] | None
    metadata: dict[str, Any] | None
    top_k: int | None
    mode: AnswerMode | None
    rewrite: bool | None


class KnowledgeBase:
    """Documents in, cited answers out. Use `KnowledgeBase.open(path)`, or pass a store of your own."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        embedder: Embedder | None = None,
        generators: dict[str, Generator] | None = None,
    ) -> None:
        self._attach(Components(store, settings, embedder, generators))

    def _attach(self, parts: Components) -> None:
        """Hold `parts` (built by wiring.py); the store is private to the facade."""
        self._parts = parts
        self._store = parts.store
        self.settings = parts.settings
        self._retriever = Retriever(
            self._store, lambda: self.embedder, tenant=self.tenant, cache=lambda: parts.query_cache,
            rerank_model=self.settings.rerank_model,
        )

    @classmethod
    def _over(cls, parts: Components) -> KnowledgeBase:
        """A knowledge base over parts already built (`open`, `for_tenant`): the constructor builds its own."""
        kb = cls.__new__(cls)
        kb._attach(parts)
        return kb

    @classmethod
    def open(cls, path: str | Path | None = None, settings: Settings | None = None, **overrides: Any) -> KnowledgeBase:
        """Open (creating if needed) the knowledge base at `path` (default: settings.db)."""
        settings = settings or Settings()
        if overrides:
            settings = settings.model_copy(update=overrides)
        if path is not None:
            settings = settings.model_copy(update={"db": str(path)})
        return cls._over(Components.build(settings))

    @property
    def tenant(self) -> str:
        return self._store.tenant

    def for_tenant(self, tenant: str) -> KnowledgeBase:
        """The same knowledge base seen by `tenant`: one database, model and LLM clients, no
        document of any other tenant (the store enforces it). Closing either closes both."""
        return KnowledgeBase._over(self._parts.for_tenant(tenant))

    @property
    def embedder(self) -> Embedder:
        return self._parts.embedder

    # Ingestion -----------------------------------------------------------
    def add(
        self,
        sources: str | Path | Sequence[str | Path],
        collection: str = DEFAULT_COLLECTION,
        *,
        metadata: dict[str, Any] | None = None,
        format: str = "auto",
        progress: ProgressHandler | None = None,
        graph: bool = False,
        wait: bool = True,
    ) -> list[IngestResult]:
        """Add files, folders or URLs (or a BEIR corpus.jsonl with format="beir").

        Unchanged sources cost a hash; changed ones re-embed only changed chunks.
        A bad source yields a "failed" result and never stops the others. On Postgres each
        source is a queued job (jobs/): `wait=False` returns "queued" results at once.
        `graph=True` also builds the knowledge graph of the added documents (`build_graph`).
        """
        items = [sources] if isinstance(sources, (str, Path)) else list(sources)
        results = self._parts.runner.add([str(s) for s in items], collection, metadata, format, progress, wait)
        if graph:
            self.build_graph(ingested_ids(results))
        return results

    def sync(
        self, directory: str | Path, collection: str = DEFAULT_COLLECTION, *, progress: ProgressHandler | None = None
    ) -> list[IngestResult]:
        """Make the collection mirror a folder: add new and changed files, remove vanished ones."""
        results = self.add(str(directory), collection, progress=progress)
        root = normalize_source(str(directory))
        for record in self._store.list_documents(collection):
            path = record.metadata.get("path")
            if not path or not str(path).startswith(root + os.sep) or os.path.exists(path):
                continue
            self._store.delete_document(record.id)
            results.append(IngestResult(record.source, "removed", record.id, None, 0, 0))
        return results

    def refresh(self, collection: str | None = None) -> list[IngestResult]:
        """Fetch the URL documents (of `collection`, else all) again with a conditional GET and
        ingest the ones whose content changed (refresh.py); the others are "unchanged"."""
        return refresh_urls(self._store, self._parts.ingestor, self.settings, collection)

    def move(self, document: str, path: str | Path, collection: str | None = None) -> DocumentRecord:
        """The document (id or source) as now read from `path`, where its file was moved or
        renamed: its chunks and vectors are kept and nothing is embedded again. The file must hold
        what was stored (LoaderError otherwise); see `identity.move_document`."""
        record = self.document(document, collection)
        move_document(self._store, record, identify_source(normalize_source(str(path)), self.settings))
        return self.document(record.id)

    def repair(self) -> list[IngestResult]:
        """Finish what interrupted ingestions left (documents whose ingesting process ended,
        `owners.py`): add each file and URL again, with the metadata it had (a vanished file
        fails as `add` does, in error with the reason); one that cannot be read again (an
        upload, a BEIR record) ends in error with the reason."""
        results: list[IngestResult] = []
        groups: dict[tuple[str, str], list[str]] = {}
        for record in self.documents(status=DocumentStatus.INTERRUPTED):
            if not source_readable(record):
                reason = f"interrupted, and {record.source} cannot be read again here; add or upload it again"
                self._store.set_status(record.id, DocumentStatus.ERROR, reason)
                results.append(IngestResult(record.source, "failed", record.id, str(DocumentStatus.ERROR), 0, 0, reason, "source_unreadable"))
                continue
            kept = {key: value for key, value in record.metadata.items() if key not in READER_METADATA}
            groups.setdefault((record.collection, json.dumps(kept, sort_keys=True)), []).append(record.source)
        for (collection, metadata), sources in groups.items():
            results += self.add(sources, collection, metadata=json.loads(metadata))
        return results

    def remove(self, document: str, collection: str | None = None) -> DocumentRecord:
        """Remove a document (by id or by source) with its chunks, vectors and index rows."""
        record = self.document(document, collection)
        self._store.delete_document(record.id)
        return record

    # Reading -------------------------------------------------------------
    def documents(self, collection: str | None = None, status: DocumentStatus | str | None = None) -> list[DocumentRecord]:
        return self._store.list_documents(collection, DocumentStatus(status) if status else None)

    def document(self, document: str, collection: str | None = None) -> DocumentRecord:
        """Find a document by id, or by source (as given to `add`), optionally in one collection."""
        record = self._store.get_document(document)
        if record and (collection is None or record.collection == collection):
            return record
        collections = [collection] if collection else [c.name for c in self._store.collections()]
        # A file by any spelling (its resolved path), else the name as stored (an upload's, a BEIR id).
        spellings = dict.fromkeys((normalize_source(document), os.path.normpath(document), document))
        found = ((self._store.find_document(c, source) for source in spellings) for c in collections)
        matches = [r for candidates in found if (r := next((r for r in candidates if r), None))]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise DocumentNotFoundError(f"no document with id or source {document!r}")
        raise DocumentNotFoundError(
            f"{document!r} is in several collections ({', '.join(r.collection for r in matches)}); name one"
        )

    def chunks(self, document: str, collection: str | None = None) -> list[StoredChunk]:
        return self._store.document_chunks(self.document(document, collection).id)

    def compact(self) -> dict[str, int]:
        """Drop cached extractions, situating sentences and (SQLite) terms no stored chunk uses,
        and give the space back: deleting documents keeps them by design (`Store.compact`)."""
        return self._store.compact()

    def status(self) -> dict[str, Any]:
        stats = self._store.stats()
        stats["embedding_model"] = self.settings.embedding_model
        return stats

    # Retrieval -----------------------------------------------------------
    def _options(self, **overrides: Any) -> SearchOptions:
        filters = SearchFilter.build(overrides.pop("collection", None), overrides.pop("document_ids", None), overrides.pop("metadata", None))
        return SearchOptions.from_settings(self.settings, filters=filters, **overrides)

    def search(
        self,
        query: str,
        *,
        mode: RetrievalMode | None = None,
        top_k: int | None = None,
        collection: str | Sequence[str] | None = None,
        document_ids: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        min_score: float | None = None,
        per_document: int | None = None,
        graph: bool | None = None,
        rerank: bool | None = None,
    ) -> list[Hit]:
        """Ranked hits for `query`. Scores are in the mode's units (BM25, cosine, or RRF).
        `graph` adds the knowledge graph's list to hybrid search (settings.graph_retrieval);
        `rerank` reorders hybrid's first candidates by the offline reranker (settings.rerank)."""
        options = self._options(
            mode=mode, top_k=top_k, collection=collection, document_ids=document_ids, metadata=metadata,
            min_score=min_score, per_document=per_document, graph=graph, rerank=rerank,
        )
        return self._retriever.search(query, options)

    def search_many(self, queries: Sequence[str], **kwargs: Any) -> list[list[Hit]]:
        """Search several queries, embedding them in one batch."""
        options = self._options(**kwargs)
        if any(not q.strip() for q in queries):
            raise InvalidQueryError("a query is empty")
        vectors = self._retriever.embed_queries(queries) if options.mode != "keyword" and queries else None
        return [
            self._retriever.search(q, options, None if vectors is None else vectors[i]) for i, q in enumerate(queries)
        ]

    def ask(self, question: str, *, llm: str | None = None, **options: Unpack[AskOptions]) -> Answer:
        """A cited answer, or an abstention when the documents do not say.

        With an LLM (`llm="provider:model"`, else settings.llm) it writes the answer from numbered
        sources and every citation is checked; without one the answer quotes the best sentences.
        `options` (`AskOptions`) narrow the sources (collection, document_ids, metadata, top_k);
        `mode` is "retrieval", "full-context" or "auto" (settings.answer_mode); `rewrite` searches
        LLM-written variations of the question too (settings.query_rewrite).
        """
        asked = self.question(question, **options)
        answerer = self.answerer(llm)
        cache = self._parts.query_cache
        if cache is None:
            return answerer.answer(asked)
        generator = self.generator(llm)
        key = (self.tenant, self._store.search_generation(), self.settings.embedding_model,
               generator.spec if generator else "extractive", repr(asked))
        return cache.get_or_compute("answer", key, lambda: answerer.answer(asked), stored=_served_again)

    def enable_query_cache(self, max_entries: int) -> None:
        """Cache query embeddings, search results and answers (query_cache.py; the server does this).
        Shared by every tenant's view of this knowledge base; a write never serves a stale result."""
        self._parts.enable_query_cache(max_entries)

    def recording_usage(self, api_key: str = "", *, request: bool = False) -> AbstractContextManager[UsageTally]:
        """Count the model calls of the block (usage.py) and add them to this tenant's usage for
        today under `api_key`: the server wraps each request in one, the job runners each job."""
        return recorded(self._store, api_key, request=request)

    def record_usage(self, api_key: str, tally: UsageTally, day: str | None = None) -> None:
        """Add a tally metered elsewhere (`usage.metering`: the server's middleware) to the row of
        `day` (YYYY-MM-DD, UTC; today by default)."""
        self._store.record_usage(day or today(), api_key, tally)

    def usage(self, since: str | None = None, until: str | None = None) -> list[dict[str, int | str]]:
        """This tenant's usage rows (UTC days `since`..`until`, YYYY-MM-DD, inclusive), by day and API key."""
        return self._store.usage(since, until)

    def query_cache_stats(self) -> dict[str, Any] | None:
        """Hits and misses per kind since the cache was turned on (for /metrics); None while off."""
        cache = self._parts.query_cache
        return None if cache is None else cache.stats()

    def ask_stream(self, question: str, *, llm: str | None = None, **options: Unpack[AskOptions]) -> AnswerStream:
        """Like `ask`, as an iterator over the answer's text as the LLM writes it; `.answer` at the end."""
        return AnswerStream(self.answerer(llm).run(self.question(question, **options), stream=True))

    def question(
        self,
        text: str,
        *,
        query: str | None = None,
        mode: AnswerMode | None = None,
        rewrite: bool | None = None,
        history: Sequence[Message] = (),
        collection: str | Sequence[str] | None = None,
        document_ids: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        top_k: int | None = None,
    ) -> Question:
        """A `Question` with the settings' defaults filled in (what `ask` and chat sessions answer)."""
        if not text.strip():
            raise InvalidQueryError("the question is empty")
        options = self._options(
            mode="hybrid", top_k=top_k or self.settings.answer_sources, collection=collection,
            document_ids=document_ids, metadata=metadata, per_document=ANSWER_PER_DOCUMENT,
        )
        return Question(
            text, query or text, options, mode or self.settings.answer_mode,
            self.settings.query_rewrite if rewrite is None else rewrite, tuple(history),
        )

    def answerer(self, llm: str | None = None) -> Answerer:
        """The answerer for `llm` ("provider:model"), else settings.llm; extractive when neither is set."""
        return Answerer(self._store, self._retriever, self.embedder, self.settings, self.generator(llm))

    def generator(self, llm: str | None = None) -> Generator | None:
        """The LLM `llm` (else settings.llm) names, built once per knowledge base; None when none is set."""
        return self._parts.generator(llm)

    def chat(
        self,
        session_id: str | None = None,
        *,
        llm: str | None = None,
        mode: AnswerMode | None = None,
        collection: str | Sequence[str] | None = None,
    ) -> ChatSession:
        """A persistent conversation: a new session, or the one `session_id` names."""
        return ChatSession.open(self, self._store, session_id, llm=llm, mode=mode, collection=collection)

    # Summaries and related content (answering/summaries.py, related.py) --------------------
    def summarize(
        self, document: str, collection: str | None = None, *, llm: str | None = None,
        sentences: int = DEFAULT_SENTENCES, refresh: bool = False,
    ) -> Summary:
        """A summary of the document (id or source), every sentence cited: extractive without an
        LLM, map-reduce over its sections with one (`llm`, else settings.llm), each sentence checked.
        Cached by the document's content hash and summarizer; `refresh` makes it anew."""
        return self.summarizer(llm, sentences).document(self.document(document, collection), refresh=refresh)

    def summarize_collection(
        self, collection: str, *, llm: str | None = None, sentences: int = DEFAULT_SENTENCES, refresh: bool = False
    ) -> Summary:
        """A summary of the collection drawn from its documents' summaries (each cached too)."""
        if all(info.name != collection for info in self._store.collections()):
            raise CollectionNotFoundError(f"no collection {collection!r}")
        return self.summarizer(llm, sentences).collection(collection, self.documents(collection), refresh=refresh)

    def summarizer(self, llm: str | None = None, sentences: int = DEFAULT_SENTENCES) -> Summarizer:
        """The summarizer for `llm` ("provider:model"), else settings.llm; extractive when neither is set."""
        if sentences < 1:
            raise InvalidQueryError("a summary needs at least one sentence")
        return Summarizer(self._store, lambda: self.embedder, self.settings, self.generator(llm), sentences)

    def related(
        self, document: str, collection: str | None = None, *, top_k: int = 5,
        collections: Sequence[str] | None = None,
    ) -> list[RelatedDocument]:
        """Documents most like `document` (id or source; `collection` picks among same-named
        sources), itself excluded, searched within `collections` (None: every collection)."""
        record = self.document(document, collection)
        return related_documents(self._store, record.id, top_k=top_k, collections=collections)

    def related_to_chunk(
        self, chunk_id: str, *, top_k: int = 5, collections: Sequence[str] | None = None
    ) -> list[RelatedDocument]:
        """Documents with passages most like the chunk `chunk_id`, its own document excluded."""
        return related_to_chunk(self._store, chunk_id, top_k=top_k, collections=collections)

    # For services (the HTTP API): collections, queued ingestion, stored chat sessions ----
    def collections(self) -> list[CollectionInfo]:
        return self._store.collections()

    def create_collection(self, name: str) -> CollectionInfo:
        """Create an empty collection for the configured embedding model (a no-op when it exists)."""
        self._store.ensure_collection(name, self.embedder.name, self.embedder.dimension)
        return next(info for info in self._store.collections() if info.name == name)

    def delete_collection(self, name: str) -> None:
        """Remove a collection with all its documents (CollectionNotFoundError when there is none)."""
        self._store.delete_collection(name)

    def add_raw(
        self, raws: Sequence[RawSource], collection: str = DEFAULT_COLLECTION, *, metadata: dict[str, Any] | None = None
    ) -> list[IngestResult]:
        """Add documents from bytes in hand (uploads): `RawSource.from_bytes(name, data, media_type)`."""
        return self._parts.ingestor().add_raw(raws, collection, metadata)

    def document_id(self, source: str, collection: str = DEFAULT_COLLECTION) -> str:
        """The id `enqueue` and `add` give `source` in `collection`: the server keeps an upload's
        bytes under it before recording the document, so no record ever lacks its bytes."""
        return document_id(collection, source, self.tenant)

    def enqueue(self, source: str, collection: str = DEFAULT_COLLECTION, *, metadata: dict[str, Any] | None = None) -> DocumentRecord:
        """Mark `source` pending before a worker ingests it: a new document row, or an existing
        document to process again (it stays searchable with its old chunks meanwhile)."""
        doc_id = self.document_id(source, collection)
        metadata = checked_metadata(metadata)
        if self._store.get_document(doc_id) is None:
            self._store.ensure_collection(collection, self.embedder.name, self.embedder.dimension)
            self._store.upsert_document(
                doc_id, collection=collection, source=source, title=os.path.basename(source.rstrip("/")) or source,
                media_type="", metadata=metadata, status=DocumentStatus.PENDING,
            )
        else:
            self._store.set_status(doc_id, DocumentStatus.PENDING)
        return self.document(doc_id)

    def fail(self, document_id: str, error: str) -> None:
        """Record that processing a queued document failed (the worker's last resort)."""
        self._store.set_status(document_id, DocumentStatus.ERROR, error)

    def chat_sessions(self) -> list[ChatSessionRecord]:
        """Stored chat sessions, most recently updated first."""
        return self._store.list_chat_sessions()

    def chat_session(self, session_id: str) -> ChatSessionRecord:
        record = self._store.get_chat_session(session_id)
        if record is None:
            raise ChatSessionNotFoundError(f"no chat session {session_id!r}; list them with `sourcebook chat --list`")
        return record

    def create_chat_session(self, title: str = "", collections: Sequence[str] = ()) -> ChatSessionRecord:
        """A new, empty, stored session (`chat(id)` then talks in it), already used in `collections`
        (the HTTP API passes its creator's scope: a key granted less never sees it)."""
        session_id = uuid.uuid4().hex[:12]
        self._store.create_chat_session(session_id, title, collections)
        return self.chat_session(session_id)

    def delete_chat_session(self, session_id: str) -> None:
        self._store.delete_chat_session(session_id)

    def ingestion_runner(self) -> IngestionRunner:
        """What ingests this knowledge base's sources (jobs/): the HTTP API submits its uploads to it."""
        return self._parts.runner

    def api_keys(self) -> KeyStore:
        """The API keys kept in this knowledge base's own database (`sourcebook keys`, the server)."""
        return self._store.api_keys()

    # Knowledge graph (graph/) -------------------------------------------
    def graph_extractor(self, llm: str | None = None, kind: str | None = None) -> Extractor:
        """The extractor settings.graph_extractor (or `kind`) names: the LLM `llm`, graph_llm or llm
        for "llm" (and for "auto" when one is set), else the deterministic offline rules."""
        kind = kind or self.settings.graph_extractor
        if kind not in ("auto", "offline", "llm"):
            raise ConfigurationError(f"unknown graph extractor {kind!r}; use auto, offline or llm")
        spec = llm or self.settings.graph_llm or self.settings.llm
        if kind == "offline" or (kind == "auto" and spec is None):
            return OfflineExtractor()
        generator = self.generator(spec)
        if generator is None:
            raise ConfigurationError("graph_extractor 'llm' needs an LLM: set graph_llm or llm to 'provider:model'")
        return LLMExtractor(generator)

    def build_graph(
        self,
        documents: Sequence[str] | None = None,
        collection: str | None = None,
        *,
        llm: str | None = None,
        extractor: str | None = None,
        force: bool = False,
        progress: GraphProgress | None = None,
    ) -> GraphBuildReport:
        """Extract and store the knowledge graph of documents (ids or sources; default: all in
        `collection`, else all). Documents whose graph is current are skipped; chunks extracted
        before (same chunk hash, same extractor) come from the cache."""
        records = (
            [self.document(d, collection) for d in documents] if documents is not None else self.documents(collection)
        )
        return GraphBuilder(self._store, self.graph_extractor(llm, extractor)).build(records, force=force, progress=progress)

    def entities(
        self, query: str | None = None, *, type: str | None = None, limit: int | None = 50, offset: int = 0
    ) -> list[EntityRecord]:
        """Graph entities, most mentioned first; `query` filters by a substring of name or alias."""
        return self._store.list_entities(query, type, limit, offset)

    def entity(self, name: str, *, neighbours: int = 20) -> EntityView:
        """An entity (by name, alias or unique substring) with its passages and its neighbours,
        each with the passages supporting the relation. Raises EntityNotFoundError."""
        return entity_view(self._store, name, neighbours)

    def graph_stats(self) -> dict[str, int]:
        """Counts of entities, relations and documents with a built graph."""
        return self._store.graph_stats()

    def graph(self, limit: int | None = None) -> dict[str, Any]:
        """The graph as {"nodes", "edges"} (graph/export.py): the `limit` most mentioned entities
        and the relations among them, or everything (what a graph view draws)."""
        entities = self._store.list_entities(limit=limit)
        relations = self._store.entity_relations(None if limit is None else [e.key for e in entities])
        return graph_json(entities, relations)

    def export_graph(self, format: str = "json") -> str:
        """The whole graph as JSON or GraphML text."""
        if format not in GRAPH_FORMATS:
            raise ConfigurationError(f"unknown graph export format {format!r}; use {' or '.join(GRAPH_FORMATS)}")
        if format == "graphml":
            return graph_graphml(self._store.list_entities(limit=None), self._store.entity_relations())
        return json.dumps(self.graph(), ensure_ascii=False, indent=1)

    # The database --------------------------------------------------------
    def applied_migrations(self) -> tuple[int, ...]:
        """The schema versions opening the database applied (`sourcebook migrate` reports them):
        none when it was current, or when its back end does not say."""
        report = getattr(self._store, "migration", None)
        return report.applied if report is not None else ()

    def copy_to(
        self, target: str, tenants: Sequence[str] | None = None, progress: ProgressCallback | None = None
    ) -> CopyReport:
        """Copy documents with their vectors (nothing is re-embedded) and chat sessions of `tenants`
        (default: every tenant in the database) into the database at `target`; run again, only
        what changed since is copied."""
        return copy_into(self._store, target, tenants, progress)

    # Lifecycle -----------------------------------------------------------
    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
