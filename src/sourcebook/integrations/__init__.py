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
    """What a framework's document/node carries beside the text: the hit's JSON contract
    (score, rank, source, title, heading_path, page, chunk_id, document_id, ...) minus the
    text itself and the per-retriever details, plus `section`, the heading path as one string."""
    data = {key: value for key, value in hit.to_dict().items() if key not in ("text", "retrievers")}
    data["section"] = " > ".join(hit.chunk.heading_path)
    return data
