"""Fetching a URL as a RawSource, without becoming a way into the private network.

A knowledge base that fetches URLs for its users (the HTTP API, the MCP server)
must not fetch http://169.254.169.254/ or http://localhost:5432/ for them. So every
hop's host is resolved and refused unless all its addresses are public, redirects
are followed by hand to re-check each hop, and bodies are capped while streaming.

Known limit: httpx resolves the host again when connecting, so a DNS server that
answers differently the second time (DNS rebinding) is not stopped here; deploy
behind an egress firewall where that matters.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

import httpx

from ..errors import BlockedURLError, FetchError
from ..settings import Settings
from .base import RawSource, bare_media_type

MAX_REDIRECTS = 5
_HEADERS = {
    "User-Agent": "Sourcebook/0.1 (knowledge-base loader)",
    "Accept": "text/html, text/markdown, text/plain, application/pdf, */*;q=0.5",
}
_DEFAULT_PORTS = {"http": 80, "https": 443}


def fetch_url(url: str, settings: Settings) -> RawSource:
    """GET `url` (following up to MAX_REDIRECTS redirects); the RawSource keeps `url` as its source."""
    raw = _fetch(url, settings, {})
    if raw is None:
        raise FetchError(url, "HTTP 304 Not Modified to a request that was not conditional")
    return raw


def fetch_if_changed(url: str, settings: Settings, etag: str | None, last_modified: str | None) -> RawSource | None:
    """A conditional GET (`refresh`): None when the server answers 304 Not Modified to the
    validators of the last fetch (its ETag, its Last-Modified date), else the RawSource as
    `fetch_url` gives it. Every hop is checked as there."""
    conditions = {"If-None-Match": etag, "If-Modified-Since": last_modified}
    return _fetch(url, settings, {name: value for name, value in conditions.items() if value})


def _fetch(url: str, settings: Settings, conditions: dict[str, str]) -> RawSource | None:
    """GET `url` with the extra request headers `conditions`; None on 304 Not Modified. The
    metadata records the response's validators (`etag`, `last_modified`) for the next refresh."""
    current = url
    with httpx.Client(timeout=settings.url_timeout, follow_redirects=False, headers={**_HEADERS, **conditions}) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(current, url, settings.allow_private_urls)
            try:
                with client.stream("GET", current) as response:
                    if response.status_code == httpx.codes.NOT_MODIFIED:  # (a 3xx, yet no redirect)
                        return None
                    if response.is_redirect:
                        current = _redirect_target(response, url)
                        continue
                    if not response.is_success:
                        raise FetchError(url, f"HTTP {response.status_code} {response.reason_phrase} from {current}")
                    data = _read_body(response, url, settings.url_max_bytes)
            except httpx.TimeoutException:
                raise FetchError(url, f"timed out after {settings.url_timeout:g} s fetching {current}") from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise FetchError(url, f"cannot fetch {current}: {exc or type(exc).__name__}") from None
            content_type = response.headers.get("content-type")
            metadata = {"url": url, "final_url": str(response.url), "content_type": content_type}
            validators = {"etag": response.headers.get("etag"), "last_modified": response.headers.get("last-modified")}
            metadata.update((key, value) for key, value in validators.items() if value)
            media_type = bare_media_type(content_type) if content_type else None
            return RawSource.from_bytes(url, data, media_type or None, metadata)
    raise FetchError(url, f"more than {MAX_REDIRECTS} redirects")


def _redirect_target(response: httpx.Response, source: str) -> str:
    location = response.headers.get("location")
    if not location:
        raise FetchError(source, f"HTTP {response.status_code} redirect without a Location header")
    return str(urljoin(str(response.url), location))


def check_url(url: str, source: str, allow_private: bool) -> None:
    """Refuse non-http(s) URLs, and hosts with any non-public address unless allowed."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unbalanced "[" of an IPv6 host
        raise FetchError(source, f"invalid URL {url!r}: {exc}") from None
    if parts.scheme not in _DEFAULT_PORTS:
        raise FetchError(source, f"unsupported URL scheme {parts.scheme!r}: only http and https URLs can be fetched")
    if not parts.hostname:
        raise FetchError(source, f"no host in URL {url!r}")
    if allow_private:
        return
    try:
        addresses = resolve_host(parts.hostname, parts.port or _DEFAULT_PORTS[parts.scheme])
    except ValueError as exc:
        raise FetchError(source, f"invalid URL {url!r}: {exc}") from None
    except OSError as exc:
        raise FetchError(source, f"cannot resolve host {parts.hostname!r}: {exc}") from None
    for address in addresses:
        if is_blocked_address(address):
            raise BlockedURLError(
                source,
                f"{parts.hostname} resolves to the non-public address {address}; "
                "set allow_private_urls to fetch from private networks",
            )


def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (an IP literal resolves to itself)."""
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})


def is_blocked_address(address: str) -> bool:
    """True for loopback, private, link-local, reserved, multicast, unspecified and other non-global addresses."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
        or not ip.is_global  # e.g. 100.64.0.0/10, shared carrier-grade NAT space
    )


def _read_body(response: httpx.Response, source: str, limit: int) -> bytes:
    """The body, refused as soon as it is known to exceed `limit` (header first, then bytes read)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise FetchError(source, f"response is {int(declared):,} bytes, {_over_limit(limit)}")
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > limit:
            raise FetchError(source, f"response body is {_over_limit(limit)}")
    return bytes(body)


def _over_limit(limit: int) -> str:
    return f"over the limit of {limit:,} bytes (setting url_max_bytes)"
