"""Tables without ruled borders in PDFs: found by the columns their cells line up in.

Manuals typeset with LaTeX's `tabular` and booktabs, or with `description`-like option lists,
draw no grid (or only horizontal rules), so `pdf_tables.py` never sees them, and pypdf's plain
text glues a row's cells into one line and the rows into one paragraph: "-K number Set
encryption key length. The default value is 40. -P number Set permission flags ..." answers
"the default of -P?" with -K's default. Such a table is recognised here by geometry: on a line,
cells are runs of shown strings separated by a gap wider than a word space, and a column is
an x where cells start on two lines or more; consecutive lines whose cells start in those
columns (and lines that wrap a row's last cell, starting in its column) are one table.

Positions come from pypdf's layout-mode machinery (`_layout_mode`, private to pypdf, as in
`pdf_margins.py`), which gives each shown string's start and end; the plain pass merges
strings of one font and so hides the gap between cells. That pass costs as much as the plain
one, so it runs only on pages where the plain pass saw a hint of columns (`may_have_columns`);
any failure in it leaves the page as the plain pass read it.

A two-column table whose first column names options or commands (set in a monospaced font, or
written `-K`, `--output`, `\\special`) is an option table: the PDF loader makes each row an
entry, the option its term, as HTML's `<dt>`/`<dd>`, so the row is a unit of its own with
the option in its heading path. Other tables go out as Markdown tables (`tables.py`).

The same font judgement (monospaced or not: `monospaced`) tells the PDF loader which lines are
code (`code_line`), kept as lines rather than run into the sentence before them, and a listing
aligned with spaces from a table.
"""

from __future__ import annotations

import logging
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pypdf import PageObject, PdfReader

from .pdf_margins import MarginNote, body_left, on_baseline
from .pdf_tables import PageTable

logger = logging.getLogger(__name__)

_CELL_GAP = 0.8  # of the font size: wider than a stretched word space, narrower than \tabcolsep's 12 pt
_ALIGN = 2.0  # points within which cells start in one column
_LARGER = 1.15  # times the table's largest size: a heading (a header row may be set smaller than the body)
_MARK_MAX_CHARS = 3
BULLETS = tuple("•◦▪‣●○■□➢✓")
_SAME_LINE = 0.3  # of the font size: a lowered E of the TeX logo, a footnote mark, a subscript
_INDENT = 3.0  # of the font size: a line starting this far right of the body's edge may be a wrapped cell
_ROW_GAP = 2.5  # of the page's line spacing: a wider gap ends the table
_TERM_MAX_CHARS = 30  # median first-column cell: a label, not a line of prose
_FIRST_COLUMN_SHARE = 0.5  # of the table's width: wider first cells are prose beside a note
_MIN_ROWS = 2
_CODE_SHARE = 0.8  # of a line's characters in a monospaced font: a line of code
_OPTION_START = ("-", "\\", "/", "+")
_MONOSPACED = re.compile(r"mono|courier|consol|typewriter|pitch|inconsolata|menlo|cmtt|cmsltt|cmitt|sftt|ectt|tctt|lmtt|txtt", re.I)
_CAPTION_LINE = re.compile(r"^\s*(?:table|tab\.)\s*[\dIVXivx]+", re.IGNORECASE)
_LEADER = re.compile(r"(?:\. ?){4,}")  # "Font Mappings . . . . . 34"
_HYPHENS = str.maketrans({"\u2010": "-", "\u2011": "-"})


def plain_hyphens(text: str) -> str:
    """U+2010 HYPHEN and U+2011 NON-BREAKING HYPHEN as the ASCII hyphen-minus: fonts of TeX
    and other typesetters map their hyphen glyph to them, so `kanji-config-updmap --sys` or
    `-K` would never match the hyphen a reader types in a question or search."""
    return text.translate(_HYPHENS)


@dataclass(frozen=True)
class Piece:
    """One shown string: where it starts and ends (PDF x), its baseline, font size, text, and
    whether its font is monospaced."""

    x0: float
    x1: float
    y: float
    size: float
    text: str
    mono: bool = False


@dataclass(frozen=True)
class Fragment:
    """One string pypdf's plain pass shows: where, in what size, how many characters, whether
    its font is monospaced, and whether it is a number alone."""

    x: float
    y: float
    size: float
    chars: int
    mono: bool
    number: bool = False  # digits only: a listing's line number, set in the text font


def code_line(fragments: Sequence[Fragment]) -> bool:
    """Whether a line is code: most of its characters in a monospaced font, line numbers aside
    (a documented package's listing numbers its lines in the text font)."""
    counted = [fragment for fragment in fragments if not fragment.number]
    chars = sum(fragment.chars for fragment in counted)
    return chars > 0 and sum(f.chars for f in counted if f.mono) >= _CODE_SHARE * chars


