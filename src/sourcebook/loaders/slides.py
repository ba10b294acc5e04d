"""PPTX loader (python-pptx): one section per slide, with its speaker notes.

Each slide opens a level-1 heading "Slide N: its title" and its blocks carry the slide
number as their page, so a chunk never mixes two slides and its citation names the slide
(by heading path, and by page as for a PDF exported from the deck). Shapes are read top
to bottom, left to right: the order a reader takes, which the file's z-order is not. A text
frame of several paragraphs (a bulleted body) is a list; tables become table blocks;
grouped shapes are read through. Speaker notes follow under "Speaker notes", level 2.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from ..models import ParsedDocument
from .office import check_ooxml, reading, require
from .tables import add_table
from .text import DocumentBuilder, clean_inline

_KIND = "PPTX"
NOTES_HEADING = "Speaker notes"


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Shapes by position (top, then left); shapes without one keep their place at the end.

    A placeholder's position is looked up through its layout and master (slow in
    python-pptx), so each is read once, and not at all for a lone shape."""
    shapes = list(shapes)
    if len(shapes) < 2:
        return shapes

    def position(shape: Any) -> tuple[bool, int, int]:
        top, left = shape.top, shape.left
        return top is None, top or 0, left or 0

    return sorted(shapes, key=position)


def _leaf_shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Every shape, with group shapes replaced by their members (in reading order)."""
    for shape in _reading_order(shapes):
        if hasattr(shape, "shapes"):  # a group shape
            yield from _leaf_shapes(shape.shapes)
        else:
            yield shape


def _paragraph_texts(text_frame: Any) -> list[str]:
    return [text for paragraph in text_frame.paragraphs if (text := clean_inline(paragraph.text))]


def _slide_title(slide: Any) -> tuple[Any | None, str]:
    title_shape = slide.shapes.title
    if title_shape is None or not title_shape.has_text_frame:
        return None, ""
    return title_shape, clean_inline(title_shape.text_frame.text)


def _add_slide(builder: DocumentBuilder, number: int, slide: Any) -> None:
    """The slide's heading, its shapes' text and tables, then its notes.

    A slide with nothing but a title (a section divider) keeps its title as body text
    under a bare "Slide N" heading: a heading with no body would join the next slide's
    section, and its chunk would then cite the wrong slide.
    """
    title_shape, title = _slide_title(slide)
    body = [
        shape
        for shape in _leaf_shapes(slide.shapes)
        if (title_shape is None or shape.shape_id != title_shape.shape_id)
        and (getattr(shape, "has_table", False) or (getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip()))
    ]
    notes_frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
    notes = _paragraph_texts(notes_frame) if notes_frame is not None else []
    if body or notes:
        builder.heading(1, f"Slide {number}: {title}" if title else f"Slide {number}", page=number)
    else:
        builder.heading(1, f"Slide {number}", page=number)
        builder.add("paragraph", title, page=number)
    for shape in body:
        if getattr(shape, "has_table", False):
            add_table(builder, [[cell.text for cell in row.cells] for row in shape.table.rows], page=number)
        else:
            texts = _paragraph_texts(shape.text_frame)
            builder.add("list" if len(texts) > 1 else "paragraph", "\n".join(texts), page=number)
    if notes:
        builder.heading(2, NOTES_HEADING, page=number)
        for text in notes:
            builder.add("paragraph", text, page=number)


class PptxLoader:
    name: str = "pptx"
    media_types: tuple[str, ...] = ("application/vnd.openxmlformats-officedocument.presentationml.presentation",)
    extensions: tuple[str, ...] = (".pptx",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        pptx = require("pptx", source, _KIND)
        check_ooxml(data, source, _KIND)
        builder = DocumentBuilder()
        with reading(source, _KIND):
            presentation = pptx.Presentation(io.BytesIO(data))
            slides = list(presentation.slides)
            for number, slide in enumerate(slides, start=1):
                _add_slide(builder, number, slide)
            properties = presentation.core_properties
            title, author = clean_inline(properties.title or ""), clean_inline(properties.author or "")
        first_slide_title = _slide_title(slides[0])[1] if slides else ""
        metadata: dict[str, Any] = {"pages": len(slides), "slides": len(slides)}
        if author:
            metadata["author"] = author
        return builder.build(source, title or first_slide_title, self.media_types[0], metadata)
