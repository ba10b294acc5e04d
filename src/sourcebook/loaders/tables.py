"""Tables as Markdown, split by rows with the header repeated, for every loader that finds one.

A table block is a Markdown table (header row, `---` separator, body rows), which embedding
models and LLMs read as a table and a person can paste anywhere. The chunker keeps a block
whole when it fits and otherwise cuts it between lines, which would leave every piece after
the first without its header: a row of numbers with no column names cannot answer anything.
So a long table is cut here, by rows, into several table blocks that each repeat the header,
at a size that fits a chunk of the default budget (256 tokens). Spreadsheets go further
(`add_sheet`): each part gets a "Rows 2-31" heading, so a chunk's heading path (and so its
citation) names the sheet and the rows it holds.

A table's lead, its caption ("Table 2: ...") and the sentence introducing it (a short paragraph
ending with ":"), opens every part, so each chunk of the table says what its rows are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from .text import DocumentBuilder, clean_inline

CAPTION = re.compile(r"^(?:table|tab\.)\s*[\dIVXivx]+\b", re.IGNORECASE)
# A caption may end the paragraph before the table ("... listed below. Table 1: Sizes").
_ENDS_WITH_CAPTION = re.compile(r"(?:^|[.:!?]\s+)(?:table|tab\.)\s*[\dIVXivx]+\b[^.!?]*$", re.IGNORECASE)
_LEAD_MAX_CHARS = 300  # a longer paragraph ending with ":" stays a paragraph
_LEAD_PARAGRAPHS = 2  # the introducing sentence and the caption

TABLE_PART_CHARS = 500
"""Most characters of one table block. Markdown tables cost about one token per 2.5
characters (every `|` is a token), so a part fits the default 256-token chunk with room for
its heading prefix; a part that still does not fit is cut between rows by the chunker."""


def _cell(value: object) -> str:
    """One cell's text on one line, with `|` escaped so it cannot end the cell."""
    return clean_inline("" if value is None else str(value)).replace("|", "\\|")


def _cells(row: Sequence[object]) -> list[str] | None:
    """A row's cell texts, without trailing empty cells; None for a row with no text."""
    cells = [_cell(value) for value in row]
    while cells and not cells[-1]:
        cells.pop()
    return cells or None


def _line(cells: Sequence[str], width: int) -> str:
    return "| " + " | ".join([*cells, *[""] * (width - len(cells))]) + " |"


def _line_chars(cells: Sequence[str], width: int) -> int:
    """The length of `cells` as a Markdown table line padded to `width` cells."""
    return sum(len(cell) + 3 for cell in cells) + 3 * max(0, width - len(cells)) + 1


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; every line is padded to the widest row's number of cells."""
    width = max([len(header), *(len(row) for row in rows)])
    return "\n".join([_line(header, width), _line(["---"] * width, width), *(_line(row, width) for row in rows)])


def _parts(
    header: Sequence[str], rows: Iterable[tuple[int, list[str]]], lead_chars: int = 0
) -> Iterator[list[tuple[int, list[str]]]]:
    """`rows` (numbered) in runs of at most `TABLE_PART_CHARS` with the header (each run
    at least one row), taken lazily so a streamed sheet is never held whole."""
    width = len(header)
    header_chars = lead_chars + _line_chars(header, width) + 1 + _line_chars(["---"] * width, width)
    part: list[tuple[int, list[str]]] = []
    size = header_chars
    for number, cells in rows:
        chars = 1 + _line_chars(cells, width)  # with the newline before it
        if part and size + chars > TABLE_PART_CHARS:
            yield part
            part, size = [], header_chars
        part.append((number, cells))
        size += chars
    if part:
        yield part


def add_table(
    builder: DocumentBuilder, rows: Iterable[Sequence[object]], page: int | None = None, lead: Sequence[str] = ()
) -> None:
    """Add a table whose first non-empty row is its header, as one or more table blocks
    (a table of one row is a header-only table). `lead` (a caption, the sentence that
    introduces the table) opens every part, so each chunk of the table says what it is."""
    cleaned = (cells for row in rows if (cells := _cells(row)) is not None)
    header = next(cleaned, None)
    if header is None:
        return
    lead_lines = [line for line in (clean_inline(text) for text in lead) if line]
    lead_chars = sum(len(line) + 1 for line in lead_lines)
    parts = 0
    for part in _parts(header, enumerate(cleaned), lead_chars):
        builder.add("table", "\n".join([*lead_lines, render_table(header, [cells for _, cells in part])]), page=page)
        parts += 1
    if not parts:  # a table of one row
        builder.add("table", "\n".join([*lead_lines, render_table(header, [])]), page=page)


def leads(text: str) -> bool:
    """A short paragraph that is or ends with a caption, or that introduces what follows."""
    return len(text) <= _LEAD_MAX_CHARS and (text.endswith(":") or bool(_ENDS_WITH_CAPTION.search(text)))


def add_introduced_table(builder: DocumentBuilder, rows: Iterable[Sequence[object]], caption: Sequence[str] = ()) -> None:
    """`add_table` with the paragraphs just before the table that lead it (an introducing
    sentence, a caption) taken out of the text and into the table's lead, after them the
    table's own `caption` (HTML's <caption>)."""
    lead = builder.take_trailing(lambda block: block.kind == "paragraph" and leads(block.text), _LEAD_PARAGRAPHS)
    add_table(builder, rows, lead=[*lead, *caption])


def add_sheet(
    builder: DocumentBuilder, level: int, rows: Iterable[tuple[int, Sequence[object]]]
) -> None:
    """Add a sheet given as (row number, cells): its first non-empty row is the header, the
    rest go in parts of at most `TABLE_PART_CHARS`, each under a level-`level` heading naming
    its rows ("Rows 2-31"), so a chunk's heading path (and its citation) says where in the
    sheet it comes from. Empty rows are skipped; a sheet of one row is a header-only table."""
    numbered = ((number, cells) for number, row in rows if (cells := _cells(row)) is not None)
    first_row = next(numbered, None)
    if first_row is None:
        return
    header = first_row[1]
    parts = 0
    for part in _parts(header, numbered):
        first, last = part[0][0], part[-1][0]
        builder.heading(level, f"Rows {first}-{last}" if last != first else f"Row {first}")
        builder.add("table", render_table(header, [cells for _, cells in part]))
        parts += 1
    if not parts:
        builder.add("table", render_table(header, []))
