"""PDF loader: pypdf text extraction, one page at a time, page numbers kept.

pypdf's plain extraction follows the content stream, which keeps columns in
reading order (its layout mode would interleave them) but rarely emits blank
lines between paragraphs. So the loader also records where each line sits on the
page and starts a paragraph at a wider gap between lines, a change of font size,
a jump to a new column, a bullet, or after a short line that ends a sentence.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError

from ..errors import EmptyDocumentError, LoaderError
from ..models import ParsedDocument
from .text import DocumentBuilder, clean_inline, short_title

# pypdf logs a warning for every oddity of real-world PDFs it works around; to a
# Sourcebook user they are noise, and real failures surface as LoaderErrors.
logging.getLogger("pypdf").setLevel(logging.ERROR)

_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=([^\W\d_]))")
_SENTENCE_END = tuple('.!?:;"”’)')
_BULLETS = tuple("•◦▪‣●○■□➢✓")
_SHORT_LINE = 0.7  # of the page's typical line length
_WIDE_GAP = 1.35  # of the page's usual line spacing
_SIZE_CHANGE = 0.5  # points


@dataclass(frozen=True)
class TextLine:
    """One extracted line and, when known, its baseline height and font size on the page."""

    text: str
    y: float | None = None
    size: float | None = None


def page_lines(page: PageObject) -> list[TextLine]:
    """The page's lines with positions, from pypdf's visitor callback.

    The visitor sees exactly the fragments pypdf joins into its text; should the two
    ever differ, the plain text is used without positions rather than lose words.
    """
    lines: list[TextLine] = []
    parts: list[str] = []
    fragments: list[tuple[float, float, int]] = []  # (baseline y, font size, characters)

    def end_line() -> None:
        y = fragments[0][0] if fragments else None
        # The font of most characters: a bullet or a bold first word should not decide.
        size = max(fragments, key=lambda fragment: fragment[2])[1] if fragments else None
        lines.append(TextLine("".join(parts), y, size))
        parts.clear()
        fragments.clear()

    def visit(text: str, cm: list[float], tm: list[float], font: Any, font_size: float) -> None:
        for index, piece in enumerate(text.split("\n")):
            if index:
                end_line()
            if piece.strip():
                y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                scale = abs(tm[2] * cm[1] + tm[3] * cm[3]) or 1.0
                fragments.append((y, font_size * scale, len(piece.strip())))
            parts.append(piece)

    text = page.extract_text(visitor_text=visit) or ""
    end_line()
    if "\n".join(line.text for line in lines).split() != text.split():
        return [TextLine(line) for line in text.split("\n")]
    return lines


def _rejoin_hyphenation(text: str) -> str:
    """'exam-\\nple' -> 'example'; before a capital the hyphen is real ('Jean-\\nPaul')."""
    return _HYPHEN_BREAK.sub(lambda match: "" if match.group(1).islower() else "-", text)


def page_paragraphs(lines: Sequence[TextLine]) -> list[str]:
    """Group a page's lines into paragraphs (see the module docstring for the cues)."""
    lines = [TextLine(line.text.strip(), line.y, line.size) for line in lines]  # a copy, stripped
    lengths = sorted(len(line.text) for line in lines if line.text)
    typical = lengths[int(0.8 * (len(lengths) - 1))] if lengths else 0
    # The tightest spacing between same-size lines is the page's line spacing (a
    # median would be skewed by paragraph gaps on pages with few lines).
    gaps = [
        above.y - below.y
        for above, below in zip(lines, lines[1:])
        if above.y is not None and below.y is not None and above.size is not None and above.size == below.size
        and above.y - below.y >= 0.5 * above.size
    ]
    spacing = min(gaps, default=None)
    paragraphs: list[list[str]] = [[]]
    previous: TextLine | None = None
    for line in lines:
        if previous is None or not line.text or _starts_paragraph(previous, line, spacing, typical):
            paragraphs.append([])
        if line.text:
            paragraphs[-1].append(line.text)
            previous = line
        else:
            previous = None
    return [clean_inline(_rejoin_hyphenation("\n".join(group))) for group in paragraphs if group]


def _starts_paragraph(previous: TextLine, line: TextLine, spacing: float | None, typical: int) -> bool:
    if line.text.startswith(_BULLETS):
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


class PdfLoader:
    name = "pdf"
    media_types = ("application/pdf",)
    extensions = (".pdf",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        if not data.strip():
            raise EmptyDocumentError(source, "empty file")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = _open(data, source)
            builder = DocumentBuilder()
            unreadable: list[int] = []
            first_line = ""
            for number, page in enumerate(reader.pages, start=1):
                try:
                    lines = page_lines(page)
                except Exception:  # one damaged page should not lose the rest
                    unreadable.append(number)
                    continue
                for paragraph in page_paragraphs(lines):
                    builder.add("paragraph", paragraph, page=number)
                first_line = first_line or next((line.text for line in lines if line.text.strip()), "")
        if builder.empty:
            raise EmptyDocumentError(source, "no extractable text (scanned PDF? OCR is not supported)")
        info = _info(reader)
        metadata: dict[str, Any] = {"pages": len(reader.pages)}
        if "author" in info:
            metadata["author"] = info["author"]
        if unreadable:
            metadata["unreadable_pages"] = unreadable
        return builder.build(source, info.get("title") or short_title(first_line), self.media_types[0], metadata)
