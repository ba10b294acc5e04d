"""Copy the seven zsh manual and FAQ pages of this evaluation set out of Debian's zsh-doc package.

The pages are not committed: they are the zsh documentation, versioned with zsh's
sources (Texinfo for the manual, Yodl for the FAQ), so the set names the exact files
instead and checks their SHA-256, which pins the documentation version (zsh 5.9) the
questions were written from.

    apt-get install -y zsh-doc                  # 5.9-4 (Debian 12)
    python eval/zsh/build.py [--docs DIR] [--out eval/zsh/corpus]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pinned_pages import build  # noqa: E402

# page -> first 16 hex digits of its SHA-256 in zsh-doc 5.9-4
PAGES = {
    "Invocation.html": "f1b4f60c1a76c490",
    "Files.html": "ba2578a87506994e",
    "Redirection.html": "2515838b557718d8",
    "Prompt-Expansion.html": "ce6fc37e46107178",
    "Parameters.html": "3e996cd5c291d821",
    "Options.html": "de6758cc9c2efadf",
    "FAQ03.html": "f34c4c5d451ffef5",
}


def main() -> None:
    build(__doc__.splitlines()[0], PAGES, Path("/usr/share/doc/zsh-common/html"), HERE / "corpus", "zsh-doc")


if __name__ == "__main__":
    main()
