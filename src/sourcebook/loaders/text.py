"""Plain-text loader, and the text handling every loader shares.

Decoding, whitespace/Unicode normalisation and heading-path bookkeeping live here
so that Markdown, HTML, PDF and BEIR documents come out normalised the same way:
the chunker and the keyword index then never see two spellings of one text.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePath, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import charset_normalizer

from ..chunking.parts import cut_at_whitespace
from ..errors import EmptyDocumentError, LoaderError
from ..models import Block, BlockKind, ParsedDocument

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16: its BOM starts with UTF-16 LE's
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control bytes that never occur in text (tab, newlines, form feed and ESC do).
_CONTROL_BYTES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B}
_CONTROL_SHARE_LIMIT = 0.05
_SNIFF_BYTES = 65536
# Characters that carry no text: soft hyphen, zero-width space/joiners, stray BOMs.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_WESTERN_PUNCTUATION = frozenset("‘’‚“”„–—…•€«»°§©®™·¶±×÷¿¡ªº´¨¸¯µ£¥¢")
_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
_NON_SPACE = re.compile(r"\S")
_TITLE_MAX = 100
_NAV_WORD = r"(?:prev(?:ious)?|next|up|home|top|contents|index|table of contents|back)"
_NAV_STRIP = re.compile(rf"^[\s|·•:«»<>\-–—\[\]]*(?:{_NAV_WORD}[\s|·•:«»<>\-–—\[\]]*)+$", re.IGNORECASE)
"""A block that only links around a site ("Prev | Up | Next", "Home", "Contents"): dropped."""


def decode_text(data: bytes, source: str, declared: str | None = None) -> tuple[str, str]:
    """Decode `data` to text and name the encoding used.

    Order: a BOM (it cannot lie), the `declared` charset (HTML meta), strict UTF-8,
    then detection. Binary data is refused here, so a PDF named `.txt` fails loudly
    instead of indexing garbage.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    if looks_binary(data):
        raise LoaderError(source, "binary data, not text")
    for encoding in filter(None, (_web_encoding(declared), "utf-8")):
        try:
            return data.decode(encoding), encoding
        except (UnicodeDecodeError, LookupError):
            continue
    return _detect(data, source)


def looks_binary(data: bytes) -> bool:
    """Whether the first bytes of `data` hold NULs or too many control bytes for text."""
    sample = data[:_SNIFF_BYTES]
    if b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte in _CONTROL_BYTES)
    return bool(sample) and controls / len(sample) > _CONTROL_SHARE_LIMIT


def _web_encoding(label: str | None) -> str | None:
    """Browsers read latin-1/ascii labels as windows-1252 (WHATWG); so do we."""
    if label is None:
        return None
    label = label.strip().lower()
    return "cp1252" if label in {"iso-8859-1", "latin-1", "latin1", "ascii", "us-ascii"} else label


def _detect(data: bytes, source: str) -> tuple[str, str]:
    """Guess the encoding of data that is not valid UTF-8.

    UTF-8 with a few damaged bytes stays UTF-8 (losing only those bytes beats
    mojibake everywhere). charset-normalizer is unreliable on short Western text
    (it reads short French as cp1250), while windows-1252 is by far the commonest
    legacy encoding; so cp1252 wins whenever it decodes to plausible Western text.
    """
    utf8 = data.decode("utf-8", errors="replace")
    damaged = utf8.count("\ufffd")
    if sum(not char.isascii() for char in utf8) - damaged >= 4 * damaged:
        return utf8, "utf-8"
    western = _as_western(data)
    if western is not None:
        return western, "cp1252"
    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise LoaderError(source, "cannot detect the text encoding")
    return str(best), best.encoding


def _as_western(data: bytes) -> str | None:
    """`data` as windows-1252 if that gives plausible Western text: every non-ASCII
    character a letter or usual punctuation, and a minority of the letters."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    letters = non_ascii_letters = 0
    for char in text:
        if char.isalpha():
            letters += 1
            non_ascii_letters += not char.isascii()
        elif not char.isascii() and char not in _WESTERN_PUNCTUATION and not char.isspace():
            return None
    return text if non_ascii_letters <= 0.3 * letters else None


def clean_inline(text: str) -> str:
    """NFC-normalise and collapse all whitespace (newlines too) to single spaces."""
    return " ".join(unicodedata.normalize("NFC", text).translate(_INVISIBLE).split())


def clean_lines(text: str) -> str:
    """Like `clean_inline` per line, keeping line breaks and dropping empty lines."""
    lines = (clean_inline(line) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def clean_code(text: str) -> str:
    """Code keeps its whitespace; only line endings, NFC and surrounding blank lines change."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    return text.strip("\n").rstrip()


_CLEANERS = {"code": clean_code, "list": clean_lines, "table": clean_lines}


