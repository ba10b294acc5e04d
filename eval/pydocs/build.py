"""Regenerate eval/pydocs/corpus.jsonl from the Python HTML docs installed on this machine.

The corpus is a held-out check for retrieval defaults tuned on SciFact: technical
prose and API reference instead of biomedical abstracts. One BEIR record per
documentation section (the section's own text, without its subsections, which are
records of their own), from a fixed list of pages so the corpus stays small and
the questions' judgments stay valid.

    apt-get install -y python3-doc            # Debian's Python docs (PSF licence)
    python eval/pydocs/build.py [--html DIR] [--out corpus.jsonl]

Record ids are "<page>#<section id>" (e.g. "library/json#basic-usage"): stable
across rebuilds from the same docs version, which qrels/test.tsv relies on.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
from collections.abc import Iterator
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode

HERE = Path(__file__).resolve().parent
DOCS_URL = "https://docs.python.org/3.11/"

PAGES = (
    # The tutorial, whole.
    "tutorial/appetite", "tutorial/interpreter", "tutorial/introduction", "tutorial/controlflow",
    "tutorial/datastructures", "tutorial/modules", "tutorial/inputoutput", "tutorial/errors",
    "tutorial/classes", "tutorial/stdlib", "tutorial/stdlib2", "tutorial/venv", "tutorial/whatnow",
    "tutorial/interactive", "tutorial/floatingpoint", "tutorial/appendix",
    # HOWTOs.
    "howto/sorting", "howto/logging", "howto/regex", "howto/argparse", "howto/unicode",
    # Library reference: modules most users meet.
    "library/json", "library/csv", "library/pathlib", "library/os.path", "library/re", "library/datetime",
    "library/collections", "library/itertools", "library/functools", "library/argparse", "library/logging",
    "library/subprocess", "library/sqlite3", "library/unittest", "library/shutil", "library/tempfile",
    "library/venv", "library/zipfile", "library/string", "library/random", "library/statistics",
    "library/dataclasses", "library/enum", "library/asyncio-task", "library/threading", "library/hashlib",
    "library/heapq", "library/bisect", "library/textwrap", "library/glob", "library/pickle",
    "library/contextlib", "library/decimal", "library/math", "library/configparser", "library/secrets",
    "library/timeit", "library/traceback", "library/warnings",
)

# Elements whose whole text is one paragraph; everything else is walked into.
LEAF_TAGS = {"p", "pre", "li", "dt", "tr", "caption"}
SKIP_TAGS = {"section", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style"}
# A section with less text than this (a heading over its subsections) is no document.
MIN_TEXT_CHARS = 80


def default_html_dir() -> Path:
    """python3-doc's folder, else any other python3* package's html folder (Debian links them to one)."""
    for candidate in ["/usr/share/doc/python3-doc/html", *sorted(glob.glob("/usr/share/doc/python3*/html"))]:
        if Path(candidate, "library", "json.html").exists():
            return Path(candidate)
    raise SystemExit("no Python HTML docs found: apt-get install -y python3-doc, or pass --html DIR")


def _clean(text: str, keep_lines: bool) -> str:
    text = text.replace("¶", "")
    if keep_lines:
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
    return re.sub(r"\s+", " ", text).strip()


def _blocks(node: LexborNode) -> Iterator[str]:
    """Paragraph texts under `node` in reading order, not entering nested sections."""
    for child in node.iter(include_text=False):
        if child.tag in SKIP_TAGS or "headerlink" in (child.attributes.get("class") or ""):
            continue
        if child.tag in LEAF_TAGS:
            text = _clean(child.text(deep=True, separator=" " if child.tag == "tr" else ""), child.tag == "pre")
            if text:
                yield text
        else:
            yield from _blocks(child)


def _heading(section: LexborNode) -> str:
    for child in section.iter(include_text=False):
        if child.tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            return _clean(child.text(deep=True), False)
    return ""


def page_records(html_dir: Path, page: str) -> Iterator[dict[str, object]]:
    tree = LexborHTMLParser((html_dir / f"{page}.html").read_text(encoding="utf-8"))
    for section in tree.css("section[id]"):
        path = [_heading(s) for s in _ancestor_sections(section)] + [_heading(section)]
        text = "\n\n".join(_blocks(section))
        if len(text) < MIN_TEXT_CHARS:
            continue
        section_id = section.attributes["id"]
        yield {
            "_id": f"{page}#{section_id}",
            "title": " > ".join(p for p in path if p),
            "text": text,
            "metadata": {"url": f"{DOCS_URL}{page}.html#{section_id}"},
        }


def _ancestor_sections(node: LexborNode) -> list[LexborNode]:
    found: list[LexborNode] = []
    parent = node.parent
    while parent is not None:
        if parent.tag == "section":
            found.append(parent)
        parent = parent.parent
    return found[::-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=None, help="the docs' html folder (default: found under /usr/share/doc)")
    parser.add_argument("--out", type=Path, default=HERE / "corpus.jsonl")
    args = parser.parse_args()
    html_dir = args.html or default_html_dir()
    count = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for page in PAGES:
            for record in page_records(html_dir, page):
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    print(f"wrote {count} records from {len(PAGES)} pages of {html_dir} to {args.out}")


if __name__ == "__main__":
    main()
