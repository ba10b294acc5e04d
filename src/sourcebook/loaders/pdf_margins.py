"""Margin notes in PDFs: the option or command names a manual sets beside its text.

Reference manuals typeset in LaTeX (`\\marginpar`, the `ltxdoc` and `doc` classes: microtype,
hyperref, every package manual of TeX Live) name the option or command an entry describes in
the margin, level with the entry's first line. pypdf's plain text follows the content stream,
where the margin note comes last on its line, so it glued the name to the end of that line
("〈integer〉 20stretch", "{〈font name〉}\\LoadMicrotypeFile") or into the middle of a sentence,
and the name never led the text that defines it.

This module finds such notes by position: short text that ends before the body column starts
(notes in the left margin, as these classes and one-sided documents set them), on a page where the body column holds nearly all the text, so the
second column of a two-column page is never taken for a margin. It cuts each note out of the
line it sits on; the PDF loader then opens a reference entry named by the note
(`DocumentBuilder.entry`), so the definition is a unit of its own with the name in its heading
path, as an HTML definition list's term is.

Positions come from pypdf's layout-mode text pass (`_layout_mode.text_show_operations`, in
pypdf since 3.17), which places every shown string; the plain pass merges strings of one font
on one line and so cannot say where a note starts. That pass is private to pypdf and costs as
much as the plain one, so it runs only on pages where the plain pass saw text shown left or
right of the body column, and any failure in it leaves the page as the plain pass read it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject, PdfReader

logger = logging.getLogger(__name__)

_NOTE_MAX_CHARS = 40  # a name, not a sentence
_NOTE_MIN_LETTERS = 2  # not a hanging footnote mark ("9", "a") or section number
_NOTE_MAX_SHARE = 0.15  # of the page's characters: more is a second column, not a margin
_COLUMN_GAP = 3.0  # points between a note's end and the body column (LaTeX's \marginparsep is 7-11)
_SAME_BASELINE = 1.0  # points
_TOUCHING = 1.0  # points between two strings that are one word
_OUTSIDE = 6.0  # points beyond the column's edge that make a shown string worth a look


@dataclass(frozen=True)
class MarginNote:
    """A note's text and the baseline it sits on (PDF y, from the bottom of the page)."""

    text: str
    y: float


def body_left(strings: Sequence[tuple[float, str]]) -> float | None:
    """The body column's left edge: the x (to the point) where most characters' strings start."""
    weights = Counter[float]()
    for x, text in strings:
        weights[round(x)] += len(text.strip())
    return weights.most_common(1)[0][0] if weights else None


def may_have_notes(starts: Sequence[tuple[float, str]]) -> bool:
    """Whether any text is shown left of the body column: the cheap test, on the plain pass's
    (x, text) per shown string, that decides whether the layout pass runs on the page."""
    left = body_left(starts)
    return left is not None and any(x < left - _OUTSIDE and text.strip() for x, text in starts)


def find_notes(page: PageObject, reader: PdfReader) -> list[MarginNote]:
    """The page's margin notes, top to bottom; none when the layout pass fails."""
    try:
        groups = _shown_strings(page, reader)
    except Exception as exc:  # pypdf's private pass: a change in it must not lose the page
        logger.debug("layout pass failed, margin notes not read: %s", exc)
        return []
    return notes_from_strings(groups)


def notes_from_strings(groups: Sequence[tuple[float, float, float, str]]) -> list[MarginNote]:
    """Margin notes among shown strings given as (start x, end x, baseline y, text).

    The body column is where most characters start; a note is a short string with two letters or
    more that ends before it, and all notes together stay a small share of the page's text."""
    left = body_left([(start, text) for start, _, _, text in groups])
    if left is None:
        return []
    margin = _joined([group for group in groups if group[1] < left - _COLUMN_GAP and group[3].strip()])
    notes = [
        MarginNote(text, y)
        for text, y in margin
        if len(text) <= _NOTE_MAX_CHARS and sum(char.isalpha() for char in text) >= _NOTE_MIN_LETTERS
    ]
    total = sum(len(text.strip()) for *_, text in groups)
    if sum(len(note.text) for note in notes) > _NOTE_MAX_SHARE * total:
        return []
    return notes


def _joined(groups: Sequence[tuple[float, float, float, str]]) -> list[tuple[str, float]]:
    """Strings on one baseline that touch, joined: a font change splits `\\begin{microtypecontext}`
    into three shown strings. Top to bottom, as (text, baseline y)."""
    joined: list[tuple[str, float, float]] = []  # (text, y, end x)
    for start, end, y, text in sorted(groups, key=lambda group: (-group[2], group[0])):
        if joined and abs(joined[-1][1] - y) <= _SAME_BASELINE and start - joined[-1][2] <= _TOUCHING:
            joined[-1] = (joined[-1][0] + text.strip(), y, end)
        else:
            joined.append((text.strip(), y, end))
    return [(text, y) for text, y, _ in joined]


def _shown_strings(page: PageObject, reader: PdfReader) -> list[tuple[float, float, float, str]]:
    from pypdf._text_extraction import _layout_mode  # noqa: PLC0415 - private, see the docstring
    from pypdf.generic import ContentStream  # noqa: PLC0415

    contents = page.get_contents()
    if contents is None:
        return []
    fonts: Any = page._layout_mode_fonts()  # noqa: SLF001
    operations = iter(ContentStream(contents, reader, "bytes").operations)
    return [
        (group["tx"], group["displaced_tx"], group["ty"], group["text"])
        for group in _layout_mode.text_show_operations(operations, fonts, True, None)
    ]


def cut_note(line: str, note: str) -> str | None:
    """The line without the note (its last occurrence, where the plain pass put it), or None
    when the plain text does not hold the note as the layout pass read it."""
    at = line.rfind(note)
    if at < 0:
        return None
    return " ".join((line[:at] + " " + line[at + len(note) :]).split())


def on_baseline(notes: Sequence[MarginNote], y: float | None) -> list[MarginNote]:
    """The notes level with a line at height `y`."""
    if y is None:
        return []
    return [note for note in notes if abs(note.y - y) <= _SAME_BASELINE]
