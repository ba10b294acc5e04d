"""The /v1/graph routes against a real server on 127.0.0.1: the offline graph of the example
corpus built over HTTP, then listed, searched, shown and exported; keys, roles and tenants."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sourcebook.server.context import Service
from sourcebook.server.errors import ConflictError
from tests.server.conftest import ApiFactory

HANDBOOK = Path(__file__).resolve().parents[2] / "examples" / "docs" / "employee-handbook.md"
GRAPHML = "{http://graphml.graphdrawing.org/xmlns}"


def test_build_list_search_show_and_export(make_api: ApiFactory, example_docs: Path) -> None:
    api = make_api()
    api.kb.add(str(example_docs))
    with api.client(api.key("default", "write")) as client:
        empty = client.get("/v1/graph").json()
        assert empty == {"nodes": [], "edges": [], "stats": {"entities": 0, "relations": 0, "documents": 0}, "can_build": True}

        built = client.post("/v1/graph/build")
        assert built.status_code == 200, built.text
        report = built.json()
        assert report["extractor"].startswith("offline") and report["documents"] == 9 and report["failed"] == 0
        assert report["graph"]["entities"] > 100 and report["graph"]["relations"] > 200
        again = client.post("/v1/graph/build").json()
        assert (again["documents"], again["up_to_date"]) == (0, 9)

        graph = client.get("/v1/graph", params={"limit": 30}).json()
        assert graph["stats"] == report["graph"]
        assert graph == {**api.kb.graph(30), "stats": report["graph"], "can_build": True}
        mentions = [n["mentions"] for n in graph["nodes"]]
        assert len(mentions) == 30 and mentions == sorted(mentions, reverse=True)
        ids = {n["id"] for n in graph["nodes"]}
        assert graph["edges"] and all(e["source"] in ids and e["target"] in ids and e["chunk_ids"] for e in graph["edges"])
        assert {"Tidewater", "harbor-db", "Beacon"} <= {n["name"] for n in graph["nodes"]}

        found = client.get("/v1/graph/entities", params={"q": "tide"}).json()
        assert [e["name"] for e in found["entities"]] == ["Tidewater"] and found["graph"] == report["graph"]
        acronyms = client.get("/v1/graph/entities", params={"type": "acronym", "limit": 5}).json()["entities"]
        assert len(acronyms) == 5 and {e["type"] for e in acronyms} == {"acronym"} and acronyms[0]["name"] == "API"

        tidewater = client.get("/v1/graph/entities/Tidewater").json()
        assert tidewater["entity"]["name"] == "Tidewater" and tidewater["entity"]["mentions"] >= 5
        assert all("Tidewater" in p["text"] for p in tidewater["passages"])
        assert "Beacon Platform Architecture Overview" in {p["title"] for p in tidewater["passages"]}
        kafka = next(n for n in tidewater["neighbours"] if n["entity"] == "kafka")
        assert kafka["outgoing"] and kafka["relation"] == "publishes batch to" and kafka["target_name"] == "Kafka"
        assert kafka["passages"] and all("Tidewater" in p["text"] and "Kafka" in p["text"] for p in kafka["passages"])
        assert tidewater == api.kb.entity("Tidewater").to_dict()
        by_alias = client.get("/v1/graph/entities/DCP").json()["entity"]
        assert by_alias["name"] == "Data Collection Pipeline" and "dcp" in by_alias["aliases"]
        assert len(client.get("/v1/graph/entities/Tidewater", params={"neighbours": 2}).json()["neighbours"]) == 2

        unknown = client.get("/v1/graph/entities/Atlantis")
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "entity_not_found"

        exported = client.get("/v1/graph/export", params={"format": "json"})
        assert exported.headers["content-type"].startswith("application/json")
        assert 'filename="graph.json"' in exported.headers["content-disposition"]
        whole = exported.json()
        assert len(whole["nodes"]) == report["graph"]["entities"] and len(whole["edges"]) == report["graph"]["relations"]
        graphml = client.get("/v1/graph/export", params={"format": "graphml"})
        assert graphml.headers["content-type"].startswith("application/graphml+xml")
        root = ET.fromstring(graphml.content)
        nodes = root.findall(f"{GRAPHML}graph/{GRAPHML}node")
        assert len(nodes) == len(whole["nodes"]) and len(root.findall(f"{GRAPHML}graph/{GRAPHML}edge")) == len(whole["edges"])
        names = {n.get("id"): n.findtext(f"{GRAPHML}data[@key='n_name']") for n in nodes}
        assert names["tidewater"] == "Tidewater"
        bad = client.get("/v1/graph/export", params={"format": "csv"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"


def test_keys_roles_and_tenants(make_api: ApiFactory) -> None:
    api = make_api()
    api.kb.add(str(HANDBOOK))
    with api.client() as anonymous:
        for path in ("/v1/graph", "/v1/graph/entities", "/v1/graph/entities/Leeds", "/v1/graph/export"):
            response = anonymous.get(path)
            assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized"), path
        assert anonymous.post("/v1/graph/build").status_code == 401

    with api.client(api.key("default", "read")) as reader:
        denied = reader.post("/v1/graph/build")
        assert (denied.status_code, denied.json()["error"]["code"]) == (403, "forbidden")
        assert reader.get("/v1/graph").json()["can_build"] is False
    with api.client(api.key("default", "write")) as writer:
        assert writer.post("/v1/graph/build").json()["documents"] == 1
    with api.client(api.key("default", "read")) as reader:
        names = {n["name"] for n in reader.get("/v1/graph").json()["nodes"]}
        assert "Northwind Labs" in names
        assert reader.get("/v1/graph/entities/Northwind Labs").status_code == 200
    # The graph mixes every collection, so a key limited to some may not read it (or build it).
    with api.client(api.key("default", "admin", "hr")) as limited:
        assert limited.get("/v1/graph").status_code == 403
        assert limited.get("/v1/graph/entities/Northwind Labs").status_code == 403
        assert limited.post("/v1/graph/build").status_code == 403

    with api.client(api.key("globex", "admin")) as other:
        graph = other.get("/v1/graph").json()
        assert graph["nodes"] == [] and graph["stats"]["entities"] == 0
        assert other.get("/v1/graph/entities", params={"q": "northwind"}).json()["entities"] == []
        assert other.get("/v1/graph/entities/Northwind Labs").status_code == 404
        assert other.get("/v1/graph/export").json() == {"nodes": [], "edges": []}
        assert other.post("/v1/graph/build").json()["documents"] == 0  # builds only its own (no) documents
    assert api.kb.graph_stats()["documents"] == 1


def test_bad_input_is_4xx(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        cases = [
            client.get("/v1/graph", params={"limit": 0}),
            client.get("/v1/graph/entities", params={"limit": 501}),
            client.get("/v1/graph/entities", params={"q": "a\x00b"}),
            client.get("/v1/graph/entities/"),
            client.post("/v1/graph/build", params={"extractor": "magic"}),
        ]
        assert [r.status_code for r in cases] == [422] * len(cases), [r.text for r in cases]
        llm = client.post("/v1/graph/build", params={"extractor": "llm"})
        assert (llm.status_code, llm.json()["error"]["code"]) == (409, "llm_not_configured")
        assert client.get("/v1/graph/entities/anything").json()["error"]["code"] == "entity_not_found"
        schema = client.get("/openapi.json").json()
    assert schema["paths"]["/v1/graph"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Graph")
    assert "/v1/graph/entities/{name}" in schema["paths"]
    assert {"application/json", "application/graphml+xml"} == set(schema["paths"]["/v1/graph/export"]["get"]["responses"]["200"]["content"])


def test_one_build_per_tenant_at_a_time() -> None:
    """A second build of the same tenant is refused (409) while one runs; other tenants build meanwhile."""
    service = Service(kb=None, settings=None, keys=None, queue=None, uploads=None, metrics=None, limits=None)  # type: ignore[arg-type]
    with service.graph_build("acme"):
        with pytest.raises(ConflictError, match="already running"), service.graph_build("acme"):
            pass
        with service.graph_build("globex"):
            pass
    with service.graph_build("acme"):  # free again
        pass
