"""What a change to the HTML loader changes, page by page: every HTML page under the given folders
is loaded by two source trees' `HtmlLoader` (each in its own process, as the trees hold the same
package), and the blocks compared: pages unchanged, pages whose headings changed, blocks dropped
and added, entries (`term` blocks) gained or lost, and a sample of the dropped texts to read.

    git worktree add /tmp/main-tree main
    PYTHONPATH=src python bench/html_loader_diff.py --before /tmp/main-tree/src --after src /usr/share/doc
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

_DUMP = """
import json, sys
from sourcebook.loaders.html import HtmlLoader
for path in sys.stdin.read().split("\\n"):
    try:
        blocks = HtmlLoader().load(open(path, "rb").read(), path).blocks
    except Exception as error:
        blocks, path = [], path + " (" + type(error).__name__ + ")"
    print(json.dumps([path, [[b.kind, b.text, list(b.heading_path)] for b in blocks]]))
"""


def _dump(src: str, pages: list[Path]) -> dict[str, list[list[object]]]:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", _DUMP], input="\n".join(map(str, pages)), env=env, capture_output=True, text=True, check=True
    ).stdout
    return {path: blocks for path, blocks in map(json.loads, out.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--before", required=True, help="the source tree (its src/) loaded as before")
    parser.add_argument("--after", required=True, help="the source tree loaded as after")
    parser.add_argument("--sample", type=int, default=30, help="dropped texts to print")
    args = parser.parse_args()
    pages = sorted(page for folder in args.folders for page in folder.rglob("*.htm*") if page.is_file())
    before, after = _dump(args.before, pages), _dump(args.after, pages)
    unchanged = heading_changes = 0
    dropped: list[str] = []
    terms: Counter[str] = Counter()
    for page in before.keys() & after.keys():
        old, new = before[page], after[page]
        unchanged += old == new
        headings = [[block[2] for block in blocks if block[0] == "heading"] for blocks in (old, new)]
        heading_changes += headings[0] != headings[1]
        dropped += (Counter(block[1] for block in old) - Counter(block[1] for block in new)).elements()
        terms[page] = sum(block[0] == "term" for block in new) - sum(block[0] == "term" for block in old)
    print(f"{len(pages)} pages: {unchanged} unchanged, {heading_changes} with other headings, {len(dropped)} blocks dropped")
    print("entries gained (+) or lost (-):", {page: n for page, n in terms.items() if n})
    for text in random.Random(1).sample(dropped, min(args.sample, len(dropped))):
        print("  -", repr(str(text)[:120]))


if __name__ == "__main__":
    main()
