"""ODT loader (odfpy): OpenDocument text with its headings, lists, tables and notes.

The body is walked element by element: `text:h` is a heading at its outline level, `text:p`
a paragraph, `text:list` one list block (nested items follow their parent), `table:table` a
table (with repeated cells expanded), and sections are read through. A footnote or endnote
(`text:note`) sits inside the paragraph that cites it; its body is taken out of that
paragraph's text and added right after it, as the DOCX loader does.
"""

from __future__ import annotations

import io
from typing import Any

from ..errors import LoaderError
from ..models import ParsedDocument
from .office import open_package, reading, require
from .tables import add_table
from .text import DocumentBuilder, clean_inline

_KIND = "ODT"
_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_MANIFEST = "META-INF/manifest.xml"
_MAX_REPEAT = 64  # repeated cells expanded at most this often (trailing blanks repeat to 1024)


def _name(node: Any) -> tuple[str, str] | None:
    return node.qname if node.nodeType == node.ELEMENT_NODE else None


def _attr(node: Any, namespace: str, name: str) -> str:
    return str(node.attributes.get((namespace, name), "") or "")


class _Inline:
    """A paragraph's text, with `text:s`/`text:tab`/`text:line-break` as whitespace and any
    note bodies taken out into `notes`."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.notes: list[str] = []

    def read(self, node: Any) -> _Inline:
        for child in node.childNodes:
            name = _name(child)
            if name is None:
                self.parts.append(str(child.data) if child.nodeType == child.TEXT_NODE else "")
            elif name in {(_TEXT, "s"), (_TEXT, "tab"), (_TEXT, "line-break")}:
                self.parts.append(" ")
            elif name == (_TEXT, "note"):
                self._note(child)
            else:
                self.read(child)
        return self

    def _note(self, note: Any) -> None:
        label = "Endnote" if _attr(note, _TEXT, "note-class") == "endnote" else "Footnote"
        citation = body = ""
        for child in note.childNodes:
            if _name(child) == (_TEXT, "note-citation"):
                citation = clean_inline(_Inline().read(child).text)
            elif _name(child) == (_TEXT, "note-body"):
                body = clean_inline(" ".join(_Inline().read(p).text for p in child.childNodes))
        if body:
            self.notes.append(f"{label} {citation}: {body}" if citation else f"{label}: {body}")

    @property
    def text(self) -> str:
        return "".join(self.parts)


class _OdtWalker:
    def __init__(self, builder: DocumentBuilder) -> None:
        self.builder = builder

    def walk(self, node: Any) -> None:
        for child in node.childNodes:
            name = _name(child)
            if name == (_TEXT, "h"):
                inline = _Inline().read(child)
                level = _attr(child, _TEXT, "outline-level")
                self.builder.heading(int(level) if level.isdigit() else 1, inline.text)
                self._notes(inline)
            elif name == (_TEXT, "p"):
                inline = _Inline().read(child)
                self.builder.add("paragraph", inline.text)
                self._notes(inline)
            elif name == (_TEXT, "list"):
                notes: list[str] = []
                self.builder.add("list", "\n".join(self._list_lines(child, notes)))
                for note in notes:
                    self.builder.add("paragraph", note)
            elif name == (_TABLE, "table"):
                add_table(self.builder, list(self._table_rows(child)))
            elif name is not None:  # sections, frames and other containers
                self.walk(child)

    def _notes(self, inline: _Inline) -> None:
        for note in inline.notes:
            self.builder.add("paragraph", note)

    def _list_lines(self, node: Any, notes: list[str]) -> list[str]:
        lines = []
        for item in node.childNodes:
            for child in item.childNodes if _name(item) in {(_TEXT, "list-item"), (_TEXT, "list-header")} else ():
                if _name(child) == (_TEXT, "list"):
                    lines.extend(self._list_lines(child, notes))
                elif _name(child) is not None:
                    inline = _Inline().read(child)
                    lines.append(inline.text)
                    notes.extend(inline.notes)
        return lines

    def _table_rows(self, node: Any) -> list[list[str]]:
        rows = []
        for child in node.childNodes:
            name = _name(child)
            if name == (_TABLE, "table-row"):
                rows.append(self._cells(child))
            elif name in {(_TABLE, "table-header-rows"), (_TABLE, "table-rows"), (_TABLE, "table-row-group")}:
                rows.extend(self._table_rows(child))
        return rows

    def _cells(self, row: Any) -> list[str]:
        cells = []
        for cell in row.childNodes:
            if _name(cell) in {(_TABLE, "table-cell"), (_TABLE, "covered-table-cell")}:
                text = " ".join(_Inline().read(p).text for p in cell.childNodes)
                repeat = _attr(cell, _TABLE, "number-columns-repeated")
                cells.extend([text] * min(int(repeat) if repeat.isdigit() else 1, _MAX_REPEAT))
        return cells


def _check_package(data: bytes, source: str) -> None:
    """A zip package holding an unencrypted OpenDocument text, or a LoaderError saying what it is."""
    with open_package(data, source, _KIND) as package:
        names = set(package.namelist())
        mimetype = package.read("mimetype").decode("ascii", "replace").strip() if "mimetype" in names else ""
        manifest = package.read(_MANIFEST) if _MANIFEST in names else b""
    if mimetype != OdtLoader.media_types[0]:
        raise LoaderError(source, f"not an ODT file (it is {mimetype or 'a zip package of another kind'})")
    if b"encryption-data" in manifest:
        raise LoaderError(source, "encrypted ODT (password-protected); save an unprotected copy and add that")


class OdtLoader:
    name: str = "odt"
    media_types: tuple[str, ...] = ("application/vnd.oasis.opendocument.text",)
    extensions: tuple[str, ...] = (".odt",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        opendocument = require("odf.opendocument", source, _KIND)
        builder = DocumentBuilder()
        with reading(source, _KIND):
            _check_package(data, source)
            document = opendocument.load(io.BytesIO(data))
            _OdtWalker(builder).walk(document.text)
            meta = {(name[1]): clean_inline(str(node)) for node in document.meta.childNodes if (name := _name(node))}
        title = meta.get("title")
        metadata = {"author": meta["initial-creator"]} if meta.get("initial-creator") else {}
        return builder.build(source, title or builder.first_h1, self.media_types[0], metadata)
