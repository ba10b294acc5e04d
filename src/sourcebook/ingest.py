"""Ingestion: sources -> parsed documents -> chunks -> vectors -> store.

Incremental by content hash at two levels:
- a source whose bytes hash to the stored fingerprint is skipped before parsing;
- a changed document reuses the stored vector of every chunk whose text (with its
  prefix) is unchanged, so only new or edited chunks are embedded; the same goes for a
  chunk's sentence-window vectors (chunking/windows.py), which are derived from its text alone.

A chunk's windows are pooled from model passes over the chunk's own text when `window_pooling`
says so ("pairs", the default through "auto": every other window run as a text, the rest and the
chunk's vector pooled from those passes; "confined", "late", "sentences") and the embedder can
(`SpanEmbedder`), else embedded as texts ("separate").

Chunks of many documents are embedded together in large batches (the model is
far faster per text in batches), then each document is written in its own
transaction, so a failure never leaves a document half-written.

Memory is bounded by the largest batch, not the document: a long document is chunked a part
at a time (chunking/parts.py) and queued in slices of `EMBED_BATCH_CHUNKS` chunks; each
slice's vectors go to the document's spool (spool.py, a temporary file past a few hundred
chunks), which the store reads back a batch at a time inside the one transaction that writes
the document (`replace_chunks_in_batches`). A large plain-text file is never held whole either:
it is hashed, surveyed and parsed in pieces (loaders/textfile.py) and its blocks reach the
chunker a part at a time.
"""

from __future__ import annotations

import contextvars
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .chunking.parts import chunk_in_parts
from .embedders.base import Embedder, Window, span_embedder
from .embedders.sentence_passes import APART_DESIGNS
from .errors import (
    DocumentNotFoundError, IngestTimeoutError, SourceNotFoundError, SourcebookError, SourceTooLargeError,
)
from .loaders import RawSource, expand_sources, iter_beir, parse, read_source
from .loaders.textfile import TextFile, open_text_file
from .models import Block, Chunk, DocumentRecord, DocumentStatus, IngestResult, ParsedDocument, checked_metadata, without_nul
from .owners import this_process
from .profiling import stage
from .settings import Settings
from .spool import ChunkSpool
from .identity import existing_document, normalize_source
from .stores.base import DocumentStore
from .chunking import window_spans, window_texts

if TYPE_CHECKING:
    from .enrichment import ContextualEnricher

# Chunks accumulated across documents before one embedding pass; also the slice of a large
# document queued at a time, and embedded between two checks that it was not deleted and is
# within its time limit.
EMBED_BATCH_CHUNKS = 256
CANCELLED = "cancelled"
"""The action of a source whose document was deleted while it was being ingested (nothing written)."""


@dataclass(frozen=True)
class IngestEvent:
    """Progress of an ingestion, for progress bars, counted in what the user added: sources and
    chunks (a chunk's sentence windows are part of embedding it, never counted on their own).

    kind: "planned" (`count` more sources to ingest), "document" (one source finished),
    "chunked" (a source was read and chunked: `count` more chunks to embed), "embedded"
    (`count` chunks embedded).
    """

    kind: str
    count: int
    result: IngestResult | None = None


ProgressHandler = Callable[[IngestEvent], None]

_Loaded = tuple[str, ParsedDocument | None, RawSource | TextFile | None]
"""A source's fingerprint, and its parsed document (BEIR records), raw bytes (files, URLs) or
a large text file to stream (loaders/textfile.py)."""
_Item = tuple[str, Callable[[], _Loaded]]
"""A source and how to load it: loading is deferred so an unchanged source costs only a hash."""


def load_items(
    sources: list[str], fmt: str, settings: Settings, progress: ProgressHandler | None = None, stream: bool = False
) -> Iterator[_Item]:
    """(source, loader) pairs; the loader yields (fingerprint, parsed or None, raw or None).

    A module function, not an Ingestor method: the job queue expands and reads sources
    in a process that never loads the embedding model. `stream`: a large plain-text file
    comes as a `TextFile`, read in pieces, not as bytes (for an ingestion in this process:
    the job queue stores the bytes).
    """
    if fmt == "beir":
        from .loaders.beir import count_beir

        if progress:
            progress(IngestEvent("planned", sum(count_beir(path) for path in sources)))
        for path in sources:
            for doc in iter_beir(path):
                yield doc.source, (lambda doc=doc: (doc.content_hash, doc, None))
        return
    if fmt != "auto":
        raise SourcebookError(f"unknown format {fmt!r}; use 'auto' or 'beir'")
    expanded = [normalize_source(s) for s in expand_sources(sources, settings.include, settings.exclude)]
    if progress:
        progress(IngestEvent("planned", len(expanded)))
    for source in expanded:
        yield source, (lambda source=source: _read(source, settings, stream))


