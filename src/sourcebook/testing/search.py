"""The SearchStore role: BM25 keyword search and cosine vector search, under the same filters.

Keyword queries are plain words: no query syntax of the engine below may leak through. A chunk
with sentence-window vectors scores the best of its own vector and its windows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sourcebook.errors import InvalidQueryError
from sourcebook.graph.models import DocumentGraph
from sourcebook.models import DocumentStatus, SearchFilter
from sourcebook.stores import Store

from .helpers import (
    DIM,
    EVERYTHING,
    MODEL,
    StoreFixtures,
    add_document,
    add_windowed_document,
    documents_of,
    ids,
    search,
    unit,
)

FILTER_CASES = [
    pytest.param(SearchFilter(), {"en2020", "de2021", "en2021", "old"}, id="none"),
    pytest.param(SearchFilter.build(collections="archive"), {"old"}, id="collection"),
    pytest.param(SearchFilter.build(collections=["docs", "archive"]), {"en2020", "de2021", "en2021", "old"},
                 id="collections"),
    pytest.param(SearchFilter.build(document_ids=["en2020", "old"]), {"en2020", "old"}, id="document-ids"),
    pytest.param(SearchFilter.build(metadata={"lang": "en"}), {"en2020", "en2021", "old"}, id="metadata-str"),
    pytest.param(SearchFilter.build(metadata={"year": 2021}), {"de2021", "en2021"}, id="metadata-int"),
    pytest.param(SearchFilter.build(metadata={"year": 2020.0}), {"en2020"}, id="metadata-float"),
    pytest.param(SearchFilter.build(metadata={"draft": True}), {"en2020"}, id="metadata-true"),
    pytest.param(SearchFilter.build(metadata={"draft": False}), {"de2021"}, id="metadata-false"),
    pytest.param(SearchFilter.build(metadata={"rating": True}), set(), id="true-is-not-1"),
    pytest.param(SearchFilter.build(metadata={"year": "2021"}), set(), id="string-is-not-number"),
    pytest.param(SearchFilter.build(collections="docs", metadata={"lang": "en", "year": 2021}), {"en2021"},
                 id="combined"),
    pytest.param(SearchFilter.build(document_ids=["en2020"], metadata={"lang": "de"}), set(), id="disjoint"),
    pytest.param(SearchFilter.build(collections="nonexistent"), set(), id="unknown-collection"),
]


class SearchStoreSuite(StoreFixtures):
    """The SearchStore contract: subclass it and override `empty_store` (see sourcebook.testing)."""

    # Keyword search ---------------------------------------------------------------------------
    @pytest.fixture
    def corpus(self, store: Store) -> Store:
        """Enough chunks that BM25's IDF separates rare terms from common ones."""
        add_document(store, "common", ["the cat sat on the mat", "the dog sat on the log", "the bird sat on the fence"])
        add_document(store, "rare", ["the aardvark sat on the mat", "a fox was running in the field"])
        add_document(store, "other", ["an owl sat in the tree", "a fish swam in the pond"], title="Zoology notes",
                     heading="Marine life")
        return store

    def test_rare_term_ranks_first(self, corpus: Store) -> None:
        results = corpus.keyword_search("the aardvark sat", 10, EVERYTHING)
        assert results[0].chunk_id == "rare#0"
        assert [r.rank for r in results] == list(range(1, len(results) + 1))
        assert all(r.score > 0 for r in results)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)

    def test_stemming_matches_word_forms(self, corpus: Store) -> None:
        assert ids(corpus.keyword_search("run", 10, EVERYTHING)) == ["rare#1"]
        assert ids(corpus.keyword_search("runs", 10, EVERYTHING)) == ["rare#1"]

    def test_any_term_matches(self, corpus: Store) -> None:
        assert set(ids(corpus.keyword_search("aardvark fox", 10, EVERYTHING))) == {"rare#0", "rare#1"}
        assert set(ids(corpus.keyword_search("aardvark unicorn", 10, EVERYTHING))) == {"rare#0"}

    def test_title_and_heading_are_searchable(self, corpus: Store) -> None:
        assert set(ids(corpus.keyword_search("zoology", 10, EVERYTHING))) == {"other#0", "other#1"}
        assert set(ids(corpus.keyword_search("marine", 10, EVERYTHING))) == {"other#0", "other#1"}

    def test_k_limits_results(self, corpus: Store) -> None:
        assert len(corpus.keyword_search("the", 2, EVERYTHING)) == 2

    @pytest.mark.parametrize("query", ["", "   ", "?!...", "-- ** ()"])
    def test_query_without_terms_finds_nothing(self, corpus: Store, query: str) -> None:
        assert corpus.keyword_search(query, 10, EVERYTHING) == []

    @pytest.mark.parametrize("query", ['"aardvark', "aardvark AND NOT", "NEAR(aardvark", "aardvark* -fox", "col:aardvark"])
    def test_query_syntax_is_inert(self, corpus: Store, query: str) -> None:
        assert "rare#0" in ids(corpus.keyword_search(query, 10, EVERYTHING))

    # Term statistics (knowledge-base-level evidence for the answerer) --------------------------
    def test_term_statistics_count_the_live_chunks_holding_each_query_term(self, corpus: Store) -> None:
        stats = corpus.term_statistics("Is the aardvark running, or the unicorn? Zoology sat")
        assert stats.chunks == 7
        # analysed as keyword_search does: stopwords dropped, Porter stems, query order; title and heading count
        assert stats.frequencies == {"aardvark": 1, "run": 1, "unicorn": 0, "zoologi": 2, "sat": 5}
        assert corpus.term_statistics("?!").frequencies == {}
        corpus.delete_document("rare")
        after = corpus.term_statistics("aardvark sat")
        assert (after.chunks, after.frequencies) == (5, {"aardvark": 0, "sat": 4})

    def test_term_statistics_of_an_empty_store(self, store: Store) -> None:
        stats = store.term_statistics("aardvark")
        assert (stats.chunks, stats.frequencies) == (0, {"aardvark": 0})

    # Vector search ----------------------------------------------------------------------------
    def test_vector_search_orders_by_cosine(self, store: Store) -> None:
        add_document(store, "d1", ["x", "y", "z"], vectors=[unit(1.0), unit(1.0, 1.0), unit(0.0, 1.0)])
        add_document(store, "d2", ["w"], vectors=[unit(-1.0)])
        results = store.vector_search(unit(1.0, 0.2), 10, EVERYTHING)
        assert ids(results) == ["d1#0", "d1#1", "d1#2", "d2#0"]
        assert [r.rank for r in results] == [1, 2, 3, 4]
        query = unit(1.0, 0.2)
        for result, vector in zip(results, [unit(1.0), unit(1.0, 1.0), unit(0.0, 1.0), unit(-1.0)]):
            assert result.score == pytest.approx(float(query @ vector), abs=1e-5)
        assert ids(store.vector_search(unit(0.0, 1.0), 2, EVERYTHING)) == ["d1#2", "d1#1"]

    def test_vector_search_of_an_empty_store(self, store: Store) -> None:
        assert store.vector_search(unit(1.0), 5, EVERYTHING) == []

    # Filters, in both searches ------------------------------------------------------------------
    @pytest.fixture
    def filtered(self, store: Store) -> Store:
        store.ensure_collection("archive", MODEL, DIM)
        add_document(store, "en2020", ["shared words"], metadata={"lang": "en", "year": 2020, "draft": True})
        add_document(store, "de2021", ["shared words"], metadata={"lang": "de", "year": 2021, "draft": False})
        add_document(store, "en2021", ["shared words"], metadata={"lang": "en", "year": 2021.0, "rating": 1})
        add_document(store, "old", ["shared words"], collection="archive", metadata={"lang": "en", "year": 1999})
        return store

    @pytest.mark.parametrize("mode", ["keyword", "vector"])
    @pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
    def test_filters(self, filtered: Store, mode: str, filters: SearchFilter, expected: set[str]) -> None:
        assert documents_of(search(filtered, mode, filters)) == expected

    @pytest.mark.parametrize("mode", ["keyword", "vector"])
    @pytest.mark.parametrize("metadata", [{"\x00key": 1}, {"": 1}, {"key": [1]}])
    def test_unusable_metadata_filters_are_invalid_queries(self, filtered: Store, mode: str, metadata: dict) -> None:
        with pytest.raises(InvalidQueryError):
            search(filtered, mode, SearchFilter.build(metadata=metadata))

    @pytest.mark.parametrize("mode", ["keyword", "vector"])
    def test_a_metadata_value_with_nul_matches_nothing(self, filtered: Store, mode: str) -> None:
        assert search(filtered, mode, SearchFilter.build(metadata={"lang": "en\x00"})) == []

    def test_searches_declared_concurrent_agree_when_run_at_once(self, filtered: Store) -> None:
        """A store that declares `concurrent_searches` answers keyword and vector searches run on
        several threads at once as it answers them one after the other, under every filter."""
        if not getattr(filtered, "concurrent_searches", False):
            pytest.skip("the store does not declare concurrent_searches")
        calls = [(mode, case.values[0]) for mode in ("keyword", "vector") for case in FILTER_CASES]
        expected = [search(filtered, mode, filters) for mode, filters in calls]
        with ThreadPoolExecutor(max_workers=4) as threads:
            for _ in range(3):
                assert list(threads.map(lambda call: search(filtered, *call), calls)) == expected

    # Sentence-window vectors ---------------------------------------------------------------------
    def test_a_chunk_scores_the_best_of_its_vector_and_its_windows(self, store: Store) -> None:
        none = np.zeros((0, DIM), np.float32)
        # d1's chunk points away from the query but one of its windows points at it; d2 is halfway.
        add_windowed_document(store, "d1", ["far"], [unit(0.0, 0.0, 0.0, 1.0)], [np.stack([unit(0.0, 1.0), unit(1.0)])])
        add_windowed_document(store, "d2", ["half"], [unit(1.0, 1.0)], [none])
        hits = store.vector_search(unit(1.0), 5, EVERYTHING)
        assert [h.chunk_id for h in hits] == ["d1#0", "d2#0"]  # each chunk once, by its best vector
        assert hits[0].score == pytest.approx(1.0) and hits[1].score == pytest.approx(2 ** -0.5)
        assert [h.rank for h in hits] == [1, 2]
        # filters keep a chunk's windows with it
        assert [h.chunk_id for h in store.vector_search(unit(1.0), 5, SearchFilter(document_ids=("d2",)))] == ["d2#0"]
        # k counts chunks, not windows
        assert [h.chunk_id for h in store.vector_search(unit(1.0), 1, EVERYTHING)] == ["d1#0"]

    def test_windows_are_replaced_and_deleted_with_their_chunks(self, store: Store) -> None:
        add_windowed_document(store, "d1", ["x"], [unit(0.0, 0.0, 0.0, 1.0)], [np.stack([unit(1.0)])])
        add_document(store, "d2", ["y"], vectors=[unit(1.0, 1.0)])
        assert store.vector_search(unit(1.0), 1, EVERYTHING)[0].chunk_id == "d1#0"
        assert store.stats()["window_vectors"] == 1
        add_document(store, "d1", ["x"], vectors=[unit(0.0, 0.0, 0.0, 1.0)])  # re-indexed without windows
        assert store.vector_search(unit(1.0), 1, EVERYTHING)[0].chunk_id == "d2#0"
        add_windowed_document(store, "d1", ["x"], [unit(0.0, 0.0, 0.0, 1.0)], [np.stack([unit(1.0)])])
        store.delete_document("d1")
        assert [h.chunk_id for h in store.vector_search(unit(1.0), 5, EVERYTHING)] == ["d2#0"]
        assert store.stats()["window_vectors"] == 0

    # The generation the query cache keys on ----------------------------------------------------
    def test_search_generation_moves_with_every_write_a_search_can_see(self, store: Store) -> None:
        """Each write that can change a result (a document's row, its chunks, its deletion, a
        collection's deletion, the graph) moves the number on; reads leave it."""
        seen = [store.search_generation()]

        def moved() -> bool:
            seen.append(store.search_generation())
            return seen[-1] != seen[-2]

        add_document(store, "d1", ["shared text"])
        assert moved()
        store.keyword_search("shared", 5, EVERYTHING)
        store.vector_search(unit(1.0), 5, EVERYTHING)
        store.get_chunks(["d1#0"])
        assert not moved()
        store.upsert_document("d1", collection="docs", source="d1.txt", title="Renamed", media_type="text/plain",
                              metadata={"lang": "en"}, status=DocumentStatus.READY)
        assert moved()
        store.replace_document_graph(DocumentGraph("d1", "offline", "hash-d1", (), (), ()))
        assert moved()
        store.delete_document("d1")
        assert moved()
        store.ensure_collection("archive", MODEL, DIM)
        add_document(store, "a1", ["x"], collection="archive")
        assert moved()
        store.delete_collection("archive")
        assert moved()
