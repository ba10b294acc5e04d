"""Copy the 25 Git manual pages of this evaluation set out of Debian's git-doc package.

The pages are not committed: they are GPL-2 documentation whose source (AsciiDoc)
lives in Git's tree, so the set names the exact files instead and checks their
SHA-256, which pins the documentation version the questions were written from.

    apt-get install -y git-doc                 # 1:2.39.5-0+deb12u3 (Debian 12)
    python eval/gitdoc/build.py [--docs DIR] [--out eval/gitdoc/corpus]

A different git-doc version changes the hashes: the script says which pages
differ and copies nothing, since the gold sections may have moved.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from pinned_pages import build  # noqa: E402

# page -> first 16 hex digits of its SHA-256 in git-doc 1:2.39.5-0+deb12u3
PAGES = {
    "git-add.html": "27eb2b71e62c9f79",
    "git-am.html": "bba8d903c147c14a",
    "git-bisect.html": "ed4f177ecbae35af",
    "git-blame.html": "82a15cce8e84e541",
    "git-branch.html": "8fa4744ef1cfc322",
    "git-checkout.html": "58cfeb2fbe583699",
    "git-cherry-pick.html": "aad0ff996acff22d",
    "git-clean.html": "f1d41207d8a653ce",
    "git-clone.html": "6a257a2fd7ef6d0a",
    "git-commit.html": "9959d2e93dbb12e0",
    "git-fetch.html": "f9061ce00f3dc0c0",
    "git-gc.html": "4f4385e94b41f118",
    "git-merge.html": "b9bce3e4065ee232",
    "git-push.html": "4cb662621ffede5a",
    "git-rebase.html": "56f993b915691073",
    "git-remote.html": "1fb1873948d51ffa",
    "git-reset.html": "0688b36ae76fa0bb",
    "git-restore.html": "ab702e247ddc3c9d",
    "git-revert.html": "83f87786d54b8158",
    "git-stash.html": "ba46b3d59953444a",
    "git-status.html": "4b75fa20dceda573",
    "git-switch.html": "cfffc6ee0cc275e2",
    "git-tag.html": "2bf2fd7703f2ad90",
    "git-worktree.html": "c8f83494a62b252b",
    "gitignore.html": "47fa8f55feff5fef",
}


def main() -> None:
    build(__doc__.splitlines()[0], PAGES, Path("/usr/share/doc/git-doc"), HERE / "corpus", "git-doc")


if __name__ == "__main__":
    main()
