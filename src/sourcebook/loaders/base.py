"""What every loader shares: the `Loader` protocol, the `RawSource` it reads, and the loader registry.

Loaders are pure functions of their input (no I/O of their own), which keeps them easy to
test and lets URL and file sources share them. Reading files (`sources.py`) and fetching
URLs (`url.py`) both produce a `RawSource`, so it lives here, below both of them.

The registry is the `LOADERS` kind of the plugin registry (`sourcebook.plugins`): loaders
registered in-process come first, then those installed under the ``sourcebook.loaders``
entry-point group, then the built-in ones, so a plugin can take over a built-in format.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..models import ParsedDocument
from ..plugins import Builtin, PluginKind


@runtime_checkable
class Loader(Protocol):
    name: str
    media_types: tuple[str, ...]
    extensions: tuple[str, ...]

    def load(self, data: bytes, source: str) -> ParsedDocument:
        """Parse `data` read from `source` (a path or URL, used in errors and titles).

        Raises a LoaderError subclass naming `source` and the cause.
        """


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


def _as_loader(obj: object) -> Loader:
    """An entry point may name a loader instance or a class whose instances are loaders."""
    loader = obj() if isinstance(obj, type) else obj
    if not isinstance(loader, Loader):
        raise TypeError("it does not implement the Loader protocol")
    return loader


# Tried in this order (after registered and installed ones): the order settles formats two claim.
LOADERS: PluginKind[Loader] = PluginKind(
    "loader",
    "sourcebook.loaders",
    [
        Builtin("markdown", "sourcebook.loaders.markdown:MarkdownLoader"),
        Builtin("html", "sourcebook.loaders.html:HtmlLoader"),
        Builtin("pdf", "sourcebook.loaders.pdf:PdfLoader"),
        Builtin("text", "sourcebook.loaders.plaintext:TextLoader"),
        # Office and e-book formats: their libraries (the `office` extra) load with a file.
        Builtin("docx", "sourcebook.loaders.word:DocxLoader"),
        Builtin("pptx", "sourcebook.loaders.slides:PptxLoader"),
        Builtin("xlsx", "sourcebook.loaders.sheets:XlsxLoader"),
        Builtin("odt", "sourcebook.loaders.odt:OdtLoader"),
        Builtin("csv", "sourcebook.loaders.sheets:CsvLoader"),
        Builtin("epub", "sourcebook.loaders.epub:EpubLoader"),
        Builtin("eml", "sourcebook.loaders.mail:EmlLoader"),
        Builtin("mbox", "sourcebook.loaders.mail:MboxLoader"),
        # PNG, JPEG and TIFF, read by OCR (the `ocr` extra, loaded with a file).
        Builtin("image", "sourcebook.loaders.images:ImageLoader"),
    ],
    prepare=_as_loader,
)


def register_loader(loader: Loader) -> None:
    """Add a loader ahead of all others (so it can also replace a built-in one)."""
    if not isinstance(loader, Loader):
        raise TypeError(f"{loader!r} does not implement the Loader protocol")
    LOADERS.register(loader.name, loader)


def get_loader(media_type: str | None = None, extension: str | None = None) -> Loader | None:
    """The first loader for `media_type` (parameters ignored), else for `extension`."""
    loaders = LOADERS.parts()
    if media_type:
        media_type = bare_media_type(media_type)
        for loader in loaders:
            if media_type in loader.media_types:
                return loader
    if extension:
        extension = "." + extension.lower().lstrip(".")
        for loader in loaders:
            if extension in loader.extensions:
                return loader
    return None


def supported_extensions() -> list[str]:
    return sorted({extension for loader in LOADERS.parts() for extension in loader.extensions})


def bare_media_type(content_type: str) -> str:
    """"Text/HTML; charset=utf-8" -> "text/html"."""
    return content_type.split(";", 1)[0].strip().lower()
