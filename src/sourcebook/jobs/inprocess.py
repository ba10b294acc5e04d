"""The embedded store's runner: ingestion in this process, no queue and no worker.

`add` runs the batched `Ingestor` here and now (as fast as ingestion gets on one machine).
`submit` hands a job to background threads (the HTTP API answers 202 meanwhile): one queue
per tenant served round robin by `ingest_workers` threads (jobs/base.py JobThread), and a
job of many documents takes turns of `TURN_DOCUMENTS`, the rest going to the back of its
tenant's queue, so one tenant's big upload never keeps another's small one waiting. SQLite
has one writer, but each document is written in one short transaction, so the threads
interleave their writes. Jobs live in memory: a restarted server submits the documents left
pending again (server/context.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..ingest import ProgressHandler
from ..models import IngestResult
from ..usage import recorded
from .base import IngestJob, IngestParts, JobDone, JobThread, fail_job, read_uploads

TURN_DOCUMENTS = 8
"""Documents of a job ingested in one turn; the rest waits behind the other tenants' turns."""


@dataclass(frozen=True)
class _Turn:
    """What is left of a submitted job, and what its finished turns gave."""

    job: IngestJob
    done: JobDone | None
    started: float
    results: tuple[IngestResult, ...] = ()


class InProcessRunner:
    """Runs ingestion here: now (`add`) or in background threads, fair between tenants (`submit`)."""

    persistent = False

    def __init__(self, parts: IngestParts) -> None:
        self.parts = parts
        self._thread: JobThread[_Turn] = JobThread(self._take_turn, parts.settings.ingest_workers)

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
        self._thread.put(job.tenant, _Turn(job, done, time.perf_counter()))

    def _take_turn(self, turn: _Turn) -> None:
        """Ingest the job's next documents; queue the rest again, or report the whole job's results."""
        job = turn.job
        now, later = job.items[:TURN_DOCUMENTS], job.items[TURN_DOCUMENTS:]
        results = (*turn.results, *self.run(replace(job, items=now)))
        if later:
            self._thread.put(job.tenant, _Turn(replace(job, items=later), turn.done, turn.started, results))
        elif turn.done is not None:
            turn.done(list(results), time.perf_counter() - turn.started)

    def run(self, job: IngestJob) -> list[IngestResult]:
        """Ingest a job's documents in its tenant. Failures of single documents are recorded on
        them by the ingestor; a failure of the whole job on each of its documents. A document
        deleted before or while it is ingested is "cancelled", and nothing of it is written."""
        parts = self.parts.for_tenant(job.tenant)
        raws, sources, results = read_uploads(parts.store, job)
        with recorded(parts.store):  # the tenant's embedding (and enrichment) calls, in its usage
            try:
                ingestor = parts.ingestor()
                ingestor.only_existing = True  # the job's documents are recorded: a missing one was deleted
                if raws:
                    results += ingestor.add_raw(raws, job.collection, job.metadata)
                if sources:
                    results += ingestor.add(sources, job.collection, job.metadata)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any one job
                results = fail_job(parts.store, job, exc)
        return results

    def depth(self) -> int:
        return self._thread.depth()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._thread.stop(timeout)
