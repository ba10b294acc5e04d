"""The `Embedder` protocol and its registry.

An embedder turns texts into L2-normalised float32 vectors and counts tokens
the way its model does, so the chunker can size chunks in the model's own tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

INT8_SUFFIX = "@int8"
"""Appended to the name of a model run with int8 weights (`Settings.embedding_precision`): its
vectors differ slightly from the fp32 model's, so the two never share a collection."""

ProgressCallback = Callable[[int], None]
"""Called with the number of texts just embedded (for progress bars)."""
Span = tuple[int, int]
Window = tuple[Span, ...]
"""Character ranges of one text whose tokens are pooled into one vector (late chunking): the
context every window of the text shares (its prefix), then the window's sentences, one span each."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    """Recorded per collection; vectors from different names never mix."""
    dimension: int
    max_tokens: int
    """Most content tokens (special tokens excluded) the model reads; more is truncated."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Content tokens of each text, special tokens excluded, without truncation."""

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Shape (len(texts), dimension), float32, unit length."""

    def embed_query(self, text: str) -> np.ndarray:
        """Shape (dimension,), float32, unit length."""


@runtime_checkable
class SpanEmbedder(Protocol):
    """An optional capability: vectors of character spans of a text from the text's own forward
    pass ("late chunking", late_chunking.py). Ingestion asks for it (`span_embedder`) so that a
    chunk's sentence windows cost no model run of their own; an embedder without it (a hosted
    API) embeds the windows as texts. An embedder that can also confine each window's attention
    (`confine=True`) says so with `confines_windows = True` (optional, so not a member here:
    an embedder without it is never called with `confine`); one that can embed each window span
    alone, or every other window, and pool the windows and the text's vector from those passes
    (`apart="sentences"` or `"pairs"`, sentence_passes.py) says so with `embeds_spans_apart = True`."""

    pools_spans: bool
    """False when this instance cannot (a CLS-pooled model, a graph without token outputs)."""

    def embed_documents_with_spans(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[Window]],
        progress: ProgressCallback | None = None,
        confine: bool = False,
        apart: str = "",
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """`embed_documents(texts)`, and for each text the unit vectors (len(spans[i]), dimension)
        of its windows (character ranges of the text), pooled from the same forward pass; with
        `confine`, a window's tokens attend only to its neighbourhood (late_chunking.py); with
        `apart` ("sentences", "pairs"), the windows come from passes of their own and the text's
        vector too is pooled from those passes."""


def span_embedder(embedder: Embedder) -> SpanEmbedder | None:
    """`embedder` when it can pool spans, else None."""
    if isinstance(embedder, SpanEmbedder) and embedder.pools_spans:
        return embedder
    return None
