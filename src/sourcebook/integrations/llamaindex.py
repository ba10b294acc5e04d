"""A LlamaIndex retriever over a `KnowledgeBase` (`pip install 'sourcebook[llamaindex]'`).

    from sourcebook import KnowledgeBase
    from sourcebook.integrations.llamaindex import SourcebookRetriever

    retriever = SourcebookRetriever(KnowledgeBase.open("kb.db"), top_k=4, collection="handbook")
    nodes = retriever.retrieve("How long is parental leave?")
    # or: RetrieverQueryEngine.from_args(retriever, llm=...)

Each `NodeWithScore` holds a `TextNode` whose id is the chunk id, whose SOURCE
relationship points at the Sourcebook document, and whose metadata names the score,
source, title, section and page (`sourcebook.integrations.hit_metadata`). Only
llama-index-core is needed (no PyTorch, no LlamaIndex embedding model).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from ..kb import KnowledgeBase
from ..models import Hit
from . import hit_metadata

# Provenance is for the application; only the section path helps the LLM read the passage.
_HIDDEN_FROM_LLM = ["score", "rank", "chunk_id", "document_id", "collection", "position", "heading_path", "page"]


class SourcebookRetriever(BaseRetriever):
    """Retrieves chunks from a Sourcebook knowledge base, best first.

    Keyword arguments go to `KnowledgeBase.search` as they are: `mode`, `collection`,
    `document_ids`, `metadata` (a filter), `min_score`, `per_document`.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        top_k: int = 4,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **search_kwargs: Any,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.kb = kb
        self.top_k = top_k
        self.search_kwargs = search_kwargs

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.kb.search(query_bundle.query_str, top_k=self.top_k, **self.search_kwargs)
        return [NodeWithScore(node=_node(hit), score=hit.score) for hit in hits]


def _node(hit: Hit) -> TextNode:
    metadata = hit_metadata(hit)
    return TextNode(
        id_=hit.chunk.id,
        text=hit.chunk.text,
        metadata=metadata,
        excluded_llm_metadata_keys=_HIDDEN_FROM_LLM,
        excluded_embed_metadata_keys=list(metadata),  # the node is never re-embedded by LlamaIndex
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.chunk.document_id)},
    )
