"""URL fetching against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pytest

from sourcebook.errors import BlockedURLError, FetchError
from sourcebook.loaders import parse, read_source
from sourcebook.loaders import url as url_module
from sourcebook.loaders.url import fetch_url, is_blocked_address
from sourcebook.settings import Settings

if TYPE_CHECKING:
    from conftest import LocalServer

PAGE = b"<html><head><title>Remote</title></head><body><main><h1>Hello</h1><p>From the server.</p></main></body></html>"


def test_fetch_and_parse_html(http_server: LocalServer, local_settings: Settings) -> None:
    http_server.add("/page", body=PAGE, headers={"Content-Type": "text/html; charset=utf-8"})
    url = http_server.url("/page")
    raw = read_source(url, local_settings)
    assert raw.source == url
    assert raw.media_type == "text/html"
    assert raw.metadata == {"url": url, "final_url": url, "content_type": "text/html; charset=utf-8"}
    doc = parse(raw)
    assert doc.title == "Remote"
    assert [b.text for b in doc.blocks] == ["Hello", "From the server."]
    assert doc.metadata["final_url"] == url


def test_redirects_are_followed_and_the_source_stays_as_given(
    http_server: LocalServer, local_settings: Settings
) -> None:
    http_server.add("/old", status=301, headers={"Location": "/new/guide.md"})
    http_server.add("/new/guide.md", body=b"# Guide\n\nMoved.", headers={"Content-Type": "text/plain"})
    raw = fetch_url(http_server.url("/old"), local_settings)
    assert raw.source == http_server.url("/old")
    assert raw.metadata["final_url"] == http_server.url("/new/guide.md")
    assert parse(raw).media_type == "text/markdown"  # extension of the final URL


def test_too_many_redirects(http_server: LocalServer, local_settings: Settings) -> None:
    http_server.add("/loop", status=302, headers={"Location": "/loop"})
    with pytest.raises(FetchError, match="more than 5 redirects"):
        fetch_url(http_server.url("/loop"), local_settings)
    assert len(http_server.requested) == 6


def test_loopback_is_refused_by_default(http_server: LocalServer) -> None:
    http_server.add("/page", body=PAGE)
    with pytest.raises(BlockedURLError, match=r"non-public address 127\.0\.0\.1") as info:
        fetch_url(http_server.url("/page"), Settings(allow_private_urls=False))
    assert info.value.code == "blocked_url"
    assert http_server.requested == []


def test_redirect_to_a_private_address_is_refused(http_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each hop is checked: a public page may not bounce the fetcher into the private network.

    The server is really on 127.0.0.1; the resolver used by the check is told that the
    literal 127.0.0.1 is a public host so that the first hop passes, while `localhost`,
    the redirect target, resolves as usual.
    """
    real_resolve = url_module.resolve_host
    monkeypatch.setattr(
        url_module,
        "resolve_host",
        lambda host, port: ["93.184.216.34"] if host == "127.0.0.1" else real_resolve(host, port),
    )
    http_server.add("/public", status=302, headers={"Location": http_server.url("/admin", host="localhost")})
    http_server.add("/admin", body=b"secrets")
    with pytest.raises(BlockedURLError, match="localhost resolves to the non-public address"):
        fetch_url(http_server.url("/public"), Settings(allow_private_urls=False))
    assert http_server.requested == ["/public"]


@pytest.mark.parametrize("status", [404, 500])
def test_error_status(http_server: LocalServer, local_settings: Settings, status: int) -> None:
    http_server.add("/x", b"nope", status=status)
    with pytest.raises(FetchError, match=f"HTTP {status}"):
        fetch_url(http_server.url("/x"), local_settings)


def test_unreachable_server(local_settings: Settings) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FetchError, match="cannot fetch") as info:
        fetch_url(f"http://127.0.0.1:{port}/", local_settings)
    assert info.value.source == f"http://127.0.0.1:{port}/"


def test_timeout(http_server: LocalServer) -> None:
    http_server.add("/slow", body=b"late", delay=1.0)
    with pytest.raises(FetchError, match=r"timed out after 0\.2 s"):
        fetch_url(http_server.url("/slow"), Settings(allow_private_urls=True, url_timeout=0.2))


def test_oversize_body_refused_from_content_length(http_server: LocalServer, local_settings: Settings) -> None:
    http_server.add("/big", body=b"x" * 20_000)
    with pytest.raises(FetchError, match="20,000 bytes, over the limit of 10,000 bytes"):
        fetch_url(http_server.url("/big"), local_settings)


def test_oversize_body_refused_while_streaming(http_server: LocalServer, local_settings: Settings) -> None:
    http_server.add("/big", body=b"x" * 50_000, send_length=False)
    with pytest.raises(FetchError, match="body is over the limit of 10,000 bytes"):
        fetch_url(http_server.url("/big"), local_settings)


@pytest.mark.parametrize("url", ["ftp://example.com/file.txt", "file:///etc/passwd", "http:///nohost", "http://[::1"])
def test_only_http_urls_with_a_host(url: str, local_settings: Settings) -> None:
    with pytest.raises(FetchError):
        read_source(url, local_settings)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.10", "169.254.169.254", "0.0.0.0",
        "224.0.0.1", "100.64.0.1", "240.0.0.1", "::1", "fe80::1%eth0", "fc00::1", "::", "::ffff:127.0.0.1",
    ],
)  # fmt: skip
def test_non_public_addresses_are_blocked(address: str) -> None:
    assert is_blocked_address(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert not is_blocked_address(address)
