"""The citation checker's precision and recall on labelled (claim, cited passage) pairs, per kind.

    python bench/citation_checker.py                 # the sets it may be tuned on, Markdown tables
    python bench/citation_checker.py --json          # the same figures as one JSON object
    python bench/citation_checker.py --set docs-dev  # one set (repeatable)
    python bench/citation_checker.py --sealed        # also the sealed sets, which lists their misjudged claims

A generator turns a true sentence false while keeping most of its words, so each set mixes
supported paraphrases with the unsupported kinds it produces: the wrong source, an altered
number, unit or version, an altered name, identifier or option, a negation or an antonym,
swapped roles, and an over-generalisation (a quantifier or a modal made stronger).
Positive = "supported": precision is the share of accepted pairs that truly are supported.

Sets, in the order they were written (a set written after a rule change measures it honestly;
a set the rules were tuned on does not):
- tuning (bench/citation_pairs.jsonl, 40 pairs on examples/docs): the first rules were tuned on it.
- held-out (bench/citation_pairs_heldout.jsonl, 16 pairs on examples/docs): written afterwards.
- docs-dev (46 pairs) and docs-sealed (53 pairs), bench/citation_pairs_docs_*.jsonl: written
  2026-11-27 before src/sourcebook/answering/consistency.py, on passages of documentation that Debian
  packages ship (git-doc, python3.11; bench/citation_sources_docs.jsonl). Round 1 was tuned on
  docs-dev; docs-sealed was read after it, and round 2 tuned on it.
- docs-sealed2 (41 pairs): written after round 1, read after round 2; round 3 tuned on it.
- docs-sealed3 (31 pairs): written after round 2, measured after rounds 2 and 3; round 4 tuned on it.
- docs-sealed4 (43 pairs, 17 paraphrases): written 2026-11-28 before round 4 on documentation none
  of the others quotes (sqlite3-doc, valgrind, Kpathsea of TeX Live, gzip, grep), with a kind the
  others lack ("substitution": one plain word replaced); measured once, after round 4.
  Each docs set quotes its own passages (a wrong-source pair borrows another set's claim).
`--sealed` adds the sealed sets; the default leaves them out so that tuning runs do not show them.

The example-docs sets need a knowledge base of examples/docs (built in a temporary folder, a
few seconds); the docs sets carry their passages and need only the embedder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sourcebook import KnowledgeBase
from sourcebook.answering.citations import CitationChecker
from sourcebook.answering.prompts import Source
from sourcebook.embedders import create_embedder
from sourcebook.models import StoredChunk
from sourcebook.settings import Settings

BENCH = Path(__file__).resolve().parent
EXAMPLE_SETS = {"tuning": BENCH / "citation_pairs.jsonl", "held-out": BENCH / "citation_pairs_heldout.jsonl"}
DOCS_SETS = {"docs-dev": BENCH / "citation_pairs_docs_dev.jsonl", "docs-sealed": BENCH / "citation_pairs_docs_sealed.jsonl",
             "docs-sealed2": BENCH / "citation_pairs_docs_sealed2.jsonl",
             "docs-sealed3": BENCH / "citation_pairs_docs_sealed3.jsonl",
             "docs-sealed4": BENCH / "citation_pairs_docs_sealed4.jsonl"}
SEALED = ("docs-sealed", "docs-sealed2", "docs-sealed3", "docs-sealed4")
DOCS_SOURCES = BENCH / "citation_sources_docs.jsonl"


@dataclass(frozen=True)
class Judged:
    claim: str
    kind: str
    gold: bool
    said: bool
    support: float


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def judge(checker: CitationChecker, pairs: list[dict[str, Any]], source_of: Callable[[dict[str, Any]], StoredChunk]) -> list[Judged]:
    """Each pair's claim, cited as [1] with its passage as the only source, as the checker judges it."""
    rows = []
    for pair in pairs:
        chunk = source_of(pair)
        result = checker.check(f"{pair['claim']} [1]", [Source(1, chunk, chunk.text)])
        (sentence,) = result.check.sentences
        rows.append(Judged(pair["claim"], pair["kind"], pair["supported"], sentence.status == "supported", sentence.support))
    return rows


