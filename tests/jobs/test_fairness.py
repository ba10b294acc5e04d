"""Fair, cancellable, bounded ingestion on the embedded store: real threads, a real SQLite file.

One tenant's huge upload must not keep another tenant's small one pending (issue 17, item 6),
deleting a document must stop its running job without leaving chunks, and each per-source
limit ends in its named error.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF

from sourcebook import IngestTimeoutError, KnowledgeBase, SourceTooLargeError
from sourcebook.embedders import create_embedder
from sourcebook.embedders.base import Embedder
from sourcebook.jobs import IngestItem, IngestJob
from sourcebook.models import IngestResult
from sourcebook.settings import Settings
from sourcebook.stores import open_store
from sourcebook.stores.sqlite import SQLiteStore

from .gated import SMALL, GatedEmbedder, big_markdown

WAIT = 120.0


@pytest.fixture(scope="module")
def model() -> Embedder:
    return create_embedder(Settings())


@pytest.fixture
def gated(model: Embedder) -> Iterator[GatedEmbedder]:
    embedder = GatedEmbedder(model)
    yield embedder
    embedder.release.set()  # never leave a runner thread waiting


def open_kb(path: Path, embedder: Any, **settings: Any) -> KnowledgeBase:
    return KnowledgeBase(open_store(str(path)), Settings(db=str(path), **settings), embedder)


class Outcomes:
    """Each finished job's tenant and results, in the order the jobs finished."""

    def __init__(self) -> None:
        self.finished: list[tuple[str, list[IngestResult]]] = []
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def done_for(self, tenant: str) -> Any:
        event = self._events.setdefault(tenant, threading.Event())

        def done(results: list[IngestResult], seconds: float) -> None:
            with self._lock:
                self.finished.append((tenant, results))
            event.set()

        return done

    def wait(self, tenant: str) -> bool:
        return self._events[tenant].wait(WAIT)


def upload_job(kb: KnowledgeBase, tmp_path: Path, name: str, data: bytes) -> IngestJob:
    """What the HTTP API does for an upload: the bytes saved, the document pending, a job."""
    saved = tmp_path / f"{kb.tenant}-{name}"
    saved.write_bytes(data)
    record = kb.enqueue(name)
    return IngestJob(kb.tenant, record.collection, (IngestItem(record.id, name, str(saved), "text/markdown"),))


