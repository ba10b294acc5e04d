"""PDF loader: pypdf text extraction, one page at a time, page numbers kept.

pypdf's plain extraction follows the content stream, which keeps columns in
reading order (its layout mode would interleave them) but rarely emits blank
lines between paragraphs. So the loader also records where each line sits on the
page and starts a paragraph at a wider gap between lines, a change of font size,
a jump to a new column, a bullet, or after a short line that ends a sentence.
Short paragraphs set larger than the body text become headings (the largest
size is level 1), which gives PDF chunks section paths like other formats, and
running headers and footers are dropped so they do not repeat in every chunk.
Names set in the left margin beside an entry (LaTeX manuals' options and commands) are cut
out of their lines and open a reference entry for the text they sit beside (`pdf_margins.py`).
Tables with ruled borders are read by pdfplumber when installed (`pdf_tables.py`); tables
without rules by the columns their cells line up in, a two-column option table as one entry per
option (`pdf_columns.py`). Lines in a monospaced font set apart from the prose are code blocks,
line by line, and the hyphen glyphs of TeX fonts (U+2010, U+2011) read as "-".
Pages with no text layer (scans) are rendered and read by OCR when the ``ocr`` extra is
installed (`ocr.py`); their lines join into paragraphs as a text page's do.
Title: the PDF's metadata title, else its first level-1 heading, else first line.
"""

from __future__ import annotations

import io
import itertools
import logging
import pickle
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PdfReadWarning
from pypdf.generic import IndirectObject

from ..errors import EmptyDocumentError, LoaderError, MissingExtraError
from ..models import ParsedDocument
from .ocr import OCR_EXTRA, OcrPage, ocr_metadata, pdf_page_images, read_image, require_engine
from .pdf_columns import (
    BULLETS,
    Fragment,
    code_line,
    find_column_tables,
    may_have_columns,
    monospaced_font,
    plain_hyphens,
    shown_pieces,
)
from .pdf_margins import MarginNote, cut_note, find_notes, may_have_notes, on_baseline
from .pdf_tables import PageTable, attach_captions, find_tables, may_hold_table, split_at_tables
from .reference import entry_term
from .tables import add_table
from .text import DocumentBuilder, clean_inline, short_title

# pypdf logs (and sometimes warns about) every oddity of real-world PDFs it works
# around; to a Sourcebook user that is noise, and real failures surface as
# LoaderErrors. Set once here: warnings.catch_warnings() per call is not thread-safe.
logging.getLogger("pypdf").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", category=PdfReadWarning)

_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=([^\W\d_]))")
_SENTENCE_END = tuple('.!?:;"”’)')
_SHORT_LINE = 0.7  # of the page's typical line length
_WIDE_GAP = 1.35  # of the page's usual line spacing
_SIZE_CHANGE = 0.5  # points
_LEADING_WORD = 3  # characters that make a line's first fragment more than a drop cap or a bullet
_HEADING_SCALE = 1.15  # of the body text's size
_HEADING_MAX_CHARS = 150
_EDGE_LINES = 2  # lines at each end of a page that may be a running header or footer
_RUNNING_SHARE = 0.6  # of the pages a header or footer recurs on
_RUNNING_MIN_PAGES = 3
_DIGITS = re.compile(r"\d+")
_SPOOL_MEMORY_BYTES = 4 << 20  # pickled lines kept in memory before the spool moves to disk


@dataclass(frozen=True)
class TextLine:
    """One extracted line and, when known, its baseline height, font size, the margin notes
    level with it (cut out of its text), where it starts (PDF x) and whether it is set in a
    monospaced font (a line of code)."""

    text: str
    y: float | None = None
    size: float | None = None
    notes: tuple[str, ...] = ()
    x: float | None = None
    mono: bool = False


@dataclass(frozen=True)
class Paragraph:
    """A paragraph's text, the font size of its first line (None when unknown), the margin
    notes beside it, and whether it is code (lines of a monospaced font, kept as lines)."""

    text: str
    size: float | None = None
    notes: tuple[str, ...] = ()
    code: bool = False


def page_lines(page: PageObject, reader: PdfReader | None = None) -> list[TextLine]:
    """The page's lines with positions (`read_page`)."""
    return read_page(page, reader)[0]


