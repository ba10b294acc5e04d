"""Where in its document a passage is, said as a reader would look for it: "page 3" in a PDF,
"slide 2: Pricing" in a deck, "sheet Sales, rows 2-40" in a workbook, else its heading path
("Leave › Parental leave"). Hits, citations and chunks carry it as `location`, so the CLI, the
HTTP API and the web page's passage view name the same place.

The loaders put the place in each block's page and heading path (loaders/slides.py: a slide's
number as its page under a "Slide N: title" heading; loaders/tables.py `add_sheet`: the sheet's
name, then a "Rows a-b" heading); the source's extension says which of them a number is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

SEPARATOR = " › "
_SLIDES = frozenset({".pptx"})
_SHEETS = frozenset({".xlsx", ".xlsm", ".csv", ".tsv"})
_ROWS = re.compile(r"Rows? (\d+)(?:-(\d+))?")
_SLIDE = re.compile(r"Slide \d+(?::\s*(.*))?", re.DOTALL)


def location(source: str, title: str, heading_path: Sequence[str], page: int | None) -> str:
    """The passage's place in its document ("" when the document has no parts to name)."""
    extension = _extension(source)
    if extension in _SHEETS and heading_path and (rows := _ROWS.fullmatch(heading_path[-1])):
        first, last = rows.groups()
        span = f"rows {first}-{last}" if last and last != first else f"row {first}"
        sheet = SEPARATOR.join(heading_path[:-1])
        return f"sheet {sheet}, {span}" if sheet else span
    if extension in _SLIDES and page is not None:
        slide = _SLIDE.fullmatch(heading_path[0]) if heading_path else None
        named = slide.group(1) if slide else None
        rest = heading_path[1:] if slide else heading_path
        return SEPARATOR.join([f"slide {page}: {named}" if named else f"slide {page}", *rest])
    headings = list(heading_path[1:] if heading_path and heading_path[0] == title else heading_path)
    parts = [SEPARATOR.join(headings)] if headings else []
    if page is not None:
        parts.append(f"page {page}")
    return " · ".join(parts)


def cited_as(title: str, place: str) -> str:
    """A source as a list of sources names it: "Handbook · Leave › Parental leave"."""
    return " · ".join(part for part in (title, place) if part)


def _extension(source: str) -> str:
    path = urlsplit(source).path if "://" in source else source
    return os.path.splitext(path)[1].lower()
