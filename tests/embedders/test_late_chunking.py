"""Late chunking: a text's windows are pooled from the text's one forward pass (real model)."""

from __future__ import annotations

import queue

import numpy as np
import pytest

from sourcebook.embedders import LocalEmbedder
from sourcebook.embedders.base import span_embedder
from sourcebook.embedders.late_chunking import confined_attention, pool_windows
from sourcebook.profiling import profiled

TITLE = "Harbor notes"
FIRST = "The ferry leaves the harbor at seven every morning."
SECOND = "Tickets are sold at the kiosk beside the pier."
THIRD = "Photosynthesis turns light into chemical energy in plants."
TEXT = f"{TITLE}\n{FIRST} {SECOND} {THIRD}"


def span_of(part: str) -> tuple[int, int]:
    start = TEXT.index(part)
    return start, start + len(part)


class CountingSession:
    """The model's onnxruntime session, recording the rows of every run."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.rows: list[int] = []

    def run(self, outputs, feeds):
        self.rows.append(len(feeds["input_ids"]))
        return self._inner.run(outputs, feeds)


def counting_sessions(embedder: LocalEmbedder, monkeypatch) -> list[CountingSession]:
    """One counting session per model slot (a run takes whichever slot is idle)."""
    sessions = [CountingSession(embedder._session) for _ in range(embedder._runs)]
    idle = queue.SimpleQueue()
    for each in sessions:
        idle.put(each)
    monkeypatch.setattr(embedder, "_idle", idle)
    return sessions


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_the_bundled_model_pools_spans(embedder):
    assert span_embedder(embedder) is embedder


def test_windows_cost_no_model_run_of_their_own(embedder, monkeypatch):
    sessions = counting_sessions(embedder, monkeypatch)
    windows = [(span_of(FIRST), span_of(SECOND)), (span_of(SECOND), span_of(THIRD))]
    vectors, pooled = embedder.embed_documents_with_spans([TEXT, "a chunk without windows"], [windows, []])
    assert sum(sum(session.rows) for session in sessions) == 2  # one sequence per text, none per window
    assert pooled[0].shape == (2, embedder.dimension) and pooled[1].shape == (0, embedder.dimension)
    assert np.allclose(vectors, embedder.embed_documents([TEXT, "a chunk without windows"]), atol=1e-5)


def test_a_window_is_the_mean_of_its_own_tokens(embedder):
    """Against the text's hidden states pooled by hand over the tokens of the window's words."""
    encoding = embedder._tokenizer.encode(TEXT)
    ids = np.array([encoding.ids])
    hidden = embedder._run(ids, np.ones_like(ids))[0][0]
    start, end = span_of(SECOND)
    inside = [i for i, (a, b) in enumerate(encoding.offsets) if b > a and a >= start and b <= end]
    expected = hidden[inside].mean(axis=0)
    _, [pooled] = embedder.embed_documents_with_spans([TEXT], [[(span_of(SECOND),)]])
    assert np.allclose(pooled[0], expected / np.linalg.norm(expected), atol=1e-5)


def test_a_pooled_window_means_what_its_sentences_mean(embedder):
    """Each window's vector is nearest to its own sentences embedded alone, not to the others'."""
    prefix = span_of(TITLE)
    windows = [(prefix, span_of(FIRST)), (prefix, span_of(THIRD))]
    _, [pooled] = embedder.embed_documents_with_spans([TEXT], [windows])
    alone = embedder.embed_documents([f"{TITLE}\n{FIRST}", f"{TITLE}\n{THIRD}"])
    similarity = pooled @ alone.T
    assert similarity[0, 0] > 0.8 and similarity[1, 1] > 0.8
    assert similarity[0, 0] > similarity[0, 1] and similarity[1, 1] > similarity[1, 0]


def test_pooling_skips_special_tokens_and_falls_back_when_truncated():
    hidden = np.array([[9.0, 9.0], [1.0, 0.0], [0.0, 1.0], [3.0, 3.0], [9.0, 9.0]], dtype=np.float32)
    offsets = np.array([[0, 0], [0, 4], [5, 9], [10, 14], [0, 0]])  # [CLS] w1 w2 w3 [SEP]
    fallback = np.array([0.0, 1.0], dtype=np.float32)
    pooled = pool_windows(hidden, offsets, [((0, 9),), ((6, 7), (12, 13)), ((20, 30),)], fallback)
    assert np.allclose(pooled[0], [np.sqrt(0.5), np.sqrt(0.5)])  # w1 and w2, not the specials
    assert np.allclose(pooled[1], [0.6, 0.8])  # the mean of w2 and w3: any overlap counts
    assert np.allclose(pooled[2], fallback)  # past the truncated end: the text's own vector


def test_a_window_cut_off_by_truncation_gets_the_chunk_vector(embedder):
    head = "alpha beta gamma delta " * 80
    text = head + "one ending."
    vectors, [pooled] = embedder.embed_documents_with_spans([text], [[((len(head), len(text)),)]])
    assert np.allclose(pooled[0], vectors[0])


FOURTH = "Chlorophyll absorbs red and blue light most strongly."
LONG = f"{TITLE}\n{FIRST} {SECOND} {THIRD} {FOURTH}"


def long_span(part: str) -> tuple[int, int]:
    start = LONG.index(part)
    return start, start + len(part)


def long_windows() -> list[tuple[tuple[int, int], ...]]:
    sentences = [long_span(s) for s in (FIRST, SECOND, THIRD, FOURTH)]
    return [(long_span(TITLE), sentences[i], sentences[i + 1]) for i in range(3)]


def test_confined_attention_keeps_a_sentence_to_its_windows():
    """Two-sentence windows: a sentence's tokens see the prefix, the specials, the sentence
    before and after; the prefix and the specials see only each other."""
    offsets = np.array([[0, 0], [0, 6], [7, 9], [20, 24], [40, 44], [60, 64], [0, 0]])  # [CLS] prefix(2) s1 s2 s3 [SEP]
    windows = [((0, 9), (10, 30), (31, 50)), ((0, 9), (31, 50), (51, 70))]
    allowed = confined_attention(offsets, windows)
    assert allowed is not None
    context = [0, 1, 2, 6]
    assert allowed[np.ix_(context, context)].all() and not allowed[np.ix_(context, [3, 4, 5])].any()
    assert allowed[:, context].all()  # every token sees the context
    assert allowed[3, 4] and allowed[4, 3] and allowed[4, 5] and allowed[5, 4]  # neighbours
    assert not allowed[3, 5] and not allowed[5, 3]  # s1 and s3 share no window
    assert confined_attention(offsets, windows[:1]) is None and confined_attention(offsets, []) is None


def test_confined_windows_cost_no_model_run_and_keep_the_chunk_vector_near(embedder, monkeypatch):
    sessions = counting_sessions(embedder, monkeypatch)
    vectors, pooled = embedder.embed_documents_with_spans([LONG, "no windows here"], [long_windows(), []], confine=True)
    assert sum(len(session.rows) for session in sessions) == 1 and sum(sum(s.rows) for s in sessions) == 2
    assert pooled[0].shape == (3, embedder.dimension) and pooled[1].shape == (0, embedder.dimension)
    plain = embedder.embed_documents([LONG, "no windows here"])
    # A text without windows runs as it always did; at int8 its vector still moves with its batch
    # (the last layer's QAttention and dynamic MatMuls share one input scale with the window rows:
    # cosine 0.9913 at INT8_VERSION 4, 0.9977 at 3).
    assert float(vectors[1] @ plain[1]) > (0.99 if embedder.batch_dependent else 1 - 1e-6)
    assert 0.9 < float(vectors[0] @ plain[0]) < 0.9999  # the chunk's own vector: near, not the same


def test_a_confined_window_is_nearer_its_sentences_read_alone_than_a_late_one(embedder):
    """What confinement is for: the window that holds the two ferry sentences, pooled from a
    pass where they cannot see the botany sentences, is nearer to those two sentences embedded
    alone (the separately embedded window) than the late-chunking window is."""
    windows = long_windows()
    alone = embedder.embed_documents([f"{TITLE}\n{FIRST} {SECOND}", f"{TITLE}\n{THIRD} {FOURTH}"])
    _, [late] = embedder.embed_documents_with_spans([LONG], [windows])
    _, [confined] = embedder.embed_documents_with_spans([LONG], [windows], confine=True)
    for window, reference in ((0, 0), (2, 1)):
        assert confined[window] @ alone[reference] > late[window] @ alone[reference] + 0.01


def test_pooled_windows_are_profiled_like_plain_embedding(embedder):
    """`add --profile` counts the tokens of texts embedded with their windows as it does plain
    ones: the same real and padded tokens, since the windows add no sequence."""
    texts = [TEXT, "a chunk without windows"]
    with profiled() as plain:
        embedder.embed_documents(texts)
    with profiled() as pooled:
        embedder.embed_documents_with_spans(texts, [[(span_of(FIRST), span_of(SECOND))], []])
    assert pooled.counts["tokens"] == plain.counts["tokens"] > 0
    assert pooled.counts["padded_tokens"] == plain.counts["padded_tokens"]
    assert pooled.padding() is not None
