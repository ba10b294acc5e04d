"""Where documents come from: reading files and URLs, choosing a loader, expanding folders.

Reading (`read_source`) and parsing (`parse`) are separate steps so the caller can
compare a source's fingerprint with what it stored and skip parsing unchanged files.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.metadata
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import FileTooLargeError, LoaderError, UnsupportedFormatError
from ..models import ParsedDocument
from ..settings import Settings
from .base import Loader
from .html import HtmlLoader
from .markdown import MarkdownLoader
from .pdf import PdfLoader
from .text import TextLoader

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "sourcebook.loaders"
# Servers label many documents with these; the file extension says more.
_GENERIC_MEDIA_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "text/plain"})


@dataclass(frozen=True)
class RawSource:
    """The bytes of one source before parsing, and what is known about where they came from."""

    source: str
    data: bytes
    media_type: str | None
    fingerprint: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_bytes(
        cls, source: str, data: bytes, media_type: str | None = None, metadata: dict[str, Any] | None = None
    ) -> RawSource:
        """Build one from bytes in hand (an upload, a test), computing the fingerprint."""
        return cls(source, data, media_type, hashlib.sha256(data).hexdigest(), metadata or {})


# --- the loader registry -------------------------------------------------------------


def _plugin_loaders() -> list[Loader]:
    """Loaders installed by other packages under the `sourcebook.loaders` entry point.

    An entry point may name a loader instance or a class; one that fails to import
    or is not a Loader is skipped with a warning, so a broken plugin never stops
    Sourcebook from reading the formats it supports itself.
    """
    loaders: list[Loader] = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = entry_point.load()
            loader = obj() if isinstance(obj, type) else obj
        except Exception as exc:
            logger.warning("skipping loader plugin %r: %s", entry_point.name, exc)
            continue
        if not isinstance(loader, Loader):
            logger.warning("skipping loader plugin %r: it does not implement the Loader protocol", entry_point.name)
            continue
        loaders.append(loader)
    return loaders


# Searched in order, so plugins (first) can take over a built-in format.
LOADERS: list[Loader] = [*_plugin_loaders(), MarkdownLoader(), HtmlLoader(), PdfLoader(), TextLoader()]


def register_loader(loader: Loader) -> None:
    """Add a loader ahead of all others (so it can also replace a built-in one)."""
    if not isinstance(loader, Loader):
        raise TypeError(f"{loader!r} does not implement the Loader protocol")
    LOADERS.insert(0, loader)


def get_loader(media_type: str | None = None, extension: str | None = None) -> Loader | None:
    """The first loader for `media_type` (parameters ignored), else for `extension`."""
    if media_type:
        media_type = _bare_media_type(media_type)
        for loader in LOADERS:
            if media_type in loader.media_types:
                return loader
    if extension:
        extension = "." + extension.lower().lstrip(".")
        for loader in LOADERS:
            if extension in loader.extensions:
                return loader
    return None


def supported_extensions() -> list[str]:
    return sorted({extension for loader in LOADERS for extension in loader.extensions})


def _bare_media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


# --- reading -------------------------------------------------------------------------


def is_url(source: str) -> bool:
    return "://" in source


def read_source(source: str, settings: Settings) -> RawSource:
    """Read a file path or fetch an http(s) URL, enforcing the configured size limits."""
    if is_url(source):
        from .url import fetch_url  # imported here: httpx is only needed for URLs

        return fetch_url(source, settings)
    return _read_file(source, settings.max_file_bytes)


def _read_file(source: str, limit: int) -> RawSource:
    path = Path(source).expanduser()
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise LoaderError(source, "is a directory, not a file (add the folder to load the files in it)")
        if info.st_size > limit:  # checked before reading: never load a huge file into memory
            raise FileTooLargeError(source, _too_large(info.st_size, limit))
        with path.open("rb") as handle:
            data = handle.read(limit + 1)  # the file may have grown since stat()
    except FileNotFoundError:
        raise LoaderError(source, "file not found") from None
    except PermissionError:
        raise LoaderError(source, "permission denied") from None
    except OSError as exc:
        raise LoaderError(source, f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise FileTooLargeError(source, _too_large(len(data), limit))
    metadata = {
        "path": str(path.resolve()),
        "size": len(data),
        "mtime": datetime.fromtimestamp(info.st_mtime, tz=UTC).isoformat(),
    }
    return RawSource.from_bytes(source, data, None, metadata)


def _too_large(size: int, limit: int) -> str:
    return f"file is {size:,} bytes, over the limit of {limit:,} bytes (setting max_file_bytes)"


# --- parsing -------------------------------------------------------------------------


def parse(raw: RawSource) -> ParsedDocument:
    """Parse a read source with the loader its media type, extension or content calls for.

    The RawSource's metadata (path, size, URL...) is merged over the loader's.
    """
    loader = _choose_loader(raw)
    if loader is None:
        raise UnsupportedFormatError(
            raw.source,
            f"unsupported format ({_describe_format(raw)}); supported extensions: {', '.join(supported_extensions())}",
        )
    document = loader.load(raw.data, raw.source)
    return replace(document, metadata={**document.metadata, **raw.metadata})


def load_source(source: str, settings: Settings) -> ParsedDocument:
    """Read and parse in one step."""
    return parse(read_source(source, settings))


def _extension(raw: RawSource) -> str:
    location = raw.metadata.get("final_url") or raw.source
    path = urlsplit(location).path if is_url(location) else location
    return os.path.splitext(path)[1].lower()


def _choose_loader(raw: RawSource) -> Loader | None:
    media_type = _bare_media_type(raw.media_type) if raw.media_type else None
    extension = _extension(raw)
    if media_type in _GENERIC_MEDIA_TYPES:
        loader = get_loader(extension=extension) or get_loader(media_type=media_type)
    else:
        loader = get_loader(media_type=media_type, extension=extension)
    return loader or get_loader(media_type=_sniff(raw.data))


def _sniff(data: bytes) -> str | None:
    """Recognise PDF and HTML by their first bytes when nothing else names the format."""
    head = data[:1024]
    if b"%PDF-" in head:
        return "application/pdf"
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    return None


def _describe_format(raw: RawSource) -> str:
    parts = []
    if raw.media_type:
        parts.append(f"media type {_bare_media_type(raw.media_type)!r}")
    extension = _extension(raw)
    parts.append(f"extension {extension!r}" if extension else "no file extension")
    return ", ".join(parts)


# --- expanding folders ---------------------------------------------------------------


def expand_sources(inputs: Sequence[str], include: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """Turn user inputs into individual sources, in a deterministic order.

    URLs and files pass through as given (an explicitly named file is wanted even
    if it does not match `include`); folders are walked recursively and their files
    filtered. Missing paths pass through too, so `read_source` reports each one and
    one bad input never aborts a batch. Duplicates are dropped.
    """
    sources: dict[str, None] = {}
    for item in inputs:
        if not is_url(item) and os.path.isdir(item):
            sources.update(dict.fromkeys(_walk(item, include, exclude)))
        else:
            sources[item] = None
    return list(sources)


def _walk(top: str, include: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """Files under `top` as `os.path.join(top, relative path)`, sorted by path components.

    Excluded folders are pruned, not entered, so a huge node_modules costs nothing.
    """
    found: list[tuple[str, ...]] = []
    for directory, dirnames, filenames in os.walk(top):
        relative_dir = os.path.relpath(directory, top)
        prefix = "" if relative_dir == "." else relative_dir.replace(os.sep, "/") + "/"
        dirnames[:] = [name for name in dirnames if not _excluded(prefix + name, exclude, is_dir=True)]
        for name in filenames:
            relative = prefix + name
            if _matches(name, relative, include) and not _excluded(relative, exclude, is_dir=False):
                found.append(tuple(relative.split("/")))
    return [os.path.join(top, *parts) for parts in sorted(found)]


def _fnmatch(name: str, pattern: str) -> bool:
    """Case-insensitive everywhere, so '*.md' also takes README.MD on Linux."""
    return fnmatch.fnmatchcase(name.lower(), pattern.lower())


def _matches(name: str, relative: str, patterns: Sequence[str]) -> bool:
    return any(_fnmatch(name, pattern) or _fnmatch(relative, pattern) for pattern in patterns)


def _excluded(relative: str, patterns: Sequence[str], is_dir: bool) -> bool:
    """Exclude patterns match the relative path or any one component of it.

    A folder is also tried with a trailing '/', so 'node_modules/*' prunes the
    folder itself rather than testing every file inside it.
    """
    candidates = [relative, *relative.split("/")]
    if is_dir:
        candidates.append(relative + "/")
    return any(_fnmatch(candidate, pattern) for candidate in candidates for pattern in patterns)
