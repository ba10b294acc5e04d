"""Tables without rules in PDFs, found by their columns: option tables become entries (the option
the term), other tables Markdown rows; lines in a monospaced font stay lines of code; prose in two
columns, tables of contents and aligned code are not taken for tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF

from sourcebook.loaders.pdf import PdfLoader

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
PROSE = "The manual describes the command line of the converter and the specials it reads from a DVI file."


def _page(pdf: FPDF, y: float = 60.0) -> float:
    """A heading and a paragraph of prose in the body column (x 72), so most text starts there."""
    pdf.add_page()
    pdf.set_font("Helvetica", size=16)
    pdf.text(72, y, "1.2 Installation and Usage")
    pdf.set_font("Helvetica", size=10)
    y += 30
    for _ in range(6):
        pdf.text(72, y, PROSE)
        y += 12
    return y + 18


def _option_table() -> bytes:
    """LaTeX's `tabular` without rules, as dvipdfmx's manual sets Table 1.1: options in a
    monospaced font, their descriptions in a column at x 170, long ones wrapped in it."""
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf)
    pdf.text(100, y, "Option")
    pdf.text(170, y, "Description")
    rows = [
        ("-K", "number", ["Set encryption key length. The default value is 40."]),
        ("-P", "number", ["Set permission flags for PDF encryption. The number is a",
                          "32-bit unsigned integer. The default value is 0x003C."]),
        ("-S", "", ["Enable PDF encryption."]),
    ]
    for option, argument, lines in rows:
        y += 12
        pdf.set_font("Courier", size=10)
        pdf.text(100, y, option)
        pdf.set_font("Helvetica", size=10)
        if argument:
            pdf.text(115, y, argument)
        for index, line in enumerate(lines):
            y += 12 if index else 0
            pdf.text(170, y, line)
    pdf.text(110, y + 24, "Table 1.1: Additional command line options.")
    for index in range(3):
        pdf.text(72, y + 50 + 12 * index, "The minimal requirements for building it is the kpathsea library.")
    return bytes(pdf.output())


def test_an_option_table_without_rules_becomes_one_entry_per_row() -> None:
    doc = PdfLoader().load(_option_table(), "dvipdfmx.pdf")
    entries = {block.heading_path[-1]: block.text for block in doc.blocks if block.kind == "paragraph" and len(block.heading_path) == 2}
    assert entries == {
        "-K number": "Set encryption key length. The default value is 40.",
        "-P number": "Set permission flags for PDF encryption. The number is a 32-bit unsigned integer. The default value is 0x003C.",
        "-S": "Enable PDF encryption.",
    }
    texts = [block.text for block in doc.blocks]
    assert "Table 1.1: Additional command line options." in texts  # the caption stays, before the entries
    closing = next(block for block in doc.blocks if block.text.startswith("The minimal requirements"))
    assert closing.heading_path == ("1.2 Installation and Usage",)  # the entries end with the table
    assert not any("Option" in text and "Description" in text for text in texts)  # the header row is not an entry


def test_a_table_without_rules_is_read_as_rows_under_its_header() -> None:
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf)
    for feature, version in (("Feature", "PDF Version Required"), ("16-bit Color Depth", "Version 1.5"),
                             ("XMP Metadata", "Version 1.4"), ("ICC Profile", "Version 1.3")):
        pdf.text(90, y, feature)
        pdf.text(200, y, version)
        y += 12
    pdf.text(110, y + 12, "Table 3.1: PNG features and corresponding PDF versions required.")
    doc = PdfLoader().load(bytes(pdf.output()), "png.pdf")
    tables = [block.text for block in doc.blocks if block.kind == "table"]
    assert tables == [
        "Table 3.1: PNG features and corresponding PDF versions required.\n"
        "| Feature | PDF Version Required |\n| --- | --- |\n| 16-bit Color Depth | Version 1.5 |\n"
        "| XMP Metadata | Version 1.4 |\n| ICC Profile | Version 1.3 |"
    ]


def test_monospaced_lines_are_a_code_block_of_lines() -> None:
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf)
    pdf.text(72, y, "Alternatively, just for a quick test of installation, try the following:")
    pdf.set_font("Courier", size=10)
    for line in ("\\documentclass{article}", "\\begin{document}", "\\special{pdf:mapline rml H Ryumin}", "\\end{document}"):
        y += 12
        pdf.text(90, y, line)
    pdf.set_font("Helvetica", size=10)
    pdf.text(72, y + 12, "In this example, a viewer which can substitute fonts is required.")
    doc = PdfLoader().load(bytes(pdf.output()), "quick.pdf")
    kinds = [(block.kind, block.text) for block in doc.blocks]
    assert ("code", "\\documentclass{article}\n\\begin{document}\n\\special{pdf:mapline rml H Ryumin}\n\\end{document}") in kinds
    assert ("paragraph", "In this example, a viewer which can substitute fonts is required.") in kinds


def test_a_monospaced_word_ending_a_sentence_stays_in_it() -> None:
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf)
    pdf.text(72, y, "The expansion of fonts is switched on and off for the whole document with")
    pdf.set_font("Courier", size=10)
    pdf.text(72, y + 12, "\\microtypesetup.")
    doc = PdfLoader().load(bytes(pdf.output()), "microtype.pdf")
    assert "with \\microtypesetup." in doc.blocks[-1].text
    assert all(block.kind != "code" for block in doc.blocks)


@pytest.mark.skipif(not DEJAVU.exists(), reason="needs the DejaVu fonts")
def test_unicode_hyphens_read_as_the_hyphen_a_reader_types() -> None:
    pdf = FPDF(unit="pt", format="A4")
    pdf.add_page()
    pdf.add_font("DejaVu", fname=str(DEJAVU))
    pdf.set_font("DejaVu", size=10)
    pdf.text(72, 72, "To use the IPAex fonts, run kanji\u2010config\u2010updmap \u2010\u2010sys ipaex as root.")
    doc = PdfLoader().load(bytes(pdf.output()), "ptex.pdf")
    assert "kanji-config-updmap --sys ipaex" in doc.text


def test_prose_in_two_columns_tables_of_contents_and_aligned_code_are_not_tables() -> None:
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf)
    for index in range(8):  # two columns of running text, their lines level with each other
        pdf.text(72, y, f"Left column prose that runs on, line {index} of it.")
        pdf.text(320, y, f"Right column prose that goes on too, line {index}.")
        y += 12
    y += 24
    for number, title, page in (("1.1", "Introduction", 3), ("1.2", "Installation and Usage", 4), ("1.3", "Quick Guide", 5)):
        pdf.text(72, y, number)
        pdf.text(100, y, f"{title} . . . . . . . . . . . . . . . .")
        pdf.text(400, y, str(page))
        y += 12
    y += 24
    pdf.set_font("Courier", size=10)
    for name, encoding in (("urml", "SourceHanSerifJP-Light.otf"), ("urmlv", "SourceHanSerifJP-Light.otf -w 1")):
        pdf.text(90, y, name)
        pdf.text(160, y, encoding)
        y += 12
    doc = PdfLoader().load(bytes(pdf.output()), "columns.pdf")
    assert all(block.kind not in ("table", "term") for block in doc.blocks)


def test_a_numbered_listing_is_code_not_a_table() -> None:
    """A documented package's implementation: each code line numbered in the text font, the
    number in its own column; the listing is code, its numbers no column of a table."""
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf)
    pdf.text(72, y, "The options are declared here:")
    for number, code in ((88, "\\else"), (89, "\\OptionNotUsed"), (90, "\\fi")):
        y += 12
        pdf.set_font("Helvetica", size=8)
        pdf.text(60, y, str(number))
        pdf.set_font("Courier", size=10)
        pdf.text(90, y, code)
    doc = PdfLoader().load(bytes(pdf.output()), "ragged2e.pdf")
    assert [block.text for block in doc.blocks if block.kind == "code"] == ["88 \\else\n89 \\OptionNotUsed\n90 \\fi"]
    assert all(block.kind != "table" for block in doc.blocks)


def test_a_caption_in_the_margin_beside_a_table_leads_it() -> None:
    """Some classes set a table's caption in the margin, level with its first rows: it leads the
    table rather than being lost with the loose lines inside the table's height."""
    pdf = FPDF(unit="pt", format="A4")
    y = _page(pdf, y=60.0)
    pdf.set_font("Helvetica", size=8)
    pdf.text(20, y, "Table 3:")
    pdf.text(20, y + 10, "Type 1 fonts")
    pdf.text(20, y + 20, "with settings")
    pdf.set_font("Helvetica", size=10)
    for family, encodings in (("Font family", "Encodings"), ("Generic", "OT1, T1, LY1"), ("Charter (bch)", "OT1, T1"), ("Times (ptm)", "T1, TS1")):
        pdf.text(72, y, family)
        pdf.text(200, y, encodings)
        y += 12
    doc = PdfLoader().load(bytes(pdf.output()), "microtype.pdf")
    assert [block.text.split("\n")[0] for block in doc.blocks if block.kind == "table"] == ["Table 3: Type 1 fonts with settings"]


def test_a_title_pages_names_and_dates_side_by_side_are_not_a_table() -> None:
    pdf = FPDF(unit="pt", format="A4")
    pdf.add_page()
    pdf.set_font("Helvetica", size=24)
    pdf.text(150, 100, "The microtype package")
    pdf.set_font("Helvetica", size=12)
    for y, left, right in ((140, "R Schlicht", "v3.0f"), (156, "w.m.l@gmx.net", "2022/06/23")):
        pdf.text(150, y, left)
        pdf.text(350, y, right)
    pdf.set_font("Helvetica", size=10)
    for index in range(10):
        pdf.text(100, 200 + 12 * index, f"The abstract of the package goes on here, line {index} of the abstract text.")
    doc = PdfLoader().load(bytes(pdf.output()), "microtype.pdf")
    assert all(block.kind != "table" for block in doc.blocks)
