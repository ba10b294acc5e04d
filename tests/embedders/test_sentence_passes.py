"""Sentence passes: window spans embedded alone, windows and chunk vectors pooled from them (real model)."""

from __future__ import annotations

import numpy as np
import pytest

from sourcebook import KnowledgeBase
from sourcebook.chunking import window_spans, window_texts
from sourcebook.embedders import LocalEmbedder
from sourcebook.embedders.sentence_passes import spans_of
from sourcebook.profiling import profiled
from sourcebook.stores import open_store

from .test_late_chunking import FIRST, SECOND, TEXT, THIRD, TITLE, counting_sessions, span_of


WINDOWS = [(span_of(TITLE), span_of(FIRST), span_of(SECOND)), (span_of(TITLE), span_of(SECOND), span_of(THIRD))]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(precision="fp32")  # fp32: a text's vector does not move with its batch


def test_each_span_runs_once_and_the_chunk_not_at_all(embedder, monkeypatch):
    sessions = counting_sessions(embedder, monkeypatch)
    vectors, pooled = embedder.embed_documents_with_spans([TEXT, "no windows here"], [WINDOWS, []], apart="sentences")
    assert sum(sum(session.rows) for session in sessions) == 4 + 1  # title, three sentences; the plain text
    assert pooled[0].shape == (2, embedder.dimension) and pooled[1].shape == (0, embedder.dimension)
    assert spans_of(WINDOWS) == [span_of(TITLE), span_of(FIRST), span_of(SECOND), span_of(THIRD)]


def test_a_text_without_windows_gets_its_plain_vector(embedder):
    vectors, _ = embedder.embed_documents_with_spans(["no windows here", TEXT], [[], WINDOWS], apart="sentences")
    assert float(vectors[0] @ embedder.embed_documents(["no windows here"])[0]) > 1 - 1e-5


def test_a_window_of_one_span_is_that_span_read_alone(embedder):
    """The window is pooled from its spans' own passes: one sentence alone is exactly its vector."""
    _, [pooled] = embedder.embed_documents_with_spans([TEXT], [[(span_of(SECOND),), *WINDOWS]], apart="sentences")
    assert float(pooled[0] @ embedder.embed_documents([SECOND])[0]) > 1 - 1e-5


def test_windows_and_chunk_vector_are_token_means_of_the_passes(embedder):
    """A window (and the chunk) is the mean over all tokens of its spans' passes, so it lies
    between its spans' vectors, nearer the separately embedded window than any one sentence."""
    vectors, [pooled] = embedder.embed_documents_with_spans([TEXT], [WINDOWS], apart="sentences")
    alone = embedder.embed_documents([f"{TITLE}\n{FIRST} {SECOND}", FIRST, SECOND, THIRD, TEXT])
    assert float(pooled[0] @ alone[0]) > max(float(pooled[0] @ alone[i]) for i in (1, 2, 3))
    assert 0.85 < float(vectors[0] @ alone[4]) < 0.9999  # the chunk's own vector: near its full pass, not it


def test_passes_are_profiled(embedder):
    with profiled() as run:
        embedder.embed_documents_with_spans([TEXT], [WINDOWS], apart="sentences")
    pieces = [TEXT[start:end] for start, end in spans_of(WINDOWS)]
    assert run.counts["tokens"] == sum(embedder.count_tokens(pieces)) + 2 * len(pieces)


@pytest.mark.parametrize("design", ["sentences", "pairs"])
def test_ingest_stores_the_windows_of_sentence_passes(tmp_path, design):
    """`window_pooling = "sentences"` or `"pairs"`: every window of a chunk is stored, each
    pooled from the chunk's passes, and the chunk's vector too."""
    source = tmp_path / "notes.md"
    source.write_text(f"# {TITLE}\n\n{FIRST} {SECOND} {THIRD} {FIRST.replace('seven', 'eight')}\n", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db", window_pooling=design) as kb:
        [result] = kb.add(str(source))
        with open_store(kb.settings.db) as store:
            chunks, vectors, windows = store.export_chunks(result.document_id)
        assert [len(w) for w in windows] == [len(window_texts(c)) for c in chunks] and len(windows[0]) > 1
        expected_vectors, [expected] = kb.embedder.embed_documents_with_spans(
            [chunks[0].embedding_text], [window_spans(chunks[0])], apart=design
        )
    # int8 vectors move a little with their batch (int8 kernels: one row or several)
    assert np.sum(windows[0] * expected, axis=1).min() > 0.98 and float(vectors[0] @ expected_vectors[0]) > 0.98


FOURTH = "Leaves absorb red and blue light and reflect green."
LONG = f"{TEXT} {FOURTH}"
LONG_WINDOWS = [(span_of(TITLE), span_of(a), span_of(b)) for a, b in ((FIRST, SECOND), (SECOND, THIRD))] + [
    ((0, len(TITLE)), (LONG.index(THIRD), LONG.index(THIRD) + len(THIRD)), (LONG.index(FOURTH), len(LONG)))
]


def test_pairs_run_every_other_window_as_its_own_text(embedder, monkeypatch):
    """`apart="pairs"`: windows 0 and 2 are passes of their own, exactly the separately embedded
    windows; window 1 pools its sentences and the shared prefix from those two passes."""
    sessions = counting_sessions(embedder, monkeypatch)
    vectors, [pooled] = embedder.embed_documents_with_spans([LONG], [LONG_WINDOWS], apart="pairs")
    assert sum(sum(session.rows) for session in sessions) == 2
    separate = embedder.embed_documents([f"{TITLE}\n{FIRST} {SECOND}", f"{TITLE}\n{SECOND} {THIRD}", f"{TITLE}\n{THIRD} {FOURTH}"])
    assert pooled.shape == (3, embedder.dimension)
    assert float(pooled[0] @ separate[0]) > 1 - 1e-5 and float(pooled[2] @ separate[2]) > 1 - 1e-5
    assert 0.8 < float(pooled[1] @ separate[1]) < 0.9999  # pooled across two passes: near it, not it
    assert float(pooled[1] @ separate[1]) > float(pooled[1] @ separate[0])
    both = embedder.embed_documents([f"{TITLE}\n{FIRST} {SECOND}", f"{TITLE}\n{THIRD} {FOURTH}"])
    assert float(vectors[0] @ _mean(both)) > 0.99  # the chunk: all its passes' tokens


def _mean(vectors: np.ndarray) -> np.ndarray:
    total = vectors.sum(axis=0)
    return total / np.linalg.norm(total)


def test_pairs_give_a_text_without_windows_its_plain_vector(embedder):
    vectors, pooled = embedder.embed_documents_with_spans(["no windows here", TEXT], [[], WINDOWS], apart="pairs")
    assert float(vectors[0] @ embedder.embed_documents(["no windows here"])[0]) > 1 - 1e-5
    assert pooled[0].shape == (0, embedder.dimension) and pooled[1].shape == (2, embedder.dimension)
