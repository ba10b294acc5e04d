"""XLSX and CSV loading: sheets as Markdown tables, long sheets in row ranges with the header
repeated, and the shared table rendering every loader uses."""

from __future__ import annotations

import pytest

from sourcebook.errors import EmptyDocumentError, LoaderError
from sourcebook.loaders.sheets import CsvLoader, XlsxLoader
from sourcebook.loaders.tables import TABLE_PART_CHARS, add_table
from sourcebook.loaders.text import DocumentBuilder
from tests.loaders.office_files import make_docx, make_xlsx

STAFF_HEADER = "| Name | Team | Started | Hours |\n| --- | --- | --- | --- |"


def test_xlsx_sheets_are_sections_and_long_ones_split_by_rows_with_the_header() -> None:
    doc = XlsxLoader().load(make_xlsx(staff_rows=60), "staff.xlsx")
    assert doc.title == "staff"
    assert doc.metadata == {"sheets": ["Staff", "Budget"]}
    staff_tables = [b for b in doc.blocks if b.kind == "table" and b.heading_path[0] == "Staff"]
    assert len(staff_tables) > 1
    assert all(t.text.startswith(STAFF_HEADER + "\n") and len(t.text) <= TABLE_PART_CHARS for t in staff_tables)
    # every data row once, in order, and each part's heading names the sheet rows it holds
    rows = [line for t in staff_tables for line in t.text.split("\n")[2:]]
    assert rows == [f"| Person {i} | {'Ops' if i % 2 else 'Dev'} | 2020-01-{1 + i % 28:02d} | {37.5 if i % 3 else 40} |" for i in range(60)]
    for table in staff_tables:
        first, last = (int(n) for n in table.heading_path[1].removeprefix("Rows ").split("-"))
        body = table.text.split("\n")[2:]
        assert (body[0], body[-1]) == (rows[first - 2], rows[last - 2])  # sheet row 2 is data row 0
    budget = [(b.kind, b.text, b.heading_path) for b in doc.blocks if b.heading_path[0] == "Budget"]
    assert budget == [
        ("heading", "Budget", ("Budget",)),
        ("heading", "Rows 2-4", ("Budget", "Rows 2-4")),  # row 3 is empty: skipped, still counted
        ("table", "| Item | Cost |\n| --- | --- |\n| Laptops | 1200 |\n| Desks | 300 |", ("Budget", "Rows 2-4")),
    ]


def test_csv_sniffs_the_delimiter_and_keeps_quoted_newlines_in_a_cell() -> None:
    data = 'city;population;note\nLyon;522000;"river\ncity"\nNantes;320000;\n'.encode()
    doc = CsvLoader().load(data, "cities.csv")
    assert [(b.kind, b.text, b.heading_path) for b in doc.blocks] == [
        ("heading", "Rows 2-3", ("Rows 2-3",)),
        (
            "table",
            "| city | population | note |\n| --- | --- | --- |\n| Lyon | 522000 | river city |\n| Nantes | 320000 | |",
            ("Rows 2-3",),
        ),
    ]
    assert doc.metadata == {"encoding": "utf-8"}


def test_tsv_is_tab_separated_and_a_header_alone_is_a_table() -> None:
    doc = CsvLoader().load(b"a,b\tc\n", "only.tsv")
    assert [(b.kind, b.text) for b in doc.blocks] == [("table", "| a,b | c |\n| --- | --- |")]


def test_bad_sheets_are_named_errors() -> None:
    with pytest.raises(LoaderError, match=r"^a.xlsx: not an XLSX file \(it is a DOCX file\)$"):
        XlsxLoader().load(make_docx(), "a.xlsx")
    with pytest.raises(LoaderError, match=r"^a.xlsx: corrupt XLSX file"):
        XlsxLoader().load(make_xlsx()[:2000], "a.xlsx")
    with pytest.raises(LoaderError, match=r"^a.csv: binary data, not text$"):
        CsvLoader().load(make_xlsx(), "a.csv")
    with pytest.raises(EmptyDocumentError, match=r"^a.csv: no text found$"):
        CsvLoader().load(b",,\n,,\n", "a.csv")


def test_a_long_table_splits_by_rows_with_its_header_and_short_rows_are_padded() -> None:
    builder = DocumentBuilder()
    rows = [["Key", "Value", "Note"], *([f"key {i}", f"value {i}"] for i in range(80))]
    add_table(builder, rows, page=4)
    doc = builder.build("t", "t", "text/plain")
    header = "| Key | Value | Note |\n| --- | --- | --- |"
    assert len(doc.blocks) > 1 and all(b.page == 4 and b.kind == "table" for b in doc.blocks)
    assert all(b.text.startswith(header + "\n") and len(b.text) <= TABLE_PART_CHARS for b in doc.blocks)
    assert [line for b in doc.blocks for line in b.text.split("\n")[2:]] == [f"| key {i} | value {i} | |" for i in range(80)]