def read_page(page: PageObject, reader: PdfReader | None = None) -> tuple[list[TextLine], list[PageTable]]:
    """The page's lines with positions, from pypdf's visitor callback, margin notes cut out of
    them when `reader` is given and text is shown left of the body column; and the tables
    without rules its columns make (`pdf_columns.py`), when `reader` is given.

    The visitor sees exactly the fragments pypdf joins into its text; should the two
    ever differ, the plain text is used without positions rather than lose words.
    """
    lines: list[TextLine] = []
    parts: list[str] = []
    fragments: list[Fragment] = []
    starts: list[tuple[float, float, float, str]] = []  # (x, y, size, text) of each fragment
    fonts: dict[int, bool] = {}  # monospaced, by font dictionary

    def end_line() -> None:
        lines.append(TextLine(
            plain_hyphens("".join(parts)), fragments[0].y if fragments else None, _line_size(fragments),
            x=fragments[0].x if fragments else None, mono=code_line(fragments),
        ))
        parts.clear()
        fragments.clear()

    def visit(text: str, cm: list[float], tm: list[float], font: Any, font_size: float) -> None:
        for index, piece in enumerate(text.split("\n")):
            if index:
                end_line()
            if piece.strip():
                x, y = tm[4] * cm[0] + tm[5] * cm[2] + cm[4], tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                scale = abs(tm[2] * cm[1] + tm[3] * cm[3]) or 1.0
                mono = fonts.setdefault(id(font), monospaced_font(font))
                fragments.append(Fragment(x, y, round(font_size * scale, 1), len(piece.strip()), mono, piece.strip().isdigit()))
                starts.append((x, y, font_size * scale, piece))
            parts.append(piece)

    text = plain_hyphens(page.extract_text(visitor_text=visit) or "")
    end_line()
    if "\n".join(line.text for line in lines).split() != text.split():
        return [TextLine(line) for line in text.split("\n")], []
    if reader is None:
        return lines, []
    notes = find_notes(page, reader) if may_have_notes([(x, text) for x, _, _, text in starts]) else []
    tables = find_column_tables(shown_pieces(page, reader), notes) if may_have_columns(starts) else []
    return (_cut_notes(lines, notes) if notes else lines), tables


def _cut_notes(lines: list[TextLine], notes: Sequence[MarginNote]) -> list[TextLine]:
    """Each line without the margin notes level with it, which it records instead."""
    result = []
    for line in lines:
        kept: list[str] = []
        text = line.text
        for note in on_baseline(notes, line.y):
            cut = cut_note(text, note.text)
            if cut is not None:
                text = cut
                kept.append(note.text)
        result.append(replace(line, text=text, notes=tuple(kept)) if kept else line)
    return result


def _line_size(fragments: Sequence[Fragment]) -> float | None:
    """A line's font size from its fragments: the font of most characters, so a bullet or a
    bold first word does not decide, unless the line opens with a word set larger than that
    (a heading with a smaller note beside it, "3.3 Font expansion  pdfTeX 1.20")."""
    if not fragments:
        return None
    size = max(fragments, key=lambda fragment: fragment.chars).size
    first = fragments[0]
    return first.size if first.size > size and first.chars >= _LEADING_WORD else size


def ocr_lines(page: OcrPage) -> list[TextLine]:
    """An OCR'd page's lines as `page_paragraphs` groups them: without positions or sizes (so
    never headings), an empty line between paragraphs."""
    return [TextLine(text) for text in page.lines]


def _read_scans(
    data: bytes, blank: Sequence[int], source: str
) -> tuple[dict[int, float | None] | None, dict[int, list[TextLine]]]:
    """OCR the pages `blank` (no text layer): their confidences and their lines by page number.
    The confidences are None when there are such pages but the ``ocr`` extra is not installed
    (then nothing is read, and the text pages load as before)."""
    if not blank:
        return {}, {}
    try:
        require_engine(source, "scanned PDF", "pypdfium2")
    except MissingExtraError:
        return None, {}
    confidences: dict[int, float | None] = {}
    lines: dict[int, list[TextLine]] = {}
    for number, image in pdf_page_images(data, blank, source):
        page = read_image(image, source, "scanned PDF")
        lines[number] = ocr_lines(page)
        confidences[number] = page.confidence
    return confidences, lines


