"""The GraphStore role: provenance per chunk, merging across documents, aliases, pruning on
removal, the extraction cache, filters, and tenant isolation.

A graph hangs off a store's documents and chunks, so this suite also writes documents.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

from sourcebook.errors import DocumentNotFoundError
from sourcebook.graph.models import Alias, DocumentGraph, Link, Mention
from sourcebook.models import SearchFilter
from sourcebook.stores import Store

from .helpers import DIM, MODEL, StoreFixtures, add_document, make_chunks, unit


def mention(
    key: str, chunk: str, count: int = 1, name: str | None = None, type_: str = "name", summary: str = ""
) -> Mention:
    """`count` mentions of entity `key` in chunk `chunk` (its name defaults to the key, title-cased)."""
    return Mention(key, name or key.title(), type_, summary, chunk, count)


def graph(
    doc: str,
    mentions: Iterable[Mention] = (),
    links: Iterable[Link] = (),
    aliases: Iterable[Alias] = (),
    extractor: str = "offline:1",
) -> DocumentGraph:
    """Document `doc`'s graph as an extractor would hand it to the store (its hash is "hash-<doc>")."""
    return DocumentGraph(doc, extractor, f"hash-{doc}", tuple(mentions), tuple(links), tuple(aliases))


def tidewater_docs(store: Store) -> None:
    """d1: Tidewater publishes to Kafka (chunk 0), Keel reads Kafka (chunk 1); d2: Kafka runs on AWS.

    d1 goes to the collection "docs", which the store must hold already; d2 to "other", made here."""
    store.ensure_collection("other", MODEL, DIM)
    add_document(store, "d1", ["Tidewater publishes to Kafka.", "Keel consumes Kafka."])
    add_document(store, "d2", ["Kafka runs on AWS."], collection="other")
    store.replace_document_graph(graph(
        "d1",
        [mention("tidewater", "d1#0"), mention("kafka", "d1#0"), mention("keel", "d1#1"), mention("kafka", "d1#1")],
        [Link("tidewater", "publishes to", "kafka", "d1#0"), Link("keel", "consumes", "kafka", "d1#1")],
    ))
    store.replace_document_graph(graph(
        "d2", [mention("kafka", "d2#0", 2), mention("aws", "d2#0", name="AWS")], [Link("kafka", "runs on", "aws", "d2#0")]
    ))