def monospaced_font(font: Any) -> bool:
    """Whether a font dictionary (or None) is monospaced, by its descriptor's flags or its name;
    a composite font's descriptor is on its descendant."""
    try:
        name = str(font.get("/BaseFont", ""))
        descriptor = font.get("/FontDescriptor")
        if descriptor is None and "/DescendantFonts" in font:
            descriptor = font["/DescendantFonts"][0].get_object().get("/FontDescriptor")
        flags = int(descriptor.get_object().get("/Flags", 0)) if descriptor is not None else 0
    except Exception:  # no font, or a damaged one: not code
        return False
    return monospaced(name, flags)


@dataclass(frozen=True)
class _Cell:
    x0: float
    x1: float
    text: str
    mono: bool


@dataclass(frozen=True)
class _Line:
    y: float
    size: float
    cells: tuple[_Cell, ...]


def monospaced(name: str, flags: int) -> bool:
    """Whether a font is monospaced: its descriptor's FixedPitch flag, or a typewriter name
    (TeX's cmtt and its kin, Courier, Consolas, ... carry the flag or not, depending on who
    embedded them)."""
    return bool(flags & 1) or bool(_MONOSPACED.search(name.split("+")[-1]))


def may_have_columns(fragments: Sequence[tuple[float, float, float, str]]) -> bool:
    """The cheap test on the plain pass's (x, y, font size, text) per shown string that decides
    whether the layout pass runs: a table caption, or two lines or more that start (or hold a
    string starting) at one x well right of the body's left edge: a wrapped cell or a column."""
    texts = [(x, y, size, text) for x, y, size, text in fragments if text.strip()]
    if not texts:
        return False
    if any(_CAPTION_LINE.match(text) for *_, text in texts):
        return True
    left = body_left([(x, text) for x, _, _, text in texts]) or 0.0
    lines_at = Counter[int]()
    for x, y, size, _ in {(round(x), round(y), size, "") for x, y, size, _ in texts}:
        if x > left + _INDENT * size:
            lines_at[x] += 1
    return any(count >= 2 for count in lines_at.values())


def shown_pieces(page: PageObject, reader: PdfReader) -> list[Piece]:
    """Every string the page shows, with its extent; [] when pypdf's layout pass fails."""
    try:
        return [
            Piece(tj.tx, tj.displaced_tx, tj.ty, tj.font_height, plain_hyphens(tj.text),
                  monospaced(tj.font.name, tj.font.font_descriptor.flags))
            for tj in _text_operations(page, reader)
            if tj.text.strip() and not tj.rotated
        ]
    except Exception as exc:  # pypdf's private pass: a change in it must not lose the page
        logger.debug("layout pass failed, columns not read: %s", exc)
        return []


def _text_operations(page: PageObject, reader: PdfReader) -> list[Any]:
    """pypdf's text-show operations (one per string of a Tj or TJ), as `text_show_operations`
    walks the content stream but before it merges them into lines."""
    from pypdf._text_extraction._layout_mode import _fixed_width_page as layout  # noqa: PLC0415 - private
    from pypdf._text_extraction._layout_mode._text_state_manager import TextStateManager  # noqa: PLC0415
    from pypdf.generic import ContentStream  # noqa: PLC0415

    contents = page.get_contents()
    if contents is None:
        return []
    fonts: Any = page._layout_mode_fonts()  # noqa: SLF001
    state = TextStateManager()
    operations = iter(ContentStream(contents, reader, "bytes").operations)
    shown: list[Any] = []
    for operands, op in operations:
        if op in (b"BT", b"q"):
            _, tjs = layout.recurse_to_target_op(operations, state, b"ET" if op == b"BT" else b"Q", fonts, True)
            shown.extend(tjs)
        elif op == b"Tf":
            layout.set_font_operation(state, fonts, operands)
        else:
            state.set_state_param(op, operands)
    return shown


def _lines(pieces: Sequence[Piece]) -> list[_Line]:
    """Pieces on one baseline (give or take a raised or lowered letter) as lines, top to bottom,
    each cut into cells at gaps wider than a word space."""
    rows: list[list[Piece]] = []
    for piece in sorted(pieces, key=lambda piece: (-piece.y, piece.x0)):
        if rows and abs(rows[-1][0].y - piece.y) <= _SAME_LINE * max(piece.size, rows[-1][0].size):
            rows[-1].append(piece)
        else:
            rows.append([piece])
    lines = []
    for row in rows:
        row.sort(key=lambda piece: piece.x0)
        size = max(piece.size for piece in row)
        cells: list[list[Piece]] = [[row[0]]]
        for piece in row[1:]:
            if piece.x0 - max(p.x1 for p in cells[-1]) >= _CELL_GAP * size:
                cells.append([])
            cells[-1].append(piece)
        lines.append(_Line(row[0].y, size, tuple(_cell(cell) for cell in cells)))
    return lines


