"""OCR speed and accuracy on scanned pages rendered from known text (the `ocr` extra).

Draws `--pages` A4 pages at 150 dpi with 11-point text (DejaVu Sans, tests/loaders/scans.py),
puts them in a PDF as a scanner does (one image a page, no text layer), and measures in this
one process, median of `--repeat` runs:

- the PDF loader on that scan: pages per second (and CPU seconds a page) and character
  accuracy (1 - edit distance / characters of the text drawn) of each page's blocks;
- one page's OCR as the loader does it (`read_image`: crops enlarged before recognition) and
  as RapidOCR's own one call does it, side by side: time and accuracy;
- getting a page's image: pypdfium2's rendering (what the loader uses) against pypdf's
  extraction of the embedded image.

    python bench/ocr.py [--pages 5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pypdf import PdfReader  # noqa: E402

from sourcebook.loaders import ocr  # noqa: E402
from sourcebook.loaders.pdf import PdfLoader  # noqa: E402
from tests.loaders.scans import PARAGRAPHS, character_accuracy, render_a4_page, scanned_pdf  # noqa: E402


def _median_seconds(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    seconds, _, result = _median_times(run, repeat)
    return seconds, result


def _median_times(run: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall-clock seconds, median CPU seconds of this process (all its threads: on a
    machine shared with other work, the steadier figure), and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = run()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - started_cpu)
    return statistics.median(walls), statistics.median(cpus), result


def _pages(count: int) -> list[tuple[Any, str]]:
    """`count` full pages, each starting at a different paragraph so no two are alike."""
    return [render_a4_page(PARAGRAPHS[n % len(PARAGRAPHS) :] + PARAGRAPHS * 2) for n in range(count)]


def _one_call(image: Any) -> str:
    """RapidOCR's own pipeline (same engine, classifier off), lines in its order."""
    with ocr._engine_lock:
        result, _ = ocr._get_engine("bench", "page")(ocr.fit_image(image))
    return " ".join(str(item[1]) for item in result or [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pages = _pages(args.pages)
    data = scanned_pdf([image for image, _ in pages])
    characters = sum(len(text) for _, text in pages)
    print(f"{args.pages} A4 pages at 150 dpi, 11-point text, {characters:,} characters; median of {args.repeat}")

    ocr.read_image(pages[0][0], "bench", "page")  # loads the models once, outside the timings
    seconds, cpu, document = _median_times(lambda: PdfLoader().load(data, "scan.pdf"), args.repeat)
    accuracies = [
        character_accuracy(" ".join(b.text for b in document.blocks if b.page == number), text)
        for number, (_, text) in enumerate(pages, start=1)
    ]
    print(f"PDF loader: {seconds:.1f} s, {args.pages / seconds:.3f} pages/s ({seconds / args.pages:.2f} s a page; "
          f"CPU {cpu / args.pages:.2f} s a page, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}); "
          f"character accuracy mean {statistics.fmean(accuracies):.4f}, lowest {min(accuracies):.4f}; "
          f"confidence {document.metadata['ocr_confidence']}")

    image, text = pages[0]
    ours, read = _median_seconds(lambda: " ".join(ocr.read_image(image, "bench", "page").lines), args.repeat)
    theirs, read_once = _median_seconds(lambda: _one_call(image), args.repeat)
    print(f"page 1, read_image: {ours:.2f} s, accuracy {character_accuracy(read, text):.4f}; "
          f"RapidOCR's one call: {theirs:.2f} s, accuracy {character_accuracy(read_once, text):.4f}; "
          f"time ratio {ours / theirs:.2f}")

    numbers = list(range(1, args.pages + 1))
    rendered, _ = _median_seconds(lambda: list(ocr.pdf_page_images(data, numbers, "scan.pdf")), args.repeat)

    def extract() -> list[Any]:
        reader = PdfReader(io.BytesIO(data))
        return [page.images[0].image for page in reader.pages]

    extracted, _ = _median_seconds(extract, args.repeat)
    print(f"page images: pypdfium2 rendering {1000 * rendered / args.pages:.0f} ms a page, "
          f"pypdf extraction {1000 * extracted / args.pages:.0f} ms a page")


if __name__ == "__main__":
    main()
