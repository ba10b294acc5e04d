"""Sentence windows: short runs of a chunk's sentences that get vectors of their own.

A chunk is sized for citations and answers (up to 254 tokens), but all-MiniLM-L6-v2 was
trained on sequences of at most 128 tokens, and a one-sentence question is closer to the
two sentences that answer it than to a long chunk that holds them among others. So a chunk
of more than `WINDOW_SENTENCES` sentences is also embedded as every run of that many
consecutive sentences (sliding by one), each after the chunk's prefix ("Title > Section"),
and vector search scores a chunk by the best of its own cosine and its windows' (both
stores). The windows are derived from the chunk alone, so they never need storing as text
and a chunk reused by its content hash reuses its window vectors too.
"""

from __future__ import annotations

from ..models import Chunk
from .sentences import sentence_texts

WINDOW_SENTENCES = 2
"""Sentences per window: measured against 128-token windows and whole chunks (README, Quality)."""


def window_texts(chunk: Chunk, size: int = WINDOW_SENTENCES) -> list[str]:
    """The texts to embed beside the chunk: none when it has at most `size` sentences
    (its own vector already is a window)."""
    sentences = sentence_texts(chunk.text)
    if len(sentences) <= size:
        return []
    runs = (" ".join(sentences[start : start + size]) for start in range(len(sentences) - size + 1))
    return [f"{chunk.prefix}\n{run}" if chunk.prefix else run for run in runs]
