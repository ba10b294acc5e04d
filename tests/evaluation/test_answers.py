"""Answer scoring on fixed inputs: normalization, source matching, the summary, calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sourcebook.errors import ConfigurationError
from sourcebook.evaluation.answers import (
    QAItem,
    QuestionResult,
    contains_answer,
    contains_verbatim,
    normalize_answer,
    read_qa,
    reliability_table,
    score_answer,
    source_matches,
    summarize,
)
from sourcebook.models import Answer, Citation, Hit, StoredChunk


def test_normalization_follows_squad() -> None:
    assert normalize_answer("The  Quick, brown fox!") == "quick brown fox"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theory") == "theory"  # articles only as whole words
    assert normalize_answer("£1,200 per year.") == "£1200 per year"
    assert normalize_answer("27 days [1] of leave [12]") == "27 days of leave"
    assert normalize_answer("it’s — “quoted”") == "its quoted"  # Unicode punctuation too
    assert normalize_answer("full-time") == normalize_answer("Fulltime")


def test_contains_answer_matches_whole_words() -> None:
    answer = "Full-time employees receive 27 days of annual leave. [1]"
    assert contains_answer(answer, ["27 days"])
    assert contains_answer(answer, ["nothing", "the 27 DAYS"])
    assert not contains_answer("They receive 127 days.", ["27 days"])
    assert not contains_answer(answer, [])
    assert not contains_answer(answer, ["..."])  # normalizes to nothing: never a match


def test_source_matching_by_suffix_or_basename() -> None:
    assert source_matches("docs/a.md", "/home/me/examples/docs/a.md")
    assert source_matches("a.md", "/home/me/examples/docs/a.md")
    assert source_matches("./docs/a.md", "docs/a.md")
    assert not source_matches("docs/a.md", "/home/me/other/a.md")
    assert not source_matches("a.md", "/home/me/docs/ba.md")
    assert not source_matches("", "/home/me/docs/a.md")


def _chunk(source: str) -> StoredChunk:
    return StoredChunk(f"c-{source}", f"d-{source}", "default", source, "T", 0, "text", (), None, "")


def _answer(text: str, sources: list[str], cited: list[str], confidence: float, abstained: bool = False) -> Answer:
    hits = tuple(Hit(i + 1, 1.0, _chunk(s)) for i, s in enumerate(sources))
    citations = tuple(Citation(n, f"d-{s}", s, f"c-{s}", "q", "T", (), None) for n, s in enumerate(cited, start=1))
    return Answer("question?", text, abstained, citations, confidence, hits)


def test_score_answer() -> None:
    item = QAItem("q1", "How long?", ("27 days",), ("docs/a.md", "docs/b.md"))
    result = score_answer(item, _answer("It is 27 days. [1] Or not. [2]", ["/x/docs/a.md", "/x/docs/c.md", "/x/docs/b.md"],
                                        ["/x/docs/a.md", "/x/docs/c.md"], 0.8), k=2)
    # b.md is at rank 3, beyond k = 2: recall 1/2. One of two citations is gold.
    assert result == QuestionResult("q1", True, False, True, 0.8, 0.5, 2, 1, gold_in_top=True, cited_gold=True)
    assert result.correct

    abstained = score_answer(item, _answer("27 days", [], [], 0.1, abstained=True), k=2)
    assert not abstained.hit and not abstained.correct  # an abstention never hits, whatever its text


def test_summary_on_fixed_results() -> None:
    results = [
        QuestionResult("a1", True, False, True, 0.95, 1.0, 2, 2),
        QuestionResult("a2", True, False, False, 0.75, 0.5, 2, 1),
        QuestionResult("a3", True, True, False, 0.15, 0.0, 0, 0),
        QuestionResult("u1", False, True, False, 0.05, None, 0, 0),
        QuestionResult("u2", False, False, False, 0.72, None, 1, 0),
    ]
    report = summarize(results, k=5, bins=4)
    assert (report.questions, report.answerable, report.unanswerable, report.k) == (5, 3, 2, 5)
    assert report.answer_hit_rate == pytest.approx(1 / 3)
    assert report.source_recall_at_k == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert report.citation_precision == pytest.approx(3 / 4)  # answerable only: (2 + 1 + 0) / (2 + 2 + 0)
    assert report.abstention_precision == pytest.approx(1 / 2)  # abstained a3, u1: one unanswerable
    assert report.abstention_recall == pytest.approx(1 / 2)  # u1 of u1, u2
    # Bins of width 0.25: [0, .25) a3 .15, u1 .05 -> conf .10, acc 0; [.25, .5) empty;
    # [.5, .75) u2 .72 -> acc 0; [.75, 1] a1 .95, a2 .75 -> conf .85, acc .5.
    # ECE = 2/5 * .10 + 1/5 * .72 + 2/5 * |.5 - .85| = .04 + .144 + .14 = .324
    assert [b.count for b in report.reliability] == [2, 0, 1, 2]
    assert report.reliability[0].mean_confidence == pytest.approx(0.10)
    assert report.reliability[1].mean_confidence is None and report.reliability[1].accuracy is None
    assert report.reliability[3].accuracy == pytest.approx(0.5)
    assert report.ece == pytest.approx(0.324)


def test_summary_with_nothing_to_divide_by() -> None:
    report = summarize([QuestionResult("a1", True, False, True, 1.0, None, 0, 0)], k=5)
    assert report.answer_hit_rate == 1.0
    assert report.source_recall_at_k is None  # no gold sources given
    assert report.citation_precision is None and report.abstention_precision is None
    assert report.abstention_recall is None
    assert report.ece == pytest.approx(0.0)  # confidence 1.0 lands in the last bin
    assert report.reliability[-1].count == 1
    assert summarize([], k=5).ece is None


def test_reliability_table_bin_edges() -> None:
    table, ece = reliability_table([0.0, 0.5, 0.999, 1.0], [False, True, True, True], bins=2)
    assert [(b.lower, b.upper, b.count) for b in table] == [(0.0, 0.5, 1), (0.5, 1.0, 3)]
    # |0 - 0| * 1/4 + |1 - (0.5 + 0.999 + 1) / 3| * 3/4 = (1 - 0.833) * 0.75 = 0.12525
    assert ece == pytest.approx((1 - 2.499 / 3) * 0.75)


def test_read_qa(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text(
        json.dumps({"id": 1, "question": "Q?", "answers": ["x"], "gold_sources": ["a.md"]}) + "\n\n"
        + json.dumps({"id": "u", "question": "Unanswerable?", "answers": []}) + "\n"
    )
    items = read_qa(path)
    assert items == [QAItem("1", "Q?", ("x",), ("a.md",)), QAItem("u", "Unanswerable?", (), ())]
    assert [i.answerable for i in items] == [True, False]
    path.write_text('{"question": "no id"}\n')
    with pytest.raises(ConfigurationError, match="line 1"):
        read_qa(path)


def test_identifiers_match_verbatim_where_normalization_glues_them() -> None:
    code = r"Say \microtypesetup{expansion=false} in the body [1]; see stash@{0}."
    assert normalize_answer(code).split()[1] == "microtypesetupexpansion=false"  # one glued token
    assert contains_answer(code, ["expansion=false"]) and contains_answer(code, [r"\microtypesetup"])
    assert contains_answer(code, ["STASH@{0}"])  # case aside
    assert contains_verbatim("use --force-with-lease.", "--force-with-lease")
    assert not contains_verbatim("use --force-with-lease-x", "--force-with-lease")  # inside a longer flag
    assert not contains_verbatim("the default is 1000", "100")  # inside a longer number
    assert not contains_verbatim("any text", "  ")


def _located(source: str, page: int | None, headings: tuple[str, ...]) -> StoredChunk:
    return StoredChunk(f"c-{source}-{page}-{len(headings)}", f"d-{source}", "default", source, "T", 0, "text",
                       headings, page, "")


def test_gold_locus_needs_source_page_and_section() -> None:
    pdf = QAItem("p", "Q?", ("x",), ("manual.pdf",), gold_pages=(7, 8))
    assert pdf.at_gold_locus("/docs/manual.pdf", 8, ())
    assert not pdf.at_gold_locus("/docs/manual.pdf", 9, ())  # right file, wrong page
    assert not pdf.at_gold_locus("/docs/other.pdf", 7, ())
    html = QAItem("h", "Q?", ("x",), ("git-push.html",), gold_sections=("OPTIONS",))
    assert html.at_gold_locus("c/git-push.html", None, ("git-push(1) Manual Page", "options", "--force"))
    assert not html.at_gold_locus("c/git-push.html", None, ("git-push(1) Manual Page", "DESCRIPTION"))
    assert QAItem("s", "Q?", ("x",), ("a.md",)).at_gold_locus("/a.md", None, ())  # no locus given: the file


def test_score_answer_gold_locus_in_top_5_and_cited() -> None:
    item = QAItem("q", "Q?", ("x",), ("m.pdf",), gold_pages=(3,))
    chunks = [_located("/d/m.pdf", page, ()) for page in (1, 2, 4, 5, 6, 3)]  # page 3 at rank 6
    hits = tuple(Hit(i + 1, 1.0, c) for i, c in enumerate(chunks))
    on_gold = Citation(1, "d-/d/m.pdf", "/d/m.pdf", chunks[5].id, "x", "T", (), 3)
    off_gold = Citation(1, "d-/d/m.pdf", "/d/m.pdf", chunks[0].id, "x", "T", (), 1)
    missed = score_answer(item, Answer("Q?", "x [1]", False, (off_gold,), 0.5, hits), k=5)
    assert (missed.gold_in_top, missed.cited_gold) == (False, False)
    found = score_answer(item, Answer("Q?", "x [1]", False, (on_gold,), 0.5, hits[5:] + hits[:5]), k=5)
    assert (found.gold_in_top, found.cited_gold) == (True, True)
    abstained = score_answer(item, Answer("Q?", "no", True, (on_gold,), 0.1, hits[5:]), k=5)
    assert (abstained.gold_in_top, abstained.cited_gold) == (True, False)  # an abstention cites nothing
    unanswerable = score_answer(QAItem("u", "Q?", (), ()), Answer("Q?", "no", True, (), 0.1, hits), k=5)
    assert (unanswerable.gold_in_top, unanswerable.cited_gold) == (None, None)


def test_summary_locus_and_false_abstention_rates() -> None:
    results = [
        QuestionResult("a1", True, False, True, 0.9, 1.0, 1, 1, gold_in_top=True, cited_gold=True),
        QuestionResult("a2", True, False, False, 0.6, 1.0, 1, 1, gold_in_top=True, cited_gold=False),
        QuestionResult("a3", True, True, False, 0.2, 0.0, 0, 0, gold_in_top=False, cited_gold=False),
        QuestionResult("a4", True, False, True, 0.8, None, 1, 0),  # no gold sources: not counted
        QuestionResult("u1", False, True, False, 0.1, None, 0, 0),
    ]
    report = summarize(results, k=5, split="test")
    assert report.gold_in_top_rate == pytest.approx(2 / 3)
    assert report.cited_gold_rate == pytest.approx(1 / 3)
    assert report.false_abstention_rate == pytest.approx(1 / 4)
    assert report.abstention_recall == 1.0
    assert report.split == "test" and report.to_dict()["false_abstention_rate"] == pytest.approx(0.25)


def test_read_qa_splits_and_loci(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    rows = [
        {"id": "d", "question": "Q1?", "answers": ["x"], "gold_sources": ["m.pdf"], "gold_pages": [3, "4"], "split": "dev"},
        {"id": "t", "question": "Q2?", "answers": ["y"], "gold_sources": ["g.html"], "gold_sections": ["OPTIONS"],
         "split": "test"},
        {"id": "n", "question": "Q3?", "answers": []},  # no split: dev
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [i.id for i in read_qa(path)] == ["d", "t", "n"]
    assert [i.id for i in read_qa(path, "dev")] == ["d", "n"]
    (test,) = read_qa(path, "test")
    assert (test.gold_sections, test.split) == (("OPTIONS",), "test")
    assert read_qa(path, "dev")[0].gold_pages == (3, 4)
    with pytest.raises(ConfigurationError, match="unknown split 'train'"):
        read_qa(path, "train")
    path.write_text(json.dumps(rows[2]) + "\n")
    with pytest.raises(ConfigurationError, match="no questions in split 'test'"):
        read_qa(path, "test")
    path.write_text(json.dumps({**rows[0], "gold_pages": ["three"]}) + "\n")
    with pytest.raises(ConfigurationError, match="line 1"):
        read_qa(path)
