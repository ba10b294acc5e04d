"""Copy The Dvipdfmx User's Manual (a 48-page PDF) out of Debian's TeX Live base package.

The PDF is not committed: it is an FDL-licensed document whose source lives in the
dvipdfm-x-doc repository, so the set names the file and checks its SHA-256 instead,
which pins the manual version (June 7, 2020) the questions and gold pages were written from.

    apt-get install -y texlive-base               # 2022.20230122-3 (Debian 12)
    python eval/dvipdfmx/build.py [--docs DIR] [--out eval/dvipdfmx/corpus]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pinned_pages import build  # noqa: E402

# file -> first 16 hex digits of its SHA-256 in texlive-base 2022.20230122-3
PAGES = {"dvipdfmx.pdf": "428727a3989d8980"}


def main() -> None:
    build(__doc__.splitlines()[0], PAGES, Path("/usr/share/doc/texlive-doc/dvipdfmx"), HERE / "corpus", "texlive-base")


if __name__ == "__main__":
    main()
