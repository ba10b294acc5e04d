"""The HTTP service on the Postgres store: API keys in the same database, and a tenant's key
reaching only that tenant's documents (row-level security underneath)."""

from __future__ import annotations

from pathlib import Path

import httpx

from sourcebook import KnowledgeBase
from sourcebook.apikeys import make_grants
from sourcebook.server import ServerSettings, create_app
from sourcebook.stores.postgres import PostgresKeyStore
from tests.server.conftest import LiveServer, wait_ready
from tests.server.test_api import NOTE, upload


def test_the_service_runs_on_postgres_with_keys_and_tenants(migrated_postgres_dsn: str, tmp_path: Path) -> None:
    with KnowledgeBase.open(migrated_postgres_dsn) as kb:
        keys = kb.api_keys()
        assert isinstance(keys, PostgresKeyStore)
        acme = keys.create("acme app", "acme", make_grants("admin", ())).secret
        globex = keys.create("globex app", "globex", make_grants("admin", ())).secret
        with LiveServer(create_app(kb, ServerSettings(auth=True, log_json=False, upload_dir=str(tmp_path)), keys)) as live:
            api = live.url
            with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {acme}"}, timeout=60) as client:
                queued = upload(client, [("lunch.md", NOTE)]).json()["documents"]
                assert [d["status"] for d in wait_ready(client, [d["id"] for d in queued])] == ["ready"]
                hits = client.post("/v1/search", json={"query": "lentil soup", "top_k": 3}).json()["hits"]
                assert hits[0]["source"] == "lunch.md"
                nul = upload(client, [("nul.md", NOTE)], meta=["team=a\x00b"])  # jsonb refuses NUL: was a 500
                assert (nul.status_code, nul.json()["error"]["code"]) == (422, "invalid_request"), nul.text
            with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {globex}"}, timeout=60) as client:
                assert client.post("/v1/search", json={"query": "lentil soup", "top_k": 3}).json()["hits"] == []
                assert client.get("/v1/documents").json()["documents"] == []
            with httpx.Client(base_url=api, headers={"Authorization": "Bearer nope"}, timeout=60) as client:
                assert client.get("/v1/documents").status_code == 401
        assert [k.tenant for k in keys.list()] == ["acme", "globex"]
