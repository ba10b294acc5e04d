"""What a change to the PDF loader changes on real PDFs: a seeded sample of the PDFs under the given
folders is loaded by two source trees' `PdfLoader` (each tree in its own process, as both hold the
same package), and the blocks compared page by page: pages whose blocks changed, blocks by kind
before and after (tables, entries, code), failures, the parse time of each tree, and a sample of
the blocks only the new tree makes, to read. With `--repeat`, the trees load the sample in turn
that many times (the machine's load drifts between runs) and each PDF's time is the median.

    git worktree add /tmp/main-tree main
    PYTHONPATH=src python bench/pdf_loader_diff.py --before /tmp/main-tree/src --after src /usr/share/doc
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

_LOAD = """
import json, sys, time
from sourcebook.loaders.pdf import PdfLoader
for path in sys.stdin.read().split("\\n"):
    start = time.perf_counter()
    try:
        doc = PdfLoader().load(open(path, "rb").read(), path)
        blocks = [[b.kind, b.text, b.page, list(b.heading_path)] for b in doc.blocks]
    except Exception as error:
        blocks = type(error).__name__
    print(json.dumps([path, time.perf_counter() - start, blocks]))
"""


def _load(tree: str, pdfs: list[Path]) -> dict[str, tuple[float, list[list[object]] | str]]:
    """Each PDF's load time and blocks (or the error's name) as the tree `tree` reads it."""
    result = subprocess.run(
        [sys.executable, "-c", _LOAD], input="\n".join(map(str, pdfs)), env={**os.environ, "PYTHONPATH": tree},
        capture_output=True, text=True, check=True,
    )
    return {path: (seconds, blocks) for path, seconds, blocks in map(json.loads, result.stdout.splitlines())}


def _median_times(runs: list[dict[str, tuple[float, list[list[object]] | str]]]) -> dict[str, tuple[float, list[list[object]] | str]]:
    """The first run's blocks with each PDF's median time over `runs`."""
    return {path: (statistics.median(run[path][0] for run in runs), blocks) for path, (_, blocks) in runs[0].items()}


def _by_page(blocks: list[list[object]]) -> dict[object, list[list[object]]]:
    pages: dict[object, list[list[object]]] = {}
    for block in blocks:
        pages.setdefault(block[2], []).append(block)
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40, help="PDFs sampled")
    parser.add_argument("--max-bytes", type=int, default=1_500_000, help="larger PDFs are left out (time)")
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--before", required=True, help="the source tree (its src/) reading the PDFs as before")
    parser.add_argument("--after", required=True, help="the source tree reading them as after")
    parser.add_argument("--sample", type=int, default=25, help="new blocks to print")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="alternate the two trees this often; times are medians")
    args = parser.parse_args()
    found = sorted(p for folder in args.folders for p in folder.rglob("*.pdf") if p.is_file() and p.stat().st_size <= args.max_bytes)
    pdfs = sorted(random.Random(args.seed).sample(found, min(args.files, len(found))))
    runs = [(_load(args.before, pdfs), _load(args.after, pdfs)) for _ in range(args.repeat)]  # alternating: load drifts
    before, after = (_median_times([run[side] for run in runs]) for side in (0, 1))
    pages = changed = 0
    kinds: dict[str, Counter[str]] = {"before": Counter(), "after": Counter()}
    failures: list[str] = []
    new_blocks: list[tuple[str, list[object]]] = []
    ratios = []
    for path in sorted(before.keys() & after.keys()):
        (old_seconds, old), (new_seconds, new) = before[path], after[path]
        ratios.append(new_seconds / old_seconds if old_seconds else 1.0)
        if isinstance(old, str) or isinstance(new, str):
            failures += [f"{path}: {old if isinstance(old, str) else 'ok'} -> {new if isinstance(new, str) else 'ok'}"] * (old != new)
            continue
        kinds["before"].update(str(block[0]) for block in old)
        kinds["after"].update(str(block[0]) for block in new)
        old_pages, new_pages = _by_page(old), _by_page(new)
        pages += len(old_pages.keys() | new_pages.keys())
        changed += sum(old_pages.get(page) != new_pages.get(page) for page in old_pages.keys() | new_pages.keys())
        old_texts = Counter(str(block[1]) for block in old)
        new_blocks += [(Path(path).name, block) for block in new if old_texts[str(block[1])] == 0]
    print(f"{len(pdfs)} PDFs of {len(found)} (≤ {args.max_bytes:,} bytes, seed {args.seed}): {pages} pages, {changed} changed")
    print("blocks by kind, before:", dict(kinds["before"]), "after:", dict(kinds["after"]))
    print(f"parse time after/before per PDF: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}" if ratios else "")
    print(f"total parse time: before {sum(t for t, _ in before.values()):.1f} s, after {sum(t for t, _ in after.values()):.1f} s")
    print("failures changed:", failures or "none")
    for name, (kind, text, page, path) in random.Random(args.seed).sample(new_blocks, min(args.sample, len(new_blocks))):
        print(f"  + {name} p{page} {kind} {' > '.join(map(str, path))[-60:]!r}: {str(text)[:160]!r}")


if __name__ == "__main__":
    main()