def _cell(pieces: Sequence[Piece]) -> _Cell:
    """Pieces of one cell joined: a gap of a word space or more is a space (TeX sets word
    spaces as moves, not space characters)."""
    text = pieces[0].text
    for before, piece in zip(pieces, pieces[1:], strict=False):
        gap = piece.x0 - before.x1
        joined = gap > 0.15 * piece.size and not text.endswith(" ") and not piece.text.startswith(" ")
        text += (" " if joined else "") + piece.text
    mono = sum(len(p.text) for p in pieces if p.mono) * 2 > sum(len(p.text) for p in pieces)
    return _Cell(pieces[0].x0, max(p.x1 for p in pieces), " ".join(text.split()), mono)


def _columns(lines: Sequence[_Line]) -> list[float]:
    """Column starts: x where a cell other than a line's first starts on two lines or more."""
    starts = sorted(cell.x0 for line in lines for cell in line.cells[1:])
    columns: list[list[float]] = []
    for x in starts:
        if columns and x - columns[-1][-1] <= _ALIGN:
            columns[-1].append(x)
        else:
            columns.append([x])
    return [group[0] for group in columns if len(group) >= 2]


def _column_of(x: float, columns: Sequence[float]) -> int | None:
    return next((index for index, start in enumerate(columns) if abs(start - x) <= _ALIGN), None)


def find_column_tables(pieces: Sequence[Piece], notes: Sequence[MarginNote] = ()) -> list[PageTable]:
    """The page's tables without rules, top to bottom. Margin notes (`pdf_margins.py`) take no
    part: beside a page of entries they would line up as a first column."""
    pieces = [piece for piece in pieces if not any(piece.text.strip() in note.text for note in on_baseline(notes, piece.y))]
    lines = _lines(pieces)
    columns = _columns(lines)
    if not columns:
        return []
    spacing = _line_spacing(lines)
    body = _body_size(pieces)
    tables: list[PageTable] = []
    run: list[_Line] = []
    beside: list[_Line] = []
    for line in [*lines, None]:
        if line is not None and run and _beside(run, line):
            beside.append(line)  # a caption or note set in the margin beside the table
            continue
        if line is not None and run and _continues(run, line, columns, spacing):
            run.append(line)
            continue
        if (table := _table(run, columns, body)) is not None:
            tables.append(replace(table, lead=_margin_text(table, beside, notes)))
        run = [line] if line is not None and len(line.cells) > 1 and _in_table(line, columns) else []
        beside = []
    return tables


def _margin_text(table: PageTable, beside: Sequence[_Line], notes: Sequence[MarginNote]) -> tuple[str, ...]:
    """What the margin holds beside the table (its caption, set there by some classes), as one
    lead line: the PDF loader drops every line within the table's height, and would lose it."""
    parts = [(note.y, note.text) for note in notes if table.holds(note.y)]
    parts += [(line.y, line.cells[0].text) for line in beside]
    return (" ".join(text for _, text in sorted(parts, key=lambda part: -part[0])),) if parts else ()


def _beside(run: Sequence[_Line], line: _Line) -> bool:
    """A lone cell ending left of where the table `run` starts: in the margin beside it."""
    return len(line.cells) == 1 and line.cells[0].x1 < min(above.cells[0].x0 for above in run) and line.y > run[-1].y - 2 * line.size


def _continues(run: Sequence[_Line], line: _Line, columns: Sequence[float], spacing: float) -> bool:
    """Whether `line` goes on with the table `run` opened (with a line of cells): close below it,
    in no larger a size (a heading ends it), and either cells in columns or a lone cell in a
    column right of the table's first (a wrapped cell; prose starts at the first column's edge)."""
    larger = line.size > _LARGER * max(above.size for above in run)
    if larger or not _close(run[-1], line, spacing) or not _in_table(line, columns):
        return False
    return len(line.cells) > 1 or line.cells[0].x0 > run[0].cells[0].x0 + _ALIGN


def _in_table(line: _Line, columns: Sequence[float]) -> bool:
    """A line whose cells after the first all start in columns, or a lone cell in one (a
    wrapped cell); not a line of code (a listing aligned with spaces: all its cells in a
    monospaced font but its line number) nor an entry of a table of contents (its dot leaders)."""
    if any(_LEADER.search(cell.text) for cell in line.cells):
        return False
    if len(line.cells) > 1 and all(cell.mono or cell.text.isdigit() for cell in line.cells):
        return False
    if len(line.cells) == 1:
        return _column_of(line.cells[0].x0, columns) is not None
    return all(_column_of(cell.x0, columns) is not None for cell in line.cells[1:])


