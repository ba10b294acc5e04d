"""Margin notes in PDFs (LaTeX manuals' option and command names): cut out of the line they sit
on and made the entry of the text beside them; a second column is never taken for a margin."""

from __future__ import annotations

from fpdf import FPDF

from sourcebook.loaders.pdf import Paragraph, PdfLoader, heading_levels
from sourcebook.loaders.pdf_margins import notes_from_strings

BODY = [
    "You may specify the maximum amount that a font may be stretched",
    "or shrunk. The numbers are divided by 1000, and the default is",
    "twenty. The shrink limit is by default the same as the stretch.",
]
STEP = [
    "Fonts are not expanded by arbitrary amounts but only by steps",
    "within the expansion limits; this option is by default set to 1.",
]


def _manual() -> bytes:
    """A page laid out as LaTeX sets a package's options: the option's name in the left margin,
    level with a line giving its type and default, written after that line (as the output
    routine adds a \\marginpar), in the same font so a plain reading glues them together."""
    pdf = FPDF(unit="pt", format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=16)
    pdf.text(150, 80, "3.3 Font expansion")
    pdf.set_font("Helvetica", size=10)
    y = 110.0
    for name, kind, default, body in (("stretch", "<integer>", "20", BODY), ("step", "<integer>", "1", STEP)):
        pdf.text(150, y, kind)
        pdf.text(480, y, default)
        pdf.text(150 - 8 - pdf.get_string_width(name), y, name)  # right-aligned against the column
        y += 20  # LaTeX sets the option line apart, and the description below it
        for line in body:
            pdf.text(150, y, line)
            y += 12
        y += 20
    for filler in range(12):  # the body column holds most of the page's text
        pdf.text(150, y, f"More running text of the manual, line {filler} of the closing paragraph here.")
        y += 12
    return bytes(pdf.output())


def test_margin_names_open_entries_and_leave_the_lines_they_sat_on() -> None:
    doc = PdfLoader().load(_manual(), "manual.pdf")
    blocks = [(block.kind, block.text, block.heading_path[-1:]) for block in doc.blocks]
    assert ("term", "stretch", ("stretch",)) in blocks
    assert ("paragraph", "<integer> 20", ("stretch",)) in blocks
    assert ("term", "step", ("step",)) in blocks
    assert ("paragraph", "<integer> 1", ("step",)) in blocks
    definition = next(block for block in doc.blocks if block.text.startswith("Fonts are not expanded"))
    assert definition.heading_path[-1] == "step"
    assert not any("20stretch" in block.text or "1step" in block.text for block in doc.blocks)


def test_a_second_column_is_not_a_margin() -> None:
    """Half the page's text starting left of the most common column edge is a column."""
    left = [(50.0, 250.0, 700.0 - 12 * i, "left column words of a line") for i in range(20)]
    right = [(300.0, 520.0, 700.0 - 12 * i, "right column words of a line, a bit longer") for i in range(20)]
    assert notes_from_strings(left + right) == []
    note = (10.0, 40.0, 700.0, "stretch")
    assert [n.text for n in notes_from_strings([note, *right])] == ["stretch"]


def test_touching_strings_in_the_margin_are_one_note() -> None:
    """A font change splits `\\begin{microtypecontext}` into several shown strings."""
    body = [(150.0, 500.0, 700.0 - 12 * i, "a line of the body column of the manual") for i in range(10)]
    parts = [(20.0, 55.0, 688.0, "\\begin{"), (55.3, 110.0, 688.0, "microtypecontext"), (110.2, 114.0, 688.0, "}")]
    assert [n.text for n in notes_from_strings([*parts, *body])] == ["\\begin{microtypecontext}"]


def test_a_display_set_once_larger_than_the_title_is_not_a_heading() -> None:
    paragraphs = [
        Paragraph("The package manual", 20),
        Paragraph("body text " * 40, 10),
        Paragraph("1 Introduction", 14),
        Paragraph("Stop stealing sheep!", 34),  # a type sample
        Paragraph("body text " * 40, 10),
        Paragraph("2 Options", 14),
    ]
    assert heading_levels(paragraphs) == {20: 1, 14: 2}


def test_hanging_marks_are_not_notes() -> None:
    """A footnote's mark or a section number hangs left of the column too, and names nothing."""
    body = [(150.0, 500.0, 700.0 - 12 * i, "a line of the body column of the manual") for i in range(10)]
    marks = [(130.0, 136.0, 688.0, "9"), (130.0, 136.0, 676.0, "a"), (120.0, 140.0, 664.0, "3.3")]
    assert notes_from_strings([*marks, *body]) == []
