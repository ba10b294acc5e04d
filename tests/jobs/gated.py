"""A slow-but-deterministic ingestion for the fairness and cancellation tests: the real model,
except that a batch holding a marked text waits until the test releases it.

Waiting on an event instead of sleeping keeps the tests exact on a loaded machine: "tenant
B's upload finished while tenant A's was still embedding" is true by construction, not by timing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from sourcebook.embedders.base import Embedder

MARKER = "zanzibarmarker"
WAIT_SECONDS = 120.0


class GatedEmbedder:
    """Delegates to `inner`; `embed_documents` on texts containing MARKER blocks until `release`."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.entered = threading.Event()
        """Set when a marked batch starts waiting (the big job is running)."""
        self.release = threading.Event()
        self.marked_batches = 0

    def count_tokens(self, texts: Sequence[str]) -> Any:
        return self._inner.count_tokens(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        if any(MARKER in text for text in texts):
            self.marked_batches += 1
            self.entered.set()
            if not self.release.wait(WAIT_SECONDS):
                raise AssertionError("the test never released the gated embedder")
        return self._inner.embed_documents(texts, progress)


def big_markdown(paragraphs: int) -> bytes:
    """A document of many chunks, each carrying MARKER (so every slice of it is gated)."""
    return ("# Ledger\n\n" + "\n\n".join(
        f"Entry {i} {MARKER}: " + " ".join(f"the ledger line {i}.{j} balances account {i * j % 89}." for j in range(30))
        for i in range(paragraphs)
    )).encode()


SMALL = b"# Lunch\n\nThe canteen serves lentil soup every Wednesday at noon.\n"
