"""Concurrent query embeddings coalesced into one model run (issue 17 #9).

Under 20 concurrent searches the server's threads queued for the model's two sessions, one
short query per run: the sessions were the bottleneck (py-spy: threads waiting for an idle
session as often as running one) and p99 latency grew with the queue. A BERT run over ten
12-token queries costs little more than over one, because per-run overhead and the weights'
memory traffic dominate at that length. So a query waits in a shared list; the first thread
that finds an idle session takes every waiting query (up to `max_batch`) and embeds them
together, and each thread returns as soon as its own vector is ready, whoever computed it.
With one query at a time nothing waits: it runs alone at once, as before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_POLL_SECONDS = 0.002
"""How often a waiting thread looks for a session freed by work that does not notify it
(document batches return sessions to the queue directly)."""


class _Waiting:
    """One query's token row, and its vector once some thread has embedded it."""

    __slots__ = ("row", "vector")

    def __init__(self, row: list[int]) -> None:
        self.row = row
        self.vector: np.ndarray | None = None


class QueryCoalescer:
    """Embed single token rows, batching the ones that arrive while every session is busy."""

    def __init__(self, idle: queue.SimpleQueue[Any], run: Callable[[Sequence[list[int]], Any], np.ndarray],
                 max_batch: int = 32) -> None:
        self._idle = idle
        self._run = run
        self._max_batch = max_batch
        self._waiting: list[_Waiting] = []
        self._changed = threading.Condition()

    def embed(self, row: list[int]) -> np.ndarray:
        """The unit vector of one query's token row."""
        mine = _Waiting(row)
        with self._changed:
            self._waiting.append(mine)
        while True:
            with self._changed:
                while mine.vector is None:
                    # An empty list means this query is in a run under way: wait for its vector.
                    session = self._take_session() if self._waiting else None
                    if session is not None:
                        batch = self._waiting[: self._max_batch]
                        del self._waiting[: self._max_batch]
                        break
                    self._changed.wait(_POLL_SECONDS)
                else:
                    return mine.vector
            try:
                vectors = self._run([each.row for each in batch], session)
            except BaseException:
                with self._changed:  # the others go back to wait for another run; this one gives up
                    self._waiting[:0] = [each for each in batch if each is not mine]
                    if mine in self._waiting:
                        self._waiting.remove(mine)
                    self._changed.notify_all()
                raise
            finally:
                self._idle.put(session)
            with self._changed:
                for each, vector in zip(batch, vectors, strict=True):
                    each.vector = vector
                self._changed.notify_all()

    def _take_session(self) -> Any | None:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return None