def split_paragraphs(text: str) -> Iterator[str]:
    """Split on blank lines (lines holding only whitespace count as blank), one paragraph at a
    time: a large file's paragraphs are never all held as strings besides its blocks."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return stream_paragraphs([text])


def stream_paragraphs(pieces: Iterable[str], longest: int | None = None) -> Iterator[str]:
    """`split_paragraphs` of a text given a piece at a time (line breaks already "\\n"): the
    same paragraphs, holding only the one being read, so a large file is never held whole
    (loaders/textfile.py). With `longest`, a paragraph longer than that (a text without blank
    lines) comes in paragraphs of at most `longest` characters cut at whitespace, as the
    chunker cuts a giant block into parts (chunking/parts.py), else it would be held whole.

    A blank line found in the text read so far is one the whole text has at the same place:
    what follows the last one found is kept and read on with the next piece."""
    rest = ""
    for piece in pieces:
        text = rest + piece
        start = 0
        for blank in _BLANK_LINE.finditer(text):
            if text[start : blank.start()].strip():
                yield text[start : blank.start()]
            start = blank.end()
        while longest is not None and len(text) - start > longest:
            end = cut_at_whitespace(text, start, longest)
            if text[start:end].strip():
                yield text[start:end]
            start = end
        rest = text[start:]
    if rest.strip():
        yield rest


def title_from_source(source: str) -> str:
    """The fallback title: a file's stem, or a URL's last path segment or host."""
    parts = urlsplit(source)
    if parts.scheme in {"http", "https"}:
        return PurePosixPath(parts.path).stem or parts.netloc
    return PurePath(source).stem or source


def short_title(line: str) -> str:
    """A title made from body text, cut at a word boundary when long."""
    line = clean_inline(line)
    if len(line) <= _TITLE_MAX:
        return line
    return line[:_TITLE_MAX].rsplit(" ", 1)[0] + "…"


ENTRY_LEVEL = 10
"""Heading level of a reference entry: deeper than any real heading (HTML's go to 6)."""


class DocumentBuilder:
    """Collects blocks in reading order and gives each the headings above it.

    A heading of level n closes every open heading of level >= n, so the path is
    always the chain of enclosing sections.
    """

    def __init__(self) -> None:
        self._blocks: list[Block] = []
        self._open: list[tuple[int, str]] = []
        self.first_h1: str | None = None
        self.first_heading: str | None = None

    @property
    def empty(self) -> bool:
        return not self._blocks

    @property
    def block_count(self) -> int:
        return len(self._blocks)

    def heading(self, level: int, text: str, page: int | None = None) -> None:
        text = clean_inline(text)
        if not text:
            return
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, text))
        self.first_heading = self.first_heading or text
        if level == 1 and self.first_h1 is None:
            self.first_h1 = text
        self._blocks.append(Block("heading", text, self._path(), page))

    def entry(self, term: str, depth: int = 0, page: int | None = None) -> None:
        """Open a reference entry (a definition list's term, a man page option, an API signature):
        a heading below every real one, so the term ends the heading path of its definition and
        the chunker gives the entry its own chunk. `depth` counts the entry lists it is nested in;
        a real heading, `end_entries` or a sibling entry closes it."""
        text = clean_inline(term)
        if not text:
            return
        level = ENTRY_LEVEL + depth
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, text))
        self._blocks.append(Block("term", text, self._path(), page))

    def end_entries(self, depth: int = 0) -> None:
        """Close the entries opened at `depth` or deeper: text after a definition list belongs to
        the section around the list, not to its last term."""
        while self._open and self._open[-1][0] >= ENTRY_LEVEL + depth:
            self._open.pop()

    def add(self, kind: BlockKind, text: str, page: int | None = None) -> None:
        """Append a non-heading block; empty text is dropped."""
        text = _CLEANERS.get(kind, clean_inline)(text)
        if text and (kind == "code" or not _NAV_STRIP.match(text)):
            self._blocks.append(Block(kind, text, self._path(), page))

    def drain(self) -> list[Block]:
        """Remove and return the blocks collected so far, keeping the open headings: a streamed
        file (loaders/textfile.py) hands its blocks on as it reads them instead of holding all."""
        blocks, self._blocks = self._blocks, []
        return blocks

    def take_trailing(self, wanted: Callable[[Block], bool], most: int) -> list[str]:
        """Remove the last blocks (at most `most`, stopping at the first `wanted` refuses) and
        return their texts in reading order: what a table takes in as its lead (tables.py)."""
        taken: list[str] = []
        while self._blocks and len(taken) < most and wanted(self._blocks[-1]):
            taken.insert(0, self._blocks.pop().text)
        return taken

    def build(
        self, source: str, title: str | None, media_type: str, metadata: dict[str, Any] | None = None
    ) -> ParsedDocument:
        """The finished document; a source without text is an error, not an empty document."""
        if not self._blocks:
            raise EmptyDocumentError(source, "no text found")
        return ParsedDocument(
            source=source,
            title=clean_inline(title or "") or title_from_source(source),
            blocks=tuple(self._blocks),
            media_type=media_type,
            metadata=metadata or {},
        )

    def _path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self._open)


def first_line(text: str) -> str:
    """The text's first line that is not blank, without splitting a large text into lines."""
    first = _NON_SPACE.search(text)
    return text[first.start() : first.start() + _SNIFF_BYTES].splitlines()[0] if first else ""
