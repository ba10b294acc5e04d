"""Where documents come from: reading files and URLs, choosing a loader, expanding folders.

Reading (`read_source`) and parsing (`parse`) are separate steps so the caller can
compare a source's fingerprint with what it stored and skip parsing unchanged files.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from ..errors import FileTooLargeError, LoaderError, SourcebookError, SourceNotFoundError, UnsupportedFormatError
from ..models import ParsedDocument
from ..settings import Settings
from .base import Loader, RawSource, bare_media_type, get_loader, supported_extensions

logger = logging.getLogger(__name__)

# Servers label many documents with these; the file extension says more.
_GENERIC_MEDIA_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "text/plain"})
_PACKAGE_MEDIA_TYPE = re.compile(rb"[\w.+-]+/[\w.+-]*")
_IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"II*\x00": "image/tiff",
    b"MM\x00*": "image/tiff",
}


# --- reading -------------------------------------------------------------------------

PIECE_BYTES = 1 << 20
"""Bytes of a file read, hashed, decoded or copied at a time wherever a file is not held whole
(here, `textfile`, the server's upload store): 1 MiB keeps the system calls few and the memory
flat."""
READER_METADATA = frozenset({"path", "size", "mtime", "url", "final_url", "content_type", "etag", "last_modified"})
"""Metadata keys reading a file or fetching a URL records (`_read_file`, url.fetch_url): what
a new read refreshes, unlike the loader's or the user's."""


def is_url(source: str) -> bool:
    return "://" in source


def read_source(source: str, settings: Settings) -> RawSource:
    """Read a file path or fetch an http(s) URL, enforcing the configured size limits."""
    if is_url(source):
        from .url import fetch_url  # imported here: httpx is only needed for URLs

        return fetch_url(source, settings)
    return _read_file(source, settings.max_file_bytes)


def _read_file(source: str, limit: int) -> RawSource:
    with _opened(source, limit) as (path, info, handle):
        data = handle.read(limit + 1)  # the file may have grown since stat()
    if len(data) > limit:
        raise FileTooLargeError(source, _too_large(len(data), limit))
    return RawSource.from_bytes(source, data, None, file_metadata(path, len(data), info))


@dataclass(frozen=True)
class SourceIdentity:
    """What identifies a source's content without its bytes: its fingerprint (a `RawSource`'s of
    the same bytes) and what reading it records."""

    source: str
    fingerprint: str
    metadata: dict[str, Any]


def identify_source(source: str, settings: Settings) -> SourceIdentity:
    """`read_source`'s fingerprint and metadata, a file's hashed in pieces of `PIECE_BYTES`, never
    held whole (a move checks a 50 MB file's content without 50 MB of memory; issue 17)."""
    if is_url(source):
        raw = read_source(source, settings)
        return SourceIdentity(raw.source, raw.fingerprint, raw.metadata)
    limit = settings.max_file_bytes
    digest, size = hashlib.sha256(), 0
    with _opened(source, limit) as (path, info, handle):
        while size <= limit and (piece := handle.read(PIECE_BYTES)):
            digest.update(piece)
            size += len(piece)
    if size > limit:
        raise FileTooLargeError(source, _too_large(size, limit))
    return SourceIdentity(source, digest.hexdigest(), file_metadata(path, size, info))


@contextmanager
def _opened(source: str, limit: int) -> Iterator[tuple[Path, os.stat_result, BinaryIO]]:
    """The file at `source` open for reading, with its path and stat; a named LoaderError for a
    folder, a file over `limit` bytes (checked before reading: never load a huge file into
    memory), a missing or unreadable one."""
    path = Path(source).expanduser()
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise LoaderError(source, "is a directory, not a file (add the folder to load the files in it)")
        if info.st_size > limit:
            raise FileTooLargeError(source, _too_large(info.st_size, limit))
        with path.open("rb") as handle:
            yield path, info, handle
    except FileNotFoundError:
        raise SourceNotFoundError(source, "file not found") from None
    except PermissionError:
        raise LoaderError(source, "permission denied") from None
    except OSError as exc:
        raise LoaderError(source, f"cannot read file: {exc.strerror or exc}") from None


def file_metadata(path: Path, size: int, info: os.stat_result) -> dict[str, Any]:
    """What reading a file records (`READER_METADATA`): its resolved path, size and mtime; the
    same for a file read whole and one streamed (textfile.py)."""
    return {"path": str(path.resolve()), "size": size, "mtime": datetime.fromtimestamp(info.st_mtime, tz=UTC).isoformat()}


def _too_large(size: int, limit: int) -> str:
    return f"file is {size:,} bytes, over the limit of {limit:,} bytes (setting max_file_bytes)"


# --- parsing -------------------------------------------------------------------------


def parse(raw: RawSource) -> ParsedDocument:
    """Parse a read source with the loader its media type, extension or content calls for.

    The RawSource's metadata (path, size, URL...) is merged over the loader's. Any other
    exception a loader raises is a LoaderError naming the file, its traceback logged: one
    file's bad luck with a library never ends an `add` of many.
    """
    loader = _choose_loader(raw)
    if loader is None:
        raise UnsupportedFormatError(
            raw.source,
            f"unsupported format ({_describe_format(raw)}); supported extensions: {', '.join(supported_extensions())}",
        )
    try:
        document = loader.load(raw.data, raw.source)
    except SourcebookError:
        raise
    except Exception as exc:  # a loader's bug (or a plugin's) fails its file, not the whole `add`
        logger.exception("the %s loader failed on %s", loader.name, raw.source)
        raise LoaderError(raw.source, f"the {loader.name} loader failed ({type(exc).__name__})") from exc
    return replace(document, metadata={**document.metadata, **raw.metadata})


def load_source(source: str, settings: Settings) -> ParsedDocument:
    """Read and parse in one step."""
    return parse(read_source(source, settings))


def _extension(raw: RawSource) -> str:
    location = raw.metadata.get("final_url") or raw.source
    path = urlsplit(location).path if is_url(location) else location
    return os.path.splitext(path)[1].lower()


def _choose_loader(raw: RawSource) -> Loader | None:
    media_type = bare_media_type(raw.media_type) if raw.media_type else None
    extension = _extension(raw)
    if media_type in _GENERIC_MEDIA_TYPES:
        loader = get_loader(extension=extension) or get_loader(media_type=media_type)
    else:
        loader = get_loader(media_type=media_type, extension=extension)
    return loader or get_loader(media_type=_sniff(raw.data))


def _sniff(data: bytes) -> str | None:
    """Recognise PDF, HTML, images and OpenDocument/EPUB packages by their first bytes when nothing
    else names the format. (Such a package's first zip member is a stored file named
    "mimetype" holding its media type, at a fixed offset, so it can be read without unzipping.)"""
    head = data[:1024]
    if b"%PDF-" in head:
        return "application/pdf"
    for signature, image_type in _IMAGE_SIGNATURES.items():
        if head.startswith(signature):
            return image_type
    if head.startswith(b"PK\x03\x04") and head[30:38] == b"mimetype":
        # The zip local header: stored size at 18, name length at 26, extra length at 28, name at 30.
        start = 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        media_type = head[start : start + int.from_bytes(head[18:22], "little")]
        return media_type.decode("ascii") if _PACKAGE_MEDIA_TYPE.fullmatch(media_type) else None
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    return None


def _describe_format(raw: RawSource) -> str:
    parts = []
    if raw.media_type:
        parts.append(f"media type {bare_media_type(raw.media_type)!r}")
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


def excluded_path(top: str, path: str, exclude: Sequence[str]) -> bool:
    """Whether `path` is outside the folder `top` or excluded in it (in an excluded folder too):
    what a folder watcher never looks at, as `_walk` never enters it."""
    relative = os.path.relpath(path, top).replace(os.sep, "/")
    return relative in (".", "..") or relative.startswith("../") or _excluded(relative, exclude, is_dir=False)


def wanted_file(top: str, path: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether expanding the folder `top` would take the file `path` under it (`_walk`'s test,
    for one path): a folder watcher asks this of each changed file."""
    relative = os.path.relpath(path, top).replace(os.sep, "/")
    return not excluded_path(top, path, exclude) and _matches(os.path.basename(path), relative, include)


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
