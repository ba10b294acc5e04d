"""Per-stage cost of an ingestion, for `sourcebook add --profile`.

Ingestion overlaps its stages (the model runs in a worker thread while the next documents
are read, chunked and written), so one wall clock cannot say where the time goes. Each stage
instead adds its own elapsed time here when a profile is active, from whichever thread runs
it. A module-level profile rather than a context variable: the embedding worker thread
would not inherit a context variable. With no active profile a stage costs one check.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

STAGES = ("load", "chunk", "tokenize", "model", "write")
"""Reading and parsing a source; chunking it (token counting included); the embedder's
tokenizing; its forward passes and pooling; storing the document."""


@dataclass
class Profile:
    """Seconds per stage and named counts (tokens computed, tokens padded), summed over threads."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    counts: dict[str, int] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, float, float]]:
        """(stage, seconds, share of the stages' total) in pipeline order."""
        total = sum(self.seconds.values()) or 1.0
        return [(name, seconds, seconds / total) for name, seconds in self.seconds.items()]

    def padding(self) -> float | None:
        """Tokens the model computed per real token (1.0: no padding), or None if nothing ran."""
        real = self.counts.get("tokens", 0)
        return self.counts.get("padded_tokens", 0) / real if real else None

    def to_dict(self) -> dict[str, object]:
        return {"seconds": dict(self.seconds), "counts": dict(self.counts), "padding": self.padding()}


_lock = threading.Lock()
_active: Profile | None = None


@contextmanager
def profiled() -> Iterator[Profile]:
    """Collect the stages run (by any thread) until the block ends."""
    global _active
    profile = Profile()
    with _lock:
        _active = profile
    try:
        yield profile
    finally:
        with _lock:
            _active = None


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Add the block's elapsed time to stage `name` of the active profile, if any."""
    if _active is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        with _lock:
            if _active is not None:
                _active.seconds[name] = _active.seconds.get(name, 0.0) + elapsed


def count(name: str, amount: int) -> None:
    """Add `amount` to the active profile's count `name`, if a profile is active."""
    if _active is None:
        return
    with _lock:
        if _active is not None:
            _active.counts[name] = _active.counts.get(name, 0) + amount
