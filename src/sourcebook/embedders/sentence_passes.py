"""Sentence passes: a chunk's windows and its own vector pooled from its sentences read alone.

Separately embedded windows ("prefix, then two sentences" as a sequence of its own) score best
on claim-like queries but cost 2.7-3x the model time of the chunks alone: every sentence is read
twice (two windows hold it) and the prefix once per window. Late chunking and confined attention
cost 1-1.2x but their windows have seen more than their two sentences, and rank lower on SciFact
(README, "Window vectors from sentence passes"). Here each distinct span of a text's windows
(the prefix, each sentence) runs through the model once, alone; a window's vector is the mean of
the last hidden states of its spans' passes, and the text's own vector the mean over all of its
spans' passes, so the chunk needs no full pass of its own. The model reads each token about once,
as a chunk's own pass does, in sequences shorter than the chunk (cheaper per token: attention
grows with the square of the length). A text without windows runs whole, as `embed_documents`
runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from .base import ProgressCallback, Span, Window
from .late_chunking import count_batch, padded


class _Runs(Protocol):
    """What `embed_apart` needs of `LocalEmbedder`: its tokenizer rows, batching and model runs."""

    dimension: int

    def _token_rows(self, texts: Sequence[str]) -> list[list[int]]: ...

    def _batches(self, lengths: list[int]) -> Any: ...

    def _each_batch(self, batches: Any, work: Any) -> Any: ...

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> list[np.ndarray]: ...


def spans_of(windows: Sequence[Window]) -> list[Span]:
    """The distinct spans of a text's windows, in text order: the passes it needs."""
    return sorted({span for window in windows for span in window})


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def embed_apart(
    runs: _Runs, texts: Sequence[str], windows: Sequence[Sequence[Window]], progress: ProgressCallback | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(vectors of `texts`, each text's window vectors), every window span embedded alone.

    Token states are summed per pass with the pass's special tokens ([CLS], [SEP]) included, as
    the model's mean pooling includes them: so a text without windows (one pass, the whole text)
    gets exactly `embed_documents`' vector."""
    pieces: list[str] = []
    owner: list[int] = []
    first_piece: list[int] = []
    for index, text in enumerate(texts):
        first_piece.append(len(pieces))
        for start, end in spans_of(windows[index]) if windows[index] else [(0, len(text))]:
            pieces.append(text[start:end])
            owner.append(index)
    rows = runs._token_rows(pieces)
    sums = np.empty((len(pieces), runs.dimension), dtype=np.float32)
    left = np.bincount(np.asarray(owner, dtype=np.int64), minlength=len(texts))

    def work(batch: list[int]) -> np.ndarray:
        ids, mask = padded([rows[i] for i in batch])
        count_batch([len(rows[i]) for i in batch])
        hidden = runs._run(ids, mask)[0]
        return (hidden * mask[..., None]).sum(axis=1)  # padding excluded

    for batch, summed in runs._each_batch(runs._batches([len(row) for row in rows]), work):
        sums[batch] = summed
        if progress:
            finished = 0
            for piece in batch:
                left[owner[piece]] -= 1
                finished += int(left[owner[piece]] == 0)
            if finished:
                progress(finished)
    vectors = np.empty((len(texts), runs.dimension), dtype=np.float32)
    pooled: list[np.ndarray] = []
    for index in range(len(texts)):
        own = sums[first_piece[index] : first_piece[index + 1] if index + 1 < len(texts) else len(pieces)]
        vectors[index] = _unit(own.sum(axis=0))
        spans = spans_of(windows[index])
        at = {span: row for row, span in enumerate(spans)}
        pooled.append(_unit(np.stack([own[[at[s] for s in window]].sum(axis=0) for window in windows[index]]))
                      if windows[index] else np.empty((0, runs.dimension), dtype=np.float32))
    return vectors, pooled
