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

`embed_pairs` ("pairs") keeps what sentence passes lose, the two sentences and the prefix read
together: every other window runs as a pass of its own ("prefix, then sentences 2k and 2k+1",
exactly a separately embedded window), and each window between two passes pools its prefix
(the mean of the two passes'), its two sentences and the special tokens from those two passes;
the chunk's own vector pools every pass. The model reads each sentence once and the prefix once
per two windows: about 1.2x the chunk's tokens on SciFact, in sequences half its length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from .base import ProgressCallback, Span, Window
from .late_chunking import count_batch, padded

_PREFIX, _FIRST, _SECOND, _SPECIAL = range(4)
"""The token groups of a pair pass (`embed_pairs`)."""


class _Runs(Protocol):
    """What the passes need of `LocalEmbedder`: its tokenizer rows, batching and model runs."""

    dimension: int

    def _token_rows(self, texts: Sequence[str], starts: list[list[int]] | None = None) -> list[list[int]]: ...

    def _batches(self, lengths: list[int]) -> Any: ...

    def _each_batch(self, batches: Any, work: Any) -> Any: ...

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> list[np.ndarray]: ...


def spans_of(windows: Sequence[Window]) -> list[Span]:
    """The distinct spans of a text's windows, in text order: the passes it needs."""
    return sorted({span for window in windows for span in window})


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _run_passes(
    runs: _Runs, rows: list[list[int]], owner: list[int], texts: int, pool: Callable[[np.ndarray, int], np.ndarray],
    shape: tuple[int, ...], progress: ProgressCallback | None,
) -> np.ndarray:
    """`pool(hidden states of one pass, its index)` for every pass (row of token ids), batched by
    length as `embed_documents` batches; `progress` counts a text when its last pass is done."""
    pooled = np.empty((len(rows), *shape), dtype=np.float32)
    left = np.bincount(np.asarray(owner, dtype=np.int64), minlength=texts)

    def work(batch: list[int]) -> list[np.ndarray]:
        ids, mask = padded([rows[i] for i in batch])
        count_batch([len(rows[i]) for i in batch])
        hidden = runs._run(ids, mask)[0]
        return [pool(hidden[row, : len(rows[i])], i) for row, i in enumerate(batch)]

    for batch, values in runs._each_batch(runs._batches([len(row) for row in rows]), work):
        pooled[batch] = values
        if progress:
            finished = 0
            for piece in batch:
                left[owner[piece]] -= 1
                finished += int(left[owner[piece]] == 0)
            if finished:
                progress(finished)
    return pooled


def _first_passes(owner: list[int], texts: int) -> list[int]:
    """Where each text's passes start in the pass list, and its end."""
    return [int(x) for x in np.searchsorted(np.asarray(owner), np.arange(texts + 1))]


def embed_apart(
    runs: _Runs, texts: Sequence[str], windows: Sequence[Sequence[Window]], progress: ProgressCallback | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(vectors of `texts`, each text's window vectors), every window span embedded alone.

    Token states are summed per pass with the pass's special tokens ([CLS], [SEP]) included, as
    the model's mean pooling includes them: so a text without windows (one pass, the whole text)
    gets exactly `embed_documents`' vector."""
    pieces: list[str] = []
    owner: list[int] = []
    for index, text in enumerate(texts):
        for start, end in spans_of(windows[index]) if windows[index] else [(0, len(text))]:
            pieces.append(text[start:end])
            owner.append(index)
    rows = runs._token_rows(pieces)
    sums = _run_passes(runs, rows, owner, len(texts), lambda hidden, _: hidden.sum(axis=0), (runs.dimension,), progress)
    bounds = _first_passes(owner, len(texts))
    vectors = np.empty((len(texts), runs.dimension), dtype=np.float32)
    pooled: list[np.ndarray] = []
    for index in range(len(texts)):
        own = sums[bounds[index] : bounds[index + 1]]
        vectors[index] = _unit(own.sum(axis=0))
        spans = spans_of(windows[index])
        at = {span: row for row, span in enumerate(spans)}
        pooled.append(_unit(np.stack([own[[at[s] for s in window]].sum(axis=0) for window in windows[index]]))
                      if windows[index] else np.empty((0, runs.dimension), dtype=np.float32))
    return vectors, pooled


def _pair_passes(text: str, windows: Sequence[Window]) -> list[tuple[str, int, int]]:
    """A text's stride-2 passes, each (text, where its first sentence starts, where its second
    starts): "prefix, then sentences 2k and 2k+1", as `chunking.window_texts` writes a window.
    A text without windows is one pass, all of it in the first sentence's group."""
    if not windows:
        return [(text, 0, len(text) + 1)]
    prefix = text[slice(*windows[0][0])] if len(windows[0]) > 2 else ""
    sentences = [text[slice(*window[-2])] for window in windows] + [text[slice(*windows[-1][-1])]]
    head = f"{prefix}\n" if prefix else ""
    return [
        (head + " ".join(sentences[first : first + 2]), len(head), len(head) + len(sentences[first]) + 1)
        for first in range(0, len(sentences), 2)
    ]


def embed_pairs(
    runs: _Runs, texts: Sequence[str], windows: Sequence[Sequence[Window]], progress: ProgressCallback | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(vectors of `texts`, each text's window vectors) from stride-2 pair passes (module docstring)."""
    passes: list[tuple[str, int, int]] = []
    owner: list[int] = []
    for index, text in enumerate(texts):
        for each in _pair_passes(text, windows[index]):
            passes.append(each)
            owner.append(index)
    starts: list[list[int]] = []
    rows = runs._token_rows([text for text, _, _ in passes], starts)

    def groups(hidden: np.ndarray, i: int) -> np.ndarray:
        _, first, second = passes[i]
        at = np.asarray(starts[i])
        group = np.where(at < 0, _SPECIAL, np.where(at < first, _PREFIX, np.where(at < second, _FIRST, _SECOND)))
        return np.stack([hidden[group == g].sum(axis=0) for g in range(4)])

    sums = _run_passes(runs, rows, owner, len(texts), groups, (4, runs.dimension), progress)
    bounds = _first_passes(owner, len(texts))
    vectors = np.empty((len(texts), runs.dimension), dtype=np.float32)
    pooled: list[np.ndarray] = []
    for index in range(len(texts)):
        own = sums[bounds[index] : bounds[index + 1]]  # (passes, groups, dimension)
        vectors[index] = _unit(own.sum(axis=(0, 1)))
        count = len(windows[index])
        sentence = [own[j // 2, _FIRST + j % 2] for j in range(count + 1)]
        rows_of: list[np.ndarray] = []
        for j in range(count):
            k = j // 2
            if j % 2 == 0:  # the pass itself: a separately embedded window
                rows_of.append(own[k].sum(axis=0))
            else:  # between passes k and k + 1
                shared = (own[k, _PREFIX] + own[k + 1, _PREFIX] + own[k, _SPECIAL] + own[k + 1, _SPECIAL]) / 2
                rows_of.append(shared + sentence[j] + sentence[j + 1])
        pooled.append(_unit(np.stack(rows_of)) if rows_of else np.empty((0, runs.dimension), dtype=np.float32))
    return vectors, pooled


APART_DESIGNS: dict[str, Callable[..., tuple[np.ndarray, list[np.ndarray]]]] = {"sentences": embed_apart, "pairs": embed_pairs}
"""The `window_pooling` values whose windows come from passes of their own, and what embeds them."""
