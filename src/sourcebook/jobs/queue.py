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
* Tenants take turns: procrastinate starts the job of highest priority first (then the
  oldest), and a job's priority is minus the number of its tenant's jobs already waiting. A
  tenant's 500th queued file ranks behind another tenant's first, so a one-paragraph upload
  never waits behind someone else's folder of PDFs (workers run `ingest_workers` jobs at once,
  so one huge document holds one of them, not the queue).
* Documents show the job's progress: `pending` when queued (and again while a retry waits),
  `processing` while embedded, then `ready` or `error` with the reason.
* The HTTP API's submissions are queued before it answers 202 (they survive a restart);
  one background thread then waits for their outcomes (for the metrics), working the queue
  itself while no `sourcebook worker` is alive, as a waiting `add` does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb

from ..errors import SourcebookError
from ..identity import existing_document
from ..ingest import IngestEvent, ProgressHandler, load_items, record_failure
from ..loaders import RawSource
from ..loaders.sources import is_url
from ..models import DocumentStatus, IngestResult
from .base import IngestJob, IngestParts, JobDone, JobThread, fail_job, read_uploads
from .postgres import PARSED_MEDIA_TYPE, QUEUE, TASK, JobSpec, connect, ensure_schema, finished_results, parsed_to_bytes, procrastinate_app
from .worker import IngestWorker, live_workers

if TYPE_CHECKING:
    import procrastinate

WAIT_POLL_SECONDS = 0.5

Payload = tuple[bytes | None, str | None, dict[str, Any]]
"""A job's stored bytes (None for a URL), their media type and the source's metadata (path, size...)."""
Loadable = tuple[str, Callable[[], Any]]
"""A source and how to load it: (fingerprint, parsed or None, raw or None), as ingest.load_items yields."""


@dataclass(frozen=True)
class _Submitted:
    """A submitted job once queued: what is settled already, what workers still run, who to tell."""

    queued: Sequence[JobSpec]
    settled: list[IngestResult]
    done: JobDone | None
    started: float
    leftovers: bool = False
    """Not a submission: run what a previous process left queued (the thread's first task)."""


