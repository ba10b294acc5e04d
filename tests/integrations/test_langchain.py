"""The LangChain adapter against the real langchain-core: a BaseRetriever in LCEL chains."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from sourcebook.integrations.langchain import SourcebookRetriever  # noqa: E402

METADATA = {"score", "rank", "source", "title", "section", "heading_path", "page", "location", "chunk_id", "document_id", "collection", "position"}


def test_documents_follow_the_knowledge_base_ranking(example_kb):
    retriever = SourcebookRetriever(kb=example_kb, top_k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("How long is parental leave at full pay?")
    hits = example_kb.search("How long is parental leave at full pay?", top_k=3)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == [h.chunk.id for h in hits]
    assert [d.page_content for d in docs] == [h.chunk.text for h in hits]
    first = docs[0].metadata
    assert set(first) == METADATA
    assert first["source"].endswith("employee-handbook.md")
    assert first["title"] == "Northwind Labs Employee Handbook"
    assert first["section"] == " > ".join(first["heading_path"]) and "Leave" in first["section"]
    assert first["score"] == hits[0].score and first["rank"] == 1


def test_pdf_hits_carry_their_page(example_kb):
    docs = SourcebookRetriever(kb=example_kb, top_k=1).invoke("daily meal allowance per diem abroad")
    assert docs[0].metadata["source"].endswith("travel-policy.pdf")
    assert isinstance(docs[0].metadata["page"], int) and docs[0].metadata["page"] >= 1


def test_search_kwargs_filter_and_shape_the_search(example_kb):
    handbook = next(d for d in example_kb.documents() if d.source.endswith("employee-handbook.md"))
    retriever = SourcebookRetriever(
        kb=example_kb, top_k=5, search_kwargs={"document_ids": [handbook.id], "mode": "keyword", "per_document": 0},
    )
    docs = retriever.invoke("leave")
    assert len(docs) == 5
    assert {d.metadata["document_id"] for d in docs} == {handbook.id}


def test_composes_in_a_chain_sync_and_async(example_kb):
    retriever = SourcebookRetriever(kb=example_kb, top_k=2)
    context = retriever | RunnableLambda(lambda docs: "\n\n".join(f"[{d.metadata['title']}] {d.page_content}" for d in docs))
    text = context.invoke("What is the severity of an incident that takes the product down?")
    assert text.startswith("[") and "Incident" in text
    batched = retriever.batch(["parental leave", "password manager"])
    assert [b[0].metadata["source"].rsplit("/", 1)[1] for b in batched] == ["employee-handbook.md", "security-policy.md"]
    docs = asyncio.run(retriever.ainvoke("password manager"))
    assert docs[0].metadata["source"].endswith("security-policy.md")
