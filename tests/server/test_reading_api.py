"""Summaries and related content over HTTP: the routes' contracts, collection-scoped keys, tenants,
and the OpenAPI schema."""

from __future__ import annotations

from pathlib import Path

from .conftest import ApiFactory

DOCS = {
    ("hr", "leave.md"): "# Annual leave\n\nFull-time employees get 27 days of annual leave per year. "
                        "Leave requests go to your manager two weeks ahead.\n",
    ("hr", "holidays.md"): "# Holidays\n\nStaff take paid holidays of 27 days a year plus bank holidays.\n",
    ("board", "plans.md"): "# Plans\n\nThe merger with Contoso closes in June. Annual leave policy is unchanged by it.\n",
}


def _add(api, tmp_path: Path) -> dict[str, str]:
    ids = {}
    for (collection, name), text in DOCS.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        (result,) = api.kb.add(str(path), collection)
        ids[name] = result.document_id
    return ids


def test_summaries_and_related_respect_collection_scoped_keys(make_api: ApiFactory, tmp_path: Path) -> None:
    api = make_api()
    ids = _add(api, tmp_path)
    with api.client(api.key()) as admin:
        summary = admin.get(f"/v1/documents/{ids['leave.md']}/summary")
        assert summary.status_code == 200, summary.text
        data = summary.json()
        assert data["document_id"] == ids["leave.md"] and data["summarizer"] == "extractive"
        assert data["citations"][0].keys() >= {"n", "chunk_id", "quote", "page"} and "27 days" in data["summary"]
        assert admin.get(f"/v1/documents/{ids['leave.md']}/summary").json()["cached"] is True
        everything = admin.get(f"/v1/documents/{ids['leave.md']}/related").json()["documents"]
        assert {d["document_id"] for d in everything} == {ids["holidays.md"], ids["plans.md"]}
        only_hr = admin.get(f"/v1/documents/{ids['leave.md']}/related", params={"collection": "hr"}).json()
        assert [d["document_id"] for d in only_hr["documents"]] == [ids["holidays.md"]]
        assert admin.get(f"/v1/collections/hr/summary").json()["documents"] == sorted(
            [ids["leave.md"], ids["holidays.md"]], key=lambda i: api.kb.document(i).source)
        assert admin.get("/v1/collections/nope/summary").status_code == 404
        assert admin.get("/v1/documents/nope/related").status_code == 404
        wrong = admin.get(f"/v1/documents/{ids['leave.md']}/related", params={"chunk_id": f"{ids['plans.md']}#0"})
        assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "chunk_not_found"
        chunk = admin.get(f"/v1/documents/{ids['leave.md']}/related", params={"chunk_id": f"{ids['leave.md']}#0"})
        assert chunk.status_code == 200 and ids["leave.md"] not in {d["document_id"] for d in chunk.json()["documents"]}

    with api.client(api.key("default", "read", "hr")) as reader:
        assert reader.get(f"/v1/documents/{ids['plans.md']}/summary").status_code == 403
        assert reader.get("/v1/collections/board/summary").status_code == 403
        assert reader.get(f"/v1/documents/{ids['plans.md']}/related").status_code == 403
        assert reader.get("/v1/collections/hr/summary").status_code == 200
        related = reader.get(f"/v1/documents/{ids['leave.md']}/related").json()["documents"]
        assert [d["document_id"] for d in related] == [ids["holidays.md"]]  # never the board's document
        asked = reader.get(f"/v1/documents/{ids['leave.md']}/related", params={"collection": "board"})
        assert asked.status_code == 403
        answer = reader.post("/v1/ask", json={"question": "How many days of annual leave do employees get?"}).json()
        assert all(r["collection"] == "hr" for r in answer["related"])

    with api.client(api.key("acme")) as acme:
        assert acme.get(f"/v1/documents/{ids['leave.md']}/summary").status_code == 404


def test_a_pending_document_has_no_summary_yet(make_api: ApiFactory) -> None:
    api = make_api()
    record = api.kb.enqueue("later.md", "hr")
    with api.client(api.key()) as admin:
        response = admin.get(f"/v1/documents/{record.id}/summary")
        assert response.status_code == 409 and response.json()["error"]["code"] == "document_not_ready"


def test_the_routes_are_in_the_openapi_schema(make_api: ApiFactory) -> None:
    api = make_api(auth=False)
    with api.client() as client:
        schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    summary = paths["/v1/documents/{document_id}/summary"]["get"]
    assert summary["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Summary")
    assert {"403", "404", "409"} <= set(summary["responses"])
    assert "/v1/collections/{name}/summary" in paths and "/v1/documents/{document_id}/related" in paths
    assert "related" in schema["components"]["schemas"]["Answer"]["properties"]
    assert {"document_id", "source", "summary", "citations"} <= set(schema["components"]["schemas"]["Summary"]["properties"])
