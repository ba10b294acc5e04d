"""`add`'s progress counts what the user added: documents (total known up front, with the time
left) and chunks; a chunk's sentence windows are never counted as chunks."""

from __future__ import annotations

from rich.progress import Progress

from sourcebook import KnowledgeBase
from sourcebook.cli._common import IngestProgress
from sourcebook.ingest import IngestEvent
from tests.test_kb import CountingEmbedder, open_counting


def counted(events: list[IngestEvent], kind: str) -> int:
    return sum(event.count for event in events if event.kind == kind)


def test_progress_counts_documents_and_chunks_not_windows(tmp_path, docs_copy):
    """With late windows and with windows embedded as texts (the default)."""
    late: list[IngestEvent] = []
    with KnowledgeBase.open(tmp_path / "late.db", late_windows=True) as kb:
        results = kb.add(str(docs_copy), progress=late.append)
        windows = kb.status()["window_vectors"]
    texts: list[IngestEvent] = []
    with open_counting(tmp_path / "texts.db", CountingEmbedder()) as kb:
        kb.add(str(docs_copy), progress=texts.append)
    chunks = sum(result.chunks for result in results)
    assert windows > chunks > 0
    for events in (late, texts):
        assert counted(events, "planned") == counted(events, "document") == len(results) == 9
        assert counted(events, "chunked") == counted(events, "embedded") == chunks


def test_the_bar_has_a_total_for_documents_and_chunks():
    bar = Progress(disable=True)
    progress = IngestProgress(bar)
    for event in (IngestEvent("planned", 3), IngestEvent("chunked", 40), IngestEvent("embedded", 25),
                  IngestEvent("document", 1), IngestEvent("chunked", 10), IngestEvent("embedded", 25)):
        progress(event)
    documents, chunks = bar.tasks
    assert (documents.completed, documents.total, documents.fields["eta"]) == (1, 3, True)
    assert (chunks.completed, chunks.total) == (50, 50) and not chunks.fields.get("eta")
