"""`sourcebook worker`: processes ingestion jobs from the Postgres queue, on any machine.

Why it holds together:
* A job writes its document's chunks with one `replace_chunks_in_batches` call, which the
  store runs in one transaction: a worker killed mid-document leaves the old chunks (or none),
  never part of the new ones.
* procrastinate workers send heartbeats. A job still `doing` under a worker whose heartbeat
  went stale (killed, machine lost) is stalled: every worker looks for stalled jobs every
  `stalled_after / 2` seconds and queues them again (one worker at a time, under an advisory
  lock, so two never requeue the same job twice). A stall counts as an attempt, so a
  document that kills its workers ends in `error` instead of looping.
* Failures are retried with exponential backoff (`retry_delay * 2**(attempt - 1)`), up to
  the job's `attempts` (settings.job_attempts, 3 by default), unless the error cannot heal by
  waiting (an unsupported format, an empty document, a model mismatch): those end at once.
* A document deleted while its job waits or runs ends the job as "cancelled": the ingestor
  looks between embedding slices and before writing, and never creates the document again.
* Jobs run in threads (procrastinate runs sync tasks off its event loop), `concurrency` at a
  time, sharing one embedding model; onnxruntime releases the GIL while it computes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from ..errors import (
    BlockedURLError,
    ConfigurationError,
    EmbeddingModelMismatchError,
    EmptyDocumentError,
    FileTooLargeError,
    IngestJobError,
    IngestTimeoutError,
    LoaderError,
    SourcebookError,
    SourceTooLargeError,
    UnsupportedFormatError,
)
from ..ingest import CANCELLED
from ..loaders import RawSource, read_source
from ..models import DocumentStatus, IngestResult
from ..stores.base import Store
from ..usage import recorded
from .base import IngestParts
from .postgres import PARSED_MEDIA_TYPE, QUEUE, TASK, JobSpec, ensure_schema, parsed_from_bytes, procrastinate_app

if TYPE_CHECKING:
    import procrastinate
    from procrastinate.job_context import JobContext
    from procrastinate.jobs import Job

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0
STALLED_AFTER_SECONDS = 30.0
_RECOVERY_LOCK = 7_210_432_002  # pg_try_advisory_lock key: one worker requeues stalled jobs at a time


def live_workers(conn: psycopg.Connection, stalled_after: float = STALLED_AFTER_SECONDS) -> int:
    """Workers whose heartbeat is fresher than `stalled_after` seconds."""
    row = conn.execute(
        "SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat > now() - %s * interval '1 second'",
        (stalled_after,),
    ).fetchone()
    return int(row[0]) if row else 0


_PERMANENT_CODES = frozenset(
    error.code for error in (LoaderError, UnsupportedFormatError, EmptyDocumentError, FileTooLargeError, BlockedURLError,
                             SourceTooLargeError, IngestTimeoutError, EmbeddingModelMismatchError, ConfigurationError)
)
"""Failures that waiting cannot heal: a file in an unsupported format, an empty or oversized one, a
blocked URL, a collection built with another model. Everything else (fetches, the database, the
model, an LLM) is worth another attempt."""


def is_transient(exc: BaseException) -> bool:
    """Whether waiting and trying again can help (see _PERMANENT_CODES); errors of no known kind can."""
    if isinstance(exc, IngestJobError):
        return exc.retry
    return getattr(exc, "code", None) not in _PERMANENT_CODES


def _retry_strategy() -> Any:
    from procrastinate import BaseRetryStrategy, RetryDecision

    class IngestRetry(BaseRetryStrategy):
        """Retry transient failures after `JobSpec.backoff`; the job itself counts its attempts."""

        def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
            if not isinstance(exception, IngestJobError) or not exception.retry:
                return None
            spec = JobSpec.from_kwargs(job.task_kwargs)
            return RetryDecision(retry_in={"seconds": spec.backoff(job.attempts + 1)})

    return IngestRetry()


class IngestWorker:
    """Runs ingestion jobs: `run()` until SIGTERM/SIGINT (graceful), or `run_until_idle()`.

    `parts` (wiring.Components on the queue's database) give the store, whose tenant views
    jobs write to, the model the jobs share and the ingestion pipeline; their owner closes them.
    """

    def __init__(
        self,
        parts: IngestParts,
        *,
        concurrency: int = 1,
        heartbeat: float = HEARTBEAT_SECONDS,
        stalled_after: float = STALLED_AFTER_SECONDS,
        shutdown_timeout: float | None = None,
        name: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError(f"worker concurrency must be at least 1, got {concurrency}")
        if stalled_after <= heartbeat:
            raise ConfigurationError(
                f"stalled_after ({stalled_after} s) must exceed the heartbeat interval ({heartbeat} s), "
                "or live workers would look dead"
            )
        dsn = parts.settings.db
        ensure_schema(dsn)
        self.parts = parts
        self.settings = parts.settings
        self.concurrency = concurrency
        self.heartbeat = heartbeat
        self.stalled_after = stalled_after
        self.shutdown_timeout = shutdown_timeout
        self.name = name
        self.store = parts.store
        self._pool = ConnectionPool(dsn, min_size=1, max_size=concurrency + 1, kwargs={"autocommit": True}, open=True)
        self.app: procrastinate.App = procrastinate_app(dsn, min_size=2, max_size=concurrency + 4)
        self.app.task(name=TASK, queue=QUEUE, retry=_retry_strategy(), pass_context=True)(self._run_job)

    # Running -----------------------------------------------------------------
    def run(self) -> None:
        """Work until SIGTERM or SIGINT, then finish the running jobs (up to shutdown_timeout) and exit."""
        asyncio.run(self._run(wait=True))

    def run_until_idle(self) -> None:
        """Work until no job can start now (a `add` with no worker around works its own queue)."""
        asyncio.run(self._run(wait=False))

    async def _run(self, *, wait: bool) -> None:
        _ = self.parts.embedder  # load the model before taking jobs, not inside the first one
        async with self.app.open_async():
            await self.recover_stalled()
            recovery = asyncio.create_task(self._recovery_loop()) if wait else None
            try:
                await self.app.run_worker_async(
                    queues=[QUEUE], concurrency=self.concurrency, wait=wait, name=self.name,
                    update_heartbeat_interval=self.heartbeat, stalled_worker_timeout=self.stalled_after,
                    shutdown_graceful_timeout=self.shutdown_timeout, install_signal_handlers=wait,
                    delete_jobs="successful",
                )
            finally:
                if recovery is not None:
                    recovery.cancel()

    def close(self) -> None:
        self._pool.close()

    # Stalled jobs ------------------------------------------------------------
    async def _recovery_loop(self) -> None:
        while True:
            await asyncio.sleep(self.stalled_after / 2)
            try:
                await self.recover_stalled()
            except Exception:  # a failed pass must not stop the worker; the next one retries
                logger.exception("looking for stalled ingestion jobs failed")

    async def recover_stalled(self) -> int:
        """Queue again the jobs of workers whose heartbeat is stale; returns how many."""
        from procrastinate.jobs import Status

        manager = self.app.job_manager
        async with self.app.connector.pool.connection() as conn:  # type: ignore[attr-defined]
            cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (_RECOVERY_LOCK,))
            row = await cursor.fetchone()
            if not row or not row[0]:
                return 0
            try:
                stalled = list(await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=self.stalled_after))
                for job in stalled:
                    spec = JobSpec.from_kwargs(job.task_kwargs)
                    attempt = job.attempts + 1
                    store = self.store.for_tenant(spec.tenant)
                    if attempt >= spec.attempts:
                        reason = f"the worker processing it stopped; gave up after {attempt} attempts"
                        await manager.finish_job(job=job, status=Status.FAILED, delete_job=False)
                        await asyncio.to_thread(self._give_up, store, spec, reason, "worker_lost")
                    else:
                        await manager.retry_job(job)
                        await asyncio.to_thread(
                            store.set_status, spec.document_id, DocumentStatus.PENDING,
                            f"attempt {attempt} of {spec.attempts}: the worker processing it stopped; queued again",
                        )
                    logger.warning("stalled ingestion job %s (%s, attempt %d) recovered", job.id, spec.source, attempt)
                return len(stalled)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (_RECOVERY_LOCK,))
                await conn.commit()

    # One job -----------------------------------------------------------------
    def _run_job(self, context: JobContext, **kwargs: Any) -> dict[str, Any]:
        """Ingest one source; on failure set the document's status and raise for procrastinate to retry."""
        spec = JobSpec.from_kwargs(kwargs)
        attempt = context.job.attempts + 1
        store = self.store.for_tenant(spec.tenant)
        try:
            result = self._ingest(spec)
        except Exception as exc:
            retry = is_transient(exc) and attempt < spec.attempts
            reason = exc.reason if isinstance(exc, IngestJobError) else (
                str(exc) if isinstance(exc, SourcebookError) else f"{type(exc).__name__}: {exc}"
            )
            if retry:
                delay = spec.backoff(attempt)
                store.set_status(spec.document_id, DocumentStatus.PENDING,
                                 f"attempt {attempt} of {spec.attempts} failed, retrying in {delay:g} s: {reason}")
            else:
                attempts = f" (after {attempt} attempts)" if attempt > 1 else ""
                self._give_up(store, spec, reason + attempts, getattr(exc, "code", "error"))
            raise IngestJobError(spec.source, reason, retry=retry) from exc
        self._finish(spec, result)
        return result.to_dict()

    def _ingest(self, spec: JobSpec) -> IngestResult:
        parts = self.parts.for_tenant(spec.tenant)
        store = parts.store
        loaded = self._load(spec)
        fingerprint = loaded[0]
        record = store.get_document(spec.document_id)
        if record is None:  # deleted since it was queued: nothing to do, nothing to create
            return IngestResult(spec.source, CANCELLED, spec.document_id)
        if record.content_hash == fingerprint:  # e.g. a URL that did not change
            store.set_status(spec.document_id, DocumentStatus.READY)
            return IngestResult(spec.source, "unchanged", spec.document_id, str(DocumentStatus.READY), record.chunk_count, 0)
        ingestor = parts.ingestor()
        ingestor.only_existing = True  # deleted while it runs: cancelled, and not created again
        with recorded(store):  # the tenant's embedding (and enrichment) calls, in its usage
            results = ingestor.add_loaded([(spec.source, lambda: loaded)], spec.collection, spec.metadata)
        result = results[-1]
        if result.action == "failed":
            transient = result.error_code not in _PERMANENT_CODES
            raise IngestJobError(spec.source, result.error or "ingestion failed", retry=transient, code=result.error_code)
        return result

    def _load(self, spec: JobSpec) -> tuple[str, Any, RawSource | None]:
        """(fingerprint, parsed or None, raw or None) from the job's stored bytes, or by fetching its URL."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT data, media_type, metadata FROM sourcebook_ingest_jobs WHERE id = %s", (spec.job_id,)
            ).fetchone()
        if row is None:
            raise IngestJobError(spec.source, "the job's payload is missing (deleted?); add the source again", retry=False)
        data, media_type, metadata = row
        if data is None:
            raw = read_source(spec.source, self.settings)
            return raw.fingerprint, None, raw
        if media_type == PARSED_MEDIA_TYPE:
            parsed = parsed_from_bytes(bytes(data))
            return parsed.content_hash, parsed, None
        raw = RawSource.from_bytes(spec.source, bytes(data), media_type, metadata)
        return raw.fingerprint, None, raw

    def _give_up(self, store: Store, spec: JobSpec, reason: str, code: str) -> None:
        """Final failure: a document with chunks from before keeps them (and is ready); a new one is in error."""
        record = store.get_document(spec.document_id)
        if record is not None and record.content_hash is not None:
            store.set_status(spec.document_id, DocumentStatus.READY)
        else:
            store.set_status(spec.document_id, DocumentStatus.ERROR, reason)
        self._finish(spec, IngestResult(spec.source, "failed", spec.document_id, str(DocumentStatus.ERROR), 0, 0, reason, code))

    def _finish(self, spec: JobSpec, result: IngestResult) -> None:
        """Record the job's outcome (for a waiting `add`) and drop its bytes."""
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE sourcebook_ingest_jobs SET result = %s, data = NULL, finished_at = now() WHERE id = %s",
                (Jsonb(result.to_dict()), spec.job_id),
            )