def summary(rows: list[Judged]) -> dict[str, Any]:
    """Precision and recall of 'supported', and per kind the share judged supported."""
    tp = sum(r.gold and r.said for r in rows)
    fp = sum(not r.gold and r.said for r in rows)
    fn = sum(r.gold and not r.said for r in rows)
    kinds = {}
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = [r for r in rows if r.kind == kind]
        kinds[kind] = {"pairs": len(mine), "supported_gold": sum(r.gold for r in mine),
                       "judged_supported": sum(r.said for r in mine),
                       "mean_support": round(statistics.mean(r.support for r in mine), 3)}
    return {"pairs": len(rows), "precision": round(tp / max(tp + fp, 1), 3),
            "recall": round(tp / max(tp + fn, 1), 3), "false_accepts": fp, "false_rejects": fn, "kinds": kinds,
            "misjudged": [{"claim": r.claim, "kind": r.kind, "support": round(r.support, 3)} for r in rows if r.gold != r.said]}


def print_markdown(label: str, figures: dict[str, Any], min_support: float) -> None:
    print(f"## Citation checker, {label} set (min_support {min_support}, {figures['pairs']} labelled pairs)\n")
    print(f"precision {figures['precision']:.2f}, recall {figures['recall']:.2f}  (positive = 'supported')\n")
    print("| kind | pairs | judged supported | mean support |\n|---|---|---|---|")
    for kind, k in figures["kinds"].items():
        print(f"| {kind} | {k['pairs']} | {k['judged_supported']} | {k['mean_support']:.2f} |")
    print()
    for wrong in figures["misjudged"]:
        print(f"- misjudged {wrong['kind']} (support {wrong['support']:.2f}): {wrong['claim']}")
    print()


@contextmanager
def example_chunks() -> Iterator[Callable[[dict[str, Any]], StoredChunk]]:
    """The chunk of examples/docs that holds a pair's `phrase`, from a fresh knowledge base."""
    with tempfile.TemporaryDirectory() as folder, KnowledgeBase.open(Path(folder) / "kb.db", llm_follow_ups=False) as kb:
        kb.add(str(BENCH.parent / "examples" / "docs"))
        chunks = [c for d in kb.documents() for c in kb.chunks(d.id)]
        yield lambda pair: next(c for c in chunks if c.source.endswith(pair["doc"]) and _squash(pair["phrase"]) in _squash(c.text))


def _title_and_section(origin: str) -> tuple[str, tuple[str, ...]]:
    """What a knowledge base of the file would show a reader: its name as the title ("git-cherry-pick"
    for .../git-cherry-pick.txt) and the section after the last comma ("DESCRIPTION")."""
    name = Path(origin.split()[0].rstrip(",")).name
    while Path(name).suffix in {".gz", ".txt", ".html", ".info"}:
        name = Path(name).stem
    return name, (origin.rsplit(", ", 1)[-1],) if ", " in origin else ()


def docs_chunks() -> Callable[[dict[str, Any]], StoredChunk]:
    """A pair's passage from bench/citation_sources_docs.jsonl, as a one-chunk document titled as
    the file it quotes (the checker reads the title and section as a reader of the citation does)."""
    passages = {p["id"]: p for p in _read_jsonl(DOCS_SOURCES)}

    def chunk(pair: dict[str, Any]) -> StoredChunk:
        passage = passages[pair["source"]]
        title, section = _title_and_section(passage["origin"])
        return StoredChunk(f"{pair['source']}#0", pair["source"], "default", passage["origin"], title, 0,
                           passage["text"], section, None, "")
    return chunk


def run(sets: list[str], min_support: float) -> dict[str, dict[str, Any]]:
    """Figures for each named set, in the order given."""
    checker = CitationChecker(create_embedder(Settings()), min_support)
    figures: dict[str, dict[str, Any]] = {}
    docs = docs_chunks()
    for name in (s for s in sets if s in DOCS_SETS):
        figures[name] = summary(judge(checker, _read_jsonl(DOCS_SETS[name]), docs))
    if any(s in EXAMPLE_SETS for s in sets):
        with example_chunks() as examples:
            for name in (s for s in sets if s in EXAMPLE_SETS):
                figures[name] = summary(judge(checker, _read_jsonl(EXAMPLE_SETS[name]), examples))
    return {name: figures[name] for name in sets}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", choices=[*EXAMPLE_SETS, *DOCS_SETS], dest="sets",
                        help="measure this set only (repeatable; default: all but the sealed sets, see --sealed)")
    parser.add_argument("--sealed", action="store_true", help="also measure the sealed sets (see the docstring)")
    parser.add_argument("--min-support", type=float, default=0.5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of Markdown tables")
    args = parser.parse_args()
    sets = args.sets or [*EXAMPLE_SETS, *(s for s in DOCS_SETS if args.sealed or s not in SEALED)]
    figures = run(sets, args.min_support)
    if args.json:
        print(json.dumps({"min_support": args.min_support, "sets": figures}, indent=2))
    else:
        for name, numbers in figures.items():
            print_markdown(name, numbers, args.min_support)


if __name__ == "__main__":
    main()
