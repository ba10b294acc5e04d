"""Tables in PDFs (pdfplumber): read as Markdown tables with their caption and introducing
sentence, split by rows with the header repeated, on the right page; and a question whose
answer is one cell, answered from a real knowledge base with the page cited."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fpdf import FPDF

from sourcebook import KnowledgeBase
from sourcebook.loaders.pdf import PdfLoader

HEADER = "| Package | Version | Installed size (kB) |\n| --- | --- | --- |"
LEAD = "Sizes were measured on Debian 13. The packages are listed below:\nTable 1: Installed size of each package"


def make_table_pdf(rows: int = 40) -> bytes:
    """A page of prose, then an introduced and captioned table with ruled borders that runs
    onto page 2 (fpdf2 repeats its header row there), then a closing paragraph."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "Mirror operators keep the archive small. " * 6, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.multi_cell(0, 6, "Sizes were measured on Debian 13. The packages are listed below:", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.multi_cell(0, 6, "Table 1: Installed size of each package", new_x="LMARGIN", new_y="NEXT")
    with pdf.table() as table:
        for values in [("Package", "Version", "Installed size (kB)"), *((f"libfoo{i}", f"1.{i}", str(1000 + 37 * i)) for i in range(rows))]:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.ln(4)
    pdf.multi_cell(0, 6, "The largest package is libfoo39.", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def test_a_table_is_read_with_its_lead_split_by_rows_on_its_pages() -> None:
    doc = PdfLoader().load(make_table_pdf(), "sizes.pdf")
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert {b.page for b in tables} == {1, 2}
    assert len(tables) > 2
    # every part opens with the introducing sentence, the caption and the header
    assert all(t.text.startswith(f"{LEAD}\n{HEADER}\n") for t in tables)
    rows = [line for t in tables for line in t.text.split("\n")[4:]]
    assert rows == [f"| libfoo{i} | 1.{i} | {1000 + 37 * i} |" for i in range(40)]
    paragraphs = [b.text for b in doc.blocks if b.kind == "paragraph"]
    assert paragraphs[-1] == "The largest package is libfoo39."
    assert not any("libfoo1 " in p or "Table 1" in p for p in paragraphs)  # no loose cells, no moved caption


def test_without_pdfplumber_a_ruled_table_is_read_by_its_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the `tables` extra the ruling is not read, but the cells still line up in columns
    (`pdf_columns.py`): the same rows, under the same lead."""
    monkeypatch.setitem(sys.modules, "pdfplumber", None)  # an install without the `tables` extra
    doc = PdfLoader().load(make_table_pdf(rows=3), "sizes.pdf")
    tables = [b.text for b in doc.blocks if b.kind == "table"]
    assert tables == [f"{LEAD}\n{HEADER}\n" + "\n".join(f"| libfoo{i} | 1.{i} | {1000 + 37 * i} |" for i in range(3))]


def test_a_question_answered_by_one_cell_cites_its_page(tmp_path: Path, kb: KnowledgeBase) -> None:
    path = tmp_path / "sizes.pdf"
    path.write_bytes(make_table_pdf())
    kb.add(str(path))
    hit = kb.search("installed size of libfoo33", top_k=1)[0].chunk
    assert hit.page == 2
    assert "| libfoo33 | 1.33 | 2221 |" in hit.text and hit.text.startswith(LEAD)
    # The calibrated gate alone (fitted on documentation prose) withheld this answer: a table row
    # embeds far from its question. It quotes the identifier asked from the keyword search's
    # first chunk, which the gate does not withhold (confidence.quotes_what_was_asked).
    answer = kb.ask("What is the installed size of libfoo33?")
    assert not answer.abstained and "2221" in answer.answer
    assert any(c.page == 2 and c.source.endswith("sizes.pdf") for c in answer.citations)


def make_grid_pdf(cells: list[list[str]], width: float = 60, height: float = 12) -> bytes:
    """One page holding nothing but a grid of ruled cells (`cells` rows of texts, "" for an
    empty cell): a price list that is only a table, or a frame drawn around a page's text."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            pdf.set_xy(10 + c * width, 20 + r * height)
            pdf.cell(width, height, text, border=1)
    return bytes(pdf.output())


def test_a_pdf_holding_only_a_table_is_read_and_named_after_its_file() -> None:
    """Found on Debian's luaharfbuzz.pdf, whose pages are all boxes: with no paragraph outside
    a table, finding the title raised StopIteration, which ended the whole `add`."""
    doc = PdfLoader().load(make_grid_pdf([["Item", "Price"], ["Tea", "2.50"], ["Cake", "3.10"]]), "prices.pdf")
    assert [b.text for b in doc.blocks] == ["| Item | Price |\n| --- | --- |\n| Tea | 2.50 |\n| Cake | 3.10 |"]
    assert doc.title == "prices"


def test_a_frame_drawn_around_text_is_not_a_table() -> None:
    """A grid with text in one column or in at most half of its cells is a frame, a diagram
    or a slide's border (so were 57 of the 118 'tables' pdfplumber found in the Debian PDFs,
    bench/pdf_tables_real.py): its text reads as paragraphs, as without pdfplumber."""
    framed = make_grid_pdf([["", "Module harfbuzz.", ""], ["", "", ""]])
    assert [(b.kind, b.text) for b in PdfLoader().load(framed, "frame.pdf").blocks] == [("paragraph", "Module harfbuzz.")]
    sparse = make_grid_pdf([["METAFONT", "", "is"], ["", "a", ""], ["", "", "tool."]], width=30)
    assert {b.kind for b in PdfLoader().load(sparse, "sparse.pdf").blocks} == {"paragraph"}
