"""A LangChain retriever over a `KnowledgeBase` (`pip install 'sourcebook[langchain]'`).

    from sourcebook import KnowledgeBase
    from sourcebook.integrations.langchain import SourcebookRetriever

    retriever = SourcebookRetriever(kb=KnowledgeBase.open("kb.db"), top_k=4,
                                    search_kwargs={"collection": "handbook"})
    docs = retriever.invoke("How long is parental leave?")

Each `Document` holds the chunk's text; its metadata names the score, source, title,
section, page, location ("page 3", "slide 2: Pricing") and chunk id (`sourcebook.integrations.hit_metadata`). Only langchain-core
is needed: retrieval stays Sourcebook's (hybrid BM25 + vectors), so no LangChain
embeddings or vector store are involved.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ..kb import KnowledgeBase
from . import hit_metadata


class SourcebookRetriever(BaseRetriever):
    """Retrieves chunks from a Sourcebook knowledge base, best first.

    `search_kwargs` go to `KnowledgeBase.search` as they are: `mode`, `collection`,
    `document_ids`, `metadata` (a filter), `min_score`, `per_document`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kb: KnowledgeBase
    top_k: int = 4
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.kb.search(query, top_k=self.top_k, **self.search_kwargs)
        return [Document(page_content=hit.chunk.text, metadata=hit_metadata(hit), id=hit.chunk.id) for hit in hits]
