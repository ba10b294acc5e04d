"""Usage per tenant and key, counted where the cost is paid, and quotas that refuse with 429
(issue 18: "a tenant over its quota gets 429 while another tenant is served; usage figures match
the counted calls exactly")."""

from __future__ import annotations

import json
import time

import pytest

from sourcebook.server.config import Quota
from sourcebook.settings import Settings
from sourcebook.usage import today
from tests.mock_servers import MockServer, OpenAIProtocol
from tests.mock_servers.core import Reply
from tests.server.conftest import ApiFactory, wait_ready
from tests.server.test_api import HANDBOOK, NOTE, upload

QUESTION = {"question": "How many days of annual leave do full-time employees get?"}


def test_usage_matches_the_calls_made_exactly(make_api: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai")
    with MockServer(OpenAIProtocol()) as llm:
        llm.default = Reply("Full-time employees receive 27 days of annual leave [1].", input_tokens=120, output_tokens=9)
        settings = Settings(llm="openai:model-x", llm_base_urls={"openai": llm.url + "/v1"}, llm_follow_ups=False)
        api = make_api(settings=settings, query_cache_entries=0)
        api.kb.add(str(HANDBOOK))  # the library records nothing: not in the usage below
        model = api.kb.embedder.inner  # count what reaches the model, to compare with what was recorded
        seen = {"calls": 0, "texts": 0}

        def counting(method, texts_of):  # type: ignore[no-untyped-def]
            def call(*args, **kwargs):  # type: ignore[no-untyped-def]
                seen["calls"] += 1
                seen["texts"] += texts_of(args[0])
                return method(*args, **kwargs)
            return call

        monkeypatch.setattr(model, "embed_documents", counting(model.embed_documents, len))
        monkeypatch.setattr(model, "embed_query", counting(model.embed_query, lambda _: 1))
        admin = api.key("default", "admin")
        known = {key.id for key in api.keys.list()}
        reader = api.key("default", "read")
        [reader_id] = {key.id for key in api.keys.list()} - known
        with api.client(reader) as client:
            for query in ("annual leave", "parental leave", "expenses"):
                assert client.post("/v1/search", json={"query": query}).status_code == 200
            assert client.post("/v1/search", json={"query": "leave", "mode": "keyword"}).status_code == 200
            assert client.post("/v1/ask", json=QUESTION).status_code == 200
            with client.stream("POST", "/v1/ask/stream", json=QUESTION) as response:
                response.read()
            assert client.get("/v1/usage").status_code == 403  # a reader may not see every key's usage
        with api.client(admin) as client:
            rows = client.get("/v1/usage").json()
        calls = llm.chat_requests()
    assert rows["tenant"] == "default" and {row["day"] for row in rows["usage"]} == {today()}
    row = {r["api_key"]: r for r in rows["usage"]}[reader_id]
    assert row["requests"] == 7  # 4 searches, 2 answers, and the usage read it was refused (403, not a quota)
    assert row["llm_calls"] == len(calls) == 2
    assert (row["input_tokens"], row["output_tokens"]) == (240, 18)
    assert (row["embedding_calls"], row["embedded_texts"]) == (seen["calls"], seen["texts"])
    assert row["embedding_calls"] >= 3 + 2  # at least the 3 hybrid queries and the 2 questions


def test_a_tenant_over_its_quota_gets_429_while_another_is_served(make_api: ApiFactory) -> None:
    api = make_api(tenant_quotas={"acme": Quota(requests_per_day=3)}, quota_tokens_per_month=10**9)
    acme, globex = api.key("acme", "admin"), api.key("globex", "admin")
    with api.client(acme) as client:
        answers = [client.post("/v1/search", json={"query": f"leave {i}"}) for i in range(5)]
        assert [r.status_code for r in answers] == [200, 200, 200, 429, 429]
        refused = answers[-1]
        assert refused.json()["error"]["code"] == "rate_limited"
        assert "quota of 3 requests per day" in refused.json()["error"]["message"]
        assert 0 < int(refused.headers["Retry-After"]) <= 86400
    with api.client(globex) as client:
        assert all(client.post("/v1/search", json={"query": "leave"}).status_code == 200 for _ in range(5))
    assert _stored_requests(api, "acme", [3]) == [3]  # refusals are not counted
    assert _stored_requests(api, "globex", [5]) == [5]


def _stored_requests(api, tenant: str, expected: list[int], within: float = 3.0) -> list[int]:
    """The tenant's stored request counts once they are `expected` (the server's usage buffer
    writes every second), or the last reading after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        counts = [int(row["requests"]) for row in api.kb.for_tenant(tenant).usage()]
        if counts == expected or time.monotonic() > deadline:
            return counts
        time.sleep(0.05)


def test_usage_reaches_the_store_within_a_second_and_the_api_sees_it_at_once(make_api: ApiFactory) -> None:
    """Requests' tallies are buffered, not written one transaction each: the store has them
    within the buffer's second, and GET /v1/usage writes what is pending before it reads."""
    api = make_api()
    admin = api.key("default", "admin")
    with api.client(admin) as client:
        for number in range(4):
            assert client.post("/v1/search", json={"query": f"leave {number}"}).status_code == 200
        listed = client.get("/v1/usage").json()["usage"]
        assert sum(row["requests"] for row in listed) == 4  # the four searches; this request ends after
        started = time.monotonic()
        assert _stored_requests(api, "default", [5]) == [5]
        assert time.monotonic() - started < 2.5


def test_ingestion_jobs_count_their_embedding(make_api: ApiFactory) -> None:
    api = make_api()
    with api.client(api.key("default", "write")) as client:
        queued = upload(client, [("lunch.md", NOTE)]).json()["documents"]
        assert [d["status"] for d in wait_ready(client, [d["id"] for d in queued])] == ["ready"]
    rows = {row["api_key"]: row for row in api.kb.usage()}
    assert rows[""]["embedding_calls"] >= 1 and rows[""]["embedded_texts"] >= 1  # the job, no key
    assert json.dumps(rows)  # plain JSON values
