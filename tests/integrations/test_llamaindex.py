"""The LlamaIndex adapter against the real llama-index-core: NodeWithScore from a BaseRetriever."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.postprocessor import SimilarityPostprocessor  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode  # noqa: E402

from sourcebook.integrations.llamaindex import SourcebookRetriever  # noqa: E402


def test_nodes_follow_the_knowledge_base_ranking(example_kb):
    retriever = SourcebookRetriever(example_kb, top_k=3)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("How long is parental leave at full pay?")
    hits = example_kb.search("How long is parental leave at full pay?", top_k=3)
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert [n.node.node_id for n in nodes] == [h.chunk.id for h in hits]
    assert [n.score for n in nodes] == [h.score for h in hits]
    first = nodes[0].node
    assert first.get_content() == hits[0].chunk.text
    assert first.ref_doc_id == hits[0].chunk.document_id
    assert first.metadata["source"].endswith("employee-handbook.md")
    assert first.metadata["chunk_id"] == hits[0].chunk.id
    # What an LLM would read: the section, not the bookkeeping.
    for_llm = first.get_content(metadata_mode=MetadataMode.LLM)
    assert f"section: {first.metadata['section']}" in for_llm and "chunk_id" not in for_llm


def test_search_kwargs_and_postprocessors(example_kb):
    retriever = SourcebookRetriever(example_kb, top_k=6, mode="vector", per_document=0)
    nodes = retriever.retrieve(QueryBundle("What must I do if I lose my laptop?"))
    assert len(nodes) == 6
    assert all(-1.0 <= n.score <= 1.0 for n in nodes)  # vector mode: cosine similarities
    cutoff = nodes[2].score
    kept = SimilarityPostprocessor(similarity_cutoff=cutoff).postprocess_nodes(nodes)
    assert [n.node.node_id for n in kept] == [n.node.node_id for n in nodes if n.score >= cutoff]


def test_async_retrieve(example_kb):
    nodes = asyncio.run(SourcebookRetriever(example_kb, top_k=1).aretrieve("password manager"))
    assert nodes[0].node.metadata["source"].endswith("security-policy.md")
