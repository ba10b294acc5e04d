"""The KnowledgeBase facade end to end: ingestion, incremental updates, removal, sync, filters."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from fpdf import FPDF
from pypdf import PdfWriter

from sourcebook import DocumentNotFoundError, EmbeddingModelMismatchError, KnowledgeBase
from sourcebook.errors import InvalidMetadataError
from sourcebook.embedders import create_embedder
from sourcebook.settings import Settings
from sourcebook.stores import open_store
from sourcebook.chunking import window_spans, window_texts


class CountingEmbedder:
    """The real model, counting how many texts it is asked to embed."""

    def __init__(self, name: str | None = None) -> None:
        self._inner = create_embedder(Settings())
        self.name = name or self._inner.name
        self.dimension = self._inner.dimension
        self.max_tokens = self._inner.max_tokens
        self.embedded = 0

    def count_tokens(self, texts):
        return self._inner.count_tokens(texts)

    def embed_documents(self, texts, progress=None):
        self.embedded += len(texts)
        return self._inner.embed_documents(texts, progress)

    def embed_query(self, text):
        return self._inner.embed_query(text)


class SpanCountingEmbedder(CountingEmbedder):
    """The real model with late chunking (`SpanEmbedder`), counting the sequences it runs."""

    pools_spans = True

    def embed_documents_with_spans(self, texts, spans, progress=None, confine=False):
        self.embedded += len(texts)
        return self._inner.embed_documents_with_spans(texts, spans, progress, confine=confine)


def open_counting(path: Path, embedder: CountingEmbedder, **settings: object) -> KnowledgeBase:
    """A knowledge base over the file at `path` with a model of the test's own (a store passed in)."""
    return KnowledgeBase(open_store(str(path)), Settings(db=str(path), **settings), embedder)  # type: ignore[arg-type]


def test_add_folder_makes_every_document_ready(example_kb):
    docs = example_kb.documents()
    assert len(docs) == 9
    assert {d.status for d in docs} == {"ready"}
    assert all(d.chunk_count > 0 and d.error is None for d in docs)
    assert {Path(d.source).suffix for d in docs} == {".md", ".html", ".txt", ".pdf"}


def windows_of(kb: KnowledgeBase, document_id: str) -> dict[str, int]:
    """Window vectors stored per chunk hash of a document (read from the database file itself)."""
    with open_store(kb.settings.db) as store:
        chunks, _, windows = store.export_chunks(document_id)
    return {chunk.content_hash: len(w) for chunk, w in zip(chunks, windows)}


def test_readding_unchanged_documents_embeds_nothing(tmp_path, docs_copy):
    embedder = CountingEmbedder()
    with open_counting(tmp_path / "kb.db", embedder) as kb:
        first = kb.add(str(docs_copy))
        windows = kb.status()["window_vectors"]
        assert windows > sum(r.chunks for r in first) > 0  # most chunks hold several windows
        assert embedder.embedded == sum(r.chunks for r in first) + windows
        again = kb.add(str(docs_copy))
    assert {r.action for r in again} == {"unchanged"}
    assert embedder.embedded == sum(r.chunks for r in first) + windows


def test_late_windows_cost_no_model_run_of_their_own(tmp_path, docs_copy):
    embedder = SpanCountingEmbedder()
    with open_counting(tmp_path / "kb.db", embedder, late_windows=True) as kb:
        first = kb.add(str(docs_copy))
        assert kb.status()["window_vectors"] > sum(r.chunks for r in first) > 0
        assert embedder.embedded == sum(r.chunks for r in first)  # one sequence per chunk, windows included
        again = kb.add(str(docs_copy))
    assert {r.action for r in again} == {"unchanged"}
    assert embedder.embedded == sum(r.chunks for r in first)


def test_auto_pooling_is_pairs_and_falls_back_to_texts(tmp_path, docs_copy):
    """window_pooling "auto" (the default) stores the windows "pairs" stores (stride-2 passes);
    a span embedder that cannot run spans apart (a plugin's, written before them) gets its
    windows embedded as texts instead, every one of them once."""
    handbook = docs_copy / "employee-handbook.md"
    stored = {}
    for pooling in ("auto", "pairs"):
        with KnowledgeBase.open(tmp_path / f"{pooling}.db", window_pooling=pooling) as kb:
            [result] = kb.add(str(handbook))
            with open_store(kb.settings.db) as store:
                _, _, stored[pooling] = store.export_chunks(result.document_id)
    assert sum(len(w) for w in stored["auto"]) > 0
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(stored["auto"], stored["pairs"], strict=True))
    embedder = SpanCountingEmbedder()
    with open_counting(tmp_path / "plugin.db", embedder) as kb:
        [result] = kb.add(str(handbook))
        windows = windows_of(kb, result.document_id)
    assert embedder.embedded == result.chunks + sum(windows.values())


