"""Retrieval metrics for the benchmarks: nDCG@k, recall@k, MRR@k, and their means.

Definitions follow trec_eval (as used by BEIR through pytrec_eval):

* nDCG@k: DCG = sum over ranks i = 1..k of gain(doc_i) / log2(i + 1), with the gain
  exactly as given in the qrels (not 2^rel - 1) and 0 for unjudged or non-positive
  documents; the ideal DCG sorts the query's positive qrels gains descending and
  takes the first k. A query with no positive judgment scores 0.
* recall@k: relevant documents (gain > 0) among the first k, over all relevant ones.
* MRR@k: 1 / rank of the first relevant document within the first k, else 0.

`ranking` is a list of document ids, best first; a repeated id counts once (at its
first rank), as trec_eval sees each (query, document) pair once. `qrels` maps a
document id to its judged gain. Means are over the queries of `qrels` (a query with
no ranking counts as 0), which is what "nDCG@10 over the 300 SciFact queries" means.

    python bench/metrics.py      # runs the self-check against hand-computed values
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Qrels = Mapping[str, Mapping[str, float]]  # query id -> document id -> gain
Run = Mapping[str, Sequence[str]]  # query id -> document ids, best first


def _unique(ranking: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def dcg_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    return sum(
        max(float(qrels.get(doc, 0.0)), 0.0) / math.log2(rank + 1)
        for rank, doc in enumerate(_unique(ranking)[:k], start=1)
    )


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    gains = sorted((float(g) for g in qrels.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))
    return dcg_at_k(ranking, qrels, k) / ideal if ideal > 0 else 0.0


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int) -> float:
    relevant = {doc for doc, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_unique(ranking)[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    for rank, doc in enumerate(_unique(ranking)[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def mean_ndcg(run: Run, qrels: Qrels, k: int = 10) -> float:
    return _mean(ndcg_at_k(run.get(q, ()), judged, k) for q, judged in qrels.items())


def mean_recall(run: Run, qrels: Qrels, k: int) -> float:
    return _mean(recall_at_k(run.get(q, ()), judged, k) for q, judged in qrels.items())


def mean_mrr(run: Run, qrels: Qrels, k: int = 10) -> float:
    return _mean(mrr_at_k(run.get(q, ()), judged, k) for q, judged in qrels.items())


def _mean(values: object) -> float:
    items = list(values)  # type: ignore[call-overload]
    return sum(items) / len(items) if items else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _self_check() -> None:
    def close(a: float, b: float) -> bool:
        return abs(a - b) < 1e-12

    # One relevant doc (gain 1) at rank 3: DCG = 1/log2(4) = 0.5; ideal = 1.
    assert close(ndcg_at_k(["x", "y", "a"], {"a": 1}, 10), 0.5)
    # Graded: gains a=2, b=1; ranking b, x, a.
    #   DCG = 1/log2(2) + 2/log2(4) = 1 + 1 = 2
    #   IDCG = 2/log2(2) + 1/log2(3) = 2 + 0.6309297535714575 = 2.6309297535714575
    assert close(ndcg_at_k(["b", "x", "a"], {"a": 2, "b": 1}, 10), 2 / 2.6309297535714575)
    # Linear gains, not exponential: with 2^rel - 1 this would be 3/(3 + 1/log2 3) instead.
    assert close(ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10), 1.0)
    # Cut-off: the relevant doc at rank 11 does not count at k=10.
    assert ndcg_at_k([f"n{i}" for i in range(10)] + ["a"], {"a": 1}, 10) == 0.0
    # Ideal is cut at k too: 3 relevant, k=2, ranking a, b -> perfect.
    assert close(ndcg_at_k(["a", "b"], {"a": 1, "b": 1, "c": 1}, 2), 1.0)
    # Non-positive judgments count as non-relevant everywhere.
    assert ndcg_at_k(["z"], {"z": 0, "a": 1}, 10) == 0.0
    assert ndcg_at_k(["a"], {"z": 0}, 10) == 0.0
    # Duplicates count once: a at rank 1, repeated; b effectively at rank 2.
    #   DCG = 1 + 1/log2(3); IDCG the same -> 1.
    assert close(ndcg_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 10), 1.0)

    assert close(recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1, "d": 0}, 2), 1 / 3)
    assert close(recall_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, 3), 2 / 3)
    assert recall_at_k(["a"], {}, 10) == 0.0

    assert close(mrr_at_k(["x", "y", "a", "b"], {"a": 1, "b": 1}, 10), 1 / 3)
    assert mrr_at_k(["x", "a"], {"a": 1}, 1) == 0.0
    assert mrr_at_k(["z", "a"], {"z": 0, "a": 2}, 10) == 0.5

    # Means run over the qrels' queries; a query with no ranking counts as 0.
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    assert close(mean_ndcg({"q1": ["a"]}, qrels, 10), 0.5)
    assert close(mean_recall({"q1": ["a"], "q2": ["x", "b"]}, qrels, 1), 0.5)
    assert close(mean_mrr({"q1": ["x", "a"], "q2": ["b"], "q3": ["c"]}, qrels, 10), 0.75)

    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert close(percentile(list(range(1, 101)), 95), 95.05)
    print("metrics self-check: ok")


if __name__ == "__main__":
    _self_check()
