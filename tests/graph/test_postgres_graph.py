"""The knowledge graph end to end on the Postgres store (embedded PostgreSQL + pgvector)."""

from __future__ import annotations

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import EntityNotFoundError


def test_build_browse_search_and_prune_on_postgres(migrated_postgres_dsn, example_docs) -> None:
    with KnowledgeBase.open(migrated_postgres_dsn, graph_extractor="offline") as kb:
        kb.add([str(example_docs / "architecture-overview.md"), str(example_docs / "incident-response-runbook.md")],
               graph=True)
        assert kb.entity("harbor-db").entity.documents == 2
        assert kb.entity("DCP").entity.name == "Data Collection Pipeline"
        assert kb.build_graph().up_to_date == 2
        hits = kb.search("Which topic does Tidewater publish to?", mode="graph")
        assert any(h.graph_rank is not None for h in hits)
        assert kb.for_tenant("acme").entities() == []
        kb.remove(str(example_docs / "incident-response-runbook.md"))
        assert kb.entity("harbor-db").entity.documents == 1
        with pytest.raises(EntityNotFoundError):
            kb.entity("PagerDuty")  # only the runbook named it
        assert kb.status()["graph"]["documents"] == 1
