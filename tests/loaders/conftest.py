"""Shared fixtures for the loader tests: real PDFs, a real local HTTP server, settings."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter

from sourcebook.settings import Settings

MakePdf = Callable[..., bytes]


@pytest.fixture
def make_pdf() -> MakePdf:
    """`make_pdf([["page 1 para", ("A heading", 18)], ["page 2 para"]], title=...)` -> PDF bytes.

    Paragraphs are set in 12 pt unless given as (text, size). An empty page list
    makes a page with a drawing and no text (a "scan").
    """

    def build(pages: Sequence[Sequence[str | tuple[str, int]]], title: str | None = None) -> bytes:
        pdf = FPDF()
        if title:
            pdf.set_title(title)
        for paragraphs in pages:
            pdf.add_page()
            if not paragraphs:
                pdf.rect(20, 20, 100, 100, style="F")
            for paragraph in paragraphs:
                text, size = paragraph if isinstance(paragraph, tuple) else (paragraph, 12)
                pdf.set_font("Helvetica", size=size)
                pdf.multi_cell(0, size / 2, text)
                pdf.ln(8)
        return bytes(pdf.output())

    return build


@pytest.fixture
def encrypt_pdf() -> Callable[..., bytes]:
    """Encrypt PDF bytes with pypdf's writer (RC4 needs no crypto library)."""

    def encrypt(data: bytes, user_password: str, algorithm: str = "RC4-128") -> bytes:
        writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
        writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm=algorithm)
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    return encrypt


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    send_length: bool = True


@dataclass
class LocalServer:
    """A real HTTP server on 127.0.0.1; tests add routes and read the request log."""

    port: int
    routes: dict[str, Route] = field(default_factory=dict)
    requested: list[str] = field(default_factory=list)
    request_headers: list[dict[str, str]] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def add(self, path: str, body: bytes = b"", status: int = 200, **options: Any) -> str:
        """Serve `body` at `path` (options: headers, delay, send_length); returns its URL."""
        self.routes[path] = Route(status, body, **options)
        return self.url(path)


def _not_modified(served: dict[str, str], asked: Any) -> bool:
    """A conditional GET's answer, as a server keeping validators gives it: 304 when the
    request's If-None-Match or If-Modified-Since names what the route serves."""
    etag, modified = served.get("ETag"), served.get("Last-Modified")
    return bool(etag and asked.get("If-None-Match") == etag) or bool(modified and asked.get("If-Modified-Since") == modified)


def _handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server.requested.append(self.path)
            route = server.routes.get(self.path, Route(404, b"not found"))
            server.request_headers.append(dict(self.headers))
            if route.status == 200 and _not_modified(route.headers, self.headers):
                route = Route(304, b"", route.headers, send_length=False)
            if route.delay:
                threading.Event().wait(route.delay)
            self.send_response(route.status)
            for name, value in route.headers.items():
                self.send_header(name, value)
            if route.send_length:
                self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            # The client may hang up early (size limit, timeout): expected in those tests.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(route.body)

        def log_message(self, format: str, *args: object) -> None:
            """Keep test output clean."""

    return Handler


@pytest.fixture
def http_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # talk to the local server directly
    state = LocalServer(port=0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def local_settings() -> Settings:
    """Settings that may fetch from this machine (the test server), with short limits."""
    return Settings(allow_private_urls=True, url_timeout=2.0, url_max_bytes=10_000)
