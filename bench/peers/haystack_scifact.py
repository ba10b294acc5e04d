"""SciFact through Haystack 2, set up as its hybrid-retrieval tutorial does, with its defaults.

Indexing pipeline: SentenceTransformersDocumentEmbedder (all-MiniLM-L6-v2) ->
DocumentWriter into an InMemoryDocumentStore (default BM25L, dot-product
similarity; MiniLM's vectors are normalized, so that is cosine). Query pipelines:
InMemoryBM25Retriever; SentenceTransformersTextEmbedder -> InMemoryEmbeddingRetriever;
and both into DocumentJoiner(join_mode="reciprocal_rank_fusion"). Top 10 everywhere.
No DocumentSplitter: SciFact abstracts fit the model as they are.

    bench/.venv-peers/bin/python bench/peers/haystack_scifact.py [--limit N]
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local folder: never ask the hub
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network calls from a benchmark

from common import TOP_K, Record, Search, model_path, run  # noqa: E402
from haystack import Document, Pipeline  # noqa: E402
from haystack.components.embedders import SentenceTransformersDocumentEmbedder, SentenceTransformersTextEmbedder  # noqa: E402
from haystack.components.joiners import DocumentJoiner  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever  # noqa: E402
from haystack.components.writers import DocumentWriter  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402


def load_model() -> list[object]:
    """A document embedder and one text embedder per query pipeline (a component belongs to one pipeline), warmed up."""
    path = model_path()
    embedders = [SentenceTransformersDocumentEmbedder(model=path)]
    embedders += [SentenceTransformersTextEmbedder(model=path) for _ in range(2)]
    for embedder in embedders:
        embedder.warm_up()
    return embedders


def build(records: list[Record], model: object) -> dict[str, Search]:
    document_embedder, vector_embedder, hybrid_embedder = model  # type: ignore[misc]
    store = InMemoryDocumentStore()
    indexing = Pipeline()
    indexing.add_component("embedder", document_embedder)
    indexing.add_component("writer", DocumentWriter(document_store=store))
    indexing.connect("embedder", "writer")
    indexing.run({"embedder": {"documents": [Document(id=r.id, content=r.text) for r in records]}})

    keyword = InMemoryBM25Retriever(document_store=store, top_k=TOP_K)
    vector = Pipeline()
    vector.add_component("text_embedder", vector_embedder)
    vector.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=TOP_K))
    vector.connect("text_embedder.embedding", "retriever.query_embedding")
    hybrid = Pipeline()
    hybrid.add_component("text_embedder", hybrid_embedder)
    hybrid.add_component("embedding_retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=TOP_K))
    hybrid.add_component("bm25_retriever", InMemoryBM25Retriever(document_store=store, top_k=TOP_K))
    hybrid.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=TOP_K))
    hybrid.connect("text_embedder.embedding", "embedding_retriever.query_embedding")
    hybrid.connect("embedding_retriever", "joiner")
    hybrid.connect("bm25_retriever", "joiner")

    def ids(documents: list[Document]) -> list[str]:
        return [d.id for d in documents]

    return {
        "keyword": lambda q: ids(keyword.run(query=q)["documents"]),
        "vector": lambda q: ids(vector.run({"text_embedder": {"text": q}})["retriever"]["documents"]),
        "hybrid": lambda q: ids(
            hybrid.run({"text_embedder": {"text": q}, "bm25_retriever": {"query": q}})["joiner"]["documents"]
        ),
    }


if __name__ == "__main__":
    run("Haystack", version("haystack-ai"), load_model, build,
        "InMemoryDocumentStore (BM25L) + InMemoryBM25Retriever + InMemoryEmbeddingRetriever + "
        "DocumentJoiner(reciprocal_rank_fusion), top 10 each")
