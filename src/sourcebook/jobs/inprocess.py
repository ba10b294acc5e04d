"""The embedded store's runner: ingestion in this process, no queue and no worker.

`add` runs the batched `Ingestor` here and now (as fast as ingestion gets on one machine).
`submit` hands a job to one background thread (the HTTP API answers 202 meanwhile); one
thread is right for SQLite, which has one writer anyway. Its jobs live in memory: a
restarted server submits the documents left pending again (server/context.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..ingest import ProgressHandler
from ..models import IngestResult
from .base import IngestJob, IngestParts, JobDone, JobThread, fail_job, read_uploads


class InProcessRunner:
    """Runs ingestion here: now (`add`) or in one background thread (`submit`)."""

    persistent = False

    def __init__(self, parts: IngestParts) -> None:
        self.parts = parts
        self._thread: JobThread[tuple[IngestJob, JobDone | None]] = JobThread(lambda work: self.run(*work))

    def add(
        self,
        sources: Sequence[str],
        collection: str,
        metadata: dict[str, Any] | None,
        fmt: str,
        progress: ProgressHandler | None,
        wait: bool = True,
    ) -> list[IngestResult]:
        """`wait` is moot: an in-process run is over when it returns."""
        return self.parts.ingestor(progress).add(list(sources), collection, metadata, fmt)

    def submit(self, job: IngestJob, done: JobDone | None = None) -> None:
        self._thread.put((job, done))

    def run(self, job: IngestJob, done: JobDone | None = None) -> list[IngestResult]:
        """Ingest a job's documents in its tenant. Failures of single documents are recorded on
        them by the ingestor; a failure of the whole job on each of its documents."""
        started = time.perf_counter()
        parts = self.parts.for_tenant(job.tenant)
        raws, sources, results = read_uploads(parts.store, job)
        try:
            if raws:
                results += parts.ingestor().add_raw(raws, job.collection, job.metadata)
            if sources:
                results += parts.ingestor().add(sources, job.collection, job.metadata)
        except Exception as exc:  # noqa: BLE001 - the thread must outlive any one job
            results = fail_job(parts.store, job, exc)
        if done is not None:
            done(results, time.perf_counter() - started)
        return results

    def depth(self) -> int:
        return self._thread.depth()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._thread.stop(timeout)