class QueueRunner:
    """Ingestion on Postgres: enqueue one job per source, then wait for the workers (`add`), or
    let one background thread wait (`submit`)."""

    persistent = True

    def __init__(self, parts: IngestParts) -> None:
        self.parts = parts
        self.dsn = parts.settings.db
        self._schema_ready = False
        self._thread: JobThread[_Submitted] = JobThread(self._finish)

    def _ensure_schema(self) -> None:
        if not self._schema_ready:
            ensure_schema(self.dsn)
            self._schema_ready = True

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
        self._ensure_schema()
        items = load_items(list(sources), fmt, self.parts.settings, progress)
        settled, queued = self.enqueue(self.parts, items, collection, metadata or {}, fmt, progress)
        if not wait:
            return settled + [
                IngestResult(spec.source, "queued", spec.document_id, str(DocumentStatus.PENDING), 0, 0) for spec in queued
            ]
        results = self.wait(queued, progress)
        return settled + [results[spec.job_id] for spec in queued]

    def submit(self, job: IngestJob, done: JobDone | None = None) -> None:
        """Queue the job's documents now (the caller answers 202 on a durable queue); the
        background thread waits for their outcomes and calls `done` with them."""
        started = time.perf_counter()
        parts = self.parts.for_tenant(job.tenant)
        raws, sources, settled = read_uploads(parts.store, job)
        queued: list[JobSpec] = []
        try:
            self._ensure_schema()
            uploads: list[Loadable] = [(raw.source, _loaded(raw)) for raw in raws]
            items = [*uploads, *load_items(sources, "auto", parts.settings)]
            more, queued = self.enqueue(parts, items, job.collection, job.metadata, "auto")
            settled += more
        except Exception as exc:  # noqa: BLE001 - every document of the job must end, whatever failed
            settled = fail_job(parts.store, job, exc)
        self._thread.put(job.tenant, _Submitted(queued, settled, done, started))

    def enqueue(
        self, parts: IngestParts, items: Iterable[Loadable], collection: str, metadata: dict[str, Any], fmt: str,
        progress: ProgressHandler | None = None,
    ) -> tuple[list[IngestResult], list[JobSpec]]:
        """Settle what needs no job, queue the rest; returns (settled results, queued jobs)."""
        store = parts.store
        tenant = store.tenant
        settings = parts.settings
        # Fails fast, before anything is queued, when the collection was built with another model.
        store.ensure_collection(collection, parts.embedder.name, parts.embedder.dimension)
        app = procrastinate_app(self.dsn)
        settled: list[IngestResult] = []
        queued: list[JobSpec] = []
        with connect(self.dsn) as conn:
            for source, load in items:
                doc_id, existing = existing_document(store, collection, source)
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
                        assert isinstance(raw, RawSource)  # load_items streams no file unless asked
                        payload = (raw.data, raw.media_type, raw.metadata)
                self._queue_one(parts, conn, app, spec, payload, existing is None)
                queued.append(spec)
        return settled, queued

    def _queue_one(
        self, parts: IngestParts, conn: psycopg.Connection, app: procrastinate.App, spec: JobSpec,
        payload: Payload, new: bool,
    ) -> None:
        """Mark the document pending, then write the payload row and the job in one transaction.

        The status comes first: a fast worker may finish the job before this returns, and
        its `ready` must not be overwritten by a late `pending`.
        """
        data, media_type, raw_metadata = payload
        store = parts.store
        if new:
            title = spec.source.rstrip("/").rsplit("/", 1)[-1] or spec.source
            store.upsert_document(spec.document_id, collection=spec.collection, source=spec.source, title=title,
                                  media_type=media_type or "", metadata=spec.metadata, status=DocumentStatus.PENDING)
        else:
            store.set_status(spec.document_id, DocumentStatus.PENDING)
        with conn.transaction():
            waiting = conn.execute(
                "SELECT count(*) FROM sourcebook_ingest_jobs WHERE tenant = %s AND result IS NULL", (spec.tenant,)
            ).fetchone()
            conn.execute(
                "INSERT INTO sourcebook_ingest_jobs (id, tenant, collection, document_id, source, data, media_type, metadata) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (spec.job_id, spec.tenant, spec.collection, spec.document_id, spec.source, data, media_type,
                 Jsonb(raw_metadata)),
            )
            app.configure_task(
                TASK, queue=QUEUE, lock=f"{spec.tenant}/{spec.document_id}", priority=-(waiting[0] if waiting else 0),
                connection=conn,
            ).defer(**spec.to_kwargs())

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
        pending = {spec.job_id for spec in queued}
        results: dict[str, IngestResult] = {}
        worker: IngestWorker | None = None
        with connect(self.dsn) as conn, ExitStack() as cleanup:
            while pending:
                done = finished_results(conn, sorted(pending))
                for job_id, result in done.items():
                    pending.discard(job_id)
                    results[job_id] = result
                    if progress:  # a worker elsewhere chunked and embedded it: both are known only now
                        progress(IngestEvent("chunked", result.embedded))
                        progress(IngestEvent("embedded", result.embedded))
                        progress(IngestEvent("document", 1, result))
                if not pending:
                    break
                if live_workers(conn) == 0:
                    if worker is None:
                        worker = IngestWorker(self.parts, concurrency=self.parts.settings.ingest_workers)
                        cleanup.callback(worker.close)
                    worker.run_until_idle()  # returns when no job can start now (retries may wait)
                time.sleep(WAIT_POLL_SECONDS)
        return results

    def work_leftovers(self) -> None:
        """Run the jobs a previous process left queued, unless a live worker will."""
        self._ensure_schema()
        with connect(self.dsn) as conn:
            if live_workers(conn) > 0:
                return
        worker = IngestWorker(self.parts, concurrency=self.parts.settings.ingest_workers)
        try:
            worker.run_until_idle()
        finally:
            worker.close()

    def _finish(self, submitted: _Submitted) -> None:
        if submitted.leftovers:
            self.work_leftovers()
            return
        outcomes = self.wait(submitted.queued)
        results = submitted.settled + [outcomes[spec.job_id] for spec in submitted.queued]
        if submitted.done is not None:
            submitted.done(results, time.perf_counter() - submitted.started)

    def depth(self) -> int:
        return self._thread.depth()

    def start(self) -> None:
        """Start the background thread; its first task runs what a previous process left queued."""
        self._thread.start()
        self._thread.put("", _Submitted((), [], None, time.perf_counter(), leftovers=True))

    def stop(self, timeout: float = 30.0) -> None:
        self._thread.stop(timeout)


def _loaded(raw: RawSource) -> Callable[[], Any]:
    """An upload's loader: its bytes are in hand already."""
    return lambda: (raw.fingerprint, None, raw)
