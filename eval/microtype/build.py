"""Copy the microtype package manual (a 37-page PDF) out of Debian's TeX Live documentation.

The PDF is not committed: it is a compiled LPPL work whose source (microtype.dtx)
is on CTAN, so the set names the file and checks its SHA-256 instead, which pins
the manual version (v3.0f, 2022/06/23) the questions and gold pages were written from.

    apt-get install -y texlive-latex-recommended-doc     # 2022.20230122-3 (Debian 12)
    python eval/microtype/build.py [--pdf PATH] [--out eval/microtype/corpus]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_PDF = Path("/usr/share/doc/texlive-doc/latex/microtype/microtype.pdf")
SHA256_PREFIX = "87d5dea67dac255e"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--out", type=Path, default=HERE / "corpus")
    args = parser.parse_args()
    if not args.pdf.is_file():
        raise SystemExit(f"{args.pdf}: not found (apt-get install -y texlive-latex-recommended-doc)")
    if hashlib.sha256(args.pdf.read_bytes()).hexdigest()[:16] != SHA256_PREFIX:
        raise SystemExit(f"{args.pdf}: another manual version; the gold pages may have moved")
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.pdf, args.out / "microtype.pdf")
    print(f"{args.pdf} -> {args.out / 'microtype.pdf'}")


if __name__ == "__main__":
    main()
