"""Copy the pinned pages of an evaluation set out of an installed Debian documentation package.

The evaluation sets do not commit the documentation they ask about (it is licensed
and versioned upstream); each names its pages with the first 16 hex digits of their
SHA-256, which pins the documentation version the questions and gold sections were
written from. A different package version changes the hashes: nothing is copied
then, since the gold sections may have moved.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from pathlib import Path


def copy_pinned(docs: Path, pages: dict[str, str], out: Path, package: str) -> None:
    """Copy `pages` (name -> SHA-256 prefix) from `docs` to `out`, or exit saying what differs."""
    missing = [page for page in pages if not (docs / page).is_file()]
    if missing:
        raise SystemExit(f"{docs}: {len(missing)} pages missing (apt-get install -y {package}): {missing[:3]}")
    changed = [page for page, digest in pages.items()
               if hashlib.sha256((docs / page).read_bytes()).hexdigest()[:16] != digest]
    if changed:
        raise SystemExit(f"{docs}: another {package} version, {len(changed)} pages differ: {changed[:3]}")
    for page in pages:  # a page may sit in a subfolder of `docs` (one package's several manuals)
        (out / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(docs / page, out / page)
    print(f"{len(pages)} pages -> {out}")


def build(description: str, pages: dict[str, str], docs: Path, out: Path, package: str) -> None:
    """A set's build.py command line: `--docs` (where `package` installs `pages`) and `--out`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--docs", type=Path, default=docs)
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args()
    copy_pinned(args.docs, pages, args.out, package)
