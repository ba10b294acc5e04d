"""Tables in real PDFs: the PDFs under a folder (Debian's /usr/share/doc by default), read the way
the PDF loader reads them (loaders/pdf_tables.py: pages that draw a grid, then pdfplumber); prints
how many grids pdfplumber finds, how many the loader keeps as tables and how many it reads as text
(frames, diagrams), and how many kept tables hold a row whose cells each carry several lines in two
columns or more (a table ruled by columns only: its rows read merged into one row).

    python bench/pdf_tables_real.py [FOLDER] [--max-pages 80] [--list]

`--list` prints every grid found: file, page, rows x columns, kept or not, its first two rows.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pdfplumber
from pypdf import PdfReader

from sourcebook.loaders.pdf_tables import _is_table, _may_hold_table  # the loader's own tests
from sourcebook.loaders.text import clean_inline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="/usr/share/doc")
    parser.add_argument("--max-pages", type=int, default=80, help="skip longer PDFs (time)")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    pdfs = grid_pages = grids = kept = merged = 0
    with_tables: set[Path] = set()
    for path in sorted(Path(args.folder).rglob("*.pdf")):
        try:
            reader = PdfReader(path)
            if len(reader.pages) > args.max_pages:
                continue
            pages = [index for index, page in enumerate(reader.pages) if _may_hold_table(page)]
        except Exception:  # a PDF pypdf cannot open is no table measurement
            continue
        pdfs += 1
        grid_pages += len(pages)
        with pdfplumber.open(path) as pdf:
            for index in pages:
                for table in pdf.pages[index].find_tables():
                    raw = table.extract()
                    if len(raw) < 2 or max(len(row) for row in raw) < 2:  # a box or a rule
                        continue
                    grids += 1
                    rows = [[clean_inline(cell or "") for cell in row] for row in raw]
                    table_kept = _is_table(rows)
                    kept += table_kept
                    lines = any(sum(1 for cell in row if cell and "\n" in cell) >= 2 for row in raw)
                    merged += table_kept and lines
                    if table_kept:
                        with_tables.add(path)
                    if args.list:
                        shape = f"{len(rows)}x{max(len(row) for row in rows)}"
                        print(path, index + 1, shape, "kept" if table_kept else "text", rows[:2])
    print(f"{pdfs} PDFs of at most {args.max_pages} pages under {args.folder}; {grid_pages} pages draw a grid")
    print(f"{grids} grids found by pdfplumber: {kept} kept as tables (in {len(with_tables)} PDFs), {grids - kept} read as text")
    print(f"{merged} kept tables hold a row with several lines in two or more columns (rows merged)")
    print(f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