def test_every_chunk_stores_the_windows_of_its_text(tmp_path, docs_copy):
    """Pooled from the chunk's pass under confined attention by default, from the plain pass with
    `window_pooling = "late"`, embedded as texts with "separate": three different vectors."""
    stored = {}
    for pooling in ("confined", "late", "separate"):
        with KnowledgeBase.open(tmp_path / f"{pooling}.db", window_pooling=pooling) as kb:
            [result] = kb.add(str(docs_copy / "employee-handbook.md"))
            with open_store(kb.settings.db) as store:
                chunks, vectors, windows = store.export_chunks(result.document_id)
            assert [len(w) for w in windows] == [len(window_texts(c)) for c in chunks]
            first = next(i for i, w in enumerate(windows) if len(w))
            if pooling == "separate":
                expected = kb.embedder.embed_documents(window_texts(chunks[first]))
            else:
                _, [expected] = kb.embedder.embed_documents_with_spans(
                    [chunks[first].embedding_text], [window_spans(chunks[first])], confine=pooling == "confined"
                )
            # int8 vectors move a little with their batch (int8 kernels: one row or several)
            assert np.sum(windows[first] * expected, axis=1).min() > 0.98
            stored[pooling] = windows[first]
    assert not np.allclose(stored["confined"], stored["late"], atol=1e-3)
    assert not np.allclose(stored["confined"], stored["separate"], atol=1e-3)


def test_changed_document_reembeds_only_changed_chunks(tmp_path, docs_copy):
    embedder = CountingEmbedder()
    handbook = docs_copy / "employee-handbook.md"
    with open_counting(tmp_path / "kb.db", embedder) as kb:
        kb.add(str(docs_copy))
        before = embedder.embedded
        text = handbook.read_text(encoding="utf-8")
        handbook.write_text(text + "\n\n## Bicycles\n\nStaff may store bicycles in the basement cage. "
                            "They must be locked. Keys are at reception.\n", encoding="utf-8")
        document_id = kb.document(str(handbook)).id
        old = windows_of(kb, document_id)
        [result] = [r for r in kb.add(str(docs_copy)) if r.action != "unchanged"]
        assert result.action == "updated"
        assert 1 <= result.embedded < result.chunks
        new = windows_of(kb, document_id)
        fresh_windows = sum(count for chunk_hash, count in new.items() if chunk_hash not in old)
        assert fresh_windows > 0
        assert embedder.embedded - before == result.embedded + fresh_windows
        hits = kb.search("where can staff store bicycles", top_k=3)
        assert any("basement cage" in h.chunk.text for h in hits)


def test_windows_can_be_turned_off_and_are_added_to_reused_chunks_later(tmp_path, docs_copy):
    embedder = CountingEmbedder()
    handbook = docs_copy / "employee-handbook.md"
    with open_counting(tmp_path / "kb.db", embedder, vector_windows=False) as kb:
        [first] = kb.add(str(handbook))
        assert embedder.embedded == first.chunks and kb.status()["window_vectors"] == 0
    handbook.write_text(handbook.read_text(encoding="utf-8") + "\n\n## Bicycles\n\nIn the cage.\n", encoding="utf-8")
    embedder.embedded = 0
    with open_counting(tmp_path / "kb.db", embedder) as kb:
        [second] = kb.add(str(handbook))
        windows = windows_of(kb, second.document_id)
        # unchanged chunks keep their vectors but get the windows they lacked
        assert second.embedded < second.chunks
        assert embedder.embedded == second.embedded + sum(windows.values()) > second.embedded


