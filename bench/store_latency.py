"""Search latency of the SQLite store on a synthetic corpus.

Builds a temporary store of 100,000 chunks by default: vectors clustered around a few
hundred random centroids (the way embeddings of related passages cluster), texts drawn
from a vocabulary with Zipfian word frequencies (so common words match most chunks, as
in real text, which is BM25's expensive case). Then prints p50/p95 of top-10 searches
over 200 queries, after a warm-up query that pays the one-off vector load.

    python bench/store_latency.py [--chunks 100000] [--dim 384] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import string
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebook.models import Chunk, DocumentStatus, SearchFilter
from sourcebook.stores import SQLiteStore

CHUNKS_PER_DOCUMENT = 100
CENTROIDS = 300
VOCABULARY = 20_000
WORDS_PER_CHUNK = (40, 160)


def vocabulary(rng: np.random.Generator) -> np.ndarray:
    """Distinct made-up words of 3 to 9 letters."""
    letters = np.array(list(string.ascii_lowercase))
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(letters, size=rng.integers(3, 10))))
    return np.array(sorted(words))


def zipf_words(rng: np.random.Generator, words: np.ndarray, n: int) -> np.ndarray:
    """`n` words drawn with probability proportional to 1 / rank."""
    weights = 1.0 / np.arange(1, len(words) + 1)
    return rng.choice(words, size=n, p=weights / weights.sum())


def clustered_vectors(rng: np.random.Generator, centroids: np.ndarray, n: int, noise: float) -> np.ndarray:
    picked = centroids[rng.integers(0, len(centroids), size=n)]
    vectors = picked + noise * rng.standard_normal(picked.shape).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def build(store: SQLiteStore, rng: np.random.Generator, n_chunks: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Fill the store; returns the centroids and vocabulary, from which queries are drawn."""
    words = vocabulary(rng)
    centroids = clustered_vectors(rng, rng.standard_normal((CENTROIDS, dim)).astype(np.float32), CENTROIDS, 0.0)
    store.ensure_collection("bench", "synthetic", dim)
    for d in range(n_chunks // CHUNKS_PER_DOCUMENT):
        document_id = f"doc{d}"
        store.upsert_document(document_id, collection="bench", source=f"{document_id}.txt", title=f"Document {d}",
                              media_type="text/plain", metadata={"shard": d % 10},
                              status=DocumentStatus.PROCESSING)
        lengths = rng.integers(*WORDS_PER_CHUNK, size=CHUNKS_PER_DOCUMENT)
        drawn = zipf_words(rng, words, int(lengths.sum()))
        texts = [" ".join(part) for part in np.split(drawn, np.cumsum(lengths)[:-1])]
        chunks = [Chunk(i, text, 0, len(text), ("Part",), None, len(text.split()), "") for i, text in enumerate(texts)]
        vectors = clustered_vectors(rng, centroids, len(chunks), noise=0.06)
        store.replace_chunks(document_id, content_hash=document_id, title=f"Document {d}", chunks=chunks,
                             vectors=vectors)
    return centroids, words


def percentiles(search: Callable[[Any], object], queries: Sequence[Any]) -> tuple[float, float]:
    """p50 and p95 in milliseconds, after one warm-up call (the first vector load)."""
    search(queries[0])
    timings = []
    for query in queries:
        start = time.perf_counter()
        search(query)
        timings.append((time.perf_counter() - start) * 1000)
    cut = statistics.quantiles(timings, n=20)
    return statistics.median(timings), cut[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    everything = SearchFilter()
    one_shard = SearchFilter.build(metadata={"shard": 3})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with SQLiteStore(path) as store:
            start = time.perf_counter()
            centroids, words = build(store, rng, args.chunks, args.dim)
            print(f"built {args.chunks:,} chunks x {args.dim} in {time.perf_counter() - start:.1f} s, "
                  f"file {os.path.getsize(path) / 1e6:.0f} MB")
            vector_queries = list(clustered_vectors(rng, centroids, args.queries, noise=0.06))
            keyword_queries = [" ".join(zipf_words(rng, words, int(rng.integers(2, 7)))) for _ in range(args.queries)]

            start = time.perf_counter()
            store.vector_search(vector_queries[0], 10, everything)
            print(f"first vector load: {(time.perf_counter() - start) * 1000:.0f} ms")
            # The floor under vector_search: the matrix-vector product it cannot avoid. It is
            # memory-bound and moves with the machine's load, so compare the two lines.
            matrix = clustered_vectors(rng, centroids, args.chunks, noise=0.06)
            cases = {
                "bare numpy product (the floor)": lambda q: matrix @ q,
                "vector_search": lambda q: store.vector_search(q, 10, everything),
                "vector_search, metadata filter (10% of docs)": lambda q: store.vector_search(q, 10, one_shard),
            }
            for name, search in cases.items():
                p50, p95 = percentiles(search, vector_queries)
                print(f"{name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
            p50, p95 = percentiles(lambda q: store.keyword_search(q, 10, everything), keyword_queries)
            print(f"keyword_search (2-6 Zipfian terms): p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
