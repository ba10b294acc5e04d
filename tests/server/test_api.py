"""Every /v1 route against a real server on 127.0.0.1, through httpx, with real API keys."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from sourcebook import Settings
from sourcebook.apikeys import make_grants
from tests.server.conftest import ApiFactory, sse_events, wait_ready

HANDBOOK = Path(__file__).resolve().parents[2] / "examples" / "docs" / "employee-handbook.md"
NOTE = b"# Lunch\n\nThe canteen serves lentil soup every Wednesday at noon.\n"


def upload(client, files, collection="default", **data):  # type: ignore[no-untyped-def]
    return client.post("/v1/documents", files=[("files", f) for f in files], data={"collection": collection, **data})


def test_upload_is_asynchronous_then_searchable(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        response = upload(client, [("handbook.md", HANDBOOK.read_bytes(), "text/markdown"), ("lunch.md", NOTE)],
                          meta=["team=people", "year=2024"])
        assert response.status_code == 202, response.text
        queued = response.json()["documents"]
        assert [d["status"] for d in queued] == ["pending", "pending"]
        assert [d["source"] for d in queued] == ["handbook.md", "lunch.md"]
        docs = wait_ready(client, [d["id"] for d in queued])
        assert [d["status"] for d in docs] == ["ready", "ready"]
        assert all(d["chunk_count"] > 0 and d["metadata"]["team"] == "people" and d["metadata"]["year"] == 2024 for d in docs)

        hits = client.post("/v1/search", json={"query": "lentil soup on Wednesday", "top_k": 3}).json()["hits"]
        assert hits[0]["source"] == "lunch.md"
        listed = client.get("/v1/documents", params={"status": "ready"}).json()["documents"]
        assert {d["source"] for d in listed} == {"handbook.md", "lunch.md"}
        assert client.get("/v1/documents", params={"status": "error"}).json()["documents"] == []


def test_search_matches_the_cli_contract(make_api: ApiFactory) -> None:
    api = make_api()
    api.kb.add(str(HANDBOOK))
    with api.client(api.key("default", "read")) as client:
        body = client.post("/v1/search", json={"query": "annual leave days", "top_k": 4, "mode": "hybrid"}).json()
    expected = [hit.to_dict() for hit in api.kb.search("annual leave days", top_k=4, mode="hybrid")]
    assert body == {"query": "annual leave days", "hits": expected}
    assert {"rank", "score", "document_id", "source", "title", "chunk_id", "text", "heading_path", "page"} <= set(expected[0])


def test_ask_json_and_abstention(make_api: ApiFactory) -> None:
    api = make_api()
    api.kb.add(str(HANDBOOK))
    with api.client(api.key("default", "read")) as client:
        answer = client.post("/v1/ask", json={"question": "How many days of annual leave do employees get?"}).json()
        assert not answer["abstained"] and "27" in answer["answer"]
        assert answer["citations"][0]["source"].endswith("employee-handbook.md")
        again = api.kb.ask("How many days of annual leave do employees get?").to_dict()
        assert again.pop("usage") == {"cached": True}  # the server's query cache served the same answer
        assert {key: value for key, value in answer.items() if key != "usage"} == again
        unknown = client.post("/v1/ask", json={"question": "What is the airspeed of an unladen swallow?"}).json()
        assert unknown["abstained"]


def test_ask_streams_tokens_then_the_answer(make_api: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.mock_servers import MockServer, OpenAIProtocol
    from tests.mock_servers.core import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "test-openai")
    with MockServer(OpenAIProtocol()) as llm:
        llm.default = Reply("Full-time employees receive 27 days of annual leave [1].")
        settings = Settings(llm="openai:model-x", llm_base_urls={"openai": llm.url + "/v1"}, llm_follow_ups=False)
        api = make_api(settings=settings)
        api.kb.add(str(HANDBOOK))
        with api.client(api.key("default", "read")) as client:
            question = {"question": "How many days of annual leave do full-time employees get?"}
            with client.stream("POST", "/v1/ask/stream", json=question) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                events = sse_events(response)
    names = [name for name, _ in events]
    assert names[-1] == "answer" and set(names[:-1]) == {"token"} and len(names) > 3
    streamed = "".join(data["text"] for name, data in events if name == "token")
    final = events[-1][1]
    assert streamed == "Full-time employees receive 27 days of annual leave [1]."
    assert final["answer"] == streamed and final["answerer"] == "openai:model-x"
    assert final["citations"][0]["n"] == 1 and final["usage"]["output_tokens"] > 0


def test_document_routes(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        doc_id = upload(client, [("lunch.md", NOTE)]).json()["documents"][0]["id"]
        with client.stream("GET", f"/v1/documents/{doc_id}/events") as response:
            statuses = [data["status"] for name, data in sse_events(response) if name == "status"]
        assert statuses[-1] == "ready" and set(statuses) <= {"pending", "processing", "ready"}

        document = client.get(f"/v1/documents/{doc_id}").json()
        assert document["status"] == "ready" and document["chunk_count"] == 1
        detail = client.get(f"/v1/documents/{doc_id}/chunks").json()
        assert "lentil soup" in detail["chunks"][0]["text"]

        reindexed = client.post(f"/v1/documents/{doc_id}/reindex")
        assert reindexed.status_code == 202 and reindexed.json()["documents"][0]["status"] == "pending"
        assert wait_ready(client, [doc_id])[0]["status"] == "ready"

        assert client.delete(f"/v1/documents/{doc_id}").status_code == 204
        gone = client.get(f"/v1/documents/{doc_id}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "document_not_found"
        assert client.delete(f"/v1/documents/{doc_id}").status_code == 404


def test_a_bad_file_ends_in_error_with_its_reason(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        docs = upload(client, [("data.bin", bytes(range(256)) * 4, "application/octet-stream")]).json()["documents"]
        [document] = wait_ready(client, [docs[0]["id"]])
    assert document["status"] == "error" and document["error"]


def test_add_by_url(make_api: ApiFactory, tmp_path: Path) -> None:
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    (tmp_path / "page.html").write_text("<html><head><title>Parking</title></head><body><h1>Parking</h1>"
                                        "<p>Bicycles park in the basement rack by the lift.</p></body></html>")

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        api = make_api(settings=Settings(allow_private_urls=True))
        url = f"http://127.0.0.1:{httpd.server_address[1]}/page.html"
        with api.client(api.key()) as client:
            response = client.post("/v1/documents/urls", json={"urls": [url], "collection": "web"})
            assert response.status_code == 202
            [document] = wait_ready(client, [response.json()["documents"][0]["id"]])
            assert document["status"] == "ready" and document["collection"] == "web" and document["title"] == "Parking"
            bad = client.post("/v1/documents/urls", json={"urls": ["file:///etc/passwd"]})
            assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_collections(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        created = client.post("/v1/collections", json={"name": "handbook"})
        assert created.status_code == 201 and created.json()["document_count"] == 0
        assert created.json()["embedding_model"] == api.kb.embedder.name
        assert client.post("/v1/collections", json={"name": "handbook"}).status_code == 409
        assert client.post("/v1/collections", json={"name": "../x"}).status_code == 422
        upload(client, [("lunch.md", NOTE)], collection="handbook")
        names = [c["name"] for c in client.get("/v1/collections").json()["collections"]]
        assert names == ["handbook"]
        assert client.delete("/v1/collections/handbook").status_code == 204
        assert client.get("/v1/collections").json()["collections"] == []
        missing = client.delete("/v1/collections/handbook")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "collection_not_found"


def test_chat_sessions(make_api: ApiFactory) -> None:
    api = make_api()
    api.kb.add(str(HANDBOOK))
    with api.client(api.key("default", "read")) as client:
        session = client.post("/v1/chat/sessions", json={"title": "leave"})
        assert session.status_code == 201
        session_id = session.json()["id"]
        reply = client.post(f"/v1/chat/sessions/{session_id}/messages", json={"content": "How many days of annual leave?"})
        assert reply.status_code == 200 and "27" in reply.json()["answer"]["answer"]
        client.post(f"/v1/chat/sessions/{session_id}/messages", json={"content": "and can I carry it over?"})
        history = client.get(f"/v1/chat/sessions/{session_id}").json()
        assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "assistant"]
        assert history["messages"][1]["answer"]["citations"] and history["session"]["message_count"] == 4
        assert [s["id"] for s in client.get("/v1/chat/sessions").json()["sessions"]] == [session_id]
        assert client.delete(f"/v1/chat/sessions/{session_id}").status_code == 403  # a reader may not delete
    with api.client(api.key("default", "write")) as writer:
        assert writer.delete(f"/v1/chat/sessions/{session_id}").status_code == 204
        missing = writer.post(f"/v1/chat/sessions/{session_id}/messages", json={"content": "hello?"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "chat_session_not_found"


def test_auth_401(make_api: ApiFactory) -> None:
    api = make_api()
    secret = api.key()
    with api.client() as anonymous:
        response = anonymous.get("/v1/documents")
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/healthz").status_code == 200  # health and metrics need no key
    with api.client("sb_not-a-key") as bad:
        assert bad.get("/v1/documents").status_code == 401
    with api.client(headers={"X-API-Key": secret}) as other_header:
        assert other_header.get("/v1/documents").status_code == 200
    assert api.keys is not None
    api.keys.revoke(secret[:12])
    with api.client(secret) as revoked:
        assert revoked.get("/v1/documents").status_code == 401


def test_roles_and_collection_scopes_403(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as admin:
        upload(admin, [("lunch.md", NOTE)], collection="hr")
        secret_id = upload(admin, [("plans.md", b"# Plans\n\nThe merger with Contoso closes in June.\n")],
                           collection="board").json()["documents"][0]["id"]
        wait_ready(admin, [secret_id])
    with api.client(api.key("default", "read", "hr")) as reader:
        assert upload(reader, [("x.md", NOTE)], collection="hr").status_code == 403
        denied = reader.post("/v1/search", json={"query": "merger", "collection": "board"})
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "forbidden"
        assert reader.get(f"/v1/documents/{secret_id}").status_code == 403
        assert {d["collection"] for d in reader.get("/v1/documents").json()["documents"]} == {"hr"}
        hits = reader.post("/v1/search", json={"query": "merger with Contoso", "per_document": 0}).json()["hits"]
        assert all(h["collection"] == "hr" for h in hits)
        assert "merger" not in reader.post("/v1/ask", json={"question": "When does the merger close?"}).json()["answer"]
        assert [c["name"] for c in reader.get("/v1/collections").json()["collections"]] == ["hr"]
        assert reader.post("/v1/collections", json={"name": "new"}).status_code == 403
    with api.client(api.key("default", "write", "hr")) as writer:
        assert upload(writer, [("x.md", NOTE)], collection="hr").status_code == 202
        assert upload(writer, [("x.md", NOTE)], collection="board").status_code == 403
        assert writer.delete("/v1/collections/hr").status_code == 403
        assert writer.delete(f"/v1/documents/{secret_id}").status_code == 403


def test_tenants_are_isolated(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key("acme")) as acme, api.client(api.key("globex")) as globex:
        doc_id = upload(acme, [("lunch.md", NOTE)]).json()["documents"][0]["id"]
        assert wait_ready(acme, [doc_id])[0]["status"] == "ready"
        assert acme.post("/v1/search", json={"query": "lentil soup"}).json()["hits"]
        assert globex.post("/v1/search", json={"query": "lentil soup"}).json()["hits"] == []
        assert globex.get("/v1/documents").json()["documents"] == []
        assert globex.get(f"/v1/documents/{doc_id}").status_code == 404
        assert globex.delete(f"/v1/documents/{doc_id}").status_code == 404
        assert globex.get("/v1/collections").json()["collections"] == []
        session_id = acme.post("/v1/chat/sessions", json={}).json()["id"]
        assert globex.get(f"/v1/chat/sessions/{session_id}").status_code == 404
        # the same file name in the other tenant is another document
        other = upload(globex, [("lunch.md", b"# Lunch\n\nNo canteen here.\n")]).json()["documents"][0]["id"]
        assert other != doc_id
        wait_ready(globex, [other])
        assert acme.get(f"/v1/documents/{doc_id}").json()["chunk_count"] == 1


def test_rate_limit_429(make_api: ApiFactory) -> None:
    api = make_api(rate_limit_per_second=0.5, rate_limit_burst=3)
    slow, other = api.key(), api.key()
    with api.client(slow) as client, api.client(other) as neighbour:
        statuses = [client.get("/v1/collections").status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = client.get("/v1/collections")
        assert limited.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 2
        assert neighbour.get("/v1/collections").status_code == 200  # buckets are per key
        assert "sourcebook_rate_limited_requests_total 2.0" in client.get("/metrics").text


def test_size_limits_413(make_api: ApiFactory) -> None:
    api = make_api(max_request_bytes=2048, max_upload_bytes=4096)
    with api.client(api.key()) as client:
        big_json = client.post("/v1/search", json={"query": "x" * 3000})
        assert big_json.status_code == 413 and big_json.json()["error"]["code"] == "payload_too_large"
        big_upload = upload(client, [("big.md", b"# Big\n\n" + b"word " * 2000)])
        assert big_upload.status_code == 413
        chunked = client.post("/v1/search", content=iter([b'{"query": "', b"y" * 3000, b'"}']),
                              headers={"content-type": "application/json"})
        assert chunked.status_code == 413
        assert upload(client, [("small.md", NOTE)]).status_code == 202


def test_errors_are_json_with_stable_codes(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        cases = [
            (client.post("/v1/search", content=b"{not json", headers={"content-type": "application/json"}), 422, "invalid_request"),
            (client.post("/v1/search", json={"query": "x", "top_k": 0}), 422, "invalid_request"),
            (client.post("/v1/search", json={"query": "x", "surprise": 1}), 422, "invalid_request"),
            (client.post("/v1/search", json={"query": "   "}), 422, "invalid_request"),
            (client.post("/v1/search", json={"query": "\x1c\x1f"}), 422, "invalid_request"),  # str.strip() blanks
            (client.post("/v1/search", json={"query": "x", "metadata": {"\x00": "a"}}), 422, "invalid_request"),  # as the fuzz run found
            (client.post("/v1/search", json={"query": "x", "top_k": True}), 422, "invalid_request"),  # as the fuzz run found
            (client.post("/v1/search", json={"query": "x", "min_score": False}), 422, "invalid_request"),
            (client.post("/v1/ask", json={"question": "x", "top_k": True}), 422, "invalid_request"),
            (client.get("/v1/documents", params={"status": "lost"}), 422, "invalid_request"),
            (client.get("/v1/nowhere"), 404, "not_found"),
            (client.put("/v1/search"), 405, "method_not_allowed"),
            (client.post("/v1/documents", data={"collection": "default"}), 422, "invalid_request"),
            (upload(client, [("a.md", NOTE)], meta="no-equals-sign"), 422, "invalid_request"),
            (client.post("/v1/ask", json={"question": "x", "mode": "full-context"}), 409, "llm_not_configured"),
        ]
    for response, status, code in cases:
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), response.text
        assert response.json()["error"]["message"]


def test_request_ids_metrics_and_health(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        echoed = client.get("/v1/collections", headers={"X-Request-ID": "trace-123"})
        assert echoed.headers["x-request-id"] == "trace-123"
        assert len(client.get("/v1/collections").headers["x-request-id"]) == 32
        client.post("/v1/search", json={"query": "anything"})
        client.post("/v1/search", json={"query": "anything"})  # the query cache (on in the server) serves it
        client.get("/v1/documents/nope")
        health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["auth"] is True and health["queue_depth"] == 0
        text = client.get("/metrics").text
    assert 'sourcebook_http_request_duration_seconds_count{method="GET",route="/v1/documents/{document_id}",status="404"} 1.0' in text
    assert 'sourcebook_retrieval_duration_seconds_count{mode="hybrid"} 2.0' in text
    assert 'sourcebook_query_cache_lookups_total{kind="search",result="hit"} 1.0' in text
    assert 'sourcebook_query_cache_lookups_total{kind="search",result="miss"} 1.0' in text


def test_without_auth_everyone_is_a_local_admin(make_api: ApiFactory) -> None:
    api = make_api(auth=False, settings=Settings(tenant="acme"))  # `sourcebook --tenant acme serve --no-auth`
    with api.client() as client:
        assert client.post("/v1/collections", json={"name": "notes"}).status_code == 201
        assert client.get("/healthz").json()["auth"] is False
    assert [c.name for c in api.kb.collections()] == ["notes"]
    assert api.kb.for_tenant("default").collections() == []


def test_openapi_documents_models_and_errors(make_api: ApiFactory) -> None:
    api = make_api(auth=False)
    with api.client() as client:
        schema = client.get("/openapi.json").json()
    search = schema["paths"]["/v1/search"]["post"]["responses"]
    assert search["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/SearchResponse")
    assert {"401", "403", "422", "429"} <= set(search)
    assert search["429"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    upload_responses = schema["paths"]["/v1/documents"]["post"]["responses"]
    assert "202" in upload_responses and "413" in upload_responses
    assert "text/event-stream" in schema["paths"]["/v1/ask/stream"]["post"]["responses"]["200"]["content"]


def test_a_restart_finishes_what_the_last_run_left_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from sourcebook import KnowledgeBase
    from sourcebook.jobs.base import UPLOAD_MISSING
    from sourcebook.server import ServerSettings, create_app
    from sourcebook.server.app import default_upload_dir
    from sourcebook.server.ingestion import UploadStore
    from sourcebook.stores.sqlite import SQLiteKeyStore
    from tests.server.conftest import LiveServer

    # a file in the server's working directory named like the lost upload: never to be read
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    (workdir / "lost.md").write_bytes(b"# Salaries\n\nThe chief executive earns nine million kroner.\n")
    monkeypatch.chdir(workdir)
    db = str(tmp_path / "kb.db")
    with KnowledgeBase.open(db) as kb:
        keys = SQLiteKeyStore(db)
        secret = keys.create("acme", "acme", make_grants("read")).secret
        # what a server stopped mid-queue leaves behind: rows pending, their uploaded bytes saved
        acme = kb.for_tenant("acme")
        upload_id = acme.enqueue("lunch.md", "notes").id
        UploadStore(default_upload_dir(kb)).save("acme", upload_id, io.BytesIO(NOTE), "note.md", 1 << 20)
        lost_id = acme.enqueue("lost.md", "notes").id  # its bytes are gone
        with LiveServer(create_app(kb, ServerSettings(log_json=False), keys)) as server, \
                httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as client:
            uploaded, lost = wait_ready(client, [upload_id, lost_id])
            leaked = client.post("/v1/search", json={"query": "chief executive salary kroner"}).json()["hits"]
        keys.close()
    assert uploaded["status"] == "ready" and uploaded["chunk_count"] == 1
    assert (lost["status"], lost["error"], lost["chunk_count"]) == ("error", UPLOAD_MISSING[1], 0)
    assert all("kroner" not in hit["text"] for hit in leaked)


def test_an_upload_is_saved_before_its_document_is_recorded(make_api: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    from sourcebook import KnowledgeBase
    from sourcebook.identity import document_id

    api = make_api()
    saved_at_enqueue: list[bool] = []
    enqueue = KnowledgeBase.enqueue

    def spy(kb: KnowledgeBase, source: str, collection: str = "default", **kwargs: object):  # type: ignore[no-untyped-def]
        uploads = Path(f"{api.kb.settings.db}.uploads") / kb.tenant
        saved_at_enqueue.append((uploads / document_id(collection, source, kb.tenant)).exists())
        return enqueue(kb, source, collection, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(KnowledgeBase, "enqueue", spy)
    with api.client(api.key()) as client:
        doc_id = upload(client, [("lunch.md", NOTE)], collection="notes").json()["documents"][0]["id"]
        assert wait_ready(client, [doc_id])[0]["status"] == "ready"
    assert saved_at_enqueue == [True]
    assert not [p for p in Path(f"{api.kb.settings.db}.uploads").rglob("*") if p.name.endswith(".part")]


def test_cors_allows_only_the_configured_origins(make_api: ApiFactory) -> None:
    api = make_api(cors_origins=["https://kb.example.org"])
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
    with api.client() as client:
        allowed = client.options("/v1/search", headers={"Origin": "https://kb.example.org", **preflight})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://kb.example.org"
        assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
        refused = client.options("/v1/search", headers={"Origin": "https://evil.example.com", **preflight})
        assert "access-control-allow-origin" not in refused.headers
        simple = client.get("/healthz", headers={"Origin": "https://kb.example.org"})
        assert "x-request-id" in simple.headers["access-control-expose-headers"].lower()


def test_collection_scoped_keys_see_and_touch_only_their_chat_sessions(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key()) as admin:
        ids = [upload(admin, [("lunch.md", NOTE)], collection="hr").json()["documents"][0]["id"],
               upload(admin, [("plans.md", b"# Plans\n\nThe merger with Contoso closes in June.\n")],
                      collection="board").json()["documents"][0]["id"]]
        wait_ready(admin, ids)
        everywhere = admin.post("/v1/chat/sessions", json={"title": "merger"}).json()["id"]
        admin.post(f"/v1/chat/sessions/{everywhere}/messages", json={"content": "When does the merger close?"})
        in_hr = api.kb.create_chat_session("lunch").id  # its first turn scopes it
        admin.post(f"/v1/chat/sessions/{in_hr}/messages", json={"content": "What is for lunch?", "collection": "hr"})
    untouched = api.kb.create_chat_session("not asked yet").id  # used in no collection: any key of the tenant
    with api.client(api.key("default", "read", "hr")) as reader:
        own = reader.post("/v1/chat/sessions", json={"title": "soup"}).json()
        assert own["collections"] == ["hr"]
        listed = {s["id"]: s["collections"] for s in reader.get("/v1/chat/sessions").json()["sessions"]}
        assert listed == {own["id"]: ["hr"], in_hr: ["hr"], untouched: []}
        for denied in (reader.get(f"/v1/chat/sessions/{everywhere}"),
                       reader.post(f"/v1/chat/sessions/{everywhere}/messages", json={"content": "and in July?"}),
                       reader.post(f"/v1/chat/sessions/{everywhere}/messages/stream", json={"content": "and in July?"})):
            assert denied.status_code == 403 and denied.json()["error"]["code"] == "forbidden"
        assert reader.get(f"/v1/chat/sessions/{in_hr}").json()["session"]["collections"] == ["hr"]
    with api.client(api.key("default", "write", "hr")) as writer:
        assert writer.delete(f"/v1/chat/sessions/{everywhere}").status_code == 403
        assert writer.delete(f"/v1/chat/sessions/{in_hr}").status_code == 204
    with api.client(api.key("default", "read", "board")) as board:
        assert board.get(f"/v1/chat/sessions/{own['id']}").status_code == 403
    with api.client(api.key()) as admin:
        listed = {s["id"]: s["collections"] for s in admin.get("/v1/chat/sessions").json()["sessions"]}
        assert listed == {everywhere: ["*"], own["id"]: ["hr"], untouched: []}
        assert admin.delete(f"/v1/chat/sessions/{everywhere}").status_code == 204


def test_every_parse_of_user_input_is_a_422_naming_its_field(make_api: ApiFactory) -> None:
    """Python's json reads NaN, 1e999 (inf) and "\\ud800" (a lone surrogate), and nests until its
    recursion limit; none may reach a store or a serializer (a 500) from any route."""
    api = make_api()
    deep = b"[" * 100_000 + b"]" * 100_000
    headers = {"content-type": "application/json"}
    with api.client(api.key()) as client:
        def raw(path: str, body: bytes):  # type: ignore[no-untyped-def]
            return client.post(path, content=body, headers=headers)

        cases = [
            (raw("/v1/documents/urls", b'{"urls": ["https://example.org/a"], "metadata": {"x": 1e999}}'), "body.metadata"),
            (raw("/v1/documents/urls", b'{"urls": ["https://example.org/a"], "metadata": {"x": [NaN]}}'), "body.metadata"),
            (raw("/v1/documents/urls", b'{"urls": ["https://example.org/a"], "metadata": {"x": "\\ud800"}}'), "body.metadata"),
            (raw("/v1/search", b'{"query": "x", "metadata": {"x": 1e999}}'), "body.metadata"),
            (raw("/v1/search", b'{"query": "x", "min_score": NaN}'), "body.min_score"),
            (raw("/v1/ask", b'{"question": "x", "rewrite": 0}'), "body.rewrite"),
            (raw("/v1/ask", b'{"question": "x", "rewrite": "yes"}'), "body.rewrite"),
            (raw("/v1/search", b'{"query": "x", "per_document": false}'), "body.per_document"),
            (raw("/v1/search", b'{"query": "x", "top_k": true}'), "body.top_k"),
            (raw("/v1/ask", b'{"question": "x", "top_k": true}'), "body.top_k"),
            (raw("/v1/search", b'{"query": "x", "metadata": {"a": ' + deep + b"}}"), "body"),
            (client.get("/v1/graph/entities", params={"limit": "1e999"}), "query.limit"),
        ]
        for response, field in cases:
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert error["code"] == "invalid_request" and error["message"].startswith(f"{field}"), error
        # what the form's meta cannot spell as JSON a store keeps stays text (as the CLI's --meta)
        odd = {"nested": "[" * 5000 + "]" * 5000, "nan": "NaN", "huge": "1e999", "surrogate": '"\\ud800"'}
        queued = upload(client, [("odd.md", NOTE)], meta=[f"{k}={v}" for k, v in odd.items()])
        assert queued.status_code == 202, queued.text
        document = client.get(f"/v1/documents/{queued.json()['documents'][0]['id']}").json()
        assert {k: document["metadata"][k] for k in odd} == odd


def test_405_names_every_method_of_the_path(make_api: ApiFactory) -> None:
    """GET and DELETE /v1/documents/{id} are two routes: Starlette's Allow named only the first's.
    A concrete path is matched before a templated one (OpenAPI's rule): /v1/documents/urls is the
    POST of its own path item, not a document id (schemathesis's allow_header_conformance)."""
    api = make_api()
    with api.client(api.key()) as client:
        for method, path, allowed in [("OPTIONS", "/v1/documents/x", "DELETE, GET"), ("PATCH", "/v1/documents", "GET, POST"),
                                      ("PUT", "/v1/search", "POST"), ("OPTIONS", "/v1/chat/sessions/x", "DELETE, GET"),
                                      ("OPTIONS", "/v1/documents/urls", "POST")]:
            response = client.request(method, path)
            assert (response.status_code, response.headers["allow"]) == (405, allowed)
            assert response.json()["error"]["message"] == f"{method} is not allowed on {path}; allowed: {allowed}"


def test_reindex_never_reads_an_upload_name_from_the_servers_directory(
    make_api: ApiFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        doc_id = upload(client, [("lunch.md", NOTE)]).json()["documents"][0]["id"]
        wait_ready(client, [doc_id])
        assert client.post(f"/v1/documents/{doc_id}/reindex").status_code == 202  # from its kept upload
        wait_ready(client, [doc_id])
        for kept in Path(f"{api.kb.settings.db}.uploads").rglob(doc_id):
            kept.unlink()  # the upload is gone; a file of its name sits in the server's working directory
        monkeypatch.chdir(tmp_path)
        (tmp_path / "lunch.md").write_bytes(b"# Salaries\n\nThe chief executive earns nine million kroner.\n")
        refused = client.post(f"/v1/documents/{doc_id}/reindex")
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "conflict"
        url_doc = client.post("/v1/documents/urls", json={"urls": ["http://127.0.0.1:9/page.html"]}).json()["documents"][0]["id"]
        wait_ready(client, [url_doc])
        assert client.post(f"/v1/documents/{url_doc}/reindex").status_code == 202  # a URL is read again


def test_an_empty_collection_field_of_an_upload_is_the_default_collection_as_the_schema_says(make_api: ApiFactory) -> None:
    """Form parsing treats an empty field as an absent one, so `collection=` uploads into the default
    collection; the schema said a name was required there (schemathesis's negative_data_rejection)."""
    import re

    api = make_api()
    with api.client(api.key()) as client:
        queued = upload(client, [("lunch.md", NOTE)], collection="")
        assert queued.status_code == 202 and queued.json()["documents"][0]["collection"] == "default"
        form = client.get("/openapi.json").json()["components"]["schemas"]
        [upload_form] = [schema for name, schema in form.items() if name.startswith("Body_upload_documents")]
        field = upload_form["properties"]["collection"]
        assert re.search(field["pattern"], "") and re.search(field["pattern"], "hr") and not re.search(field["pattern"], "-x")
        assert "empty" in field["description"]
