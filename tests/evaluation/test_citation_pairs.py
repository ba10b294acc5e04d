"""The citation checker's labelled pair sets are usable as measured: well-formed, balanced, scored right.

bench/citation_checker.py reports precision on them; a pair naming a missing passage or an
unknown kind would fail mid-run or fall out of the per-kind table unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .bench_scripts import BENCH, load_bench

KINDS = {"paraphrase", "wrong_source", "number", "identifier", "negation", "antonym", "swapped_roles", "quantifier"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


SETS = [f"citation_pairs_docs_{name}.jsonl" for name in ("dev", "sealed", "sealed2", "sealed3")]


@pytest.mark.parametrize("name", SETS)
def test_docs_pairs_name_their_passages_and_cover_every_kind(name):
    passages = {p["id"] for p in _rows(BENCH / "citation_sources_docs.jsonl")}
    pairs = _rows(BENCH / name)
    assert all(p["source"] in passages and p["kind"] in KINDS and p["claim"].strip() for p in pairs)
    assert {p["kind"] for p in pairs} == KINDS
    assert all(p["supported"] == (p["kind"] == "paraphrase") for p in pairs)
    assert len({p["claim"] + p["source"] for p in pairs}) == len(pairs)


def test_each_set_quotes_passages_no_other_set_quotes():
    def passages(name: str) -> set[str]:
        return {p["source"] for p in _rows(BENCH / name) if p["kind"] != "wrong_source"}

    quoted = [passages(name) for name in SETS]
    assert sum(len(q) for q in quoted) == len(set().union(*quoted))
    assert sum(len(_rows(BENCH / name)) for name in SETS) >= 60


def test_precision_and_recall_count_supported_as_positive():
    bench = load_bench("citation_checker")
    rows = [bench.Judged("a", "paraphrase", True, True, 0.9), bench.Judged("b", "paraphrase", True, False, 0.3),
            bench.Judged("c", "negation", False, True, 0.8), bench.Judged("d", "negation", False, False, 0.2),
            bench.Judged("e", "number", False, False, 0.25)]
    figures = bench.summary(rows)
    assert (figures["precision"], figures["recall"]) == (0.5, 0.5)
    assert figures["kinds"]["negation"] == {"pairs": 2, "supported_gold": 0, "judged_supported": 1, "mean_support": 0.5}
    assert [m["claim"] for m in figures["misjudged"]] == ["b", "c"]
