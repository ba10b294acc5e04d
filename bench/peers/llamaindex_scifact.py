"""SciFact through LlamaIndex, set up as its hybrid-search guide does, with its defaults.

VectorStoreIndex.from_documents (default SentenceSplitter, 1024-token chunks; the
in-memory SimpleVectorStore) with HuggingFaceEmbedding on all-MiniLM-L6-v2;
BM25Retriever.from_defaults over the same nodes (bm25s, English stemmer and
stopwords); QueryFusionRetriever in "reciprocal_rerank" mode with num_queries=1
(query generation needs an LLM: off, as the guide does). Each retriever returns its
top 10, the fusion keeps 10.

    bench/.venv-peers/bin/python bench/peers/llamaindex_scifact.py [--limit N]
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local folder: never ask the hub

from common import TOP_K, Record, Search, model_path, run  # noqa: E402
from llama_index.core import Document, Settings, VectorStoreIndex  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES  # noqa: E402
from llama_index.embeddings.huggingface import HuggingFaceEmbedding  # noqa: E402
from llama_index.retrievers.bm25 import BM25Retriever  # noqa: E402


def load_model() -> HuggingFaceEmbedding:
    Settings.llm = None  # no LLM anywhere (else LlamaIndex resolves OpenAI's)
    return HuggingFaceEmbedding(model_name=model_path())


def build(records: list[Record], model: object) -> dict[str, Search]:
    Settings.embed_model = model
    documents = [Document(text=r.text, doc_id=r.id) for r in records]
    index = VectorStoreIndex.from_documents(documents)
    vector = index.as_retriever(similarity_top_k=TOP_K)
    keyword = BM25Retriever.from_defaults(docstore=index.docstore, similarity_top_k=TOP_K)
    hybrid = QueryFusionRetriever(
        [vector, keyword], similarity_top_k=TOP_K, num_queries=1, mode=FUSION_MODES.RECIPROCAL_RANK, use_async=False
    )

    def searcher(retriever: object) -> Search:
        return lambda query: [n.node.ref_doc_id for n in retriever.retrieve(query)]  # type: ignore[attr-defined]

    return {"keyword": searcher(keyword), "vector": searcher(vector), "hybrid": searcher(hybrid)}


if __name__ == "__main__":
    run("LlamaIndex", version("llama-index-core"), load_model, build,
        "VectorStoreIndex (SentenceSplitter defaults) + BM25Retriever + QueryFusionRetriever(reciprocal_rerank), top 10 each")
