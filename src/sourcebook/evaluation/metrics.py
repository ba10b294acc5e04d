"""Ranking metrics: nDCG@k, recall@k, MRR@k, their means over queries, and percentiles.

Definitions follow trec_eval (which BEIR uses through pytrec_eval), so figures are
comparable with published ones:

* nDCG@k: DCG = sum over ranks i = 1..k of gain(doc_i) / log2(i + 1), with the gain
  exactly as the qrels give it (graded, linear: not 2^rel - 1) and 0 for unjudged or
  non-positive documents; the ideal DCG sorts the query's positive gains descending
  and takes the first k. A query with no positive judgment scores 0.
* recall@k: relevant documents (gain > 0) among the first k, over all relevant ones.
* MRR@k: 1 / rank of the first relevant document within the first k, else 0.

Ties, deterministically:

* A ranking is a sequence of document ids, best first, and its order is final: the
  metrics never re-sort. Systems break their own score ties (Sourcebook's hits carry
  1-based ranks); trec_eval instead re-sorts a run by score and breaks ties by
  document id, descending, which for tied scores may give a different figure.
* A repeated id counts once, at its first rank (trec_eval sees each pair once).
* Equal gains in the qrels are interchangeable: the ideal DCG depends only on the
  multiset of gains, so it does not matter which of two tied documents comes first.

Means are over the queries of `qrels` (a query missing from the run scores 0), which
is what "nDCG@10 over the 300 SciFact test queries" means.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Judgments = Mapping[str, float]  # document id -> gain
Qrels = Mapping[str, Judgments]  # query id -> judgments
Run = Mapping[str, Sequence[str]]  # query id -> document ids, best first


def _unique(ranking: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def _relevant(qrels: Judgments) -> set[str]:
    return {doc for doc, gain in qrels.items() if gain > 0}


def dcg_at_k(ranking: Sequence[str], qrels: Judgments, k: int) -> float:
    return sum(
        max(float(qrels.get(doc, 0.0)), 0.0) / math.log2(rank + 1)
        for rank, doc in enumerate(_unique(ranking)[:k], start=1)
    )


def ndcg_at_k(ranking: Sequence[str], qrels: Judgments, k: int = 10) -> float:
    gains = sorted((float(g) for g in qrels.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))
    return dcg_at_k(ranking, qrels, k) / ideal if ideal > 0 else 0.0


def recall_at_k(ranking: Sequence[str], qrels: Judgments, k: int) -> float:
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    return len(relevant.intersection(_unique(ranking)[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], qrels: Judgments, k: int = 10) -> float:
    for rank, doc in enumerate(_unique(ranking)[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def mean_ndcg(run: Run, qrels: Qrels, k: int = 10) -> float:
    return mean(ndcg_at_k(run.get(q, ()), judged, k) for q, judged in qrels.items())


def mean_recall(run: Run, qrels: Qrels, k: int) -> float:
    return mean(recall_at_k(run.get(q, ()), judged, k) for q, judged in qrels.items())


def mean_mrr(run: Run, qrels: Qrels, k: int = 10) -> float:
    return mean(mrr_at_k(run.get(q, ()), judged, k) for q, judged in qrels.items())


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; 0.0 for no values (an empty benchmark scores nothing)."""
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation (numpy's default); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
