"""Graph-augmented retrieval on the example corpus's graph."""

from __future__ import annotations

from sourcebook import KnowledgeBase
from sourcebook.graph.search import graph_ranking, seed_entities
from sourcebook.models import SearchFilter
from sourcebook.stores.base import Store


def test_question_entities_are_found_longest_first(graph_store: Store) -> None:
    seeds = {e.name for e in seed_entities(graph_store, "Does harbor-db replicate to harbor-db-replica-2 via Kafka?")}
    assert {"harbor-db", "harbor-db-replica-2", "Kafka"} <= seeds
    assert "Aiko Tanaka" in {e.name for e in seed_entities(graph_store, "What did Aiko plan?")}  # given name
    assert "Data Collection Pipeline" in {e.name for e in seed_entities(graph_store, "What feeds the DCP?")}
    assert seed_entities(graph_store, "What is the weather like?") == []


def test_lower_case_words_do_not_match_capitalised_names_in_a_cased_question(graph_store: Store) -> None:
    starters = {e.name for e in seed_entities(graph_store, "What do new starters get on Day one?")}
    assert "Starter" not in starters
    assert "Starter" in {e.name for e in seed_entities(graph_store, "what does the starter plan cost")}


def test_graph_ranking_pulls_chunks_mentioning_the_entities(graph_store: Store) -> None:
    ranking = graph_ranking(graph_store, "Who works on Driftwood?", 10)
    chunks = graph_store.get_chunks([r.chunk_id for r in ranking])
    assert ranking and [r.rank for r in ranking] == list(range(1, len(ranking) + 1))
    assert "driftwood" in chunks[ranking[0].chunk_id].text.lower()
    assert {c.source.rsplit("/", 1)[-1] for c in chunks.values()} >= {"architecture-overview.md", "beacon-2.9-release-notes.md"}


def test_graph_ranking_honours_filters(graph_kb: KnowledgeBase, graph_store: Store) -> None:
    notes = next(d for d in graph_kb.documents() if d.source.endswith("meeting-notes-2024-05-14.txt"))
    ranking = graph_ranking(graph_store, "harbor-db and Kafka and Aiko Tanaka", 50, SearchFilter.build(document_ids=[notes.id]))
    assert all(r.chunk_id.startswith(notes.id) for r in ranking)


def test_the_second_hop_leaves_the_first_hits_document(graph_kb: KnowledgeBase, graph_store: Store) -> None:
    question = "How long does a failover take for the database whose switchover is planned for 7-8 September?"
    first = graph_kb.search(question, mode="hybrid", per_document=0, top_k=3)
    # the bridge (the meeting notes' switchover date) is among the first hits; with pair windows
    # the runbook's failover chunk itself ranks first, so the first hop already holds the answer
    assert any("7-8 September" in hit.chunk.text for hit in first)
    ranking = graph_ranking(graph_store, question, 10, first_hop=[h.chunk.id for h in first])
    assert ranking[0].chunk_id == first[0].chunk.id  # the hop that links leads
    sources = {c.source.rsplit("/", 1)[-1] for c in graph_store.get_chunks([r.chunk_id for r in ranking]).values()}
    assert "incident-response-runbook.md" in sources  # harbor-db's failover lives there


def test_search_modes_report_the_graph_retriever(graph_kb: KnowledgeBase) -> None:
    question = "Which Kafka topic does Tidewater publish to?"
    for hits in (graph_kb.search(question, mode="graph"), graph_kb.search(question, graph=True)):
        assert hits and "readings.raw" in " ".join(h.chunk.text for h in hits[:3])
        assert any(h.graph_rank is not None for h in hits)
        assert "graph" in next(h for h in hits if h.graph_rank is not None).to_dict()["retrievers"]
    plain = graph_kb.search(question)
    assert all(h.graph_rank is None and "graph" not in h.to_dict()["retrievers"] for h in plain)