def _read(source: str, settings: Settings, stream: bool) -> tuple[str, None, RawSource | TextFile]:
    streamed = open_text_file(source, settings.max_file_bytes) if stream else None
    if streamed is not None:
        return streamed.fingerprint, None, streamed
    raw = read_source(source, settings)
    return raw.fingerprint, None, raw


def record_failure(
    store: DocumentStore, existing: DocumentRecord | None, doc_id: str, collection: str, source: str, exc: SourcebookError
) -> IngestResult:
    """Record a failure. A ready document keeps its chunks and status untouched; one that was
    waiting (queued as pending by the HTTP service or the job queue) records the error its
    pollers wait for; a file that does not exist and was never a document stores nothing."""
    code = getattr(exc, "code", "error")
    if existing is None and isinstance(exc, SourceNotFoundError):
        return IngestResult(source, "failed", None, None, 0, 0, str(exc), code)
    if existing is not None and existing.status != DocumentStatus.READY:
        try:
            store.set_status(doc_id, DocumentStatus.ERROR, str(exc))
        except DocumentNotFoundError:  # deleted while it was read: nothing to record it on
            return IngestResult(source, CANCELLED, doc_id)
    elif existing is None:
        store.upsert_document(
            doc_id, collection=collection, source=source, title=os.path.basename(source) or source,
            media_type="", metadata={}, status=DocumentStatus.ERROR, error=str(exc),
        )
    return IngestResult(source, "failed", doc_id, str(DocumentStatus.ERROR), 0, 0, str(exc), code)


Request = tuple[str, list[Window]]
"""A text to run through the model, and the windows to pool from its pass (late chunking)."""


@dataclass
class _Document:
    """A source being ingested: its embedded chunks wait in `spool` until its last slice is
    embedded, then are written in one transaction."""

    doc_id: str
    source: str
    fingerprint: str
    title: str
    action: str
    deadline: float
    """time.monotonic() after which the source is over max_ingest_seconds."""
    spool: ChunkSpool = field(default_factory=ChunkSpool)
    chunks: int = 0
    embedded: int = 0
    """Chunks whose own vector was embedded (not reused from a stored chunk of the same hash)."""
    processing: bool = False
    """Marked processing in the store (by the first batch that embeds a slice of it)."""
    stopped: SourcebookError | None = None
    """Why its ingestion stopped before writing (deleted meanwhile, over its time): nothing is written."""


@dataclass
class _Pending:
    """A slice of a document's chunks waiting for their missing vectors; the document's
    `last` slice (holding no chunks) writes it once every earlier slice is spooled.

    `vectors` and `windows` map a chunk's content hash to its own vector and to its
    window vectors (k, dimension); `missing` holds the positions in `chunks` whose own
    vector is still to embed; `late_windows` those whose windows are to pool from the chunk's
    pass (with their character ranges), `missing_windows` those whose windows are to embed as
    texts of their own (an embedder that cannot pool).
    """

    document: _Document
    chunks: list[Chunk]
    vectors: dict[str, np.ndarray]
    missing: list[int]
    last: bool = False
    windows: dict[str, np.ndarray] = field(default_factory=dict)
    late_windows: dict[int, list[Window]] = field(default_factory=dict)
    missing_windows: dict[int, list[str]] = field(default_factory=dict)

    def chunk_passes(self) -> list[int]:
        """Positions of the chunks that run through the model: for their own vector or their
        late windows (a reused chunk stored before windows existed)."""
        return sorted({*self.missing, *self.late_windows})

    def text_count(self) -> int:
        """How many requests `requests()` holds, without building them (checked per queued source)."""
        return len(self.chunk_passes()) + sum(len(texts) for texts in self.missing_windows.values())

    def requests(self) -> list[Request]:
        """What to run through the model, in the order `take` reads the results back."""
        chunks = [(self.chunks[i].embedding_text, self.late_windows.get(i, [])) for i in self.chunk_passes()]
        return chunks + [(text, []) for texts in self.missing_windows.values() for text in texts]

    def take(self, vectors: np.ndarray, pooled: Sequence[np.ndarray]) -> None:
        """Store the results of `requests()` (each one's vector and pooled windows) under their chunks' hashes."""
        passes = self.chunk_passes()
        needed = set(self.missing)
        for offset, i in enumerate(passes):
            content_hash = self.chunks[i].content_hash
            if i in needed:
                self.vectors[content_hash] = vectors[offset]
            if i in self.late_windows:
                self.windows[content_hash] = pooled[offset]
        offset = len(passes)
        for i, texts in self.missing_windows.items():
            self.windows[self.chunks[i].content_hash] = vectors[offset : offset + len(texts)]
            offset += len(texts)


