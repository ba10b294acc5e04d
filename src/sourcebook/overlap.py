"""Two calls overlapped: one in a small worker pool shared by the process, one in the caller.

Why: a hybrid search runs a keyword search, then the query's embedding and a vector search.
On a store whose searches run elsewhere (the Postgres server, on two pooled connections) this
process spends most of that time waiting; overlapping the two costs about the longer of them
instead of their sum when the server has the cores for both (README, "Overlapped keyword and
vector retrieval"). retrieval.py uses it for the stores that declare
`concurrent_searches` (stores/base.py).

Why one shared pool of WORKERS threads and not one per search or per knowledge base: threads
are started once and bounded whatever the number of searches and of stores opened and closed
(closing a store leaves no thread of its own behind). Why the caller takes the call back when
no worker has started it: under many concurrent searches (the HTTP server's threads) the pool
never becomes a queue to wait in; the search then runs one call after the other, as it would
without a pool, and can never deadlock on a pool full of callers.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")

WORKERS = 4
"""Threads of the shared pool: how many searches overlap at once; any more run sequentially."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def overlapped(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """(first(), second()) with `first` run in a worker while this thread runs `second`.

    The same results, and the same exception, as calling first() then second(): `first`'s error
    wins when both fail (that order would never have reached `second`), re-raised as the same
    object, its type unchanged. The worker runs in a copy of the caller's context (contextvars:
    the request id of the logs, the usage tally), and this returns only once `first` has ended,
    so nothing it started outlives the call."""
    future = _shared_pool().submit(contextvars.copy_context().run, first)
    try:
        other = second()
    except BaseException:
        _settle(future, first)
        raise
    return _settle(future, first), other


def _settle(future: Future[A], first: Callable[[], A]) -> A:
    """`first`'s result: run here if no worker has started it yet, else the worker's."""
    if future.cancel():
        return first()
    return future.result()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="sourcebook-overlap")
        return _pool


def _forget_pool() -> None:
    """After a fork: the child has none of the parent's threads, so its pool starts afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)