def test_late_windows_are_added_to_reused_chunks_in_one_pass_each(tmp_path, docs_copy):
    embedder = SpanCountingEmbedder()
    handbook = docs_copy / "employee-handbook.md"
    with open_counting(tmp_path / "kb.db", embedder, vector_windows=False) as kb:
        kb.add(str(handbook))
    handbook.write_text(handbook.read_text(encoding="utf-8") + "\n\n## Bicycles\n\nIn the cage.\n", encoding="utf-8")
    embedder.embedded = 0
    with open_counting(tmp_path / "kb.db", embedder, late_windows=True) as kb:
        [second] = kb.add(str(handbook))
        windows = windows_of(kb, second.document_id)
    # the reused chunks that lacked windows run once more, for their windows only
    assert sum(windows.values()) > second.chunks
    assert second.embedded < embedder.embedded <= second.chunks


def test_remove_deletes_chunks_vectors_and_keyword_rows(tmp_path, docs_copy):
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        kb.add(str(docs_copy))
        pdf = next(d for d in kb.documents() if d.source.endswith(".pdf"))
        assert kb.search("per diem mileage", mode="keyword", top_k=50, per_document=0)
        removed = kb.remove(pdf.source)
        assert removed.id == pdf.id
        assert all(h.chunk.document_id != pdf.id for h in kb.search("per diem mileage allowance", mode="keyword", top_k=50, per_document=0))
        assert all(h.chunk.document_id != pdf.id for h in kb.search("per diem mileage allowance", mode="vector", top_k=50, per_document=0))
        with pytest.raises(DocumentNotFoundError):
            kb.document(pdf.id)
        assert kb.status()["chunks"] == sum(d.chunk_count for d in kb.documents())


def test_sync_adds_new_files_and_removes_vanished_ones(tmp_path, docs_copy):
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        kb.sync(docs_copy)
        (docs_copy / "meeting-notes-2024-05-14.txt").unlink()
        (docs_copy / "new-note.md").write_text("# Parking\n\nThe car park closes at 20:00 on weekdays.\n")
        results = {r.action: r for r in kb.sync(docs_copy)}
        assert results["removed"].source.endswith("meeting-notes-2024-05-14.txt")
        assert results["added"].source.endswith("new-note.md")
        assert len(kb.documents()) == 9


def test_document_lookup_by_source_and_id(example_kb, example_docs):
    record = example_kb.document(str(example_docs / "security-policy.md"))
    assert example_kb.document(record.id) == record
    chunks = example_kb.chunks(record.id)
    assert [c.position for c in chunks] == list(range(record.chunk_count))


def test_collections_and_metadata_filters(tmp_path, docs_copy):
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        kb.add(str(docs_copy / "employee-handbook.md"), collection="hr", metadata={"team": "people", "year": 2024})
        kb.add(str(docs_copy / "incident-response-runbook.md"), collection="eng", metadata={"team": "sre"})
        assert {h.chunk.collection for h in kb.search("leave", collection="hr", per_document=0)} == {"hr"}
        assert {h.chunk.collection for h in kb.search("leave", collection="eng", per_document=0)} == {"eng"}
        assert {h.chunk.collection for h in kb.search("leave", metadata={"team": "sre"}, per_document=0)} == {"eng"}
        assert kb.search("leave", metadata={"year": 2024})
        assert not kb.search("leave", metadata={"year": 2023})
        hr_doc = kb.documents("hr")[0]
        assert {h.chunk.document_id for h in kb.search("incident", document_ids=[hr_doc.id], per_document=0)} == {hr_doc.id}


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_tenants_of_one_file_never_see_each_other(tmp_path, docs_copy, mode):
    """The same file added by two tenants: each finds, answers from and removes only its own."""
    handbook = str(docs_copy / "employee-handbook.md")
    with KnowledgeBase.open(tmp_path / "kb.db", tenant="acme") as acme:
        globex = acme.for_tenant("globex")
        (mine,) = acme.add(handbook)
        (theirs,) = globex.add(handbook)
        assert mine.document_id != theirs.document_id
        assert {h.chunk.document_id for h in acme.search("paid holiday", mode=mode, per_document=0)} == {mine.document_id}
        assert {c.document_id for c in acme.ask("How many days of paid holiday?").citations} <= {mine.document_id}
        assert acme.document(handbook).id == mine.document_id
        globex.remove(handbook)
        assert acme.search("paid holiday", mode=mode) and not globex.search("paid holiday", mode=mode)
    with KnowledgeBase.open(tmp_path / "kb.db") as default:
        assert default.tenant == "default" and default.documents() == []


