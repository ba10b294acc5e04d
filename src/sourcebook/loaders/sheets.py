"""Spreadsheet loaders: XLSX (openpyxl) and CSV/TSV (the standard library's csv).

Each sheet is a table whose first non-empty row is its header. A sheet is a level-1
heading (its name; a CSV file has one unnamed sheet) and its rows go in parts, each under
a "Rows 2-31" heading with the header repeated (`tables.add_sheet`), so a chunk cites the
sheet and row range it holds. XLSX is read in openpyxl's read-only mode, which streams rows
from the file rather than building every cell object first, and with cached formula values
(what the user saw), not formulas.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
from collections.abc import Iterator
from typing import Any

from ..errors import LoaderError
from ..models import ParsedDocument
from .office import check_ooxml, reading, require
from .tables import add_sheet
from .text import DocumentBuilder, clean_inline, decode_text

_KIND = "XLSX"
_SNIFF_CHARS = 16384
_DELIMITERS = ",;\t|"


def _display(value: object) -> object:
    """A cell value as a person reads it: dates without a zero time, whole floats without '.0'."""
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value.date().isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sheet_rows(sheet: Any) -> Iterator[tuple[int, list[object]]]:
    for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
        yield number, [_display(value) for value in row]


class XlsxLoader:
    name: str = "xlsx"
    media_types: tuple[str, ...] = (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.ms-excel.sheet.macroenabled.12",
    )
    extensions: tuple[str, ...] = (".xlsx", ".xlsm")

    def load(self, data: bytes, source: str) -> ParsedDocument:
        openpyxl = require("openpyxl", source, _KIND)
        check_ooxml(data, source, _KIND)
        builder = DocumentBuilder()
        with reading(source, _KIND):
            workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
            try:
                names = list(workbook.sheetnames)
                for sheet in workbook.worksheets:
                    builder.heading(1, sheet.title)
                    add_sheet(builder, 2, _sheet_rows(sheet))
                title = clean_inline(workbook.properties.title or "")
            finally:
                workbook.close()  # read-only mode keeps the package open until closed
        return builder.build(source, title, self.media_types[0], {"sheets": names})


def _dialect(text: str, source: str) -> type[csv.Dialect] | csv.Dialect:
    """The file's dialect: tab-separated for .tsv, else sniffed, else plain commas."""
    if os.path.splitext(source)[1].lower() == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=_DELIMITERS)
    except csv.Error:
        return csv.excel


class CsvLoader:
    name: str = "csv"
    media_types: tuple[str, ...] = ("text/csv", "text/tab-separated-values")
    extensions: tuple[str, ...] = (".csv", ".tsv")

    def load(self, data: bytes, source: str) -> ParsedDocument:
        text, encoding = decode_text(data, source)
        builder = DocumentBuilder()
        reader = csv.reader(io.StringIO(text, newline=""), _dialect(text, source))
        try:
            add_sheet(builder, 1, enumerate(reader, start=1))
        except csv.Error as exc:
            raise LoaderError(source, f"unreadable CSV at line {reader.line_num}: {exc}") from exc
        return builder.build(source, None, self.media_types[0], {"encoding": encoding})
