"""What a search request costs beside the search itself (issue 17 #9: throughput and p99 under 20
clients on 2 cores). Every trip to a worker thread is a queue hand-off and two GIL switches per
request under load, so a search takes exactly one: to run the search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
import pytest

from tests.server.conftest import ApiFactory, wait_ready

HANDBOOK = b"# Leave\n\nFull-time staff get 25 days of annual leave a year.\n"


def count_thread_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions run on worker threads from now on (Starlette's and FastAPI's
    run_in_threadpool call anyio.to_thread.run_sync)."""
    trips: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counting(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        trips.append(getattr(func, "__qualname__", None) or repr(func))
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    return trips


def test_a_search_request_takes_one_trip_to_a_worker_thread(make_api: ApiFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    api = make_api()
    with api.client(api.key()) as client:
        doc = client.post("/v1/documents", files=[("files", ("leave.md", HANDBOOK, "text/markdown"))]).json()
        wait_ready(client, [doc["documents"][0]["id"]])
        trips = count_thread_trips(monkeypatch)
        hits = client.post("/v1/search", json={"query": "annual leave days", "top_k": 3}).json()["hits"]
        assert hits and hits[0]["source"] == "leave.md"
        assert len(trips) == 1, trips
        # the hits are still what the schema documents, and a refusal still one of its errors
        assert set(hits[0]) == {"rank", "score", "document_id", "source", "title", "chunk_id", "text", "heading_path",
                                "page", "location", "collection", "position", "retrievers"}
        assert client.post("/v1/search", json={"query": "x"}, headers={"Authorization": "Bearer sb_wrong"}).status_code == 401
