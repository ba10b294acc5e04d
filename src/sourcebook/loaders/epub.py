"""EPUB loader: the book's chapters, in reading order, read as HTML pages.

An EPUB is a zip of XHTML chapters; its package document (OPF) lists them in the spine.
Each chapter goes through the HTML loader's reader (`html.add_html`) into one builder, so
chapter headings give the heading paths and tables, lists and code read as in any page.
Only the standard library is needed (zipfile, ElementTree), so EPUB needs no extra; the
common EPUB library, EbookLib, is AGPL-licensed, which Sourcebook does not take on.
Books with DRM (their chapters listed in META-INF/encryption.xml) are refused by name.
"""

from __future__ import annotations

import posixpath
import zipfile
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from ..errors import LoaderError
from ..models import ParsedDocument
from .html import add_html
from .office import open_package, reading
from .text import DocumentBuilder, clean_inline, decode_text

_KIND = "EPUB"
_CONTAINER = "META-INF/container.xml"
_ENCRYPTION = "META-INF/encryption.xml"
_NS = {
    "container": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "enc": "http://www.w3.org/2001/04/xmlenc#",
}
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def _xml(package: zipfile.ZipFile, name: str, source: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(package.read(name))
    except KeyError:
        raise LoaderError(source, f"not an EPUB book: {name} is missing") from None


def _spine(package: zipfile.ZipFile, opf_path: str, source: str) -> tuple[list[str], ElementTree.Element]:
    """The chapters' paths in the zip, in reading order, and the package document."""
    opf = _xml(package, opf_path, source)
    base = posixpath.dirname(opf_path)
    manifest = {
        item.get("id"): item
        for item in opf.iterfind("opf:manifest/opf:item", _NS)
        if item.get("media-type") in _CHAPTER_TYPES
    }
    chapters = []
    for itemref in opf.iterfind("opf:spine/opf:itemref", _NS):
        item = manifest.get(itemref.get("idref"))
        if item is not None and item.get("href"):
            chapters.append(posixpath.normpath(posixpath.join(base, unquote(item.get("href", "")))))
    return chapters, opf


def _check_drm(package: zipfile.ZipFile, chapters: list[str], source: str) -> None:
    """Refuse a book whose chapters are encrypted (fonts alone may be obfuscated: fine)."""
    if _ENCRYPTION not in package.namelist():
        return
    encrypted = {
        unquote(reference.get("URI", ""))
        for reference in _xml(package, _ENCRYPTION, source).iterfind(".//enc:CipherReference", _NS)
    }
    if encrypted & set(chapters):
        raise LoaderError(source, "the EPUB's chapters are encrypted (DRM); add a copy without DRM")


def _metadata(opf: ElementTree.Element) -> dict[str, Any]:
    fields = {
        "title": opf.findtext("opf:metadata/dc:title", "", _NS),
        "author": opf.findtext("opf:metadata/dc:creator", "", _NS),
        "lang": opf.findtext("opf:metadata/dc:language", "", _NS),
    }
    return {key: clean_inline(value) for key, value in fields.items() if clean_inline(value)}


class EpubLoader:
    name: str = "epub"
    media_types: tuple[str, ...] = ("application/epub+zip",)
    extensions: tuple[str, ...] = (".epub",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        builder = DocumentBuilder()
        with reading(source, _KIND), open_package(data, source, _KIND) as package:
            rootfile = _xml(package, _CONTAINER, source).find("container:rootfiles/container:rootfile", _NS)
            if rootfile is None or not rootfile.get("full-path"):
                raise LoaderError(source, "not an EPUB book: its container names no package document")
            chapters, opf = _spine(package, rootfile.get("full-path", ""), source)
            _check_drm(package, chapters, source)
            for chapter in chapters:
                try:
                    content = package.read(chapter)
                except KeyError:
                    raise LoaderError(source, f"corrupt EPUB: chapter {chapter} is missing") from None
                add_html(builder, decode_text(content, f"{source}:{chapter}")[0], source)
        metadata = _metadata(opf)
        title = metadata.pop("title", None)
        return builder.build(source, title or builder.first_h1, self.media_types[0], {**metadata, "chapters": len(chapters)})
