"""Plain-text loader: paragraphs split on blank lines, reStructuredText-style titles, man pages.

Apart from the shared text handling (text.py) so that the man-page reader (reference.py),
which builds on that handling too, can be used here without an import cycle.
"""

from __future__ import annotations

import re

from ..models import ParsedDocument
from .reference import add_man_page, looks_like_man_page
from .text import DocumentBuilder, decode_text, first_line, short_title, split_paragraphs, title_from_source

_ADORNMENT = re.compile(r"""^([=\-~^"'`*+#:.<>_])\1{2,}$""")


def _underlined_heading(lines: list[str]) -> tuple[str, tuple[str, bool], list[str]] | None:
    """Recognise an reStructuredText-style section title at the start of a paragraph.

    Returns (title, style, remaining lines); style is (adornment char, overlined),
    and its order of first appearance gives the level, as in reST.
    """
    stripped = [line.strip() for line in lines[:3]]
    if len(stripped) >= 3 and _ADORNMENT.match(stripped[0]) and stripped[2] == stripped[0]:
        title, overlined, rest = stripped[1], True, lines[3:]
    elif len(stripped) >= 2 and _ADORNMENT.match(stripped[1]):
        title, overlined, rest = stripped[0], False, lines[2:]
    else:
        return None
    adornment = stripped[1] if not overlined else stripped[0]
    if not title or _ADORNMENT.match(title) or len(adornment) < len(title):
        return None
    return title, (adornment[0], overlined), rest


def add_paragraph(builder: DocumentBuilder, paragraph: str, styles: list[tuple[str, bool]]) -> None:
    """Add one blank-line separated paragraph: a reST-style title and what follows it, or body
    text. `styles` lists the title styles seen so far (their order gives the levels), shared
    with the streamed reading of a large file (textfile.py), which adds its paragraphs one by one."""
    heading = _underlined_heading(paragraph.split("\n"))
    if heading is None:
        builder.add("paragraph", paragraph)
        return
    title, style, rest = heading
    if style not in styles:
        styles.append(style)
    builder.heading(styles.index(style) + 1, title)
    builder.add("paragraph", "\n".join(rest))


class TextLoader:
    """Plain text and reStructuredText: paragraphs split on blank lines.

    reST-style underlined titles become headings, which gives .rst files (and the
    many .txt files written the same way) a real section structure.
    """

    name: str = "text"
    media_types: tuple[str, ...] = ("text/plain", "text/x-rst")
    extensions: tuple[str, ...] = (".txt", ".text", ".rst")

    def load(self, data: bytes, source: str) -> ParsedDocument:
        text, encoding = decode_text(data, source)
        builder = DocumentBuilder()
        if looks_like_man_page(text):
            title = add_man_page(builder, text)
            return builder.build(source, title or title_from_source(source), self.media_types[0], {"encoding": encoding})
        styles: list[tuple[str, bool]] = []
        for paragraph in split_paragraphs(text):
            add_paragraph(builder, paragraph, styles)
        title = builder.first_heading or short_title(first_line(text))
        return builder.build(source, title, self.media_types[0], {"encoding": encoding})
