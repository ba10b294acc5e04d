"""Copy the fancyvrb and booktabs package manuals (PDF, 25 + 18 pages) out of Debian's TeX Live documentation.

The PDFs are not committed: they are compiled LPPL works whose sources are on CTAN, so
the set names the files and checks their SHA-256 instead, which pins the manual versions
(fancyvrb 4.5a, 2023/01/19; booktabs v1.61803398, 2020/01/12) the questions and gold
pages were written from. Both come from one package, each in its own folder, which the
copy keeps (`corpus/fancyvrb/fancyvrb-doc.pdf`, `corpus/booktabs/booktabs.pdf`).

    apt-get install -y texlive-latex-recommended-doc     # 2022.20230122-3 (Debian 12)
    python eval/vrbtabs/build.py [--docs DIR] [--out eval/vrbtabs/corpus]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pinned_pages import build  # noqa: E402

# file -> first 16 hex digits of its SHA-256 in texlive-latex-recommended-doc 2022.20230122-3
PAGES = {
    "fancyvrb/fancyvrb-doc.pdf": "ae2935276ca7b2c5",
    "booktabs/booktabs.pdf": "7052d0760750c97a",
}


def main() -> None:
    build(__doc__.splitlines()[0], PAGES, Path("/usr/share/doc/texlive-doc/latex"), HERE / "corpus",
          "texlive-latex-recommended-doc")


if __name__ == "__main__":
    main()
