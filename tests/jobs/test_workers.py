"""Real `sourcebook worker` processes on a real embedded PostgreSQL: a worker SIGKILLed in the
middle of a document, two workers sharing a queue, graceful shutdown on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from sourcebook.chunking import chunk_document
from sourcebook.embedders.base import Embedder
from sourcebook.jobs.worker import live_workers
from sourcebook.loaders import RawSource, parse
from sourcebook.models import DocumentStatus

from .test_queue import embedder, open_kb  # noqa: F401 (the module-scoped model fixture)

pytestmark = pytest.mark.slow
SOURCEBOOK = str(Path(sys.executable).parent / "sourcebook")
FAST_RECOVERY = ["--heartbeat", "0.5", "--stalled-after", "2"]
STARTED = re.compile(r"Starting job sourcebook\.ingest\[(\d+)\]")


@pytest.fixture
def start_worker(fresh_postgres_dsn: str, tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[bytes], Path]]]:
    """Start `sourcebook --db DSN worker ARGS` with its log in a file; kills leftovers at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"worker-{len(started)}.log"
        process = subprocess.Popen(
            [SOURCEBOOK, "--db", fresh_postgres_dsn, "worker", *args], stdout=subprocess.DEVNULL,
            stderr=log.open("wb"), env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        started.append(process)
        return process, log

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


def write_long_document(path: Path, paragraphs: int) -> bytes:
    topics = ["harbour", "glacier", "orchard", "foundry", "lighthouse", "archive", "observatory", "vineyard"]
    text = "# Field notes\n\n" + "\n\n".join(
        f"Entry {i}: the {topics[i % len(topics)]} survey recorded {i * 7 % 113} readings near marker {i}. "
        + " ".join(f"Observation {i}.{j} noted the {topics[(i + j) % len(topics)]} conditions as item {j * i % 97}." for j in range(14))
        for i in range(paragraphs)
    )
    path.write_text(text)
    return path.read_bytes()


def test_a_worker_killed_mid_document_leaves_no_chunks_and_the_job_is_picked_up_again(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path,  # noqa: F811
    start_worker: Callable[..., tuple[subprocess.Popen[bytes], Path]],
) -> None:
    kb = open_kb(fresh_postgres_dsn, embedder)
    big = tmp_path / "field-notes.md"
    data = write_long_document(big, 120)
    [queued] = kb.add(str(big), wait=False)
    doc_id = queued.document_id
    assert doc_id is not None

    first, _ = start_worker(*FAST_RECOVERY)
    wait_for(lambda: kb.document(doc_id).status == DocumentStatus.PROCESSING, 180, "the first worker to embed")
    first.send_signal(signal.SIGKILL)
    first.wait()
    record = kb.document(doc_id)
    # killed mid-document, not after it; its owner, the worker on this host, is gone
    assert record.status == DocumentStatus.INTERRUPTED and "interrupted" in (record.error or "")
    with psycopg.connect(fresh_postgres_dsn) as conn:  # superuser: row-level security does not hide rows
        assert conn.execute("SELECT count(*) FROM chunks WHERE document_id = %s", (doc_id,)).fetchone() == (0,)

    second, log = start_worker(*FAST_RECOVERY)
    wait_for(lambda: kb.document(doc_id).status == DocumentStatus.READY, 240, "the second worker to finish the document")
    settings = kb.settings
    expected = chunk_document(
        parse(RawSource.from_bytes(str(big), data)), embedder.count_tokens,
        min(settings.chunk_max_tokens, embedder.max_tokens), settings.chunk_overlap,
    )
    chunks = kb.chunks(doc_id)
    assert len(expected) > 50
    assert kb.document(doc_id).chunk_count == len(chunks) == len(expected)
    assert [c.text for c in chunks] == [c.text for c in expected]
    with psycopg.connect(fresh_postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM chunks WHERE document_id = %s", (doc_id,)).fetchone() == (len(expected),)

    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=60) == 0
    assert "stalled ingestion job" in log.read_text()


def test_two_workers_share_the_queue_and_never_run_a_job_twice(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path,  # noqa: F811
    start_worker: Callable[..., tuple[subprocess.Popen[bytes], Path]],
) -> None:
    kb = open_kb(fresh_postgres_dsn, embedder)
    kb.add([], wait=False)  # creates the queue's tables before the workers count each other
    workers = [start_worker(*FAST_RECOVERY), start_worker(*FAST_RECOVERY)]
    with psycopg.connect(fresh_postgres_dsn, autocommit=True) as conn:
        wait_for(lambda: live_workers(conn, 2) == 2, 180, "both workers to register")
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(12):
        write_long_document(folder / f"note-{i:02d}.md", 3 + i % 3)
    queued = kb.add(str(folder), wait=False)
    assert len(queued) == 12
    wait_for(lambda: all(d.status == DocumentStatus.READY for d in kb.documents()), 240, "all documents to be ready")

    for process, _ in workers:
        process.send_signal(signal.SIGTERM)
    assert [process.wait(timeout=60) for process, _ in workers] == [0, 0]
    runs = [STARTED.findall(log.read_text()) for _, log in workers]
    assert all(runs), "each worker took some of the jobs"
    every = runs[0] + runs[1]
    assert len(every) == len(set(every)) == 12  # each job started once, by one worker
    for document in kb.documents():
        assert document.chunk_count == len(kb.chunks(document.id)) > 0


def test_sigterm_lets_the_running_document_finish_before_the_worker_exits(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path,  # noqa: F811
    start_worker: Callable[..., tuple[subprocess.Popen[bytes], Path]],
) -> None:
    kb = open_kb(fresh_postgres_dsn, embedder)
    big = tmp_path / "field-notes.md"
    write_long_document(big, 60)
    [queued] = kb.add(str(big), wait=False)
    doc_id = queued.document_id
    assert doc_id is not None
    worker, _ = start_worker()
    wait_for(lambda: kb.document(doc_id).status == DocumentStatus.PROCESSING, 180, "the worker to embed")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=180) == 0
    record = kb.document(doc_id)
    assert record.status == DocumentStatus.READY
    assert record.chunk_count == len(kb.chunks(doc_id)) > 20