def test_model_mismatch_is_refused(tmp_path, docs_copy):
    path = tmp_path / "kb.db"
    with KnowledgeBase.open(path) as kb:
        kb.add(str(docs_copy / "employee-handbook.md"))
    with open_counting(path, CountingEmbedder(name="another-model")) as kb:
        with pytest.raises(EmbeddingModelMismatchError, match="another-model"):
            kb.add(str(docs_copy / "security-policy.md"))


def test_hits_report_every_retriever(example_kb):
    hits = example_kb.search("How long is parental leave at full pay?", top_k=5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert any(h.keyword_rank is not None and h.vector_rank is not None for h in hits)
    assert len({h.chunk.document_id for h in hits}) == 5  # one chunk per document by default


def test_html_boilerplate_is_not_indexed(example_kb):
    for marker in ("Quayside Walk", "marmalade-canary", "Accept all cookies", "NW-ANALYTICS-7731"):
        hits = example_kb.search(marker, mode="keyword", top_k=20, per_document=0)
        assert all(marker.lower() not in h.chunk.text.lower() for h in hits), marker


def test_pdf_hits_carry_page_numbers(example_kb):
    hits = example_kb.search("mileage rate per mile for using your own car", top_k=3)
    pdf_hits = [h for h in hits if h.chunk.source.endswith(".pdf")]
    assert pdf_hits and pdf_hits[0].chunk.page == 3


def test_search_many_matches_single_searches(example_kb):
    queries = ["annual leave carry over", "database failover command"]
    batched = example_kb.search_many(queries, top_k=3)
    single = [example_kb.search(q, top_k=3) for q in queries]
    for a, b in zip(batched, single):
        assert [h.chunk.id for h in a] == [h.chunk.id for h in b]
        assert np.allclose([h.score for h in a], [h.score for h in b])


def _bad_inputs(folder: Path) -> dict[str, str]:
    """Bad files of every kind, and the words their error must contain."""
    from pypdf import PdfWriter

    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage")
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.encrypt(user_password="secret", owner_password="owner")
    with open(folder / "locked.pdf", "wb") as fh:
        writer.write(fh)
    (folder / "empty.txt").write_text("")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 40)
    (folder / "data.xyz").write_text("what format is this")
    (folder / "huge.md").write_text("# Big\n\n" + "word " * 400)
    (folder / "cut.docx").write_bytes(b"PK\x03\x04\x14\x00 a zip cut short")
    (folder / "locked.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504)  # what Office encrypts to
    (folder / "photo.eml").write_bytes(b"\x89PNG\r\n\x1a\n not mail")
    return {
        "cut.docx": "corrupt docx",
        "locked.xlsx": "encrypted xlsx",
        "photo.eml": "not an e-mail",
        "corrupt.pdf": "pdf",
        "locked.pdf": "encrypted",
        "empty.txt": "no",
        "binary.txt": "binary",
        "data.xyz": "unsupported",
        "huge.md": "limit",
    }


def test_bad_inputs_fail_alone_and_change_nothing_stored(tmp_path):
    with KnowledgeBase.open(tmp_path / "kb.db", max_file_bytes=1500) as kb:
        small = tmp_path / "small.md"
        small.write_text("# Lunch\n\nLunch is served at noon in the atrium.\n")
        kb.add([str(small)])
        before = {d.id: (d.content_hash, d.chunk_count, d.status) for d in kb.documents()}
        before_hits = [h.chunk.id for h in kb.search("lunch atrium", per_document=0)]

        bad_dir = tmp_path / "bad"
        bad_dir.mkdir()
        expected = _bad_inputs(bad_dir)
        (bad_dir / "fine.md").write_text("# Fine\n\nThe fire drill is on the first Monday of each month.\n")
        small.write_bytes(b"\x00\x01\x02 now binary garbage \xff\xfe" * 50)  # a stored document turns bad
        sources = [str(bad_dir), str(bad_dir / "data.xyz"), str(small), str(tmp_path / "missing.md"), "http://127.0.0.1:9/nothing.html", "http://10.0.0.1/x"]
        results = {Path(r.source).name: r for r in kb.add(sources)}

        assert results["fine.md"].action == "added"
        for name, words in expected.items():
            r = results[name]
            assert r.action == "failed", name
            assert name in r.error and words in r.error.lower(), r.error
        assert results["small.md"].action == "failed" and "small.md" in results["small.md"].error
        assert results["missing.md"].action == "failed" and "not found" in results["missing.md"].error
        assert results["nothing.html"].error_code == "blocked_url"
        assert results["x"].error_code == "blocked_url"
        # What was stored before is untouched: same hash, chunks, status, and still found.
        after = {d.id: (d.content_hash, d.chunk_count, d.status) for d in kb.documents()}
        for doc_id, state in before.items():
            assert after[doc_id] == state
        assert kb.search("lunch atrium", per_document=0)[0].chunk.id == before_hits[0]
        # New failures are listed with status error and their reason.
        errors = {Path(d.source).name: d for d in kb.documents(status="error")}
        assert set(errors) >= set(expected)
        assert all(d.error for d in errors.values())
        assert "missing.md" not in errors and results["missing.md"].document_id is None  # nothing stored


def test_unreachable_url_is_a_fetch_error(tmp_path):
    with KnowledgeBase.open(tmp_path / "kb.db", allow_private_urls=True, url_timeout=2) as kb:
        [result] = kb.add("http://127.0.0.1:9/nothing.html")
    assert result.action == "failed" and result.error_code == "fetch_error"
    assert "127.0.0.1:9" in result.error


@pytest.mark.parametrize("metadata", [{"team": "a\x00b"}, {"a\x00": 1}, {"list": ["ok", "\x00"]}])
def test_metadata_no_store_can_keep_is_refused_before_anything_is_stored(tmp_path, docs_copy, metadata):
    """PostgreSQL's jsonb refuses NUL (issue 17: an upload's meta gave HTTP 500 there): every
    back end refuses it up front, by name, so a knowledge base moves between them."""
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        with pytest.raises(InvalidMetadataError, match="NUL"):
            kb.add([str(docs_copy / "employee-handbook.md")], metadata=metadata)
        with pytest.raises(InvalidMetadataError, match="NUL"):
            kb.enqueue(str(docs_copy / "employee-handbook.md"), metadata=metadata)
        assert kb.documents() == []


def test_nul_in_a_files_own_metadata_is_dropped_not_fatal(tmp_path):
    """A PDF's info strings are often NUL-padded UTF-16: the document is kept, without the NULs."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 6, "Quokkas smile at tourists on Rottnest Island.")
    writer = PdfWriter(clone_from=io.BytesIO(bytes(pdf.output())))
    writer.add_metadata({"/Title": "Pad\x00ded", "/Author": "Ann\x00"})
    path = tmp_path / "quokkas.pdf"
    with path.open("wb") as file:
        writer.write(file)
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        [result] = kb.add([str(path)])
        assert result.action == "added", result
        record = kb.document(result.document_id)
        assert (record.title, record.metadata["author"]) == ("Padded", "Ann")


def test_a_knowledge_base_keeps_the_precision_its_vectors_were_made_at(tmp_path, docs_copy):
    """A collection refuses vectors of another precision, so a base built at int8 keeps int8
    while fp32 is the default (and the other way round), unless the user names one: then a
    mismatch is refused, naming the setting that opens it."""
    with KnowledgeBase.open(tmp_path / "kb.db", embedding_precision="int8") as kb:
        kb.add(str(docs_copy / "employee-handbook.md"))
        int8_name = kb.embedder.name
    assert int8_name.endswith("@int8")
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.embedder.name == int8_name
        [result] = kb.add(str(docs_copy / "security-policy.md"))
        assert result.action == "added"
    with KnowledgeBase.open(tmp_path / "kb.db", embedding_precision="fp32") as kb:
        with pytest.raises(EmbeddingModelMismatchError, match='embedding_precision = "int8"'):
            kb.add(str(docs_copy / "travel-policy.pdf"))
    with KnowledgeBase.open(tmp_path / "new.db", embedding_precision="fp32") as kb:
        kb.add(str(docs_copy / "employee-handbook.md"))
    with KnowledgeBase.open(tmp_path / "new.db") as kb:  # the default (auto: bf16 or fp32) adds to a fp32 base
        assert not kb.embedder.name.endswith("@int8")
        [result] = kb.add(str(docs_copy / "security-policy.md"))
        assert result.action == "added"
