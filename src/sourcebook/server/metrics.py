"""Prometheus metrics at /metrics: what an operator graphs and alerts on.

One registry per app (not the process-global default), so tests and embedders can build
several apps in one process without "duplicated timeseries" errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..models import Answer

# Seconds; from a cached keyword search (sub-ms) to a slow LLM answer.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The service's instruments, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Histogram(
            "sourcebook_http_request_duration_seconds", "HTTP request latency by route template",
            ["method", "route", "status"], buckets=LATENCY_BUCKETS, registry=r,
        )
        self.retrieval = Histogram(
            "sourcebook_retrieval_duration_seconds", "Search latency (query embedding included)",
            ["mode"], buckets=LATENCY_BUCKETS, registry=r,
        )
        self.answers = Histogram(
            "sourcebook_answer_duration_seconds", "Whole answer latency (retrieval and generation)",
            ["answerer"], buckets=LATENCY_BUCKETS, registry=r,
        )
        self.generation = Histogram(
            "sourcebook_generation_duration_seconds", "LLM call latency", ["model", "purpose"],
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.tokens = Counter("sourcebook_llm_tokens", "LLM tokens", ["model", "direction"], registry=r)
        self.ingested = Counter(
            "sourcebook_ingested_documents", "Documents processed by the ingestion worker, by outcome",
            ["action"], registry=r,
        )
        self.ingest_failures = Counter(
            "sourcebook_ingestion_failures", "Documents whose ingestion failed, by error code", ["code"], registry=r,
        )
        self.ingest_duration = Histogram(
            "sourcebook_ingestion_job_duration_seconds", "Time to ingest one queued request's documents",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.queue_depth = Gauge("sourcebook_ingestion_queue_depth", "Ingestion jobs waiting or running", registry=r)
        self.rate_limited = Counter("sourcebook_rate_limited_requests", "Requests refused with 429", registry=r)

    def observe_answer(self, answer: Answer, seconds: float) -> None:
        """An answer's whole latency, and its LLM calls' latency and tokens (from Answer.usage)."""
        self.answers.labels(answer.answerer).observe(seconds)
        for call in answer.usage.get("calls", ()):
            if "error" in call:
                continue
            model = f"{call.get('provider', '?')}:{call.get('model', '?')}"
            if "latency_ms" in call:
                self.generation.labels(model, call.get("purpose", "answer")).observe(call["latency_ms"] / 1000)
            for direction in ("input", "output"):
                self.tokens.labels(model, direction).inc(call.get(f"{direction}_tokens", 0) or 0)


class QueryCacheCollector:
    """The query cache's counts (query_cache.py), read at each scrape: the cache is the library's
    and knows nothing of Prometheus. Hit rate per kind is
    `rate(sourcebook_query_cache_lookups_total{result="hit"}[5m]) / rate(sourcebook_query_cache_lookups_total[5m])`."""

    def __init__(self, stats: Callable[[], dict[str, Any] | None]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self._stats() or {"entries": 0, "hits": {}, "misses": {}}
        lookups = CounterMetricFamily(
            "sourcebook_query_cache_lookups", "Query cache lookups by kind (embedding, search, answer) and result",
            labels=["kind", "result"],
        )
        for result, counts in (("hit", stats["hits"]), ("miss", stats["misses"])):
            for kind, count in counts.items():
                lookups.add_metric([kind, result], count)
        yield lookups
        yield GaugeMetricFamily("sourcebook_query_cache_entries", "Entries in the query cache", value=stats["entries"])