def _close(above: _Line, below: _Line, spacing: float) -> bool:
    return above.y - below.y <= _ROW_GAP * spacing


def _line_spacing(lines: Sequence[_Line]) -> float:
    """The tightest spacing between lines of one (largest) size: notes in a smaller size sit between."""
    gaps = [
        above.y - below.y
        for above, below in zip(lines, lines[1:], strict=False)
        if above.size == below.size and above.y - below.y > 0.5 * above.size
    ]
    return min(gaps, default=12.0)


def _body_size(pieces: Sequence[Piece]) -> float:
    """The size most of the page's characters are set in."""
    weights = Counter[float]()
    for piece in pieces:
        weights[round(piece.size, 1)] += len(piece.text.strip())
    return weights.most_common(1)[0][0] if weights else 0.0


def _table(run: Sequence[_Line], columns: Sequence[float], body: float) -> PageTable | None:
    """The run's lines as a table, or None when they are not one: fewer than two lines of
    cells, lines set larger than the page's text (a title page's author and date, side by side),
    or a first column of prose (a line beside a note, two columns of text)."""
    multi = [line for line in run if len(line.cells) >= 2]
    if len(multi) < _MIN_ROWS or statistics.median(line.size for line in run) > _LARGER * body:
        return None
    left = min(line.cells[0].x0 for line in multi)
    starts = [left, *sorted({columns[i] for line in run for cell in line.cells if (i := _column_of(cell.x0, columns)) is not None})]
    starts = sorted(set(starts))
    right = max(cell.x1 for line in run for cell in line.cells)
    firsts = [line.cells[0] for line in multi if _column_of(line.cells[0].x0, starts) == 0]
    if not firsts or statistics.median(len(cell.text) for cell in firsts) > _TERM_MAX_CHARS:
        return None
    if all(_marker(cell.text) for cell in firsts):  # footnotes, a numbered or bulleted list
        return None
    if statistics.median(cell.x1 - cell.x0 for cell in firsts) > _FIRST_COLUMN_SHARE * (right - left):
        return None
    rows = _rows(run, starts)
    if len(rows) < _MIN_ROWS:
        return None
    options = _option_rows(rows)
    texts = [[cell.text for cell in row] for row in (options or rows)]
    return PageTable(run[0].y, run[-1].y, texts, terms=options is not None)


def _marker(text: str) -> bool:
    """A list item's or footnote's mark: a bullet, or a short number or symbol ("2", "a)", "iv.")."""
    return text.startswith(BULLETS) or (len(text) <= _MARK_MAX_CHARS and not any(char.isalpha() for char in text))


def _rows(run: Sequence[_Line], starts: Sequence[float]) -> list[list[_Cell]]:
    """Cells by column per row: a line with a first-column cell opens a row; a line holding only
    text in the last column wraps the row's last cell; any other line is a row of its own."""
    width = len(starts)
    rows: list[list[_Cell]] = []
    for line in run:
        placed: dict[int, _Cell] = {}
        for cell in line.cells:
            index = max((i for i, start in enumerate(starts) if start <= cell.x0 + _ALIGN), default=0)
            placed[index] = _merge(placed[index], cell) if index in placed else cell
        if rows and 0 not in placed and set(placed) == {width - 1}:
            rows[-1][width - 1] = _merge(rows[-1][width - 1], placed[width - 1])
        else:
            rows.append([placed.get(i, _Cell(starts[i], starts[i], "", False)) for i in range(width)])
    return rows


def _merge(first: _Cell, second: _Cell) -> _Cell:
    text = f"{first.text} {second.text}".strip()
    if first.text.endswith("-") and second.text[:1].islower():  # a word hyphenated at the wrap
        text = first.text[:-1] + second.text
    return _Cell(first.x0, max(first.x1, second.x1), text, first.mono and second.mono)


def _option_rows(rows: Sequence[Sequence[_Cell]]) -> Sequence[Sequence[_Cell]] | None:
    """The rows of an option table without its header row, or None when the table is not one:
    two columns, and every first cell after a header row names an option or command, set in a
    monospaced font or written as one (`-K number`, `--output`, `\\special`)."""
    if len(rows[0]) != 2:
        return None
    body = rows if _names_option(rows[0][0]) else rows[1:]
    return body if len(body) >= _MIN_ROWS and all(_names_option(row[0]) and row[1].text for row in body) else None


def _names_option(cell: _Cell) -> bool:
    return bool(cell.text) and (cell.mono or cell.text.startswith(_OPTION_START))