def chunk_rows(path: Path, document_id: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM chunks WHERE document_id = ?", (document_id,)).fetchone()[0])


def test_a_small_upload_finishes_while_another_tenants_large_one_is_still_running(tmp_path: Path, gated: GatedEmbedder) -> None:
    kb = open_kb(tmp_path / "kb.db", gated)
    acme, globex = kb.for_tenant("acme"), kb.for_tenant("globex")
    big, small = upload_job(acme, tmp_path, "ledger.md", big_markdown(20)), upload_job(globex, tmp_path, "lunch.md", SMALL)
    outcomes = Outcomes()
    runner = kb.ingestion_runner()
    runner.start()
    try:
        runner.submit(big, outcomes.done_for("acme"))
        assert gated.entered.wait(WAIT), "acme's large upload never started embedding"
        runner.submit(small, outcomes.done_for("globex"))
        assert outcomes.wait("globex"), "globex's one-paragraph upload waited behind acme's large one"
        assert acme.document(big.items[0].document_id).status == "processing"  # still held by the gate
        assert globex.document(small.items[0].document_id).status == "ready"
        gated.release.set()
        assert outcomes.wait("acme")
    finally:
        gated.release.set()
        runner.stop()
    assert [tenant for tenant, _ in outcomes.finished] == ["globex", "acme"]
    assert acme.document(big.items[0].document_id).status == "ready"
    kb.close()


def test_a_job_of_many_documents_takes_turns_with_other_tenants(tmp_path: Path, model: Embedder) -> None:
    kb = open_kb(tmp_path / "kb.db", model, ingest_workers=1)  # one thread: the order is the schedule's
    acme, globex = kb.for_tenant("acme"), kb.for_tenant("globex")
    folder = [upload_job(acme, tmp_path, f"note-{n}.md", SMALL.replace(b"lentil", f"soup {n}".encode())) for n in range(20)]
    many = IngestJob("acme", "default", tuple(item for job in folder for item in job.items))
    one = upload_job(globex, tmp_path, "lunch.md", SMALL)
    outcomes = Outcomes()
    runner = kb.ingestion_runner()
    runner.submit(many, outcomes.done_for("acme"))
    runner.submit(one, outcomes.done_for("globex"))
    runner.start()
    try:
        assert outcomes.wait("globex") and outcomes.wait("acme")
    finally:
        runner.stop()
    assert [tenant for tenant, _ in outcomes.finished] == ["globex", "acme"]  # after acme's first turn, not its 20 files
    [(_, acme_results)] = [entry for entry in outcomes.finished if entry[0] == "acme"]
    assert len(acme_results) == 20 and {r.action for r in acme_results} == {"added"}
    kb.close()


def test_deleting_a_running_document_cancels_its_job_and_leaves_no_chunks(tmp_path: Path, gated: GatedEmbedder) -> None:
    path = tmp_path / "kb.db"
    kb = open_kb(path, gated)
    acme = kb.for_tenant("acme")
    job = upload_job(acme, tmp_path, "ledger.md", big_markdown(40))  # several embedding slices
    doc_id = job.items[0].document_id
    outcomes = Outcomes()
    runner = kb.ingestion_runner()
    runner.start()
    try:
        runner.submit(job, outcomes.done_for("acme"))
        assert gated.entered.wait(WAIT)
        acme.remove(doc_id)  # while its first slice is embedding
        gated.release.set()
        assert outcomes.wait("acme")
    finally:
        gated.release.set()
        runner.stop()
    [(_, [result])] = outcomes.finished
    assert (result.action, result.document_id, result.error) == ("cancelled", doc_id, None)
    assert gated.marked_batches == 1  # stopped before the next slice
    assert acme.documents() == [] and chunk_rows(path, doc_id) == 0  # nothing resurrected, nothing written
    kb.close()


def test_a_job_whose_document_was_deleted_before_it_ran_is_cancelled_not_recreated(tmp_path: Path, model: Embedder) -> None:
    kb = open_kb(tmp_path / "kb.db", model)
    job = upload_job(kb, tmp_path, "lunch.md", SMALL)
    kb.remove(job.items[0].document_id)
    [result] = kb.ingestion_runner().run(job)  # type: ignore[attr-defined]
    assert result.action == "cancelled"
    assert kb.documents() == []
    kb.close()


def test_a_delete_landing_just_before_the_job_records_its_document_is_not_undone(
    tmp_path: Path, model: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race left by the cancellation of issue 17 #6: the job looked (the document was
    there), then the user deleted it, then the job wrote its row: an upsert that created it again."""
    kb = open_kb(tmp_path / "kb.db", model)
    job = upload_job(kb, tmp_path, "lunch.md", SMALL)
    doc_id = job.items[0].document_id
    monkeypatch.setattr(SQLiteStore, "upsert_document", deleted_just_before(SQLiteStore.upsert_document, monkeypatch))
    [result] = kb.ingestion_runner().run(job)  # type: ignore[attr-defined]
    assert (result.action, result.document_id) == ("cancelled", doc_id)
    assert kb.documents() == [] and chunk_rows(tmp_path / "kb.db", doc_id) == 0
    kb.close()


def deleted_just_before(upsert: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`upsert_document` whose first call is preceded by the document's deletion (then restored)."""

    def delete_then_upsert(store: Any, document_id: str, **fields: Any) -> None:
        monkeypatch.undo()
        store.delete_document(document_id)
        upsert(store, document_id, **fields)

    return delete_then_upsert


def test_too_many_characters_is_a_named_error_for_that_source_only(tmp_path: Path, model: Embedder) -> None:
    (tmp_path / "small.md").write_bytes(SMALL)
    (tmp_path / "big.md").write_text("# Big\n\n" + "A long line of text. " * 50)
    kb = open_kb(tmp_path / "kb.db", model, max_characters=500)
    results = {Path(r.source).name: r for r in kb.add([str(tmp_path / "small.md"), str(tmp_path / "big.md")])}
    assert results["small.md"].action == "added"
    big = results["big.md"]
    assert (big.action, big.error_code) == ("failed", SourceTooLargeError.code)
    assert "max_characters" in (big.error or "")
    assert kb.document(big.document_id).status == "error"  # type: ignore[arg-type]
    kb.close()


def test_too_many_pages_is_a_named_error(tmp_path: Path, model: Embedder) -> None:
    pdf = FPDF()
    for page in range(3):
        pdf.add_page()
        pdf.set_font("Helvetica", size=12)
        topic = ["annual leave", "expense claims", "remote work"][page]
        pdf.multi_cell(0, 6, f"This chapter of the handbook explains {topic} for every employee.")
    (tmp_path / "handbook.pdf").write_bytes(bytes(pdf.output()))
    kb = open_kb(tmp_path / "kb.db", model, max_pages=2)
    [result] = kb.add(str(tmp_path / "handbook.pdf"))
    assert (result.action, result.error_code) == ("failed", SourceTooLargeError.code)
    assert "3 pages" in (result.error or "") and "max_pages" in (result.error or "")
    kb.close()


class SlowEmbedder:
    """The real model, taking at least `seconds` per call: over a smaller max_ingest_seconds by construction."""

    def __init__(self, inner: Embedder, seconds: float) -> None:
        self._inner, self.seconds = inner, seconds
        self.name, self.dimension, self.max_tokens = inner.name, inner.dimension, inner.max_tokens

    def count_tokens(self, texts: Any) -> Any:
        return self._inner.count_tokens(texts)

    def embed_query(self, text: str) -> Any:
        return self._inner.embed_query(text)

    def embed_documents(self, texts: Any, progress: Any = None) -> Any:
        time.sleep(self.seconds)
        return self._inner.embed_documents(texts, progress)


def test_over_the_time_limit_is_a_named_error_and_writes_nothing(tmp_path: Path, model: Embedder) -> None:
    path = tmp_path / "kb.db"
    (tmp_path / "ledger.md").write_bytes(big_markdown(40))
    kb = open_kb(path, SlowEmbedder(model, 0.5), max_ingest_seconds=0.3)
    [result] = kb.add(str(tmp_path / "ledger.md"))
    assert (result.action, result.error_code) == ("failed", IngestTimeoutError.code)
    assert "max_ingest_seconds" in (result.error or "")
    assert kb.document(result.document_id).status == "error"  # type: ignore[arg-type]
    assert chunk_rows(path, result.document_id) == 0  # type: ignore[arg-type]
    kb.close()
