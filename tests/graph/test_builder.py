"""Building the offline graph of real documents: merging, aliases, provenance, the chunk-hash
cache, incremental rebuilds and removal."""

from __future__ import annotations

import shutil

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import EntityNotFoundError
from sourcebook.stopwords import STOPWORDS
from sourcebook.stores import open_store
from sourcebook.stores.base import Store


def test_the_example_corpus_graph_links_documents_through_entities(graph_kb: KnowledgeBase) -> None:
    names = {e.name for e in graph_kb.entities(limit=None)}
    for expected in ("Tidewater", "Driftwood", "harbor-db", "Kafka", "Aiko Tanaka", "Tobias Lindqvist", "PagerDuty",
                     "readings.raw", "Data Collection Pipeline", "AWS", "Compass"):
        assert expected in names, expected
    harbor = graph_kb.entity("harbor-db").entity
    assert harbor.documents >= 3  # architecture, runbook, meeting notes, security policy
    assert graph_kb.entity("DCP").entity.name == "Data Collection Pipeline"  # the acronym is an alias


def test_no_junk_nodes(graph_kb: KnowledgeBase) -> None:
    for entity in graph_kb.entities(limit=None):
        assert entity.key not in STOPWORDS and len(entity.key) > 1, entity
        assert entity.name not in {"Tuesday", "May", "June", "ACTION ITEMS", "The", "It"}, entity


def test_every_relation_and_mention_points_at_real_passages(graph_store: Store) -> None:
    relations = graph_store.entity_relations(["tidewater"])
    assert any(r.relation == "publishes readings to" or r.target == "kafka" for r in relations)
    chunk_ids = {c for r in relations for c in r.chunk_ids}
    chunks = graph_store.get_chunks(sorted(chunk_ids))
    assert set(chunks) == chunk_ids
    for r in relations:
        for chunk_id in r.chunk_ids:
            text = chunks[chunk_id].text.lower()
            assert r.source_name.lower() in text or r.target_name.lower() in text


def test_entity_view_shows_neighbours_with_supporting_passages(graph_kb: KnowledgeBase) -> None:
    view = graph_kb.entity("tidewater", neighbours=5)
    assert view.entity.name == "Tidewater" and view.passages
    assert all("tidewater" in c.text.lower() for c in view.passages)
    assert 0 < len(view.neighbours) <= 5
    for neighbour in view.neighbours:
        assert neighbour.passages and neighbour.entity != "tidewater"
    data = view.to_dict()
    assert data["entity"]["name"] == "Tidewater" and data["neighbours"][0]["passages"][0]["chunk_id"]


def test_every_entity_is_found_by_its_id_and_by_its_name(graph_kb: KnowledgeBase) -> None:
    # Ids are keys, and keys are not always a fixed point of normalisation ("NORTHWIND LABS"
    # has the key "northwind labs", which normalises to "Northwind Labs"'s "northwind lab").
    entities = graph_kb.entities(limit=None)
    assert {e.key for e in entities} >= {"northwind labs", "northwind lab"}
    for entity in entities:
        assert graph_kb.entity(entity.key).entity.key == entity.key
        assert graph_kb.entity(entity.name).entity.key == entity.key


def test_unknown_or_ambiguous_entities_are_typed_errors(graph_kb: KnowledgeBase) -> None:
    with pytest.raises(EntityNotFoundError, match="no entity named"):
        graph_kb.entity("Zanzibar")
    with pytest.raises(EntityNotFoundError, match="several entities"):
        graph_kb.entity("ea")


def test_rebuilds_are_incremental_and_removal_prunes(tmp_path, example_docs) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("architecture-overview.md", "meeting-notes-2024-05-14.txt"):
        shutil.copy(example_docs / name, docs / name)
    with KnowledgeBase.open(tmp_path / "kb.db", graph_extractor="offline") as kb:
        kb.add(str(docs))
        first = kb.build_graph()
        assert first.documents == 2 and first.extracted == first.chunks > 0 and first.cached == 0
        again = kb.build_graph()
        assert (again.documents, again.up_to_date, again.extracted) == (0, 2, 0)
        forced = kb.build_graph(force=True)
        assert forced.extracted == 0 and forced.cached == forced.chunks  # the chunk-hash cache
        assert forced.stats == first.stats

        notes = docs / "meeting-notes-2024-05-14.txt"
        notes.write_text(notes.read_text() + "\n\nAOB\n\nZephyr Quill presented the Marlinspike roadmap to Oren Vale.\n")
        (changed,) = [r for r in kb.add(str(docs)) if r.action == "updated"]
        with open_store(kb.settings.db) as store:
            assert changed.document_id not in store.graph_documents()  # re-chunking made its graph stale
        rebuilt = kb.build_graph()
        assert rebuilt.documents == 1 and 0 < rebuilt.extracted < rebuilt.chunks  # only the new chunks paid
        assert kb.entity("Zephyr Quill").entity.documents == 1

        shared = kb.entity("harbor-db").entity.documents
        kb.remove(str(notes))
        assert kb.entity("harbor-db").entity.documents == shared - 1  # the architecture doc still supports it
        with pytest.raises(EntityNotFoundError):
            kb.entity("Zephyr Quill")  # only the removed document supported it
        assert kb.graph_stats()["documents"] == 1


def test_a_limited_graph_holds_the_most_mentioned_entities_and_the_edges_among_them(graph_kb: KnowledgeBase) -> None:
    small = graph_kb.graph(limit=10)
    ids = [n["id"] for n in small["nodes"]]
    assert ids == [e.key for e in graph_kb.entities(limit=10)]
    assert small["edges"] and all(e["source"] in ids and e["target"] in ids for e in small["edges"])
    assert len(graph_kb.graph()["nodes"]) > 10
