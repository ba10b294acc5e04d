"""Document ids: derived from collection and source, and from the tenant but for the default one
(so the default tenant's ids stay what they were before tenants existed)."""

from __future__ import annotations

from sourcebook.identity import document_id


def test_document_ids_differ_per_tenant_but_not_for_the_default() -> None:
    assert document_id("docs", "a.md") == document_id("docs", "a.md", "default")
    assert len({document_id("docs", "a.md", t) for t in ("default", "acme", "globex")}) == 3


def test_metadata_values_parse_as_json_except_what_json_or_the_store_would_refuse() -> None:
    """--meta and the API's meta form fields share one parse: NaN, infinities and nesting too
    deep for Python's json stay text instead of failing the store's CHECK or raising
    RecursionError (an HTTP 500 before)."""
    from sourcebook.models import parse_metadata_value

    assert parse_metadata_value("3") == 3 and parse_metadata_value("true") is True
    assert parse_metadata_value("[1, 2.5]") == [1, 2.5] and parse_metadata_value("hr") == "hr"
    for text in ("NaN", "Infinity", "-Infinity", "1e999", '{"x": NaN}', "[" * 100_000 + "]" * 100_000):
        assert parse_metadata_value(text) == text
