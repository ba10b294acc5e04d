"""Ingestion jobs: one interface, two runners, used by `kb.add` and the HTTP API alike.

On the embedded SQLite store the runner is in-process (`InProcessRunner`, jobs/inprocess.py:
the batched `Ingestor`, as fast as ingestion gets on one machine, and one background thread
for the HTTP API's submissions). On PostgreSQL it is `QueueRunner` (jobs/queue.py): one
procrastinate job per source, processed by `sourcebook worker` processes on any number of
machines (jobs/worker.py), with retries, exponential backoff and recovery of jobs whose
worker died. Both return the same `IngestResult`s, so callers never care which one ran.

procrastinate and psycopg are imported only by the queue's modules (the 'postgres' extra):
the embedded default needs neither. Runners get their parts from wiring.py (`IngestParts`),
never from the facade.
"""

from __future__ import annotations

from ..settings import Settings
from .base import IngestionRunner, IngestItem, IngestJob, IngestParts, JobDone
from .inprocess import InProcessRunner

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def uses_queue(settings: Settings) -> bool:
    """True when ingestion goes through the job queue: a Postgres database, unless settings say inline."""
    return settings.ingest_jobs != "inline" and settings.db.startswith(POSTGRES_SCHEMES)


def runner_for(parts: IngestParts) -> IngestionRunner:
    """The runner for `parts`: the job queue on Postgres, in-process otherwise."""
    if not uses_queue(parts.settings):
        return InProcessRunner(parts)
    from .queue import QueueRunner

    return QueueRunner(parts)


__all__ = [
    "POSTGRES_SCHEMES", "InProcessRunner", "IngestItem", "IngestJob", "IngestParts", "IngestionRunner", "JobDone",
    "runner_for", "uses_queue",
]
