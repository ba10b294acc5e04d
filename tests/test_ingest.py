"""Document ids: derived from collection and source, and from the tenant but for the default one
(so the default tenant's ids stay what they were before tenants existed)."""

from __future__ import annotations

from sourcebook.ingest import document_id


def test_document_ids_differ_per_tenant_but_not_for_the_default() -> None:
    assert document_id("docs", "a.md") == document_id("docs", "a.md", "default")
    assert len({document_id("docs", "a.md", t) for t in ("default", "acme", "globex")}) == 3