def _rejoin_hyphenation(text: str) -> str:
    """'exam-\\nple' -> 'example'; before a capital the hyphen is real ('Jean-\\nPaul')."""
    return _HYPHEN_BREAK.sub(lambda match: "" if match.group(1).islower() else "-", text)


def page_paragraphs(lines: Sequence[TextLine], code: bool = True) -> list[Paragraph]:
    """Group a page's lines into paragraphs (see the module docstring for the cues). With
    `code`, lines set in a monospaced font and set apart from the prose (`_opens_code`) are
    code paragraphs, their lines kept as lines: joined, `\\special{pdf:code Q}%` and the next
    line of a listing read as one sentence."""
    lines = [replace(line, text=line.text.strip(), mono=code and line.mono) for line in lines]  # a copy, stripped
    lengths = sorted(len(line.text) for line in lines if line.text)
    typical = lengths[int(0.8 * (len(lengths) - 1))] if lengths else 0
    # The tightest spacing between same-size lines is a size's line spacing (a median would be
    # skewed by paragraph gaps on pages with few lines); per size, as footnotes set in smaller type
    # are set tighter, and the page's tightest spacing made every line of its prose a paragraph.
    spacings: dict[float, float] = {}
    for above, below in itertools.pairwise(lines):
        if above.y is not None and below.y is not None and above.size is not None and above.size == below.size:
            if (gap := above.y - below.y) >= 0.5 * above.size:
                spacings[above.size] = min(gap, spacings.get(above.size, gap))
    tightest = min(spacings.values(), default=None)
    groups: list[tuple[bool, list[TextLine]]] = [(False, [])]
    previous: TextLine | None = None
    for index, line in enumerate(lines):
        in_code = groups[-1][0]
        spacing = spacings.get(line.size, tightest) if line.size is not None else tightest
        following = lines[index + 1] if index + 1 < len(lines) else None
        if previous is None or not line.text:
            groups.append((line.mono, []))
        elif in_code:
            if not line.mono or _wide_gap(previous, line, spacing):
                groups.append((line.mono and _opens_code(previous, line, following, spacing), []))
        elif line.mono and _opens_code(previous, line, following, spacing):
            groups.append((True, []))
        elif _starts_paragraph(previous, line, spacing, typical):
            groups.append((False, []))
        if line.text:
            groups[-1][1].append(line)
            previous = line
        else:
            previous = None
    return [_paragraph(group, is_code) for is_code, group in groups if group]


def _paragraph(group: Sequence[TextLine], code: bool) -> Paragraph:
    notes = tuple(note for line in group for note in line.notes)
    if code:
        return Paragraph("\n".join(clean_inline(line.text) for line in group), group[0].size, notes, code=True)
    return Paragraph(clean_inline(_rejoin_hyphenation("\n".join(line.text for line in group))), group[0].size, notes)


def _opens_code(previous: TextLine, line: TextLine, following: TextLine | None, spacing: float | None) -> bool:
    """Whether a monospaced `line` after `previous` opens a code paragraph rather than ending a
    sentence that names a command ("...is set by" then a line holding only `\\microtypesetup.`):
    a gap or an indent sets it apart, the line before ends a sentence or clause, or a second
    monospaced line follows."""
    if not previous.text or previous.text.endswith((*_SENTENCE_END, ",")):
        return True
    if _wide_gap(previous, line, spacing) or (following is not None and following.mono and following.text):
        return True
    size = line.size or previous.size or 0.0
    return line.x is not None and previous.x is not None and abs(line.x - previous.x) > size


def _wide_gap(previous: TextLine, line: TextLine, spacing: float | None) -> bool:
    if previous.y is None or line.y is None or spacing is None:
        return False
    gap = previous.y - line.y
    return gap > _WIDE_GAP * spacing or gap < -(line.size or 0.0)


def _starts_paragraph(previous: TextLine, line: TextLine, spacing: float | None, typical: int) -> bool:
    if line.text.startswith(BULLETS):
        return True
    if previous.text.endswith(_SENTENCE_END) and len(previous.text) < _SHORT_LINE * typical:
        return True
    if previous.y is None or line.y is None or previous.size is None or line.size is None:
        return False
    gap = previous.y - line.y
    return (
        abs(previous.size - line.size) > _SIZE_CHANGE
        or gap < -line.size  # moved up the page: a new column or a float
        or (spacing is not None and gap > _WIDE_GAP * spacing)
    )


