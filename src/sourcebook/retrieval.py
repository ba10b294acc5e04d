"""Keyword, vector and hybrid retrieval over a `SearchStore`.

Hybrid search fuses the two ranked lists. Two methods:
- "zscore" (default): each list's scores are standardised over its candidates
  ((s - mean) / std, a chunk missing from a list gets that list's lowest z) and
  summed with weights w and 1 - w. Unlike RRF it keeps how far ahead a hit is, not
  only its rank. Measured on SciFact (bench/scifact.py): nDCG@10 0.733 vs 0.714 for
  RRF; on the held-out Python-docs set it does not lose either (README, Quality).
- "rrf" (Cormack et al. 2009): score = sum over lists of 1 / (k + rank); needs no
  score statistics at all.

Graph-augmented retrieval (graph/search.py) adds a third list, the chunks linked to the
entities the question names and to their neighbours. Its scores are not comparable to
the others', so it always joins by RRF: mode "graph" fuses keyword, vector and graph
lists by RRF; hybrid with `graph=True` fuses hybrid's own ranking with the graph list.

Then the reranking stage (reranking.py) reorders the fused list's first candidates: always the
entries a query names by an identifier first; with `rerank`, the rest by a fitted linear model or
a cross-encoder of the user's choice (crossencoder.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .crossencoder import reranker_for
from .embedders.base import Embedder
from .errors import InvalidQueryError
from .graph.search import graph_ranking
from .models import Hit, ScoredId, SearchFilter, StoredChunk
from .overlap import overlapped
from .query_cache import QueryCache
from .reranking import Reranker, identifiers, named_first
from .settings import RetrievalMode, Settings
from .stores.base import SearchStore
from .stores.common import document_of
from .tenants import DEFAULT_TENANT

MODES: tuple[RetrievalMode, ...] = ("keyword", "vector", "hybrid")
"""The modes that need no knowledge graph (what `eval retrieval` runs by default)."""
SEARCH_MODES: tuple[RetrievalMode, ...] = (*MODES, "graph")
_FUSED: tuple[RetrievalMode, ...] = ("hybrid", "graph")


@dataclass(frozen=True)
class SearchOptions:
    """Everything that shapes one search besides the query text."""

    mode: RetrievalMode = "hybrid"
    top_k: int = 10
    filters: SearchFilter = SearchFilter()
    min_score: float | None = None
    per_document: int = 1
    candidates: int = 200
    fusion: str = "zscore"
    keyword_weight: float = 0.3
    rrf_k: int = 60
    graph: bool = False
    """Hybrid only: fuse the knowledge graph's list in too (mode "graph" always does)."""
    graph_weight: float = 0.3
    """The graph list's RRF weight relative to hybrid's ranking (in mode "graph": to half of keyword + vector)."""
    graph_candidates: int = 10
    """Length of the graph list: only its best chunks are worth a boost."""
    rerank: bool = False
    """Hybrid and graph modes: reorder the first `rerank_candidates` by the offline reranker (reranking.py);
    off, only the entries the query names by an identifier move first."""
    rerank_candidates: int = 30
    top_up: bool = True
    """With `per_document`: when the cap leaves fewer than `top_k` hits, fill up with the next best
    chunks of any document, after the capped ones. The cap spreads the first hits across documents;
    without the top-up, `search -k 5` on a knowledge base of one PDF manual gave one hit."""

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise InvalidQueryError(f"unknown retrieval mode {self.mode!r}; use one of {', '.join(SEARCH_MODES)}")
        if self.top_k < 1:
            raise InvalidQueryError(f"top_k must be at least 1, got {self.top_k}")
        if self.fusion not in ("zscore", "rrf"):
            raise InvalidQueryError(f"unknown fusion {self.fusion!r}; use 'zscore' or 'rrf'")
        if self.per_document < 0:
            raise InvalidQueryError(f"per_document must be 0 (no limit) or more, got {self.per_document}")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> SearchOptions:
        values: dict[str, object] = {
            "mode": settings.retrieval_mode,
            "top_k": settings.top_k,
            "min_score": settings.min_score,
            "per_document": settings.per_document,
            "candidates": settings.candidates,
            "fusion": settings.fusion,
            "keyword_weight": settings.fusion_keyword_weight,
            "rrf_k": settings.rrf_k,
            "graph": settings.graph_retrieval,
            "rerank": settings.rerank,
            "rerank_candidates": settings.rerank_candidates,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[ScoredId]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fused (chunk_id, score) pairs, best first; ties keep first-seen order. `weights` scale
    each list's 1 / (k + rank) (default 1 each)."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for item in ranking:
            fused[item.chunk_id] = fused.get(item.chunk_id, 0.0) + weight / (k + item.rank)
    return sorted(fused.items(), key=lambda pair: -pair[1])


def zscore_fusion(rankings: Sequence[Sequence[ScoredId]], weights: Sequence[float]) -> list[tuple[str, float]]:
    """Weighted sum of per-list standardised scores, best first.

    A chunk absent from a list scores that list's minimum z there: it was below the
    list's cut-off, so the lowest seen score is the most it can be credited with.
    """
    standardised: list[tuple[dict[str, float], float, float]] = []
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking or weight == 0:
            continue
        scores = np.array([item.score for item in ranking], dtype=np.float64)
        z = (scores - scores.mean()) / (scores.std() + 1e-9)
        standardised.append(({item.chunk_id: float(v) for item, v in zip(ranking, z)}, float(z.min()), weight))
    # fused(c) = sum of w * low over lists + sum over the lists holding c of w * (z - low)
    floor = sum(weight * low for _, low, weight in standardised)
    fused: dict[str, float] = {}
    for by_id, low, weight in standardised:
        for chunk_id, z in by_id.items():
            fused[chunk_id] = fused.get(chunk_id, floor) + weight * (z - low)
    return sorted(fused.items(), key=lambda pair: -pair[1])


class Retriever:
    """Runs searches; loads the embedder only when a mode needs vectors. With a query cache
    (query_cache.py), repeated queries reuse their embedding and, until the next write, their hits."""

    def __init__(
        self, store: SearchStore, embedder: Callable[[], Embedder], *, tenant: str = DEFAULT_TENANT,
        cache: Callable[[], QueryCache | None] = lambda: None,
        rerank_model: str | None = None,
    ) -> None:
        """`tenant` (the store's) keys the cache; `cache` gives the knowledge base's cache at each
        search, so one the server turns on later serves retrievers built before; `rerank_model`
        is a cross-encoder's folder for the reranking stage (else its linear model)."""
        self._store = store
        self._embedder = embedder
        self._tenant = tenant
        self._cache = cache
        self._rerank_model = rerank_model
        self._reranker: Reranker | None = None  # loaded by the first search that reranks

    def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Batch-embed queries (one model call for many, as `search --queries-file` does). An
        embedder whose queries differ from its documents (the local one: an fp32 query graph for
        int8 documents, or int8 queries one at a time, as their vectors move with the batch) says
        so with `embed_queries`, so a query finds the same hits in a file as asked alone."""
        embedder = self._embedder()
        own = getattr(embedder, "embed_queries", None)
        return own(list(queries)) if own is not None else embedder.embed_documents(list(queries))

    def search(self, query: str, options: SearchOptions, query_vector: np.ndarray | None = None) -> list[Hit]:
        if not query.strip():
            raise InvalidQueryError("the query is empty")
        cache = self._cache()
        if cache is None:
            return self._search(query, options, query_vector)
        model = None if options.mode == "keyword" else self._embedder().name
        key = (self._tenant, self._store.search_generation(), model, query, repr(options))
        return list(cache.get_or_compute("search", key, lambda: self._search(query, options, query_vector)))

    def _embed_query(self, query: str) -> np.ndarray:
        embedder = self._embedder()
        cache = self._cache()
        if cache is None:
            return embedder.embed_query(query)
        return cache.get_or_compute("embedding", (self._tenant, embedder.name, query), lambda: embedder.embed_query(query))

    def _search(self, query: str, options: SearchOptions, query_vector: np.ndarray | None) -> list[Hit]:
        # A fixed pool (not one growing with top_k) keeps z-score statistics, and so the
        # order of the first hits, the same whatever top_k a caller asks for.
        pool = max(options.candidates, options.top_k * max(options.per_document, 1))
        keyword, vector = self._rankings(query, options, query_vector, pool)
        graph: list[ScoredId] = []
        if options.mode == "keyword":
            ranked = [(item.chunk_id, item.score) for item in keyword]
        elif options.mode == "vector":
            ranked = [(item.chunk_id, item.score) for item in vector]
        elif options.mode == "graph":
            first = reciprocal_rank_fusion([keyword, vector], options.rrf_k)
            graph = graph_ranking(self._store, query, options.graph_candidates, options.filters, [cid for cid, _ in first])
            ranked = reciprocal_rank_fusion([keyword, vector, graph], options.rrf_k, [1.0, 1.0, 2 * options.graph_weight])
        else:
            if options.fusion == "rrf":
                ranked = reciprocal_rank_fusion([keyword, vector], options.rrf_k)
            else:
                ranked = zscore_fusion([keyword, vector], [options.keyword_weight, 1.0 - options.keyword_weight])
            if options.graph:
                graph = graph_ranking(self._store, query, options.graph_candidates, options.filters, [cid for cid, _ in ranked])
                hybrid = [ScoredId(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(ranked, 1)]
                ranked = reciprocal_rank_fusion([hybrid, graph], options.rrf_k, [1.0, options.graph_weight])
        if options.min_score is not None:
            ranked = [(cid, score) for cid, score in ranked if score >= options.min_score]
        if options.mode in _FUSED and (options.rerank or identifiers(query)):
            ranked = self._rerank(query, ranked, options)
        return self._build_hits(ranked, keyword, vector, options, graph)

    def _rankings(
        self, query: str, options: SearchOptions, query_vector: np.ndarray | None, pool: int
    ) -> tuple[list[ScoredId], list[ScoredId]]:
        """The keyword and the vector list the mode needs (an empty list for one it does not).

        When it needs both and the store declares `concurrent_searches` (stores/base.py), the
        keyword search runs in a shared worker while this thread embeds the query and runs the
        vector search (overlap.py): the same lists and errors, in the longer of the two times
        rather than their sum. A store without the attribute (one written before it) is searched
        one list after the other."""
        wants_keyword = options.mode in ("keyword", *_FUSED)
        wants_vector = options.mode in ("vector", *_FUSED)

        def keyword() -> list[ScoredId]:
            return self._store.keyword_search(query, pool, options.filters) if wants_keyword else []

        def vector() -> list[ScoredId]:
            if not wants_vector:
                return []
            embedded = self._embed_query(query) if query_vector is None else query_vector
            return self._store.vector_search(embedded, pool, options.filters)

        if wants_keyword and wants_vector and getattr(self._store, "concurrent_searches", False):
            return overlapped(keyword, vector)
        return keyword(), vector()

    def _rerank(self, query: str, ranked: list[tuple[str, float]], options: SearchOptions) -> list[tuple[str, float]]:
        """`ranked` with its first candidates reordered: by the reranker with `rerank`, else only
        the entries the query names moved first (reranking.py). A moved hit takes the fused score
        of the rank it moves to, so scores stay descending and in the mode's units."""
        head = ranked[: options.rerank_candidates]
        chunks = self._store.get_chunks([cid for cid, _ in head])
        head = [(cid, score) for cid, score in head if cid in chunks]
        candidates = [chunks[cid] for cid, _ in head]
        if options.rerank:
            if self._reranker is None:
                self._reranker = reranker_for(self._rerank_model)
            order = self._reranker.rerank(query, candidates, [score for _, score in head])
        else:
            order = named_first(query, candidates)
        return [(head[i][0], score) for i, (_, score) in zip(order, head)] + ranked[options.rerank_candidates :]

    def _build_hits(
        self,
        ranked: list[tuple[str, float]],
        keyword: list[ScoredId],
        vector: list[ScoredId],
        options: SearchOptions,
        graph: Sequence[ScoredId] = (),
    ) -> list[Hit]:
        by_keyword = {item.chunk_id: item for item in keyword}
        by_vector = {item.chunk_id: item for item in vector}
        by_graph = {item.chunk_id: item for item in graph}
        per_doc: dict[str, int] = {}
        hits: list[Hit] = []
        picked = _picked_by_id(ranked, options.top_k, options.per_document, options.top_up) if options.per_document else None
        fetched: dict[str, StoredChunk] | None = None
        if picked is not None:
            # The hits chosen from the chunk ids alone: one fetch of top_k rows, not a window of
            # rows per document kept (a small knowledge base's best chunks share few documents,
            # and decoding the skipped ones was a third of a search's CPU). Used only when every
            # picked chunk is still there and really is of the document its id names; else the
            # general loop below, which gives the same hits.
            fetched = self._store.get_chunks([cid for cid, _ in picked])
            if all(cid in fetched and fetched[cid].document_id == document_of(cid) for cid, _ in picked):
                ranked = picked
            else:
                fetched = None
        window = max(2 * options.top_k, 20)
        capped: list[Hit] = []  # chunks the per-document cap skipped, best first, for the top-up
        for start in range(0, len(ranked), window):
            # Fetch chunk rows a window at a time: most searches need only the first.
            batch = ranked[start : start + window]
            chunks = fetched if fetched is not None else self._store.get_chunks([cid for cid, _ in batch])
            for chunk_id, score in batch:
                chunk = chunks.get(chunk_id)
                if chunk is None:  # deleted between the search and the fetch
                    continue
                seen = per_doc.get(chunk.document_id, 0)
                skipped = bool(options.per_document) and seen >= options.per_document
                if skipped and not (options.top_up and len(capped) < options.top_k):
                    continue
                kw, vec, gr = by_keyword.get(chunk_id), by_vector.get(chunk_id), by_graph.get(chunk_id)
                hit = Hit(
                    rank=len(hits) + 1,
                    score=float(score),
                    chunk=chunk,
                    keyword_rank=kw.rank if kw else None,
                    keyword_score=kw.score if kw else None,
                    vector_rank=vec.rank if vec else None,
                    vector_score=vec.score if vec else None,
                    graph_rank=gr.rank if gr else None,
                    graph_score=gr.score if gr else None,
                )
                if skipped:
                    capped.append(hit)
                    continue
                per_doc[chunk.document_id] = seen + 1
                hits.append(hit)
                if len(hits) == options.top_k:
                    return hits
        extra = capped[: options.top_k - len(hits)]
        return hits + [replace(hit, rank=rank) for rank, hit in enumerate(extra, len(hits) + 1)]


def _picked_by_id(ranked: list[tuple[str, float]], top_k: int, per_document: int, top_up: bool) -> list[tuple[str, float]]:
    """The first `top_k` of `ranked` keeping at most `per_document` chunks of each document,
    the document read from each chunk id (`stores.common.document_of`); with `top_up`, then the
    next best of the rest up to `top_k`, after them."""
    counts: dict[str, int] = {}
    picked: list[tuple[str, float]] = []
    skipped: list[tuple[str, float]] = []
    for chunk_id, score in ranked:
        document = document_of(chunk_id)
        if counts.get(document, 0) < per_document:
            counts[document] = counts.get(document, 0) + 1
            picked.append((chunk_id, score))
            if len(picked) == top_k:
                return picked
        elif top_up and len(skipped) < top_k:
            skipped.append((chunk_id, score))
    return picked + skipped[: top_k - len(picked)]
