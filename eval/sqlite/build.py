"""Copy the seven SQLite documentation pages of this evaluation set out of Debian's sqlite3-doc package.

SQLite's documentation is in the public domain, but the set still names the exact
files instead of committing them, as the other sets do, and checks their SHA-256,
which pins the documentation version (SQLite 3.40.1) the questions were written from.

    apt-get install -y sqlite3-doc               # 3.40.1-2+deb12u2 (Debian 12)
    python eval/sqlite/build.py [--docs DIR] [--out eval/sqlite/corpus]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pinned_pages import build  # noqa: E402

# page -> first 16 hex digits of its SHA-256 in sqlite3-doc 3.40.1-2+deb12u2
PAGES = {
    "pragma.html": "0659fa1d83c6a408",
    "cli.html": "757b3e7f56a68fcc",
    "lang_corefunc.html": "42201638f2782361",
    "lang_datefunc.html": "6b7876e4ac368179",
    "json1.html": "ee47a27280b5b543",
    "wal.html": "6de416a73b7754fd",
    "datatype3.html": "dee8d75f5f6a1b76",
}


def main() -> None:
    build(__doc__.splitlines()[0], PAGES, Path("/usr/share/doc/sqlite3"), HERE / "corpus", "sqlite3-doc")


if __name__ == "__main__":
    main()
