"""Late chunking: vectors of parts of a text pooled from the text's own forward pass.

A chunk's sentence windows (chunking/windows.py) used to be embedded as sequences of their
own: 3.7 windows per SciFact chunk, about 2.2-3x the model time of the chunks. Here the chunk
runs through the model once and each window's vector is the mean of the last hidden state
over the window's tokens (then L2-normalised), the "late chunking" of Günther et al. (2024).
A window's tokens have seen the whole chunk, so its vector carries the chunk's context (its
title and section, the sentences around it) at no model cost.

A window is a tuple of character ranges of the text, pooled together: the ingestion passes
the prefix ("Title > Section") and the window's sentences, as the separately embedded windows
were "prefix, then the two sentences". Special tokens ([CLS], [SEP]) join no window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Encoding

from ..profiling import count
from .base import Window


@dataclass(frozen=True)
class TokenBatch:
    """A batch ready for the model, and where each row's kept tokens lie in its text."""

    ids: np.ndarray
    """(rows, width) int64, right-padded with 0."""
    mask: np.ndarray
    """(rows, width) int64: 1 for a real token."""
    offsets: list[np.ndarray]
    """Per row, (tokens, 2) character offsets of its kept tokens; (0, 0) for a special token."""


def token_batch(encodings: Sequence[Encoding], limit: int) -> TokenBatch:
    """Pad the encodings into one batch, cutting each to `limit` tokens with its last (special)
    token kept, as `LocalEmbedder` truncates."""
    kept: list[list[int]] = []
    offsets: list[np.ndarray] = []
    for encoding in encodings:
        positions = list(range(len(encoding.ids)))
        if len(positions) > limit:
            positions = positions[: limit - 1] + positions[-1:]
        kept.append([encoding.ids[p] for p in positions])
        special = np.asarray(encoding.special_tokens_mask, dtype=bool)[positions]
        spans = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)[positions]
        spans[special] = 0  # a special token covers no character
        offsets.append(spans)
    ids, mask = padded(kept)
    return TokenBatch(ids, mask, offsets)


def padded(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token rows right-padded with 0 to the longest: (ids, attention mask), both (rows, width) int64."""
    width = max(len(row) for row in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


def count_batch(lengths: list[int]) -> None:
    """Profile one padded batch (`add --profile`): its real tokens, and the tokens the model
    computed, every row padded to the longest."""
    count("tokens", sum(lengths))
    count("padded_tokens", len(lengths) * max(lengths))


def plain_feeds(ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of a graph from `bert_onnx.build_bert_onnx` for a plain padded batch: every real token
    attends to every real token, and no row has windows."""
    token_mask = np.empty((*mask.shape, mask.shape[1]), dtype=np.int32)
    np.multiply(mask[:, None, :], mask[:, :, None], out=token_mask, casting="unsafe")
    return {"input_ids": ids, "attention_mask": mask, "token_mask": token_mask, "window_rows": np.zeros(0, dtype=np.int64)}


def pool_windows(hidden: np.ndarray, offsets: np.ndarray, windows: Sequence[Window], fallback: np.ndarray) -> np.ndarray:
    """Unit vectors (len(windows), dim): each the mean of `hidden` (tokens, dim: one text's
    last hidden state, padding cut off) over the tokens overlapping any of its ranges.

    A window none of whose tokens survived truncation gets `fallback` (the text's own vector):
    the chunker keeps chunks within the model's limit, so this only guards a model whose
    tokenizer counts differently.
    """
    starts, ends = offsets[:, 0], offsets[:, 1]
    real = ends > starts
    pooled = np.empty((len(windows), hidden.shape[1]), dtype=np.float32)
    for row, window in enumerate(windows):
        inside = np.zeros(len(offsets), dtype=bool)
        for start, end in window:
            inside |= real & (starts < end) & (ends > start)
        pooled[row] = hidden[inside].mean(axis=0) if inside.any() else fallback
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.maximum(norms, 1e-12)


def confined_attention(offsets: np.ndarray, windows: Sequence[Window]) -> np.ndarray | None:
    """(tokens, tokens) int32: 1 where a token may attend to another, so that a window pooled from
    the pass has seen little beyond its own sentences; None for a text without windows.

    Late chunking's windows have seen the whole chunk and score well below windows embedded
    alone on claim-like queries (README, "The quality push"). Here a sentence's tokens see the
    context (the prefix, the special tokens) and the sentences of the windows they belong to
    (with two-sentence windows: the sentence before and after), and the context sees only
    itself, which is as near to embedding each window alone as one pass gets.

    `windows` follow `chunking.window_spans`: each is the context span shared by every window
    (when there is one) followed by its sentences' spans, one per sentence.
    """
    if len(windows) < 2:
        return None  # one window is the whole text: nothing to confine
    shared = windows[0][0]
    context = shared if all(window[0] == shared for window in windows) else None
    runs = [window[1:] if context else window for window in windows]
    sentences = sorted({span for run in runs for span in run})
    reach = max(len(run) for run in runs) - 1
    starts = np.array([start for start, _ in sentences])
    token_starts, token_ends = offsets[:, 0], offsets[:, 1]
    group = np.searchsorted(starts, token_starts, side="right")  # 1 + the sentence a token starts in
    group[token_ends <= token_starts] = 0  # special tokens: context
    if context:
        group[(token_starts < context[1]) & (token_ends > context[0])] = 0
    sees_context = group[None, :] == 0
    near = (group[:, None] != 0) & (np.abs(group[:, None] - group[None, :]) <= reach)
    return (sees_context | near).astype(np.int32)
