"""PDF text extraction side by side: pypdf plain, pypdf with the loader's visitor (line positions
and font sizes: what `loaders/pdf.py` runs), and pypdfium2 (plain text only), on one PDF, in
turns, 3 rounds; prints each one's median seconds and its speed against the loader's.

    python bench/pdf_engines.py /tmp/sourcebook-ingest-memory/pages-200.pdf

(bench/ingest_memory.py generates and caches that PDF.)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import pypdf
import pypdfium2

from sourcebook.loaders.pdf import page_lines


def pypdf_plain(path: str) -> int:
    return sum(len(page.extract_text() or "") for page in pypdf.PdfReader(path).pages)


def pypdf_visitor(path: str) -> int:
    return sum(len(line.text) for page in pypdf.PdfReader(path).pages for line in page_lines(page))


def pdfium(path: str) -> int:
    document = pypdfium2.PdfDocument(path)
    characters = 0
    for page in document:
        text_page = page.get_textpage()
        characters += len(text_page.get_text_range())
        text_page.close()
        page.close()
    document.close()
    return characters


def main() -> None:
    path = sys.argv[1]
    engines: list[Callable[[str], int]] = [pypdf_plain, pypdf_visitor, pdfium]
    seconds: dict[str, list[float]] = {engine.__name__: [] for engine in engines}
    for _ in range(3):
        for engine in engines:
            started = time.perf_counter()
            characters = engine(path)
            seconds[engine.__name__].append(time.perf_counter() - started)
            print(f"{engine.__name__}: {characters} characters, {seconds[engine.__name__][-1]:.2f} s", flush=True)
    loader = statistics.median(seconds["pypdf_visitor"])
    for name, runs in seconds.items():
        median = statistics.median(runs)
        print(f"{name}: median {median:.2f} s, {loader / median:.1f}x the loader's pypdf")


if __name__ == "__main__":
    main()
