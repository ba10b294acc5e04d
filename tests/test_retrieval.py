"""Retrieval: fusion arithmetic, options, thresholds and per-document limits."""

from __future__ import annotations

from collections import Counter

import pytest

from sourcebook import InvalidQueryError
from sourcebook.models import ScoredId
from sourcebook.retrieval import SearchOptions, reciprocal_rank_fusion


def ranking(*ids: str) -> list[ScoredId]:
    return [ScoredId(cid, rank, 1.0 / rank) for rank, cid in enumerate(ids, 1)]


def test_rrf_by_hand():
    fused = dict(reciprocal_rank_fusion([ranking("a", "b", "c"), ranking("c", "a")], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    order = [cid for cid, _ in reciprocal_rank_fusion([ranking("a", "b", "c"), ranking("c", "a")], k=60)]
    assert order == ["a", "c", "b"]


def test_rrf_k_changes_the_balance():
    lists = [ranking("x", "y"), ranking("y", "z", "x")]
    # Small k rewards top ranks: x (1st + 3rd) vs y (2nd + 1st): y wins either way; z last.
    assert [cid for cid, _ in reciprocal_rank_fusion(lists, k=1)] == ["y", "x", "z"]
    assert reciprocal_rank_fusion([], k=60) == []


@pytest.mark.parametrize(
    "kwargs", [{"mode": "semantic"}, {"top_k": 0}, {"per_document": -1}]
)
def test_invalid_options_are_rejected(kwargs):
    with pytest.raises(InvalidQueryError):
        SearchOptions(**kwargs)


def test_empty_query_is_rejected(example_kb):
    with pytest.raises(InvalidQueryError, match="empty"):
        example_kb.search("   ")


def test_min_score_applies_in_the_mode_units(example_kb):
    hits = example_kb.search("security awareness training", mode="vector", top_k=20, per_document=0)
    cut = hits[3].score
    kept = example_kb.search("security awareness training", mode="vector", top_k=20, per_document=0, min_score=cut)
    assert [h.chunk.id for h in kept] == [h.chunk.id for h in hits[:4]]
    assert all(h.score >= cut for h in kept)
    assert example_kb.search("security awareness training", mode="keyword", min_score=1e9) == []


def test_per_document_limits_chunks_of_one_document(example_kb):
    """The cap holds for the first hits; the nine example documents leave 30 hits short, so the
    next best chunks of any document follow them (the top-up)."""
    unlimited = example_kb.search("leave", mode="keyword", top_k=200, per_document=0)
    assert max(Counter(h.chunk.document_id for h in unlimited[:30]).values()) > 2
    limited = example_kb.search("leave", mode="keyword", top_k=30, per_document=2)
    capped = _first_per_document(unlimited, 30, 2)
    assert len(capped) < 30
    assert [h.chunk.id for h in limited] == _topped_up(unlimited, 30, 2)
    assert max(Counter(h.chunk.document_id for h in limited[: len(capped)]).values()) == 2
    assert [h.rank for h in limited] == list(range(1, len(limited) + 1))


def test_a_search_within_one_document_gives_top_k_hits(example_kb):
    """`search -k 5` on a knowledge base of one manual gave one hit (the per-document cap)."""
    handbook = next(d for d in example_kb.documents() if "handbook" in d.source)
    hits = example_kb.search("leave policy", top_k=5, document_ids=[handbook.id])
    assert len(hits) == 5 and {h.chunk.document_id for h in hits} == {handbook.id}


def _first_per_document(hits, top_k: int, per_document: int) -> list[str]:
    counts: dict[str, int] = {}
    kept = []
    for hit in hits:
        if counts.get(hit.chunk.document_id, 0) < per_document:
            counts[hit.chunk.document_id] = counts.get(hit.chunk.document_id, 0) + 1
            kept.append(hit.chunk.id)
    return kept[:top_k]


@pytest.mark.parametrize("per_document", [1, 2])
def test_per_document_hits_fetch_only_the_rows_they_return(example_kb, monkeypatch, per_document):
    """The hits kept per document are chosen from the chunk ids, so a search fetches top_k chunk
    rows rather than every row ranked above its last hit; the hits are those of the general path."""
    store = example_kb._store
    real = store.get_chunks
    fetched: list[int] = []
    monkeypatch.setattr(store, "get_chunks", lambda ids: fetched.append(len(ids)) or real(ids))
    everything = example_kb.search("leave policy", top_k=200, per_document=0)
    fetched.clear()
    hits = example_kb.search("leave policy", top_k=5, per_document=per_document)
    assert [hit.chunk.id for hit in hits] == _first_per_document(everything, 5, per_document)
    assert fetched == [5]


def test_a_picked_chunk_gone_before_the_fetch_falls_back_to_the_general_path(example_kb, monkeypatch):
    everything = example_kb.search("leave policy", top_k=200, per_document=0)
    gone = _first_per_document(everything, 5, 1)[1]
    store = example_kb._store
    real = store.get_chunks
    monkeypatch.setattr(store, "get_chunks", lambda ids: {k: v for k, v in real(ids).items() if k != gone})
    hits = example_kb.search("leave policy", top_k=5, per_document=1)
    expected = _first_per_document([h for h in everything if h.chunk.id != gone], 5, 1)
    assert [hit.chunk.id for hit in hits] == expected


def _topped_up(hits, top_k: int, per_document: int) -> list[str]:
    first = _first_per_document(hits, top_k, per_document)
    return first + [hit.chunk.id for hit in hits if hit.chunk.id not in first][: top_k - len(first)]


@pytest.mark.parametrize("gone", [False, True])
def test_top_up_fills_what_the_per_document_cap_leaves_with_the_next_best(example_kb, monkeypatch, gone):
    """Nine documents at one chunk each leave 20 hits 11 short: the next best chunks of any
    document follow, in one search, from the picked ids or (a chunk gone) the general path."""
    everything = example_kb.search("leave policy", top_k=200, per_document=0)
    store = example_kb._store
    if gone:
        missing = everything[0].chunk.id
        everything = everything[1:]
        real = store.get_chunks
        monkeypatch.setattr(store, "get_chunks", lambda ids: {k: v for k, v in real(ids).items() if k != missing})
    hits = example_kb._retriever.search("leave policy", SearchOptions(top_k=20, per_document=1, top_up=True))
    assert len(_first_per_document(everything, 20, 1)) < 20
    assert [hit.chunk.id for hit in hits] == _topped_up(everything, 20, 1)
    assert [hit.rank for hit in hits] == list(range(1, 21))


def test_hybrid_finds_what_each_retriever_finds_alone(example_kb):
    """An exact code only keyword search can match, and a paraphrase only vectors match."""
    exact = example_kb.search("harbor-db-replica-2", mode="hybrid", top_k=3)
    assert any("runbook" in h.chunk.source for h in exact)
    paraphrase = example_kb.search("money to spend on courses and conferences", mode="hybrid", top_k=5)
    assert any("handbook" in h.chunk.source for h in paraphrase)


def test_keyword_query_of_only_stopwords_still_searches(example_kb):
    assert len(example_kb.search("what is it", mode="keyword", top_k=3)) == 3


def test_zscore_fusion_by_hand():
    from sourcebook.retrieval import zscore_fusion

    keyword = [ScoredId("a", 1, 3.0), ScoredId("b", 2, 1.0)]  # z: a = +1, b = -1
    vector = [ScoredId("b", 1, 0.9), ScoredId("c", 2, 0.5), ScoredId("d", 3, 0.1)]  # z: b ~ 1.22, c = 0, d ~ -1.22
    fused = dict(zscore_fusion([keyword, vector], [0.5, 0.5]))
    z_hi = 0.4 / (0.32 / 3) ** 0.5  # (0.9 - 0.5) / population std
    assert fused["b"] == pytest.approx(0.5 * -1 + 0.5 * z_hi, abs=1e-6)
    assert fused["a"] == pytest.approx(0.5 * 1 + 0.5 * -z_hi, abs=1e-6)  # missing from vector: its lowest z
    assert fused["c"] == pytest.approx(0.5 * -1 + 0.5 * 0, abs=1e-6)  # missing from keyword: its lowest z
    assert [cid for cid, _ in zscore_fusion([keyword, vector], [1.0, 0.0])][:2] == ["a", "b"]
    assert zscore_fusion([[], vector], [0.5, 0.5])[0][0] == "b"


def test_fusion_methods_are_selectable(example_kb):
    assert SearchOptions().fusion == "zscore"
    options = SearchOptions(mode="hybrid", top_k=3, fusion="rrf")
    hits = example_kb._retriever.search("parental leave pay", options)
    assert all(h.score <= 2 / 61 + 1e-9 for h in hits)  # RRF scores are bounded by 2 / (k + 1)
    with pytest.raises(InvalidQueryError):
        SearchOptions(fusion="max")
