"""Tables in PDFs (pdfplumber): found by their ruling lines, read as rows, kept with their caption.

pypdf's text of a table is its cells as loose lines, with nothing saying which number sits in
which column. pdfplumber (the `tables` extra) finds tables from the lines and rectangles drawn
for their borders and reads their cells; the PDF loader then drops the loose lines inside the
table's area and puts the table where it stood, as a Markdown table (split by rows with the
header repeated if long). A caption ("Table 2: ...") next to the table and a sentence that
introduces it (a paragraph just before it ending with ":") move into the table's block, so
every part of the table carries them into its chunk.

pdfplumber parses a page far more slowly than pypdf, so only pages whose content stream draws
a grid are given to it; without the extra, PDFs read as before, tables as text.
"""

from __future__ import annotations

import importlib
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .tables import CAPTION, leads
from .text import clean_inline

_RECTANGLE = re.compile(rb"(?<![\w/.])re(?![\w])")  # the `re` operator
_SEGMENT = re.compile(rb"(-?[\d.]+)\s+(-?[\d.]+)\s+m\s+(-?[\d.]+)\s+(-?[\d.]+)\s+l(?![\w])")  # x y m x y l
_MIN_GRID = 4  # rectangles: the cells of a table of two rows and two columns
_MIN_LINES = 3  # each way: a table of two rows and two columns, its outer border included
_STRAIGHT = 0.5  # points
_EDGE_TOLERANCE = 2.0  # points: a line's baseline may sit just outside the table's border


@dataclass(frozen=True)
class PageTable:
    """A table on a page: its vertical extent (PDF y, from the bottom), rows, the caption
    and introducing sentence moved into it, and whether it is an option table (two columns,
    options in the first: its rows become entries, `pdf_columns.py`)."""

    top: float
    bottom: float
    rows: list[list[str]]
    lead: tuple[str, ...] = field(default=())
    terms: bool = False

    def holds(self, y: float | None) -> bool:
        return y is not None and self.bottom - _EDGE_TOLERANCE <= y <= self.top + _EDGE_TOLERANCE


def may_hold_table(page: Any) -> bool:
    """Whether the page draws a grid: four rectangles (cell borders), or three vertical and
    three horizontal straight lines. Read from the raw content stream, which costs little next to
    pdfplumber's parse; rules under headings and boxes around code, drawn as horizontal lines
    or a box of four lines, do not pass."""
    try:
        contents = page.get_contents()
        stream = contents.get_data() if contents is not None else b""
    except Exception:  # a damaged stream: pypdf's text of it is what we have
        return False
    if len(_RECTANGLE.findall(stream)) >= _MIN_GRID:
        return True
    vertical = horizontal = 0
    for match in _SEGMENT.finditer(stream):
        x1, y1, x2, y2 = (float(number) for number in match.groups())
        vertical += abs(x1 - x2) < _STRAIGHT and abs(y1 - y2) >= _STRAIGHT
        horizontal += abs(y1 - y2) < _STRAIGHT and abs(x1 - x2) >= _STRAIGHT
    return vertical >= _MIN_LINES and horizontal >= _MIN_LINES


def find_tables(data: bytes, candidates: Sequence[int]) -> dict[int, list[PageTable]]:
    """Tables by page number for the pages `candidates` (1-based; those `may_hold_table` passed,
    judged while each page's content stream was at hand); {} without pdfplumber. A page
    pdfplumber cannot read keeps its text as pypdf read it."""
    if not candidates:
        return {}
    try:
        pdfplumber = importlib.import_module("pdfplumber")
    except ImportError:
        return {}
    found: dict[int, list[PageTable]] = {}
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for number in candidates:
                if tables := _page_tables(pdf.pages[number - 1]):
                    found[number] = tables
    except Exception:  # pdfminer failed on the file as a whole: no tables, text as before
        return found
    return found


def _is_table(rows: Sequence[Sequence[str]]) -> bool:
    """Whether ruled cells hold a table: two rows or more, text in two columns or more, and in
    more than half of the cells. A box or a rule is not one, nor is a frame around a page or a
    slide (its text in one cell), nor a diagram's boxes with a word here and there: read as a
    table, their prose would be torn into cells. In the Debian PDFs under /usr/share/doc, 57 of
    the 118 grids pdfplumber found were such frames and diagrams (bench/pdf_tables_real.py)."""
    cells = [cell for row in rows for cell in row]
    columns = {index for row in rows for index, cell in enumerate(row) if cell}
    return len(rows) >= 2 and len(columns) >= 2 and 2 * sum(1 for cell in cells if cell) > len(cells)


def _page_tables(page: Any) -> list[PageTable]:
    try:
        top_of_page = float(page.mediabox[3])
        tables = []
        for table in page.find_tables():
            rows = [[clean_inline(cell or "") for cell in row] for row in table.extract()]
            if _is_table(rows):
                _, top, _, bottom = table.bbox
                tables.append(PageTable(top_of_page - top, top_of_page - bottom, rows))
        return tables
    except Exception:
        return []
    finally:
        page.close()  # drop the page's parsed objects: memory stays at one page


def split_at_tables(lines: Sequence[Any], tables: Sequence[PageTable]) -> Iterator[list[Any] | PageTable]:
    """The page's lines in runs between its tables, each table in the place of its first
    line; lines inside a table's area (its cells, as loose text) are dropped."""
    placed: set[int] = set()
    run: list[Any] = []
    for line in lines:
        inside = next((i for i, table in enumerate(tables) if table.holds(getattr(line, "y", None))), None)
        if inside is None:
            run.append(line)
        elif inside not in placed:
            placed.add(inside)
            yield run
            run = []
            yield tables[inside]
    yield run
    for index, table in enumerate(tables):  # a table none of pypdf's lines fell in (rare)
        if index not in placed:
            yield table


def attach_captions(items: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """Move a caption next to a table, and a paragraph ending with ":" just before it (with
    a caption between them or not), into the table's lead; a table that goes on from the
    page before (the same header row) keeps that one's lead, and a lead the table came with (its
    caption set in the margin) stays. Items are (page, Paragraph or
    PageTable); a Paragraph has `text`."""
    result: list[tuple[int, Any]] = []
    index = 0
    while index < len(items):
        number, item = items[index]
        if not isinstance(item, PageTable):
            result.append((number, item))
            index += 1
            continue
        lead: list[str] = []
        while result and len(lead) < 2:
            previous_number, previous = result[-1]
            if isinstance(previous, PageTable) or previous_number != number or not leads(previous.text):
                break
            lead.insert(0, previous.text)
            result.pop()
        if not lead and result and isinstance(result[-1][1], PageTable) and result[-1][1].rows[:1] == item.rows[:1]:
            lead = list(result[-1][1].lead)  # the table goes on from the page before, header repeated
        lead += [text for text in item.lead if text not in lead]  # a caption found beside it (`pdf_columns.py`)
        following = items[index + 1] if index + 1 < len(items) else None
        if following and following[0] == number and not isinstance(following[1], PageTable) and CAPTION.match(following[1].text):
            lead.append(following[1].text)
            index += 1
        result.append((number, replace(item, lead=tuple(lead))))
        index += 1
    return result