_Embedded = tuple[np.ndarray, list[np.ndarray]]
"""The vectors of a list of requests, and the windows pooled from each one's pass."""


@dataclass(frozen=True)
class _Batch:
    """Documents whose missing chunks are being embedded, and the pending vectors."""

    documents: list[_Pending]
    vectors: Future[_Embedded] | None


@dataclass
class Ingestor:
    store: DocumentStore
    embedder: Embedder
    settings: Settings
    progress: ProgressHandler | None = None
    enricher: ContextualEnricher | None = None
    """Optional LLM-written context per chunk (enrichment.py); None keeps the deterministic prefix."""
    only_existing: bool = False
    """The documents were recorded (pending) before this run, as a job's are: one that is gone was
    deleted meanwhile, so its ingestion is cancelled and it is never created again."""
    _queue: list[_Pending] = field(default_factory=list)

    def _emit(self, kind: str, count: int, result: IngestResult | None = None) -> None:
        if self.progress:
            self.progress(IngestEvent(kind, count, result))

    def add(
        self, sources: Iterable[str], collection: str, metadata: dict[str, Any] | None = None, fmt: str = "auto"
    ) -> list[IngestResult]:
        """Prepare (read, parse, chunk) documents while the previous batch embeds.

        The model runs in a worker thread (onnxruntime releases the GIL), so parsing,
        chunking and SQLite writes overlap with embedding instead of adding to it.
        """
        items = load_items(list(sources), fmt, self.settings, self.progress, stream=True)
        return self.add_loaded(items, collection, metadata)

    def add_raw(self, raws: Sequence[RawSource], collection: str, metadata: dict[str, Any] | None = None) -> list[IngestResult]:
        """Like `add`, for bytes in hand (an HTTP upload): each one's `source` names its document."""
        self._emit("planned", len(raws))
        items = ((raw.source, lambda raw=raw: (raw.fingerprint, None, raw)) for raw in raws)
        return self.add_loaded(items, collection, metadata)

    def add_loaded(
        self, items: Iterable[_Item], collection: str, metadata: dict[str, Any] | None = None
    ) -> list[IngestResult]:
        """Ingest (source, loader) pairs: `add` for sources read elsewhere (an ingestion job's bytes)."""
        metadata = checked_metadata(metadata)
        self.store.ensure_collection(collection, self.embedder.name, self.embedder.dimension)
        results: list[IngestResult] = []
        in_flight: _Batch | None = None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sourcebook-embed") as worker:
            for item in items:
                for result in self._prepare(item, collection, metadata or {}):
                    if result is not None:
                        results.append(result)
                        self._emit("document", 1, result)
                    elif sum(p.text_count() for p in self._queue) >= EMBED_BATCH_CHUNKS:
                        if in_flight is not None:
                            results.extend(self._finish(in_flight))
                        in_flight = self._start(worker)
            if in_flight is not None:
                results.extend(self._finish(in_flight))
            results.extend(self._finish(self._start(worker)))
        return results

    def _prepare(self, item: _Item, collection: str, metadata: dict[str, Any]) -> Iterator[IngestResult | None]:
        """Read, parse and chunk one source, queueing its chunks for embedding a slice at a time:
        yields None after each slice (the caller may start a batch) or the source's result when
        already final (unchanged, failed, cancelled)."""
        source, load = item
        doc_id, existing = existing_document(self.store, collection, source)
        deadline = time.monotonic() + self.settings.max_ingest_seconds
        if existing is None and self.only_existing:
            yield IngestResult(source, CANCELLED, doc_id)
            return
        try:
            with stage("load"):
                fingerprint, parsed, raw = load()
                if existing and existing.status == DocumentStatus.READY and existing.content_hash == fingerprint:
                    yield IngestResult(source, "unchanged", doc_id, str(existing.status), existing.chunk_count, 0)
                    return
                streamed = raw.parse() if isinstance(raw, TextFile) else None
                if streamed is not None:
                    parsed = streamed.document
                elif parsed is None:
                    assert raw is not None
                    parsed = parse(raw)
                del raw  # the bytes: only the parsed text is needed from here
            # a file's own title and info may hold NULs (NUL-padded PDF strings), which no store keeps
            parsed = replace(parsed, title=without_nul(parsed.title), metadata=without_nul(parsed.metadata))
            self._check_size(source, parsed, streamed.characters if streamed else None)
            parts = self._chunk_parts(parsed, streamed.file.blocks() if streamed else None)
            chunks = next(parts, [])  # a failure in the first part leaves the document untouched
            self._check_time(source, deadline)
        except SourcebookError as exc:
            yield record_failure(self.store, existing, doc_id, collection, source, exc)
            return
        try:
            self.store.upsert_document(
                doc_id,
                collection=collection,
                source=source,
                title=parsed.title,
                media_type=parsed.media_type,
                metadata={**parsed.metadata, **metadata},
                status=DocumentStatus.PENDING,  # parsed and chunked, queued for embedding
                owner=this_process(),
                create=not self.only_existing,  # a job's document deleted while it was parsed stays deleted
            )
        except DocumentNotFoundError:
            yield IngestResult(source, CANCELLED, doc_id)
            return
        action = "updated" if existing and existing.content_hash is not None else "added"  # a queued row is new
        document = _Document(doc_id, source, fingerprint, parsed.title, action, deadline)
        try:
            while True:
                for first in range(0, len(chunks), EMBED_BATCH_CHUNKS):
                    self._queue_slice(document, collection, chunks[first : first + EMBED_BATCH_CHUNKS])
                    yield None
                chunks = next(parts, None)
                if chunks is None or document.stopped is not None:  # done, or deleted or over time meanwhile
                    break
                self._check_time(source, deadline)
        except SourcebookError as exc:  # a later part failed: what is queued is dropped, the old chunks stay
            document.stopped = exc
        self._queue.append(_Pending(document, [], {}, [], last=True))

    def _chunk_parts(self, parsed: ParsedDocument, blocks: Iterator[Block] | None) -> Iterator[list[Chunk]]:
        """The document's chunks a part at a time (chunking/parts.py), with their LLM context when
        enriched; `blocks` stand for `parsed.blocks` when the file is streamed (its opening only)."""
        reserve = self.enricher.reserve_tokens if self.enricher else 0
        parts = chunk_in_parts(
            parsed,
            self.embedder.count_tokens,
            min(self.settings.chunk_max_tokens, self.embedder.max_tokens) - reserve,
            self.settings.chunk_overlap,
            blocks,
        )
        while True:
            with stage("chunk"):
                chunks = next(parts, None)
            if chunks is None:
                return
            yield self.enricher(parsed, chunks) if self.enricher else chunks

    def _queue_slice(self, document: _Document, collection: str, chunks: list[Chunk]) -> None:
        """Queue a slice of the document's chunks, reusing the stored vectors of unchanged ones."""
        hashes = [c.content_hash for c in chunks]
        known = self.store.vectors_for_hashes(collection, hashes)
        missing = [i for i, h in enumerate(hashes) if h not in known]
        pending = _Pending(document, chunks, known, missing)
        if self.settings.vector_windows:
            self._plan_windows(pending, collection)
        document.chunks += len(chunks)
        document.embedded += len(missing)
        self._queue.append(pending)
        self._emit("chunked", len(pending.chunk_passes()))

    def _check_size(self, source: str, parsed: ParsedDocument, characters: int | None) -> None:
        """Refuse a source over max_pages or max_characters (SourceTooLargeError); `characters`
        counted while streaming a file whose blocks `parsed` does not hold."""
        counted = parsed.metadata.get("pages")  # a PDF's own count, blank pages included
        pages = max([counted if isinstance(counted, int) else 0, *(block.page or 0 for block in parsed.blocks)])
        if pages > self.settings.max_pages:
            raise SourceTooLargeError(source, f"{pages} pages, over the limit of {self.settings.max_pages} (max_pages)")
        if characters is None:
            characters = sum(len(block.text) for block in parsed.blocks)
        if characters > self.settings.max_characters:
            raise SourceTooLargeError(
                source, f"{characters} characters of text, over the limit of {self.settings.max_characters} (max_characters)"
            )
        return characters

    def _check_time(self, source: str, deadline: float) -> None:
        if time.monotonic() > deadline:
            raise IngestTimeoutError(
                source, f"ingestion took over {self.settings.max_ingest_seconds:g} s (max_ingest_seconds); nothing was written"
            )

    def _check_stopped(self, slices: Sequence[_Pending]) -> bool:
        """Mark the documents deleted meanwhile (cancelled) or over their time; True when none is left to embed."""
        documents = {id(p.document): p.document for p in slices}.values()
        for document in documents:
            if document.stopped is not None:
                continue
            if self.store.get_document(document.doc_id) is None:
                document.stopped = DocumentNotFoundError(f"{document.source}: deleted while it was ingested")
                continue
            try:
                self._check_time(document.source, document.deadline)
            except IngestTimeoutError as exc:
                document.stopped = exc
        return all(document.stopped is not None for document in documents)

    def _embed(self, documents: list[_Pending], requests: list[Request], chunks: int) -> _Embedded | None:
        """Embed `requests` (the documents' missing ones, `chunks` of them chunks) a slice at a
        time, checking before each slice that some document is still worth it; None when all of
        them stopped. A slice with windows to pool runs through the span embedder (confined when
        so set: `_plan_windows` pools confined windows only from an embedder that confines)."""
        spans = span_embedder(self.embedder)
        pooling = self._window_pooling()
        # `apart` only when asked: a span embedder written before it (a plugin's) is never asked it
        design = {"confine": pooling == "confined", **({"apart": pooling} if pooling in APART_DESIGNS else {})}
        progress = _ChunkProgress(self._emit, chunks, len(requests))
        vectors: list[np.ndarray] = []
        pooled: list[np.ndarray] = []
        for start in range(0, len(requests), EMBED_BATCH_CHUNKS):
            if self._check_stopped(documents):
                return None
            part = requests[start : start + EMBED_BATCH_CHUNKS]
            texts = [text for text, _ in part]
            windows = [w for _, w in part]
            if spans is not None and any(windows):
                part_vectors, part_windows = spans.embed_documents_with_spans(texts, windows, progress, **design)
            else:  # no windows to pool (`_plan_windows` queued them as texts, or there are none)
                part_vectors, part_windows = self.embedder.embed_documents(texts, progress), [_NO_WINDOWS] * len(part)
            vectors.append(part_vectors)
            pooled.extend(part_windows)
        progress.finish()
        return np.concatenate(vectors), pooled

    def _window_pooling(self) -> str:
        """The design `window_pooling` names; "auto" is "pairs" (README, "Stride-2 pair passes"):
        SciFact hybrid 0.7409 at fp32 for about 1.2x the chunks' model time, where separate
        windows cost 2.6-2.8x."""
        if self.settings.late_windows:
            return "late"
        return "pairs" if self.settings.window_pooling == "auto" else self.settings.window_pooling

    def _pools_windows(self) -> bool:
        """Whether windows are pooled from model passes over their chunk's text rather than
        embedded as texts: as `window_pooling` says, never from an embedder that cannot pool,
        nor "confined" from one that cannot confine, nor "pairs"/"sentences" from one that
        cannot run spans apart (a plugin's span embedder written before them)."""
        pooling = self._window_pooling()
        embedder = span_embedder(self.embedder) if pooling != "separate" else None
        if pooling == "confined" and not getattr(embedder, "confines_windows", False):
            return False
        if pooling in APART_DESIGNS and not getattr(embedder, "embeds_spans_apart", False):
            return False
        return embedder is not None

    def _plan_windows(self, pending: _Pending, collection: str) -> None:
        """Reuse the stored windows of unchanged chunks; queue the others' for embedding:
        pooled from the chunk's pass when so set and the embedder can (`_pools_windows`), else as texts.

        Stored windows are reused when there are as many as the chunk needs now, since they
        come from the chunk's text alone (a chunk stored before windows existed has none)."""
        late = self._pools_windows()
        needed = {i: spans for i, chunk in enumerate(pending.chunks) if (spans := window_spans(chunk))}
        stored = self.store.windows_for_hashes(collection, [pending.chunks[i].content_hash for i in needed])
        for i, spans in needed.items():
            chunk = pending.chunks[i]
            found = stored.get(chunk.content_hash)
            if found is not None and len(found) == len(spans):
                pending.windows[chunk.content_hash] = found
            elif late:
                pending.late_windows[i] = spans
            else:
                pending.missing_windows[i] = window_texts(chunk)

    def _start(self, worker: ThreadPoolExecutor) -> _Batch:
        """Mark the queued documents processing and embed their missing chunks in the worker."""
        queue, self._queue = self._queue, []
        for document in {id(p.document): p.document for p in queue}.values():
            if document.processing or document.stopped is not None:
                continue
            try:
                self.store.set_status(document.doc_id, DocumentStatus.PROCESSING, owner=this_process())
                document.processing = True
            except DocumentNotFoundError as exc:  # deleted since it was prepared
                document.stopped = exc
        requests = [request for p in queue for request in p.requests()]
        chunks = sum(len(p.chunk_passes()) for p in queue)
        # in this thread's context: the model calls count towards the usage tally metering it (usage.py)
        embed = contextvars.copy_context().run
        return _Batch(queue, worker.submit(embed, self._embed, queue, requests, chunks) if requests else None)

    def _finish(self, batch: _Batch) -> list[IngestResult]:
        """Wait for the batch's vectors and spool each slice's; write each document whose last
        slice this is, in its own transaction."""
        fresh = batch.vectors.result() if batch.vectors is not None else None
        self._check_stopped(batch.documents)
        results: list[IngestResult] = []
        offset = 0
        for pending in batch.documents:
            document = pending.document
            count = pending.text_count()
            with stage("write"):
                if document.stopped is None:
                    if count:
                        assert fresh is not None
                        vectors, pooled = fresh
                        pending.take(vectors[offset : offset + count], pooled[offset : offset + count])
                    if pending.chunks:
                        document.spool.append(self._embedded_batch(pending))
                if pending.last:
                    results.append(self._write(document))
            offset += count
        return results

    def _embedded_batch(self, pending: _Pending) -> tuple[list[Chunk], np.ndarray, list[np.ndarray]]:
        """The slice's chunks with their vectors and window vectors, as the store takes them."""
        dim = self.embedder.dimension
        no_windows = np.zeros((0, dim), np.float32)
        matrix = np.stack([pending.vectors[c.content_hash] for c in pending.chunks]).astype(np.float32)
        windows = [pending.windows.get(c.content_hash, no_windows).astype(np.float32, copy=False) for c in pending.chunks]
        return pending.chunks, matrix, windows

    def _write(self, document: _Document) -> IngestResult:
        try:
            if document.stopped is not None:
                raise document.stopped
            # refuses a document deleted meanwhile: nothing is written
            self.store.replace_chunks_in_batches(
                document.doc_id, content_hash=document.fingerprint, title=document.title, batches=document.spool.batches()
            )
        except DocumentNotFoundError:
            result = IngestResult(document.source, CANCELLED, document.doc_id)
        except SourcebookError as exc:
            result = self._failed(document, exc)
        else:
            result = IngestResult(
                document.source, document.action, document.doc_id, str(DocumentStatus.READY), document.chunks, document.embedded
            )
        finally:
            document.spool.close()
        self._emit("document", 1, result)
        return result

    def _failed(self, document: _Document, exc: SourcebookError) -> IngestResult:
        """Record a failure after the document was queued: an update keeps its old chunks and is
        ready again, a new document records the error (one deleted meanwhile is cancelled)."""
        try:
            if document.action == "updated":  # the old chunks are intact: the document is still what it was
                self.store.set_status(document.doc_id, DocumentStatus.READY)
            else:
                self.store.set_status(document.doc_id, DocumentStatus.ERROR, str(exc))
        except DocumentNotFoundError:
            return IngestResult(document.source, CANCELLED, document.doc_id)
        return IngestResult(document.source, "failed", document.doc_id, None, 0, 0, str(exc), exc.code)


_NO_WINDOWS = np.zeros((0, 0), np.float32)


class _ChunkProgress:
    """The embedder's progress (requests done, windows embedded as texts included) as chunks
    embedded: a batch of `requests` requests holding `chunks` chunks advances the chunk count
    in proportion, and in full by `finish`, so a progress bar counts only what the user added."""

    def __init__(self, emit: Callable[[str, int], None], chunks: int, requests: int) -> None:
        self._emit = emit
        self._chunks = chunks
        self._requests = max(requests, 1)
        self._done = 0
        self._reported = 0

    def __call__(self, count: int) -> None:
        self._done += count
        self._report(self._chunks * self._done // self._requests)

    def finish(self) -> None:
        self._report(self._chunks)

    def _report(self, reached: int) -> None:
        if reached > self._reported:
            self._emit("embedded", reached - self._reported)
            self._reported = reached
