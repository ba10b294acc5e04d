"""The UsageStore role: model calls and requests per tenant, day and API key, summed by every writer."""

from __future__ import annotations

import threading

from sourcebook.stores import Store
from sourcebook.usage import UsageTally

from .helpers import StoreFixtures


class UsageStoreSuite(StoreFixtures):
    """The UsageStore contract: subclass it and override `empty_store` (see sourcebook.testing)."""

    def test_tallies_add_up_per_day_and_key(self, empty_store: Store) -> None:
        empty_store.record_usage("2026-11-24", "k1", UsageTally(requests=1, llm_calls=2, input_tokens=100, output_tokens=20))
        empty_store.record_usage("2026-11-24", "k1", UsageTally(requests=1, embedding_calls=3, embedded_texts=40))
        empty_store.record_usage("2026-11-24", "", UsageTally(embedding_calls=1, embedded_texts=1))
        empty_store.record_usage("2026-11-25", "k1", UsageTally(requests=5))
        empty_store.record_usage("2026-11-25", "k2", UsageTally())  # nothing to count: no row
        rows = empty_store.usage()
        assert [(r["day"], r["api_key"]) for r in rows] == [("2026-11-24", ""), ("2026-11-24", "k1"), ("2026-11-25", "k1")]
        assert rows[1] == {"tenant": empty_store.tenant, "day": "2026-11-24", "api_key": "k1", "requests": 2, "llm_calls": 2,
                           "input_tokens": 100, "output_tokens": 20, "embedding_calls": 3, "embedded_texts": 40}
        assert [r["day"] for r in empty_store.usage(since="2026-11-25")] == ["2026-11-25"]
        assert [r["api_key"] for r in empty_store.usage(until="2026-11-24")] == ["", "k1"]

    def test_concurrent_writers_sum(self, empty_store: Store) -> None:
        def add() -> None:
            for _ in range(10):
                empty_store.record_usage("2026-11-25", "k", UsageTally(requests=1, input_tokens=7))

        threads = [threading.Thread(target=add) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        [row] = empty_store.usage()
        assert (row["requests"], row["input_tokens"]) == (40, 280)

    def test_tenants_see_only_their_own(self, empty_store: Store) -> None:
        empty_store.record_usage("2026-11-25", "k", UsageTally(requests=3))
        other = empty_store.for_tenant("othertenant")
        assert other.usage() == []
        other.record_usage("2026-11-25", "k", UsageTally(requests=1))
        assert [r["requests"] for r in empty_store.usage()] == [3]
