"""The ingestion queue on PostgreSQL: enqueue one procrastinate job per source, and wait for them.

Why this shape:
* A worker may run on another machine, so a job never points at a local path: the
  source's bytes (or a parsed BEIR record) go into `sourcebook_ingest_jobs` beside the
  procrastinate job, in the same transaction (procrastinate defers on our connection), so
  there is never a job without its bytes nor bytes without a job. URLs travel as URLs: the
  worker fetches them.
* The same table receives each job's outcome (the `IngestResult`) when it is over, so a
  waiting `add` prints exactly what an in-process `add` prints, and never has to read
  procrastinate's own tables for it.
* A document's jobs share a procrastinate lock (tenant + document id): two jobs for one
  document never run at once, whichever workers take them.
* Documents show the job's progress: `pending` when queued (and again while a retry waits),
  `processing` while embedded, then `ready` or `error` with the reason.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb

from ..errors import ConfigurationError, SourcebookError, StoreError
from ..ingest import IngestEvent, ProgressHandler, document_id, load_items, record_failure
from ..loaders.sources import is_url
from ..models import Block, DocumentStatus, IngestResult, ParsedDocument

if TYPE_CHECKING:
    import procrastinate

    from ..kb import KnowledgeBase

QUEUE = "sourcebook-ingest"
TASK = "sourcebook.ingest"
PARSED_MEDIA_TYPE = "application/vnd.sourcebook.parsed+json"
"""A job payload that is an already parsed document (a BEIR record), not a file's bytes."""
WAIT_POLL_SECONDS = 0.5
_SCHEMA_LOCK = 7_210_432_001  # pg_advisory_xact_lock key: one process creates the schema at a time

SCHEMA = """
CREATE TABLE IF NOT EXISTS sourcebook_ingest_jobs (
    id uuid PRIMARY KEY,
    tenant text NOT NULL,
    collection text NOT NULL,
    document_id text NOT NULL,
    source text NOT NULL,
    data bytea,
    media_type text,
    metadata jsonb NOT NULL DEFAULT '{}',
    result jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX IF NOT EXISTS sourcebook_ingest_jobs_unfinished
    ON sourcebook_ingest_jobs (created_at) WHERE result IS NULL;
"""
# `data` holds the uploaded bytes (NULL for a URL) until the job is over; `result` the outcome.


Payload = tuple[bytes | None, str | None, dict[str, Any]]
"""A job's stored bytes (None for a URL), their media type and the source's metadata (path, size...)."""


@dataclass(frozen=True)
class JobSpec:
    """What a job carries (procrastinate's task kwargs): JSON, so any worker can run it."""

    job_id: str
    tenant: str
    collection: str
    source: str
    document_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    attempts: int = 3
    retry_delay: float = 2.0

    def to_kwargs(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> JobSpec:
        return cls(**kwargs)

    def backoff(self, attempt: int) -> float:
        """Seconds before the retry that follows failed attempt number `attempt` (1-based)."""
        return self.retry_delay * 2 ** (attempt - 1)


def parsed_to_bytes(document: ParsedDocument) -> bytes:
    blocks = [[b.kind, b.text, list(b.heading_path), b.page] for b in document.blocks]
    return json.dumps({"source": document.source, "title": document.title, "media_type": document.media_type,
                       "metadata": document.metadata, "blocks": blocks}, ensure_ascii=False).encode()


def parsed_from_bytes(data: bytes) -> ParsedDocument:
    raw = json.loads(data)
    blocks = tuple(Block(kind, text, tuple(path), page) for kind, text, path, page in raw["blocks"])
    return ParsedDocument(raw["source"], raw["title"], blocks, raw["media_type"], raw["metadata"])


def procrastinate_app(dsn: str, **pool: Any) -> procrastinate.App:
    """A procrastinate App on `dsn` (its pool opens only when the app is opened)."""
    try:
        import procrastinate
    except ImportError as exc:
        raise ConfigurationError(
            "ingestion jobs on Postgres need the 'postgres' extra: pip install 'sourcebook[postgres]'"
        ) from exc
    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn, **pool))


def ensure_schema(dsn: str) -> None:
    """Create procrastinate's schema (once) and the job payload table. Safe to call from many processes."""
    app = procrastinate_app(dsn)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            present = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
            if not (present and present[0]):
                conn.execute(app.schema_manager.get_schema())  # type: ignore[arg-type]
            conn.execute(SCHEMA)  # type: ignore[arg-type]
    except psycopg.Error as exc:
        raise StoreError(f"cannot create the ingestion queue's tables: {exc}") from exc


def finished_results(conn: psycopg.Connection, job_ids: Sequence[str]) -> dict[str, IngestResult]:
    """The outcome of each job of `job_ids` that is over."""
    rows = conn.execute(
        "SELECT id::text, result FROM sourcebook_ingest_jobs WHERE id = ANY(%s::uuid[]) AND result IS NOT NULL",
        (list(job_ids),),
    ).fetchall()
    return {job_id: IngestResult(**result) for job_id, result in rows}


