"""A bounded in-memory cache of query embeddings, search results and answers.

Why: a team asks the same questions (the intranet's top queries, a dashboard refreshing), and each
costs a model run, two index searches and, with an LLM, tokens. The design documents ask for
"caching for frequent queries" (004) and cached embeddings, queries and search results (003).

What makes it safe to serve: every key holds everything that changes the result, namely

* the tenant, so one tenant never sees another's results, nor learns from timing what another asked;
* the query text and the options (mode, filters, top-k, per-document, fusion, ... as one repr);
* the model that embeds queries, and for answers the LLM (or "extractive") and the question's
  history;
* for search results and answers, the store's `search_generation`, which every committed write
  that can change a result moves on, whichever process wrote it. A write therefore never
  serves a stale result: the next lookup reads the new number and misses.

Bounded by entries (least recently used goes first): a search entry is a top-k of hits with
their chunk texts (about 10-20 KB), so the server's default of 1,024 entries stays within about
20 MB. Off (0 entries) by default in the library and the CLI, where one process asks once; the
server turns it on (`ServerSettings.query_cache_entries`). Hit and miss counts per kind feed
/metrics.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Literal, TypeVar

T = TypeVar("T")
CacheKind = Literal["embedding", "search", "answer"]
KINDS: tuple[CacheKind, ...] = ("embedding", "search", "answer")


class QueryCache:
    """Least-recently-used entries up to `max_entries`, shared by every tenant (keys say whose).

    Thread-safe: the server answers from a thread pool. Two threads missing the same key both
    compute it; the second result replaces the first, which is equal. Values are handed out as
    stored: frozen dataclasses, and lists the caller must not mutate (`Retriever` copies)."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"a query cache needs at least one entry, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[Hashable, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = dict.fromkeys(KINDS, 0)
        self._misses = dict.fromkeys(KINDS, 0)

    def get_or_compute(
        self, kind: CacheKind, key: tuple[Hashable, ...], compute: Callable[[], T], stored: Callable[[T], T] | None = None
    ) -> T:
        """The cached value of (`kind`, *`key`), else `compute()`'s, kept as `stored(value)` when
        given (an answer served again cost no LLM call, so its copy drops the usage). An
        exception is not cached."""
        full = (kind, *key)
        with self._lock:
            if full in self._entries:
                self._entries.move_to_end(full)
                self._hits[kind] += 1
                return self._entries[full]  # type: ignore[no-any-return]
            self._misses[kind] += 1
        value = compute()
        with self._lock:
            self._entries[full] = value if stored is None else stored(value)
            self._entries.move_to_end(full)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def stats(self) -> dict[str, Any]:
        """{"entries", "max_entries", "hits": {kind: n}, "misses": {kind: n}} since the cache was made."""
        with self._lock:
            return {"entries": len(self._entries), "max_entries": self.max_entries,
                    "hits": dict(self._hits), "misses": dict(self._misses)}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
