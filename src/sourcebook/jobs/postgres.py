"""The Postgres queue's shared parts: its tables, what a job carries, and the procrastinate app.

Both sides use them: the runner that queues jobs (jobs/queue.py) and the worker that runs
them (jobs/worker.py). A job's bytes live in `sourcebook_ingest_jobs` beside the
procrastinate job (see jobs/queue.py for why), and the same row receives its outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from ..errors import ConfigurationError, StoreError
from ..models import Block, IngestResult, ParsedDocument

if TYPE_CHECKING:
    import procrastinate

QUEUE = "sourcebook-ingest"
TASK = "sourcebook.ingest"
PARSED_MEDIA_TYPE = "application/vnd.sourcebook.parsed+json"
"""A job payload that is an already parsed document (a BEIR record), not a file's bytes."""
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


@contextmanager
def connect(dsn: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the queue's database; its errors surface as StoreError."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            yield conn
    except psycopg.Error as exc:
        raise StoreError(f"ingestion queue: {exc}") from exc
