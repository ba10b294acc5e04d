"""DOCX loader (python-docx): headings from paragraph styles, lists, tables and footnotes.

Word marks structure with styles, not markup: a "Heading 2" paragraph (or one whose style
derives from it, or that carries an outline level) is a level-2 heading, and a paragraph
with numbering (bullets or numbers) is a list item. Consecutive items become one list
block, as in the other loaders. python-docx has no footnote API, so footnotes and endnotes
are read from their package parts and each is placed right after the paragraph that cites
it: a note belongs with the passage it annotates, not at the end of the document.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from ..models import ParsedDocument
from .office import check_ooxml, reading, require
from .tables import add_table
from .text import DocumentBuilder, clean_inline

_KIND = "DOCX"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_STYLE_DEPTH = 5  # how far up a style's base styles a heading style is looked for
_NOTE_PARTS = (("footnotes", "footnote", "Footnote"), ("endnotes", "endnote", "Endnote"))


@dataclass(frozen=True)
class _Style:
    """What a paragraph style says about structure: its name and the heading level it (or a
    style it derives from) gives."""

    name: str
    heading_level: int | None


class _Styles:
    """Paragraph styles by id, each resolved once: python-docx looks a style up by scanning
    every style in the document, which made that lookup most of the load time."""

    def __init__(self) -> None:
        self._by_id: dict[str | None, _Style] = {}

    def of(self, paragraph: Any) -> _Style:
        style_id = paragraph._p.style
        if style_id not in self._by_id:
            self._by_id[style_id] = self._resolve(paragraph.style)
        return self._by_id[style_id]

    @staticmethod
    def _resolve(style: Any) -> _Style:
        name = (style.name or "") if style is not None else ""
        for _ in range(_STYLE_DEPTH):
            if style is None:
                break
            match = _HEADING_STYLE.match(style.name or "")
            if match:
                return _Style(name, int(match.group(1)))
            style = style.base_style
        return _Style(name, None)


def _heading_level(paragraph: Any, style: _Style) -> int | None:
    """The level the paragraph's style or its own outline level gives it."""
    if style.heading_level is not None:
        return style.heading_level
    outline = paragraph._p.xpath("./w:pPr/w:outlineLvl/@w:val")
    if outline and outline[0].isdigit() and int(outline[0]) < 9:
        return int(outline[0]) + 1
    return None


def _is_list_item(paragraph: Any, style: _Style) -> bool:
    return style.name.lower().startswith("list") or bool(paragraph._p.xpath("./w:pPr/w:numPr"))


def _notes(document: Any) -> dict[tuple[str, str], str]:
    """Footnote and endnote texts by (kind, id), from the document's note parts."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from lxml import etree

    notes: dict[tuple[str, str], str] = {}
    for part_name, element, label in _NOTE_PARTS:
        relationship = getattr(RELATIONSHIP_TYPE, part_name.upper())
        try:
            part = document.part.part_related_by(relationship)
        except KeyError:
            continue
        root = etree.fromstring(part.blob, parser=etree.XMLParser(resolve_entities=False, no_network=True))
        for note in root.iterfind(f"{{{_W}}}{element}"):
            if note.get(f"{{{_W}}}type") in {"separator", "continuationSeparator", "continuationNotice"}:
                continue
            paragraphs = ("".join(p.itertext()) for p in note.iterfind(f"{{{_W}}}p"))
            text = clean_inline(" ".join(paragraphs))
            if text:
                notes[(element, note.get(f"{{{_W}}}id", ""))] = f"{label} {note.get(f'{{{_W}}}id')}: {text}"
    return notes


def _cited_notes(paragraph: Any, notes: dict[tuple[str, str], str]) -> list[str]:
    cited = []
    for _, element, _ in _NOTE_PARTS:
        for note_id in paragraph._p.xpath(f".//w:{element}Reference/@w:id"):
            if (element, note_id) in notes:
                cited.append(notes[(element, note_id)])
    return cited


class _DocxWalker:
    """Reads the body in order; list items gather until a paragraph that is not one."""

    def __init__(self, builder: DocumentBuilder, notes: dict[tuple[str, str], str]) -> None:
        self.builder = builder
        self.notes = notes
        self.list_lines: list[str] = []
        self.title: str | None = None
        self.styles = _Styles()

    def walk(self, document: Any) -> None:
        from docx.table import Table

        for item in document.iter_inner_content():
            if isinstance(item, Table):
                self._flush_list()
                add_table(self.builder, [[cell.text for cell in row.cells] for row in item.rows])
            else:
                self._paragraph(item)
        self._flush_list()

    def _paragraph(self, paragraph: Any) -> None:
        text = paragraph.text
        style = self.styles.of(paragraph)
        if style.name == "Title" and self.title is None:
            self.title = clean_inline(text)
            return
        level = _heading_level(paragraph, style)
        if level is None and _is_list_item(paragraph, style):
            self.list_lines.append(text)
        else:
            self._flush_list()
            if level is not None:
                self.builder.heading(level, text)
            else:
                self.builder.add("paragraph", text)
        if cited := _cited_notes(paragraph, self.notes):
            self._flush_list()
            for note in cited:
                self.builder.add("paragraph", note)

    def _flush_list(self) -> None:
        self.builder.add("list", "\n".join(self.list_lines))
        self.list_lines = []


class DocxLoader:
    name: str = "docx"
    media_types: tuple[str, ...] = ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",)
    extensions: tuple[str, ...] = (".docx",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        docx = require("docx", source, _KIND)
        check_ooxml(data, source, _KIND)
        builder = DocumentBuilder()
        with reading(source, _KIND):
            document = docx.Document(io.BytesIO(data))
            walker = _DocxWalker(builder, _notes(document))
            walker.walk(document)
            properties = document.core_properties
            title, author = clean_inline(properties.title or ""), clean_inline(properties.author or "")
        metadata = {"author": author} if author else {}
        return builder.build(source, title or walker.title or builder.first_h1, self.media_types[0], metadata)