class GraphStoreSuite(StoreFixtures):
    """The GraphStore contract: subclass it and override `empty_store` (see sourcebook.testing)."""

    def test_entities_merge_across_documents_with_their_provenance(self, store: Store) -> None:
        tidewater_docs(store)
        entities = {e.key: e for e in store.list_entities()}
        assert set(entities) == {"tidewater", "kafka", "keel", "aws"}
        assert (entities["kafka"].mentions, entities["kafka"].documents) == (4, 2)
        assert store.list_entities()[0].key == "kafka"  # most mentioned first
        assert entities["aws"].name == "AWS"
        assert store.graph_stats() == {"entities": 4, "relations": 3, "documents": 2}
        assert set(store.graph_documents()) == {"d1", "d2"}
        assert store.graph_documents()["d1"] == ("offline:1", "hash-d1")

    def test_relations_know_their_supporting_chunks(self, store: Store) -> None:
        tidewater_docs(store)
        touching = {(r.source, r.relation, r.target): r for r in store.entity_relations(["kafka"])}
        assert set(touching) == {("tidewater", "publishes to", "kafka"), ("keel", "consumes", "kafka"), ("kafka", "runs on", "aws")}
        assert touching[("kafka", "runs on", "aws")].chunk_ids == ("d2#0",)
        assert touching[("tidewater", "publishes to", "kafka")].source_name == "Tidewater"
        assert [r.relation for r in store.entity_relations(["aws"])] == ["runs on"]
        assert len(store.entity_relations()) == 3 and len(store.entity_relations(limit=1)) == 1

    def test_entity_chunks_honour_search_filters(self, store: Store) -> None:
        tidewater_docs(store)
        everything = store.entity_chunks(["kafka", "keel"])
        assert sorted(everything) == [("kafka", "d1#0", "d1", 1), ("kafka", "d1#1", "d1", 1), ("kafka", "d2#0", "d2", 2), ("keel", "d1#1", "d1", 1)]
        only_other = store.entity_chunks(["kafka"], SearchFilter.build("other"))
        assert only_other == [("kafka", "d2#0", "d2", 2)]
        assert store.entity_chunks(["kafka"], SearchFilter.build(document_ids=["d1"])) == [("kafka", "d1#0", "d1", 1), ("kafka", "d1#1", "d1", 1)]
        assert store.entity_chunks(["kafka"], SearchFilter.build("nowhere")) == []
        assert store.entity_chunks(["unknown"]) == []

    def test_chunk_entities_lists_what_each_chunk_mentions(self, store: Store) -> None:
        tidewater_docs(store)
        assert store.chunk_entities(["d1#0", "d2#0", "nothing#0"]) == {
            "d1#0": {"tidewater": 1, "kafka": 1}, "d2#0": {"kafka": 2, "aws": 1},
        }
        assert store.chunk_entities([]) == {}

    def test_search_and_find_entities(self, store: Store) -> None:
        tidewater_docs(store)
        assert [e.key for e in store.list_entities(query="KAF")] == ["kafka"]
        assert [e.key for e in store.list_entities(type="name", limit=2)] == ["kafka", "aws"]
        assert [e.key for e in store.list_entities(limit=2, offset=2)] == ["keel", "tidewater"]
        found = store.find_entities(["kafka", "nothing"])
        assert set(found) == {"kafka"} and found["kafka"].documents == 2

    def test_removing_a_document_removes_what_only_it_supported(self, store: Store) -> None:
        tidewater_docs(store)
        store.delete_document("d2")
        entities = {e.key: e for e in store.list_entities()}
        assert "aws" not in entities and (entities["kafka"].mentions, entities["kafka"].documents) == (2, 1)
        assert [r.relation for r in store.entity_relations(["kafka"]) if r.target == "aws"] == []
        assert store.graph_stats() == {"entities": 3, "relations": 2, "documents": 1}
        store.delete_document("d1")
        assert store.list_entities() == [] and store.graph_stats() == {"entities": 0, "relations": 0, "documents": 0}

    def test_replacing_chunks_drops_the_documents_graph(self, store: Store) -> None:
        tidewater_docs(store)
        store.replace_chunks("d2", content_hash="new", title="t", chunks=make_chunks(["Kafka moved."]),
                             vectors=np.stack([unit(1.0)]).astype(np.float32))
        assert "d2" not in store.graph_documents()
        assert "aws" not in {e.key for e in store.list_entities()}
        assert store.find_entities(["kafka"])["kafka"].documents == 1

    def test_rewriting_a_documents_graph_replaces_it(self, store: Store) -> None:
        tidewater_docs(store)
        store.replace_document_graph(graph("d1", [mention("kafka", "d1#0")], [], extractor="llm:x"))
        entities = {e.key: e for e in store.list_entities()}
        assert set(entities) == {"kafka", "aws"} and entities["kafka"].mentions == 3
        assert store.graph_documents()["d1"] == ("llm:x", "hash-d1")
        assert [r.relation for r in store.entity_relations()] == ["runs on"]

    def test_links_and_mentions_of_unknown_chunks_are_ignored(self, store: Store) -> None:
        add_document(store, "d1", ["Only one chunk."])
        store.replace_document_graph(graph("d1", [mention("a", "d1#0"), mention("b", "d1#7")], [Link("a", "x", "b", "d1#7")]))
        assert [e.key for e in store.list_entities()] == ["a"] and store.entity_relations() == []

    def test_an_alias_merges_an_existing_node_into_its_canonical_one(self, store: Store) -> None:
        add_document(store, "d1", ["The DCP is fast.", "Tidewater feeds the DCP."])
        store.replace_document_graph(graph(
            "d1", [mention("dcp", "d1#0", name="DCP"), mention("dcp", "d1#1", name="DCP"), mention("tidewater", "d1#1")],
            [Link("tidewater", "feeds", "dcp", "d1#1")],
        ))
        add_document(store, "d2", ["DCP, short for Data Collection Pipeline."])
        store.replace_document_graph(graph(
            "d2", [mention("data collection pipeline", "d2#0", name="Data Collection Pipeline"), mention("dcp", "d2#0", name="DCP")],
            aliases=[Alias("dcp", "data collection pipeline", "d2#0")],
        ))
        entities = {e.key: e for e in store.list_entities()}
        assert set(entities) == {"data collection pipeline", "tidewater"}
        merged = entities["data collection pipeline"]
        assert (merged.name, merged.mentions, merged.documents, merged.aliases) == ("Data Collection Pipeline", 4, 2, ("dcp",))
        assert store.find_entities(["dcp"])["dcp"].key == "data collection pipeline"
        (edge,) = store.entity_relations(["data collection pipeline"])
        assert (edge.source, edge.relation, edge.target, edge.chunk_ids) == ("tidewater", "feeds", "data collection pipeline", ("d1#1",))
        # later mentions of the alias land on the canonical node
        add_document(store, "d3", ["The DCP again."])
        store.replace_document_graph(graph("d3", [mention("dcp", "d3#0", name="DCP")]))
        assert store.find_entities(["data collection pipeline"])["data collection pipeline"].documents == 3

    def test_names_and_types_improve_as_mentions_arrive(self, store: Store) -> None:
        add_document(store, "d1", ["kafka here"])
        add_document(store, "d2", ["Kafka there"])
        store.replace_document_graph(graph("d1", [mention("kafka", "d1#0", name="kafka", type_="phrase")]))
        store.replace_document_graph(graph("d2", [mention("kafka", "d2#0", name="Kafka", type_="technology", summary="A log.")]))
        (kafka,) = store.list_entities()
        assert (kafka.name, kafka.type, kafka.summary) == ("Kafka", "technology", "A log.")

    def test_graph_of_an_unknown_document_is_refused(self, store: Store) -> None:
        with pytest.raises(DocumentNotFoundError):
            store.replace_document_graph(graph("missing", [mention("x", "missing#0")]))

    def test_extraction_cache_by_chunk_hash_and_extractor(self, store: Store) -> None:
        data = {"entities": [{"name": "Kafka", "type": "name"}], "relations": []}
        store.put_graph_extractions({"h1": data}, "offline:1")
        assert store.get_graph_extractions(["h1", "h2"], "offline:1") == {"h1": data}
        assert store.get_graph_extractions(["h1"], "llm:x") == {}
        store.put_graph_extractions({"h1": {"entities": [], "relations": []}}, "offline:1")
        assert store.get_graph_extractions(["h1"], "offline:1") == {"h1": {"entities": [], "relations": []}}

    def test_tenants_never_see_each_others_graph(self, store: Store) -> None:
        tidewater_docs(store)
        store.put_graph_extractions({"h1": {"entities": [], "relations": []}}, "offline:1")
        other = store.for_tenant("acme")
        assert other.list_entities() == [] and other.entity_relations() == []
        assert other.find_entities(["kafka"]) == {} and other.entity_chunks(["kafka"]) == []
        assert other.chunk_entities(["d1#0"]) == {}
        assert other.graph_documents() == {} and other.graph_stats() == {"entities": 0, "relations": 0, "documents": 0}
        assert other.get_graph_extractions(["h1"], "offline:1") == {}
        other.ensure_collection("docs", "test-model", 4)
        add_document(other, "a1", ["Kafka at Acme."])
        other.replace_document_graph(graph("a1", [mention("kafka", "a1#0")]))
        assert other.find_entities(["kafka"])["kafka"].documents == 1
        assert store.find_entities(["kafka"])["kafka"].documents == 2
        with pytest.raises(DocumentNotFoundError):
            other.replace_document_graph(graph("d1", [mention("kafka", "d1#0")]))
