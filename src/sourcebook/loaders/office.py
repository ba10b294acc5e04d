"""What the office-format loaders share: their optional libraries and how their files fail.

DOCX, PPTX, XLSX, ODT and EPUB are all zip packages of XML. The libraries that read them
fail on a bad file with whatever their zip or XML layer raises, so each loader reads inside
`reading`, which turns any of that into the one LoaderError naming the file and the cause.
The libraries come with the ``office`` extra and are imported only when such a file is
loaded (`require`), so the base install still reads every other format.
"""

from __future__ import annotations

import importlib
import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from ..errors import EmptyDocumentError, LoaderError, MissingExtraError, SourcebookError

OFFICE_EXTRA = "office"
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""A Compound File: what Office writes for a password-protected document, and the old
binary .doc/.xls/.ppt formats."""
# The content types of the main part of each Office Open XML kind (documents, templates,
# macro-enabled files, slide shows), as [Content_Types].xml names them.
_OOXML_MAIN_PARTS = {
    "DOCX": (b"wordprocessingml.document.main+xml", b"wordprocessingml.template.main+xml", b"ms-word."),
    "PPTX": (b"presentationml.presentation.main+xml", b"presentationml.slideshow.main+xml", b"ms-powerpoint."),
    "XLSX": (b"spreadsheetml.sheet.main+xml", b"spreadsheetml.template.main+xml", b"ms-excel."),
}
MAX_UNPACKED_BYTES = 1 << 30
"""Most bytes a package may unpack to. A zip's declared sizes bound what reading its
members yields (zipfile stops there), so checking them first stops a zip bomb."""


def article(kind: str) -> str:
    """"a DOCX", "an XLSX": the article as the abbreviation is spoken (letter names)."""
    return f"{'an' if kind[0] in 'AEFHILMNORSX' else 'a'} {kind}"


def require(module: str, source: str, kind: str, extra: str = OFFICE_EXTRA) -> ModuleType:
    """Import `module` of an optional extra (the office one unless named), or say in one
    line which extra `source` needs."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"{source}: reading {kind} files needs the '{extra}' extra ({module} missing): "
            f"pip install 'sourcebook[{extra}]'"
        ) from None


def _check_package(data: bytes, source: str, kind: str) -> None:
    """Refuse, with the reason, bytes that cannot be a zip package: an encrypted document,
    an old binary format, or something else under the extension."""
    if not data.strip():
        raise EmptyDocumentError(source, "empty file")
    if data.startswith(_OLE_SIGNATURE):
        raise LoaderError(
            source,
            f"encrypted {kind} (password-protected) or an old binary Office format; "
            f"save an unprotected {kind} copy and add that",
        )
    if not data.startswith(b"PK"):
        raise LoaderError(source, f"not {article(kind)} file (it is not a zip package)")
    with reading(source, kind), zipfile.ZipFile(io.BytesIO(data)) as package:
        unpacked = sum(member.file_size for member in package.infolist())
    if unpacked > MAX_UNPACKED_BYTES:
        raise LoaderError(
            source, f"{kind} unpacks to {unpacked:,} bytes, over the limit of {MAX_UNPACKED_BYTES:,} (a zip bomb?)"
        )


def check_ooxml(data: bytes, source: str, kind: str) -> None:
    """`_check_package`, and that the package holds a `kind` document, not another Office
    file (the libraries would say so naming an in-memory buffer, not the file)."""
    with open_package(data, source, kind) as package:
        try:
            content_types = package.read("[Content_Types].xml")
        except KeyError:
            raise LoaderError(source, f"not {article(kind)} file (a zip package, but not an Office document)") from None
    if any(marker in content_types for marker in _OOXML_MAIN_PARTS[kind]):
        return
    found = [other for other, markers in _OOXML_MAIN_PARTS.items() if any(m in content_types for m in markers)]
    raise LoaderError(source, f"not {article(kind)} file (it is {article(found[0]) if found else 'another kind of'} file)")


def open_package(data: bytes, source: str, kind: str) -> zipfile.ZipFile:
    """The zip package in `data`, checked by `_check_package`."""
    _check_package(data, source, kind)
    return zipfile.ZipFile(io.BytesIO(data))


@contextmanager
def reading(source: str, kind: str) -> Iterator[None]:
    """Turn whatever a library raises on a damaged file into a LoaderError naming `source`.

    The libraries raise many types (BadZipFile, KeyError for a missing part, lxml's
    XMLSyntaxError, ValueError, ...), so anything but Sourcebook's own errors counts.
    """
    try:
        yield
    except SourcebookError:
        raise
    except zipfile.BadZipFile as exc:
        raise LoaderError(source, f"corrupt {kind} file: {exc}") from exc
    except RecursionError:
        raise LoaderError(source, f"{kind} is nested too deeply to read") from None
    except Exception as exc:
        raise LoaderError(source, f"corrupt or unreadable {kind} file: {exc or type(exc).__name__}") from exc