def drop_running_lines(pages: list[list[TextLine]]) -> list[list[TextLine]]:
    """Remove running headers and footers, which would otherwise repeat in every chunk.

    A line counts as one when it sits among the first or last lines of a page and
    its text, numbers aside ("Page 2 of 9"), recurs so on most pages.
    """
    running = running_keys(Counter(key for lines in pages for key in edge_keys(lines)), len(pages))
    return [without_running(lines, running) for lines in pages]


def edge_keys(lines: list[TextLine]) -> set[tuple[str, float | None]]:
    """The running-line keys of the page's first and last lines: what `running_keys` counts."""
    return {_running_key(lines[i]) for i in _edge_indexes(lines)}


def running_keys(counts: Counter[tuple[str, float | None]], pages: int) -> set[tuple[str, float | None]]:
    """The keys at the edge of most of `pages` pages (`counts`: on how many pages each key is
    among `edge_keys`); none for a document of too few pages to tell."""
    if pages < _RUNNING_MIN_PAGES:
        return set()
    return {key for key, count in counts.items() if count >= _RUNNING_SHARE * pages}


def without_running(lines: list[TextLine], running: Container[tuple[str, float | None]]) -> list[TextLine]:
    """The page's lines but its edge lines whose key is `running`."""
    edges = _edge_indexes(lines)
    return [line for i, line in enumerate(lines) if i not in edges or _running_key(line) not in running]


def _edge_indexes(lines: list[TextLine]) -> set[int]:
    filled = [i for i, line in enumerate(lines) if line.text.strip()]
    return set(filled[:_EDGE_LINES] + filled[-_EDGE_LINES:])


def _running_key(line: TextLine) -> tuple[str, float | None]:
    """Text with numbers masked, and size: a cover page's large title is not the running header."""
    return _DIGITS.sub("#", clean_inline(line.text).lower()), line.size


def heading_levels(paragraphs: Sequence[Paragraph]) -> dict[float, int]:
    """Heading level by font size: sizes clearly above the body text's (the size
    most characters are set in), largest first, for short paragraphs only."""
    weights = Counter[float]()
    for paragraph in paragraphs:
        if paragraph.size is not None:
            weights[paragraph.size] += len(paragraph.text)
    if not weights:
        return {}
    body = weights.most_common(1)[0][0]
    shaped = [
        p.size for p in paragraphs if p.size is not None and p.size >= _HEADING_SCALE * body and _heading_shaped(p.text)
    ]
    # Nothing outranks the document's first heading (its title) but a display set once in
    # larger type: a type sample, a pull quote. As a level-1 heading it would head every
    # section after it.
    uses = Counter(shaped)
    sizes = {size for size in uses if not (shaped and size > shaped[0] and uses[size] == 1)}
    return {size: min(level, 6) for level, size in enumerate(sorted(sizes, reverse=True), start=1)}


def _heading_shaped(text: str) -> bool:
    """Short, and words rather than a number or a drop cap."""
    return 3 <= len(text) <= _HEADING_MAX_CHARS and any(char.isalpha() for char in text)


def _open(data: bytes, source: str) -> PdfReader:
    """A readable (decrypted) reader, or a LoaderError saying why not.

    pypdf raises many exception types on damaged files (PdfReadError, ValueError,
    KeyError, ...), so anything it raises while opening counts as corruption.
    """
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt(reader, source)
        len(reader.pages)  # parses the page tree: damage there shows up now
    except LoaderError:
        raise
    except Exception as exc:
        raise LoaderError(source, f"corrupt or unreadable PDF: {exc or type(exc).__name__}") from exc
    return reader


def _decrypt(reader: PdfReader, source: str) -> None:
    """Many PDFs are encrypted with an empty user password (to set permissions only)."""
    try:
        result = reader.decrypt("")
    except DependencyError as exc:
        raise LoaderError(source, f"encrypted PDF: {exc}") from exc
    if result == PasswordType.NOT_DECRYPTED:
        raise LoaderError(source, "encrypted PDF: it needs a password; save a decrypted copy and add that")


