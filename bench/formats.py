"""What each document format costs to load: parse time per file and per 100,000 characters.

Generates one file per format holding the same kind of content (sections of a heading, three
paragraphs, a five-item list and a ten-row table; a sheet of rows; slides with notes; messages;
scanned A4 pages of the paragraphs, read by OCR), loads each with its loader `--repeat` times
in this one process, and prints the median. Embedding costs the same per chunk whatever the
format, so the loader is where formats differ.

    python bench/formats.py [--sections 200] [--repeat 5] [--formats PDF "scanned PDF (OCR)" ...]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sourcebook.loaders.epub import EpubLoader  # noqa: E402
from sourcebook.loaders.markdown import MarkdownLoader  # noqa: E402
from sourcebook.loaders.mail import MboxLoader  # noqa: E402
from sourcebook.loaders.odt import OdtLoader  # noqa: E402
from sourcebook.loaders.pdf import PdfLoader  # noqa: E402
from sourcebook.loaders.sheets import CsvLoader, XlsxLoader  # noqa: E402
from sourcebook.loaders.slides import PptxLoader  # noqa: E402
from sourcebook.loaders.word import DocxLoader  # noqa: E402
from tests.loaders.office_files import make_epub, make_mbox, make_message  # noqa: E402

PARAGRAPH = "The committee reviewed the proposal for section {n} and agreed on the budget, the schedule and the owners."


def _section(n: int) -> tuple[str, list[str], list[str], list[list[str]]]:
    paragraphs = [PARAGRAPH.format(n=n) + f" Point {k}." for k in range(3)]
    items = [f"item {k} of section {n}" for k in range(5)]
    rows = [["Key", "Value", "Owner"], *([f"key {n}.{k}", str(k * n), f"person {k}"] for k in range(10))]
    return f"Section {n}", paragraphs, items, rows


def make_markdown(sections: int) -> bytes:
    parts = []
    for n in range(sections):
        title, paragraphs, items, rows = _section(n)
        table = [f"| {' | '.join(rows[0])} |", "| --- | --- | --- |", *(f"| {' | '.join(r)} |" for r in rows[1:])]
        parts += [f"## {title}", *paragraphs, "\n".join(f"- {i}" for i in items), "\n".join(table)]
    return "\n\n".join(parts).encode()


def make_docx(sections: int) -> bytes:
    import docx

    document = docx.Document()
    for n in range(sections):
        title, paragraphs, items, rows = _section(n)
        document.add_heading(title, level=2)
        for text in paragraphs:
            document.add_paragraph(text)
        for item in items:
            document.add_paragraph(item, style="List Bullet")
        table = document.add_table(rows=len(rows), cols=3)
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_odt(sections: int) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableRow
    from odf.text import H, List, ListItem, P

    document = OpenDocumentText()
    for n in range(sections):
        title, paragraphs, items, rows = _section(n)
        document.text.addElement(H(outlinelevel=2, text=title))
        for text in paragraphs:
            document.text.addElement(P(text=text))
        items_element = List()
        for item in items:
            list_item = ListItem()
            list_item.addElement(P(text=item))
            items_element.addElement(list_item)
        document.text.addElement(items_element)
        table = Table()
        for row in rows:
            row_element = TableRow()
            for value in row:
                cell = TableCell()
                cell.addElement(P(text=value))
                row_element.addElement(cell)
            table.addElement(row_element)
        document.text.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def make_pptx(sections: int) -> bytes:
    from pptx import Presentation

    presentation = Presentation()
    for n in range(sections):
        title, paragraphs, items, _ = _section(n)
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = items[0]
        for item in items[1:]:
            body.add_paragraph().text = item
        slide.notes_slide.notes_text_frame.text = " ".join(paragraphs)
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def _sheet_rows(sections: int) -> list[list[str]]:
    return [["Key", "Value", "Owner", "Note"], *([f"key {n}", str(n), f"person {n % 7}", PARAGRAPH.format(n=n)] for n in range(sections * 10))]


def make_xlsx(sections: int) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("Data")
    for row in _sheet_rows(sections):
        sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_csv(sections: int) -> bytes:
    return "\n".join(",".join(f'"{value}"' for value in row) for row in _sheet_rows(sections)).encode()


def make_book(sections: int) -> bytes:
    chapters = []
    for chapter in range(10):
        body = []
        for n in range(chapter * sections // 10, (chapter + 1) * sections // 10):
            title, paragraphs, items, rows = _section(n)
            table = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in rows)
            body.append(f"<h2>{title}</h2>" + "".join(f"<p>{p}</p>" for p in paragraphs)
                        + "<ul>" + "".join(f"<li>{i}</li>" for i in items) + f"</ul><table>{table}</table>")
        chapters.append((f"c{chapter}.xhtml", f"<h1>Chapter {chapter}</h1>" + "".join(body)))
    return make_epub(chapters)


def make_mailbox(sections: int) -> bytes:
    return make_mbox([make_message(f"Section {n}", "ada@example.org", "\n\n".join(_section(n)[1])) for n in range(sections)])


def make_scan(sections: int) -> bytes:
    """A scanned PDF (the `ocr` extra): the sections' paragraphs drawn on A4 pages at 150 dpi,
    one page per 100 sections (OCR costs seconds a page, so it gets far fewer characters)."""
    from tests.loaders.scans import render_a4_page, scanned_pdf

    paragraphs = [paragraph for n in range(sections) for paragraph in _section(n)[1]]
    pages = []
    for _ in range(max(1, sections // 100)):
        image, text = render_a4_page(paragraphs)
        pages.append(image)
        paragraphs = paragraphs[text.count("\n") + 1 :]
    return scanned_pdf(pages)


def make_pdf(sections: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    for n in range(sections):
        title, paragraphs, items, _ = _section(n)
        pdf.set_font("Helvetica", size=16)
        pdf.multi_cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        for text in [*paragraphs, *items]:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    return bytes(pdf.output())


FORMATS: list[tuple[str, Callable[[int], bytes], object]] = [
    ("Markdown", make_markdown, MarkdownLoader()),
    ("PDF", make_pdf, PdfLoader()),
    ("scanned PDF (OCR)", make_scan, PdfLoader()),
    ("DOCX", make_docx, DocxLoader()),
    ("ODT", make_odt, OdtLoader()),
    ("PPTX", make_pptx, PptxLoader()),
    ("XLSX", make_xlsx, XlsxLoader()),
    ("CSV", make_csv, CsvLoader()),
    ("EPUB", make_book, EpubLoader()),
    ("mbox", make_mailbox, MboxLoader()),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sections", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--formats", nargs="+", help="only these rows (default: all)")
    args = parser.parse_args()
    print(f"| format | file bytes | text characters | blocks | load ms (median of {args.repeat}) | ms per 100,000 characters |")
    print("|---|---|---|---|---|---|")
    for name, make, loader in FORMATS:
        if args.formats and name not in args.formats:
            continue
        data = make(args.sections)
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            doc = loader.load(data, f"bench.{name.lower()}")  # type: ignore[attr-defined]
            times.append((time.perf_counter() - started) * 1000)
        median = statistics.median(times)
        characters = len(doc.text)
        print(f"| {name} | {len(data):,} | {characters:,} | {len(doc.blocks):,} | {median:.0f} | {median * 100_000 / characters:.0f} |")


if __name__ == "__main__":
    main()
