"""Sentence windows: short runs of a chunk's sentences that get vectors of their own.

A chunk is sized for citations and answers (up to 254 tokens), but all-MiniLM-L6-v2 was
trained on sequences of at most 128 tokens, and a one-sentence question is closer to the
two sentences that answer it than to a long chunk that holds them among others. So a chunk
of more than `WINDOW_SENTENCES` sentences also gets a vector for every run of that many
consecutive sentences (sliding by one), and vector search scores a chunk by the best of its
own cosine and its windows' (both stores). The windows are derived from the chunk alone, so
they never need storing as text and a chunk reused by its content hash reuses its window
vectors too.

A window's vector comes either from the chunk's own forward pass, pooling the window's tokens
("late chunking", `embedders/late_chunking.py`: `window_spans` says where each window lies in
the chunk's embedding text), or, for an embedder that cannot pool spans (a hosted API), from
embedding `window_texts` (the prefix, then the two sentences) as sequences of their own.
"""

from __future__ import annotations

from ..models import Chunk
from .sentences import Span, split_sentences

WINDOW_SENTENCES = 2
"""Sentences per window: measured against 128-token windows and whole chunks (README, Quality)."""


def _runs(text: str, size: int) -> list[tuple[Span, ...]]:
    """The sentence spans of every run of `size` sentences of `text`; none when it has at most
    `size` sentences (the chunk's own vector already is a window)."""
    sentences = split_sentences(text)
    if len(sentences) <= size:
        return []
    return [tuple(sentences[start : start + size]) for start in range(len(sentences) - size + 1)]


def window_texts(chunk: Chunk, size: int = WINDOW_SENTENCES) -> list[str]:
    """The windows as texts of their own, each after the chunk's prefix (embedded separately)."""
    sentences = [chunk.text[start:end] for start, end in split_sentences(chunk.text)]
    if len(sentences) <= size:
        return []
    runs = (" ".join(sentences[start : start + size]) for start in range(len(sentences) - size + 1))
    return [f"{chunk.prefix}\n{run}" if chunk.prefix else run for run in runs]


def window_spans(chunk: Chunk, size: int = WINDOW_SENTENCES) -> list[tuple[Span, ...]]:
    """Each window of `window_texts` as the character ranges of `chunk.embedding_text` to pool
    (late chunking): the prefix, then each sentence of the same run, in the same order (the
    confined attention of `embedders.late_chunking.confined_attention` reads the sentences)."""
    shift = len(chunk.embedding_text) - len(chunk.text)  # the prefix and its newline
    prefix: tuple[Span, ...] = ((0, len(chunk.prefix)),) if chunk.prefix else ()
    return [(*prefix, *((start + shift, end + shift) for start, end in run)) for run in _runs(chunk.text, size)]