def _info(reader: PdfReader) -> dict[str, str]:
    """Document info fields; a damaged info dictionary just means no metadata."""
    try:
        info = reader.metadata
        fields = {"title": info.title, "author": info.author} if info is not None else {}
    except Exception:
        fields = {}
    return {key: clean_inline(str(value)) for key, value in fields.items() if value and clean_inline(str(value))}


def build_blocks(paragraphs: Sequence[tuple[int, Paragraph | PageTable]]) -> DocumentBuilder:
    """Headings, paragraphs and tables, in order, from (page number, item) pairs; margin notes
    open reference entries (`_entry_terms`)."""
    levels = heading_levels([paragraph for _, paragraph in paragraphs if isinstance(paragraph, Paragraph)])
    heading_at = {
        index: level
        for index, (_, item) in enumerate(paragraphs)
        if isinstance(item, Paragraph)
        and item.size is not None
        and (level := levels.get(item.size)) is not None
        and _heading_shaped(item.text)
    }
    terms = _entry_terms([item for _, item in paragraphs], heading_at)
    builder = DocumentBuilder()
    for index, (number, paragraph) in enumerate(paragraphs):
        if index in terms:
            builder.entry(entry_term(terms[index]), page=number)
        if isinstance(paragraph, PageTable):
            _add_table(builder, paragraph, number)
        elif paragraph.code:
            builder.add("code", paragraph.text, page=number)
        elif index in heading_at:
            builder.heading(heading_at[index], paragraph.text, page=number)
        else:
            builder.add("paragraph", paragraph.text, page=number)
    return builder


def _add_table(builder: DocumentBuilder, table: PageTable, page: int) -> None:
    """A table as Markdown; an option table as entries, one per row, the option its term and the
    rest of the row its definition, after its caption: what HTML's
    definition lists become (`html.py`)."""
    if not table.terms:
        add_table(builder, table.rows, page=page, lead=table.lead)
        return
    for lead in table.lead:
        builder.add("paragraph", lead, page=page)
    for term, *definition in table.rows:
        builder.entry(entry_term([term]), page=page)
        builder.add("paragraph", " ".join(definition), page=page)
    builder.end_entries()


def _entry_terms(items: Sequence[Paragraph | PageTable], headings: Container[int]) -> dict[int, list[str]]:
    """Where entries open, by item index, and their terms: the margin notes beside a paragraph
    name the entry it opens, which runs to the next entry or heading. Notes beside the paragraph
    right after an entry's first one join that entry (a manual's "stretch" beside the value
    line and "shrink" beside the description below it name one entry, as `<dt>`s before one
    `<dd>` do)."""
    terms: dict[int, list[str]] = {}
    opener: int | None = None
    blocks = 0  # in the entry opened at `opener`
    for index, item in enumerate(items):
        if index in headings:
            opener = None
            continue
        notes = item.notes if isinstance(item, Paragraph) else ()
        if notes and opener is not None and blocks == 1:
            terms[opener].extend(notes)
        elif notes:
            opener, blocks = index, 0
            terms[index] = list(notes)
        blocks += 1
    return terms


def _no_text_cause(confidences: dict[int, float | None] | None) -> str:
    if confidences is None:
        return f"no extractable text (a scanned PDF? OCR needs the '{OCR_EXTRA}' extra: pip install 'sourcebook[{OCR_EXTRA}]')"
    if confidences:
        return "no text found: no page has a text layer, and OCR read nothing on the page images"
    return "no extractable text (no page has a text layer, nor draws anything to OCR)"


