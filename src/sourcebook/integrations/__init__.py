"""Adapters that let other frameworks retrieve from a `KnowledgeBase`.

`sourcebook.integrations.langchain` and `sourcebook.integrations.llamaindex` each hold a
`SourcebookRetriever` (extras `sourcebook[langchain]`, `sourcebook[llamaindex]`). Both
describe a hit with the same metadata, built here, so a chain or a query engine sees
where a passage came from (document, section, page, chunk) and how well it matched.
"""

from __future__ import annotations

from typing import Any

from ..models import Hit


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """What a framework's document/node carries beside the text: provenance and score."""
    chunk = hit.chunk
    return {
        "score": hit.score,
        "rank": hit.rank,
        "source": chunk.source,
        "title": chunk.title,
        "section": " > ".join(chunk.heading_path),
        "heading_path": list(chunk.heading_path),
        "page": chunk.page,
        "chunk_id": chunk.id,
        "document_id": chunk.document_id,
        "collection": chunk.collection,
        "position": chunk.position,
    }
