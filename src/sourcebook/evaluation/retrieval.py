"""Retrieval quality on a BEIR-layout dataset: nDCG, recall and MRR per mode, plus latency.

Answers "how good is my retrieval, and did my change make it better?" with the
figures the literature reports, so a user's numbers line up with published ones.

The index is a knowledge base file per dataset, under the user's cache folder,
keyed by the dataset's path and every setting that changes what gets indexed:
changing the model or the chunking gets a fresh index instead of silently mixing
vectors, while re-running an unchanged setup costs one hash per record (ingestion
is incremental). Searches use `per_document=1`, since qrels judge documents, and each document
counts once in a ranking (a search tops up with more chunks of the same documents when fewer
documents than `top_k` match).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path

from ..embedders.local import resolve_precision
from ..errors import InvalidQueryError
from ..ingest import ProgressHandler
from ..kb import KnowledgeBase
from ..loaders.beir import MEDIA_TYPE
from ..models import DocumentStatus, Hit, IngestResult
from ..retrieval import MODES
from ..settings import RetrievalMode, Settings
from .dataset import BeirDataset, load_dataset
from .metrics import mean_mrr, mean_ndcg, mean_recall, percentile

DEFAULT_KS = (10, 100)
QueryCallback = Callable[[RetrievalMode], None]


@dataclass(frozen=True)
class ModeReport:
    """One retrieval mode's figures: `metrics` maps "ndcg@10", "recall@100"... to means over the queries."""

    mode: RetrievalMode
    metrics: dict[str, float]
    latency_p50_ms: float
    latency_p95_ms: float


@dataclass(frozen=True)
class RetrievalReport:
    """The outcome of `evaluate_retrieval`; `to_dict()` is the `--json` shape."""

    dataset: str
    dataset_dir: str
    split: str
    queries: int
    documents: int
    chunks: int
    index: str
    embedding_model: str
    ingest_seconds: float
    ingest_actions: dict[str, int]
    ks: tuple[int, ...]
    modes: tuple[ModeReport, ...]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


# Settings that change the stored chunks or vectors (query-time ones do not belong here: changing
# them must not cost a re-index). Read with getattr so a setting renamed or dropped never breaks eval.
INDEX_SETTINGS = (
    "embedding_model", "embedding_precision", "embedding_base_url", "chunk_max_tokens", "chunk_overlap", "vector_windows",
    "late_windows",
    "window_pooling",
    "enrich_chunks", "enrich_llm",
)


def index_key(dataset_dir: str | Path, settings: Settings) -> str:
    """Identity of an index: the dataset's real path, the indexing settings and Sourcebook's version."""
    parts = {name: getattr(settings, name, None) for name in INDEX_SETTINGS}
    parts["embedding_precision"] = resolve_precision(settings.embedding_precision)  # "auto" differs by machine
    parts.update(dataset=str(Path(dataset_dir).resolve()), sourcebook=version("sourcebook"))
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def cache_dir() -> Path:
    """Where evaluation indexes live: $XDG_CACHE_HOME/sourcebook/eval (XDG's default is ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sourcebook" / "eval"


def index_path(dataset_dir: str | Path, settings: Settings | None = None) -> Path:
    settings = settings or Settings()
    return cache_dir() / f"{Path(dataset_dir).resolve().name}-{index_key(dataset_dir, settings)}.db"


def open_index(dataset_dir: str | Path, db: str | Path | None = None, settings: Settings | None = None) -> KnowledgeBase:
    """The knowledge base to evaluate `dataset_dir` in: `db` if given, else the keyed cache file."""
    settings = settings or Settings()
    path = Path(db) if db is not None else index_path(dataset_dir, settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    return KnowledgeBase.open(path, settings)


def sync_corpus(kb: KnowledgeBase, dataset: BeirDataset, progress: ProgressHandler | None = None) -> list[IngestResult]:
    """Add new and changed corpus records, and remove BEIR records no longer in the corpus.

    Only documents loaded from a BEIR corpus are pruned, so evaluating in a user's
    own knowledge base (`--db`) never deletes their files' documents.
    """
    results = kb.add(str(dataset.corpus), format="beir", progress=progress)
    present = {r.source for r in results}  # a record that failed to update keeps its previous version
    for record in kb.documents():
        if record.media_type == MEDIA_TYPE and record.source not in present:
            kb.remove(record.id)
            results.append(IngestResult(record.source, "removed", record.id))
    return results


def evaluate_retrieval(
    kb: KnowledgeBase,
    dataset_dir: str | Path,
    modes: Sequence[RetrievalMode] = MODES,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    split: str = "test",
    progress: ProgressHandler | None = None,
    on_query: QueryCallback | None = None,
) -> RetrievalReport:
    """Index the dataset's corpus in `kb` (incrementally), run every judged query in every mode, score the runs.

    Each metric@k comes from a search with top_k=k, as a user asking for k hits
    gets them. Latency is the wall time of `kb.search` at the smallest k, query
    embedding included, one query at a time; larger k run in one `search_many`.
    """
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1:
        raise InvalidQueryError(f"cut-offs must be positive integers, got {ks}")
    dataset = load_dataset(dataset_dir, split)
    started = time.perf_counter()
    results = sync_corpus(kb, dataset, progress)
    ingest_seconds = time.perf_counter() - started
    actions: dict[str, int] = {}
    for result in results:
        actions[result.action] = actions.get(result.action, 0) + 1
    reports = tuple(_evaluate_mode(kb, dataset, mode, ks, on_query) for mode in modes)
    stats = kb.status()
    return RetrievalReport(
        dataset=dataset.name,
        dataset_dir=str(dataset.root),
        split=split,
        queries=len(dataset.qrels),
        documents=stats["documents"][DocumentStatus.READY.value],
        chunks=stats["chunks"],
        index=kb.settings.db,
        embedding_model=kb.embedder.name,
        ingest_seconds=ingest_seconds,
        ingest_actions=actions,
        ks=ks,
        modes=reports,
    )


def _documents(hits: Sequence[Hit]) -> list[str]:
    """The documents a ranking of hits names, each once, in rank order."""
    return list(dict.fromkeys(hit.chunk.source for hit in hits))


def _evaluate_mode(
    kb: KnowledgeBase, dataset: BeirDataset, mode: RetrievalMode, ks: tuple[int, ...], on_query: QueryCallback | None
) -> ModeReport:
    ids = list(dataset.qrels)
    texts = [dataset.queries[q] for q in ids]
    first, *rest = ks
    runs: dict[int, dict[str, list[str]]] = {first: {}}
    timings: list[float] = []
    for query_id, text in zip(ids, texts):
        start = time.perf_counter()
        hits = kb.search(text, mode=mode, top_k=first, per_document=1)
        timings.append((time.perf_counter() - start) * 1000)
        runs[first][query_id] = _documents(hits)
        if on_query:
            on_query(mode)
    for k in rest:
        batches = kb.search_many(texts, mode=mode, top_k=k, per_document=1)
        runs[k] = {q: _documents(hits) for q, hits in zip(ids, batches)}
    metrics: dict[str, float] = {}
    for name, measure in (("ndcg", mean_ndcg), ("recall", mean_recall), ("mrr", mean_mrr)):
        for k in ks:
            metrics[f"{name}@{k}"] = measure(runs[k], dataset.qrels, k)
    return ModeReport(mode, metrics, percentile(timings, 50), percentile(timings, 95))