class QueueRunner:
    """`kb.add` on Postgres: enqueue one job per source, then (optionally) wait for the workers."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.dsn = kb.settings.db

    def add(
        self,
        sources: Sequence[str],
        collection: str,
        metadata: dict[str, Any] | None,
        fmt: str,
        progress: ProgressHandler | None,
        wait: bool = True,
    ) -> list[IngestResult]:
        """Queue the sources; with `wait`, block until every job is over and return the outcomes.

        Unchanged files (same bytes as the ready document) and unreadable ones are settled
        here without a job, exactly as the in-process runner settles them.
        """
        ensure_schema(self.dsn)
        settled, queued = self.enqueue(sources, collection, metadata or {}, fmt, progress)
        if not wait:
            return settled + [
                IngestResult(spec.source, "queued", spec.document_id, str(DocumentStatus.PENDING), 0, 0) for spec in queued
            ]
        results = self.wait(queued, progress)
        return settled + [results[spec.job_id] for spec in queued]

    def enqueue(
        self, sources: Sequence[str], collection: str, metadata: dict[str, Any], fmt: str,
        progress: ProgressHandler | None = None,
    ) -> tuple[list[IngestResult], list[JobSpec]]:
        """Settle what needs no job, queue the rest; returns (settled results, queued jobs)."""
        store = self.kb.store
        tenant = store.tenant
        settings = self.kb.settings
        # Fails fast, before anything is queued, when the collection was built with another model.
        store.ensure_collection(collection, self.kb.embedder.name, self.kb.embedder.dimension)
        app = procrastinate_app(self.dsn)
        settled: list[IngestResult] = []
        queued: list[JobSpec] = []
        with _connect(self.dsn) as conn:
            for source, load in load_items(list(sources), fmt, settings, progress):
                doc_id = document_id(collection, source, tenant)
                existing = store.get_document(doc_id)
                spec = JobSpec(str(uuid.uuid4()), tenant, collection, source, doc_id, metadata,
                               settings.job_attempts, settings.job_retry_delay)
                payload: Payload = (None, None, {})
                if not is_url(source) or fmt == "beir":
                    try:
                        fingerprint, parsed, raw = load()
                    except SourcebookError as exc:
                        settled.append(self._emit(progress, record_failure(store, existing, doc_id, collection, source, exc)))
                        continue
                    if existing and existing.status == DocumentStatus.READY and existing.content_hash == fingerprint:
                        result = IngestResult(source, "unchanged", doc_id, str(existing.status), existing.chunk_count, 0)
                        settled.append(self._emit(progress, result))
                        continue
                    if parsed is not None:
                        payload = (parsed_to_bytes(parsed), PARSED_MEDIA_TYPE, {})
                    else:
                        assert raw is not None
                        payload = (raw.data, raw.media_type, raw.metadata)
                self._queue_one(conn, app, spec, payload, existing is None)
                queued.append(spec)
        return settled, queued

    def _queue_one(
        self, conn: psycopg.Connection, app: procrastinate.App, spec: JobSpec,
        payload: Payload, new: bool,
    ) -> None:
        """Mark the document pending, then write the payload row and the job in one transaction.

        The status comes first: a fast worker may finish the job before this returns, and
        its `ready` must not be overwritten by a late `pending`.
        """
        data, media_type, raw_metadata = payload
        store = self.kb.store
        if new:
            title = spec.source.rstrip("/").rsplit("/", 1)[-1] or spec.source
            store.upsert_document(spec.document_id, collection=spec.collection, source=spec.source, title=title,
                                  media_type=media_type or "", metadata=spec.metadata, status=DocumentStatus.PENDING)
        else:
            store.set_status(spec.document_id, DocumentStatus.PENDING)
        with conn.transaction():
            conn.execute(
                "INSERT INTO sourcebook_ingest_jobs (id, tenant, collection, document_id, source, data, media_type, metadata) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (spec.job_id, spec.tenant, spec.collection, spec.document_id, spec.source, data, media_type,
                 Jsonb(raw_metadata)),
            )
            app.configure_task(TASK, queue=QUEUE, lock=f"{spec.tenant}/{spec.document_id}", connection=conn).defer(
                **spec.to_kwargs()
            )

    @staticmethod
    def _emit(progress: ProgressHandler | None, result: IngestResult) -> IngestResult:
        if progress:
            progress(IngestEvent("document", 1, result))
        return result

    def wait(self, queued: Sequence[JobSpec], progress: ProgressHandler | None = None) -> dict[str, IngestResult]:
        """Block until every queued job is over; outcomes by job id.

        With no live worker (none registered, or none with a fresh heartbeat) this process
        works the queue itself, so `add` always finishes, worker or not.
        """
        from .worker import IngestWorker, live_workers

        pending = {spec.job_id for spec in queued}
        results: dict[str, IngestResult] = {}
        worker: IngestWorker | None = None
        with _connect(self.dsn) as conn, ExitStack() as cleanup:
            while pending:
                done = finished_results(conn, sorted(pending))
                for job_id, result in done.items():
                    pending.discard(job_id)
                    results[job_id] = result
                    if progress:
                        progress(IngestEvent("embedded", result.embedded))
                        progress(IngestEvent("document", 1, result))
                if not pending:
                    break
                if live_workers(conn) == 0:
                    if worker is None:
                        worker = IngestWorker(self.dsn, self.kb.settings, store=self.kb.store, embedder=self.kb.embedder)
                        cleanup.callback(worker.close)
                    worker.run_until_idle()  # returns when no job can start now (retries may wait)
                time.sleep(WAIT_POLL_SECONDS)
        return results



@contextmanager
def _connect(dsn: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the queue's database; its errors surface as StoreError."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            yield conn
    except psycopg.Error as exc:
        raise StoreError(f"ingestion queue: {exc}") from exc
