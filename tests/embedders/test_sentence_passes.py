"""Sentence passes: window spans embedded alone, windows and chunk vectors pooled from them (real model)."""

from __future__ import annotations

import queue

import numpy as np
import pytest

from sourcebook import KnowledgeBase
from sourcebook.chunking import window_spans, window_texts
from sourcebook.embedders import LocalEmbedder
from sourcebook.embedders.sentence_passes import spans_of
from sourcebook.profiling import profiled
from sourcebook.stores import open_store

from .test_late_chunking import CountingSession

TITLE = "Harbor notes"
FIRST = "The ferry leaves the harbor at seven every morning."
SECOND = "Tickets are sold at the kiosk beside the pier."
THIRD = "Photosynthesis turns light into chemical energy in plants."
TEXT = f"{TITLE}\n{FIRST} {SECOND} {THIRD}"


def span_of(part: str) -> tuple[int, int]:
    start = TEXT.index(part)
    return start, start + len(part)


WINDOWS = [(span_of(TITLE), span_of(FIRST), span_of(SECOND)), (span_of(TITLE), span_of(SECOND), span_of(THIRD))]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(precision="fp32")  # fp32: a text's vector does not move with its batch


def test_each_span_runs_once_and_the_chunk_not_at_all(embedder, monkeypatch):
    sessions = [CountingSession(embedder._session) for _ in range(embedder._runs)]
    idle = queue.SimpleQueue()
    for each in sessions:
        idle.put(each)
    monkeypatch.setattr(embedder, "_idle", idle)
    vectors, pooled = embedder.embed_documents_with_spans([TEXT, "no windows here"], [WINDOWS, []], apart=True)
    assert sum(sum(session.rows) for session in sessions) == 4 + 1  # title, three sentences; the plain text
    assert pooled[0].shape == (2, embedder.dimension) and pooled[1].shape == (0, embedder.dimension)
    assert spans_of(WINDOWS) == [span_of(TITLE), span_of(FIRST), span_of(SECOND), span_of(THIRD)]


def test_a_text_without_windows_gets_its_plain_vector(embedder):
    vectors, _ = embedder.embed_documents_with_spans(["no windows here", TEXT], [[], WINDOWS], apart=True)
    assert float(vectors[0] @ embedder.embed_documents(["no windows here"])[0]) > 1 - 1e-5


def test_a_window_of_one_span_is_that_span_read_alone(embedder):
    """The window is pooled from its spans' own passes: one sentence alone is exactly its vector."""
    _, [pooled] = embedder.embed_documents_with_spans([TEXT], [[(span_of(SECOND),), *WINDOWS]], apart=True)
    assert float(pooled[0] @ embedder.embed_documents([SECOND])[0]) > 1 - 1e-5


def test_windows_and_chunk_vector_are_token_means_of_the_passes(embedder):
    """A window (and the chunk) is the mean over all tokens of its spans' passes, so it lies
    between its spans' vectors, nearer the separately embedded window than any one sentence."""
    vectors, [pooled] = embedder.embed_documents_with_spans([TEXT], [WINDOWS], apart=True)
    alone = embedder.embed_documents([f"{TITLE}\n{FIRST} {SECOND}", FIRST, SECOND, THIRD, TEXT])
    assert float(pooled[0] @ alone[0]) > max(float(pooled[0] @ alone[i]) for i in (1, 2, 3))
    assert 0.85 < float(vectors[0] @ alone[4]) < 0.9999  # the chunk's own vector: near its full pass, not it


def test_passes_are_profiled(embedder):
    with profiled() as run:
        embedder.embed_documents_with_spans([TEXT], [WINDOWS], apart=True)
    pieces = [TEXT[start:end] for start, end in spans_of(WINDOWS)]
    assert run.counts["tokens"] == sum(embedder.count_tokens(pieces)) + 2 * len(pieces)


def test_ingest_stores_the_windows_of_sentence_passes(tmp_path):
    """`window_pooling = "sentences"`: every window of a chunk is stored, each pooled from the
    chunk's sentence passes, and the chunk's vector too."""
    source = tmp_path / "notes.md"
    source.write_text(f"# {TITLE}\n\n{FIRST} {SECOND} {THIRD} {FIRST.replace('seven', 'eight')}\n", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db", window_pooling="sentences") as kb:
        [result] = kb.add(str(source))
        with open_store(kb.settings.db) as store:
            chunks, vectors, windows = store.export_chunks(result.document_id)
        assert [len(w) for w in windows] == [len(window_texts(c)) for c in chunks] and len(windows[0]) > 1
        expected_vectors, [expected] = kb.embedder.embed_documents_with_spans(
            [chunks[0].embedding_text], [window_spans(chunks[0])], apart=True
        )
    # int8 vectors move a little with their batch (int8 kernels: one row or several)
    assert np.sum(windows[0] * expected, axis=1).min() > 0.98 and float(vectors[0] @ expected_vectors[0]) > 0.98
