"""A real uvicorn server on 127.0.0.1 (a free port), in a thread of the test process.

A thread rather than a subprocess so the embedding model loads once for all server tests;
tests/server/test_serve_cli.py starts `sourcebook serve` as a real process too.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from sourcebook import KnowledgeBase, Settings
from sourcebook.apikeys import KeyStore, make_grants
from sourcebook.server import ServerSettings, create_app
from sourcebook.stores.sqlite import SQLiteKeyStore


class LiveServer:
    """`with LiveServer(app) as server:` -- `server.url`; stopped (and its lifespan run) on exit."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(20)
        self._sock.close()


@dataclass
class Api:
    """A running server over one knowledge base, its key store, and clients by key."""

    url: str
    kb: KnowledgeBase
    keys: KeyStore | None

    def client(self, secret: str | None = None, headers: dict[str, str] | None = None) -> httpx.Client:
        auth = {"Authorization": f"Bearer {secret}"} if secret else {}
        return httpx.Client(base_url=self.url, headers={**auth, **(headers or {})}, timeout=60)

    def key(self, tenant: str = "default", role: str = "admin", *collections: str) -> str:
        assert self.keys is not None
        return self.keys.create("test", tenant, make_grants(role, collections)).secret


def wait_ready(client: httpx.Client, document_ids: list[str], timeout: float = 120) -> list[dict[str, Any]]:
    """Poll GET /v1/documents/{id} until every document is ready or in error."""
    deadline = time.monotonic() + timeout
    while True:
        docs = [client.get(f"/v1/documents/{i}").json() for i in document_ids]
        if all(d["status"] in ("ready", "error") for d in docs):
            return docs
        assert time.monotonic() < deadline, f"documents still not processed: {docs}"
        time.sleep(0.1)


def sse_events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """The (event, JSON data) pairs of a server-sent event stream, read to its end."""
    events: list[tuple[str, dict[str, Any]]] = []
    name, data = "message", []
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            events.append((name, json.loads("\n".join(data))))
            name, data = "message", []
    return events


ApiFactory = Callable[..., Api]


@pytest.fixture
def make_api(tmp_path: Path) -> Iterator[ApiFactory]:
    """`make_api(auth=True, settings=..., **server_settings)` starts a server over a fresh knowledge base."""
    opened: list[tuple[LiveServer, KnowledgeBase, KeyStore | None]] = []

    def make(auth: bool = True, settings: Settings | None = None, **server: Any) -> Api:
        db = tmp_path / f"kb{len(opened)}.db"
        kb = KnowledgeBase.open(db, settings)
        keys = SQLiteKeyStore(str(db)) if auth else None
        live = LiveServer(create_app(kb, ServerSettings(auth=auth, log_json=False, **server), keys)).__enter__()
        opened.append((live, kb, keys))
        return Api(live.url, kb, keys)

    yield make
    for live, kb, keys in opened:
        live.__exit__()
        if keys is not None:
            keys.close()
        kb.close()