class _PageSpool:
    """Each page's lines, pickled to a temporary file as the page is read and read back one page
    at a time once the whole document has been seen (running headers and footers are judged
    across all pages). Held in memory, a 2,000-page PDF's lines were 26 MB of Python objects at
    the parse's peak, growing with the file (issue 17: parsing streams pages); a small PDF's stay
    in memory (up to `_SPOOL_MEMORY_BYTES` pickled)."""

    def __init__(self) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY_BYTES)
        self.numbers: list[int] = []

    def add(self, number: int, lines: list[TextLine]) -> None:
        pickle.dump(lines, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self.numbers.append(number)

    def __iter__(self) -> Iterator[tuple[int, list[TextLine]]]:
        self._file.seek(0)
        for number in self.numbers:
            yield number, pickle.load(self._file)  # noqa: S301 - our own pickles, never a file's

    def __enter__(self) -> _PageSpool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._file.close()


def _forget_contents(reader: PdfReader, page: PageObject) -> None:
    """Drop the page's content streams from pypdf's cache of parsed objects once the page is
    read: kept, they grow with the file (18 of the 30 MB pypdf held after 2,000 pages). Fonts
    and other shared resources stay cached: dropping all (`resolved_objects.clear()`) made
    a 615-page manual parse 3x slower, its fonts parsed again on every page."""
    if "/Contents" not in page:
        return
    contents = page.raw_get("/Contents")  # the reference, not the stream it points to
    resolved = contents.get_object()  # cached: the page was just read
    parts = resolved if isinstance(resolved, list) else []  # an array of streams
    for ref in [contents, *parts]:
        if isinstance(ref, IndirectObject):
            reader.resolved_objects.pop((ref.generation, ref.idnum), None)


def _paragraphs(pages: Iterable[tuple[int, list[TextLine]]], running: Container[tuple[str, float | None]],
                tables: dict[int, list[PageTable]], code: bool) -> list[tuple[int, Paragraph | PageTable]]:
    """(page number, paragraph or table) of every page, running lines dropped, in order; lines
    in a monospaced font are code when `code` (not in a document set in one throughout)."""
    return [
        (number, item)
        for number, lines in pages
        for run in split_at_tables(without_running(lines, running), tables.get(number, []))
        for item in (page_paragraphs(run, code) if isinstance(run, list) else [run])
    ]


class PdfLoader:
    name: str = "pdf"
    media_types: tuple[str, ...] = ("application/pdf",)
    extensions: tuple[str, ...] = (".pdf",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        """Two passes, one page in memory at a time: the first reads each page's lines into a
        spool and counts what whole-document judgements need (edge lines, pages without text,
        pages that draw a grid); the second turns the spooled pages into paragraphs."""
        if not data.strip():
            raise EmptyDocumentError(source, "empty file")
        reader = _open(data, source)
        edges = Counter[tuple[str, float | None]]()
        blank: list[int] = []
        grids: list[int] = []
        columns: dict[int, list[PageTable]] = {}
        unreadable: list[int] = []
        mono = Counter[bool]()  # characters of lines in a monospaced font, and of the others
        with _PageSpool() as spool:
            for number, page in enumerate(reader.pages, start=1):
                try:
                    lines, found = read_page(page, reader)
                except Exception:  # one damaged page should not lose the rest
                    unreadable.append(number)
                    continue
                if found:
                    columns[number] = found
                for line in lines:
                    mono[line.mono] += len(line.text)
                if may_hold_table(page):
                    grids.append(number)
                _forget_contents(reader, page)
                if not any(line.text.strip() for line in lines):
                    blank.append(number)
                edges.update(edge_keys(lines))
                spool.add(number, lines)
            confidences, scanned = _read_scans(data, blank, source)
            for lines in scanned.values():
                edges.update(edge_keys(lines))
            running = running_keys(edges, len(spool.numbers))
            pages = ((number, scanned.get(number, lines)) for number, lines in spool)
            tables = columns | find_tables(data, grids)  # a page's ruled tables, if any, over its column tables
            paragraphs = _paragraphs(pages, running, tables, code=mono[True] < mono[False])
        builder = build_blocks(attach_captions(paragraphs))
        if builder.empty and unreadable:
            raise LoaderError(source, f"corrupt or unreadable PDF: text extraction failed on pages {unreadable}")
        if builder.empty:
            raise EmptyDocumentError(source, _no_text_cause(confidences))
        info = _info(reader)
        metadata: dict[str, Any] = {"pages": len(reader.pages), **ocr_metadata(confidences or {})}
        if "author" in info:
            metadata["author"] = info["author"]
        if unreadable:
            metadata["unreadable_pages"] = unreadable
        # a PDF may hold nothing but tables (then the file's name is its title)
        first_text = next((item.text for _, item in paragraphs if isinstance(item, Paragraph)), "")
        title = info.get("title") or builder.first_h1 or short_title(first_text)
        return builder.build(source, title, self.media_types[0], metadata)
