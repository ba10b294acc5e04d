"""Copy the six Valgrind manual pages of this evaluation set out of Debian's valgrind package.

The pages are not committed: they are GFDL documentation whose source (DocBook XML)
lives in Valgrind's tree, so the set names the exact files instead and checks their
SHA-256, which pins the documentation version (Valgrind 3.19.0) the questions were
written from.

    apt-get install -y valgrind                 # 1:3.19.0-1 (Debian 12)
    python eval/valgrind/build.py [--docs DIR] [--out eval/valgrind/corpus]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pinned_pages import build  # noqa: E402

# page -> first 16 hex digits of its SHA-256 in valgrind 1:3.19.0-1
PAGES = {
    "quick-start.html": "2647941ea76d5b40",
    "manual-core.html": "c66d6de543621905",
    "mc-manual.html": "b3798d930e990642",
    "ms-manual.html": "16d9269ef80f9b57",
    "cg-manual.html": "b5ae35e64c23dbbf",
    "faq.html": "c91ad7b15297bb1c",
}


def main() -> None:
    build(__doc__.splitlines()[0], PAGES, Path("/usr/share/doc/valgrind/html"), HERE / "corpus", "valgrind")


if __name__ == "__main__":
    main()
