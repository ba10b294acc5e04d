"""A scripted HTTP server on 127.0.0.1 that speaks one LLM provider's wire protocol.

Tests drive the providers' real SDKs against it: each request pops the next scripted
action (a reply, an HTTP error, a hang, a malformed body) and every request is recorded,
so a test can assert what was sent and how often. A `Protocol` renders actions in one
provider's format (JSON bodies, SSE streams, error envelopes).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Reply:
    """A successful answer. `data` is a structured-output payload (JSON object) instead of text;
    `chunks` splits the text into stream events (default: word by word)."""

    text: str = ""
    data: dict[str, Any] | None = None
    input_tokens: int = 11
    output_tokens: int = 7
    chunks: tuple[str, ...] | None = None
    chunk_delay: float = 0.0

    def stream_chunks(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        text = json.dumps(self.data) if self.data is not None else self.text
        words = text.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


@dataclass(frozen=True)
class Fail:
    """An HTTP error in the provider's error envelope."""

    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Sleep before answering (longer than the client's timeout), then answer `then`."""

    seconds: float
    then: Reply | None = None


@dataclass(frozen=True)
class Malformed:
    """A 200 response whose body is not the JSON the protocol promises."""

    body: str = '{"this is": not json'


Action = Reply | Fail | Hang | Malformed


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: dict[str, Any]


class WireProtocol(Protocol):
    """One provider's formats."""

    def is_stream(self, path: str, body: dict[str, Any]) -> bool: ...

    def is_embedding(self, path: str) -> bool: ...

    def model_of(self, path: str, body: dict[str, Any]) -> str: ...

    def reply(self, reply: Reply, request: Recorded) -> dict[str, Any]: ...

    def stream_events(self, reply: Reply, request: Recorded) -> Iterable[bytes]: ...

    def embeddings(self, texts: list[str], dimension: int, request: Recorded) -> dict[str, Any]: ...

    def embedding_inputs(self, body: dict[str, Any]) -> list[str]: ...

    def error(self, status: int, message: str) -> dict[str, Any]: ...


def fake_vector(text: str, dimension: int) -> list[float]:
    """A deterministic vector per text (not normalised: clients must normalise)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [((digest[i % len(digest)] + i) % 17 - 8) / 4.0 or 0.5 for i in range(dimension)]


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class MockServer:
    """`with MockServer(protocol) as server:` -- `server.url`, `server.script(...)`, `server.requests`.

    When the script is empty, chat requests get `default` (a Reply, or a callable taking the
    recorded request and returning an action); embedding requests always succeed unless an
    action is scripted.
    """

    def __init__(self, protocol: WireProtocol, *, dimension: int = 8) -> None:
        self.protocol = protocol
        self.dimension = dimension
        self.requests: list[Recorded] = []
        self.default: Reply | Callable[[Recorded], Action] = Reply("scripted default reply")
        self._script: deque[Action] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *actions: Action) -> None:
        with self._lock:
            self._script.extend(actions)

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if not self.protocol.is_embedding(r.path)]

    def __enter__(self) -> MockServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, request: Recorded) -> Action | None:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.popleft()
        if self.protocol.is_embedding(request.path):
            return None
        return self.default(request) if callable(self.default) else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                split = urlsplit(self.path)
                body = json.loads(raw or b"{}")
                request = Recorded("POST", split.path, split.query, {k.lower(): v for k, v in self.headers.items()}, body)
                action = server._next(request)
                try:
                    self._serve(action, request)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def _serve(self, action: Action | None, request: Recorded) -> None:
                protocol = server.protocol
                if isinstance(action, Hang):
                    time.sleep(action.seconds)
                    action = action.then or Reply("late")
                if action is None:  # an embedding request with nothing scripted
                    texts = protocol.embedding_inputs(request.body)
                    self._json(200, protocol.embeddings(texts, server.dimension, request))
                elif isinstance(action, Fail):
                    self._json(action.status, protocol.error(action.status, action.message), action.headers)
                elif isinstance(action, Malformed):
                    self._raw(200, "application/json", action.body.encode())
                elif protocol.is_stream(request.path, request.body):
                    self._stream(protocol.stream_events(action, request), action.chunk_delay)
                else:
                    self._json(200, protocol.reply(action, request))

            def _json(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._raw(status, "application/json", json.dumps(data).encode(), headers)

            def _raw(self, status: int, content_type: str, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, events: Iterable[bytes], delay: float) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for event in events:
                    self.wfile.write(event)
                    self.wfile.flush()
                    if delay:
                        time.sleep(delay)

        return Handler
