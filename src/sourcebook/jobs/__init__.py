"""Ingestion jobs: one interface, two runners.

`kb.add` hands its sources to a runner. On the embedded SQLite store the runner is
in-process (`InProcessRunner`: the batched `Ingestor`, as fast as ingestion gets on one
machine). On PostgreSQL it is `QueueRunner` (jobs/queue.py): one procrastinate job per
source, processed by `sourcebook worker` processes on any number of machines
(jobs/worker.py), with retries, exponential backoff and recovery of jobs whose worker died.
Both return the same `IngestResult`s, so callers never care which one ran.

procrastinate and psycopg are imported only by the queue's modules (the 'postgres' extra):
the embedded default needs neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..ingest import ProgressHandler
from ..models import IngestResult

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class IngestionRunner(Protocol):
    """Turns sources into documents of a collection; one result per source."""

    def add(
        self,
        sources: Sequence[str],
        collection: str,
        metadata: dict[str, Any] | None,
        fmt: str,
        progress: ProgressHandler | None,
        wait: bool,
    ) -> list[IngestResult]:
        """Ingest (or queue) `sources`. With `wait` False a queue returns "queued" results at once."""


class InProcessRunner:
    """Runs ingestion here and now: the embedded store's runner (no queue, no worker)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

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
        return self.kb.ingestor(progress).add(list(sources), collection, metadata, fmt)


def uses_queue(kb: KnowledgeBase) -> bool:
    """True when ingestion goes through the job queue: a Postgres database, unless settings say inline."""
    return kb.settings.ingest_jobs != "inline" and kb.settings.db.startswith(POSTGRES_SCHEMES)


def runner_for(kb: KnowledgeBase) -> IngestionRunner:
    """The runner `kb.add` uses: the job queue on Postgres, in-process otherwise."""
    if not uses_queue(kb):
        return InProcessRunner(kb)
    from .queue import QueueRunner

    return QueueRunner(kb)


__all__ = ["InProcessRunner", "IngestionRunner", "runner_for", "uses_queue"]
