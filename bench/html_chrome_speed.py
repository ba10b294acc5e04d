"""What the HTML loader's page pass (`loaders/html_boilerplate.PageStructure`: link statistics,
in-page anchors, navigation to drop) costs: the loader over the given folders' HTML pages with it
and with a no-op stand-in (main's behaviour before it), alternating in one process so that the
machine's load falls on both alike. Prints the per-round ratios and their median.

    PYTHONPATH=src python bench/html_chrome_speed.py eval/sqlite/corpus eval/gitdoc/corpus eval/valgrind/corpus
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from selectolax.lexbor import LexborNode

import sourcebook.loaders.html as html
from sourcebook.loaders.html import HtmlLoader


class _NoStructure:
    """Drops nothing and finds no entries: the loader as it was before the page pass."""

    entry_terms: dict[int, str] = {}

    def __init__(self, page: LexborNode, source: str) -> None:
        del page, source

    def chrome(self, root: LexborNode) -> set[int]:
        del root
        return set()


def _load_all(pages: list[bytes], structure: type) -> float:
    html.PageStructure = structure  # type: ignore[assignment,misc]
    start = time.perf_counter()
    for index, data in enumerate(pages):
        HtmlLoader().load(data, f"page{index}.html")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    pages = [path.read_bytes() for folder in args.folders for path in sorted(folder.glob("*.htm*"))]
    real = html.PageStructure
    ratios = []
    for _ in range(args.rounds):
        without = _load_all(pages, _NoStructure)
        ratios.append(_load_all(pages, real) / without)
    html.PageStructure = real
    print(f"{len(pages)} pages; with/without the page pass, per round: {sorted(round(r, 2) for r in ratios)}")
    print(f"median {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
