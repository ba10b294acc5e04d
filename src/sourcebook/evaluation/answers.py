"""Answer quality over a knowledge base, from a JSONL file of questions with gold answers.

Each line is `{"id", "question", "answers": [..], "gold_sources": [..]}`; empty
`answers` marks a question the documents cannot answer, where the right move is to
abstain. Optional fields say where in a gold source the answer is and which part of
the set a question belongs to:

* `gold_pages`: 1-based pages (PDF) holding the answer;
* `gold_sections`: section headings holding it (HTML, Markdown: "OPTIONS");
* `split`: "dev" (tuned on) or "test" (held out); a record without one is "dev".

A passage is at the gold locus when its source is a gold source and, where the record
gives them, its page is a gold page and one of its heading-path components is a gold
section (case aside). Definitions (all means are over the questions they concern):

* answer hit rate (answerable questions): the answer was given (no abstention) and
  contains a gold answer after SQuAD-style normalization, or verbatim (identifiers:
  `contains_verbatim`). Containment, not exact match as in SQuAD, because extractive
  answers quote whole sentences.
* source recall@k (answerable questions): share of a question's gold sources among
  the sources of the first k hits the answer drew on.
* gold locus in top 5 (answerable questions with gold sources): one of the first 5
  hits is at the gold locus (retrieval found the page or section, not just the file).
* citation on gold locus (answerable questions with gold sources): the answer was
  given and one of its citations is at the gold locus.
* citation precision (answerable questions): share of distinct citations whose
  source is a gold source, over all citations (micro average).
* abstention precision / recall: "unanswerable" is the positive class; precision is
  the share of abstentions that were on unanswerable questions, recall the share of
  unanswerable questions abstained on. None when there is nothing to divide by.
* false abstention rate: share of answerable questions abstained on.
* calibration: confidence is read as the probability that a correct answer was
  given; an abstention is never a correct answer. A reliability table over equal-
  width bins and the expected calibration error (ECE) measure the gap.

A gold source matches a retrieved one when its path components are a suffix of the
retrieved source's ("docs/a.md" matches "/home/me/docs/a.md"; "a.md" is a basename
match), since the KB stores sources as they were given to `add`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigurationError
from ..kb import KnowledgeBase
from ..models import Answer
from .metrics import mean

SPLITS = ("dev", "test", "all")
# "gold page in the top 5": retrieval is judged at a fixed depth, whatever `k` the report uses.
LOCUS_DEPTH = 5
_CITATION_MARKER = re.compile(r"\[\d+\]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WORD_CHAR = re.compile(r"\w")
# What continues an identifier: `--force` is not in `--force-with-lease`.
_IDENTIFIER_CHAR = re.compile(r"[\w-]")


@dataclass(frozen=True)
class QAItem:
    id: str
    question: str
    answers: tuple[str, ...]
    gold_sources: tuple[str, ...]
    gold_pages: tuple[int, ...] = ()
    gold_sections: tuple[str, ...] = ()
    split: str = "dev"

    @property
    def answerable(self) -> bool:
        return bool(self.answers)

    def at_gold_locus(self, source: str, page: int | None, heading_path: Sequence[str]) -> bool:
        """A passage (a hit's chunk, a citation) is in a gold source, on a gold page and under a
        gold section (those the record gives)."""
        if not any(source_matches(gold, source) for gold in self.gold_sources):
            return False
        if self.gold_pages and page not in self.gold_pages:
            return False
        if self.gold_sections:
            wanted = {_heading_key(section) for section in self.gold_sections}
            return any(_heading_key(heading) in wanted for heading in heading_path)
        return True


@dataclass(frozen=True)
class QuestionResult:
    """How one question went; `source_recall` is None for unanswerable questions."""

    id: str
    answerable: bool
    abstained: bool
    hit: bool
    confidence: float
    source_recall: float | None
    citations: int
    gold_citations: int
    gold_in_top: bool | None = None
    """One of the first LOCUS_DEPTH hits is at the gold locus; None without gold sources or answers."""
    cited_gold: bool | None = None
    """The answer was given and cites the gold locus; None without gold sources or answers."""

    @property
    def correct(self) -> bool:
        """A correct answer was given (what `confidence` estimates)."""
        return self.answerable and self.hit


@dataclass(frozen=True)
class CalibrationBin:
    """One row of the reliability table: confidences in [lower, upper) (the last bin includes 1.0)."""

    lower: float
    upper: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


@dataclass(frozen=True)
class AnswerReport:
    """The outcome of `evaluate_answers`; `to_dict()` is the `--json` shape."""

    questions: int
    answerable: int
    unanswerable: int
    k: int
    answer_hit_rate: float | None
    source_recall_at_k: float | None
    citation_precision: float | None
    gold_in_top_rate: float | None
    cited_gold_rate: float | None
    abstention_precision: float | None
    abstention_recall: float | None
    false_abstention_rate: float | None
    ece: float | None
    reliability: tuple[CalibrationBin, ...]
    results: tuple[QuestionResult, ...]
    split: str = "all"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def read_qa(path: str | Path, split: str = "all") -> list[QAItem]:
    """The questions of `path` in `split` ("dev", "test" or "all")."""
    if split not in SPLITS:
        raise ConfigurationError(f"{path}: unknown split {split!r} (one of {', '.join(SPLITS)})")
    items: list[QAItem] = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                item = QAItem(
                    str(record["id"]), str(record["question"]),
                    tuple(map(str, record.get("answers") or ())), tuple(map(str, record.get("gold_sources") or ())),
                    tuple(int(page) for page in record.get("gold_pages") or ()),
                    tuple(map(str, record.get("gold_sections") or ())),
                    str(record.get("split") or "dev"),
                )
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigurationError(f"{path} line {number}: not a QA record ({exc})") from None
            if split in ("all", item.split):
                items.append(item)
    if not items:
        raise ConfigurationError(f"{path}: no questions in split {split!r}")
    return items


def _heading_key(heading: str) -> str:
    return " ".join(heading.casefold().split())


def normalize_answer(text: str) -> str:
    """SQuAD's normalization: lowercase, punctuation deleted, no articles, single spaces.

    Citation markers ("[1]") go first so their digits cannot match a gold number, and
    punctuation means any Unicode punctuation (SQuAD strips ASCII only), so a
    typographic apostrophe or dash in a document does not defeat a match.
    """
    text = _CITATION_MARKER.sub(" ", text).lower()
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _verbatim(text: str) -> str:
    """Lowercase, citation markers out, whitespace collapsed: the form identifiers are compared in."""
    return " ".join(_CITATION_MARKER.sub(" ", unicodedata.normalize("NFKC", text)).lower().split())


def contains_verbatim(answer: str, gold: str) -> bool:
    """Whether `gold` occurs in `answer` as written (case aside), not inside a longer word or flag.

    SQuAD's normalization deletes punctuation, which glues code together:
    `\\microtypesetup{expansion=false}` becomes one token, so the gold
    `expansion=false` could never match it. Identifiers, flags and settings are
    quoted verbatim by a right answer, so a verbatim match counts as well.
    """
    needle = _verbatim(gold)
    if not needle:
        return False
    haystack = _verbatim(answer)
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = haystack[start - 1] if start else " "
        after = haystack[end] if end < len(haystack) else " "
        if not (_IDENTIFIER_CHAR.match(before) and _WORD_CHAR.match(needle[0])) and not (
            _IDENTIFIER_CHAR.match(after) and _WORD_CHAR.match(needle[-1])
        ):
            return True
        start = haystack.find(needle, start + 1)
    return False


def contains_answer(answer: str, gold_answers: Iterable[str]) -> bool:
    """Whether a gold answer occurs in the answer: normalized on word boundaries, or verbatim."""
    haystack = f" {normalize_answer(answer)} "
    return any(
        ((needle := normalize_answer(gold)) and f" {needle} " in haystack) or contains_verbatim(answer, gold)
        for gold in gold_answers
    )


def _parts(source: str) -> list[str]:
    return [part for part in re.split(r"[\\/]+", source) if part not in ("", ".")]


def source_matches(gold: str, source: str) -> bool:
    gold_parts = _parts(gold)
    return bool(gold_parts) and _parts(source)[-len(gold_parts):] == gold_parts


def score_answer(item: QAItem, answer: Answer, k: int) -> QuestionResult:
    """One question's outcome, from the answer and the hits it drew on."""
    def is_gold(source: str) -> bool:
        return any(source_matches(gold, source) for gold in item.gold_sources)

    sources = [hit.chunk.source for hit in answer.hits[:k]]
    recall = None
    if item.answerable and item.gold_sources:
        found = sum(1 for gold in item.gold_sources if any(source_matches(gold, s) for s in sources))
        recall = found / len(item.gold_sources)
    cited = {c.n: c.source for c in answer.citations}
    locus_known = item.answerable and bool(item.gold_sources)
    return QuestionResult(
        id=item.id,
        answerable=item.answerable,
        abstained=answer.abstained,
        hit=not answer.abstained and contains_answer(answer.answer, item.answers),
        confidence=answer.confidence,
        source_recall=recall,
        citations=len(cited),
        gold_citations=sum(1 for source in cited.values() if is_gold(source)),
        gold_in_top=any(item.at_gold_locus(h.chunk.source, h.chunk.page, h.chunk.heading_path)
                        for h in answer.hits[:LOCUS_DEPTH]) if locus_known else None,
        cited_gold=(not answer.abstained and any(item.at_gold_locus(c.source, c.page, c.heading_path)
                                                 for c in answer.citations)) if locus_known else None,
    )


def reliability_table(
    confidences: Sequence[float], outcomes: Sequence[bool], bins: int = 10
) -> tuple[list[CalibrationBin], float | None]:
    """Equal-width bins over [0, 1] (empty ones included) and ECE = sum of |accuracy - confidence| weighted by bin size."""
    members: list[list[int]] = [[] for _ in range(bins)]
    for i, confidence in enumerate(confidences):
        members[min(max(int(confidence * bins), 0), bins - 1)].append(i)
    table: list[CalibrationBin] = []
    ece = 0.0
    for b, rows in enumerate(members):
        conf = mean(confidences[i] for i in rows) if rows else None
        acc = mean(float(outcomes[i]) for i in rows) if rows else None
        table.append(CalibrationBin(b / bins, (b + 1) / bins, len(rows), conf, acc))
        if conf is not None and acc is not None:
            ece += len(rows) / len(confidences) * abs(acc - conf)
    return table, (ece if confidences else None)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _share(flags: Sequence[bool | None]) -> float | None:
    """Share of True among the flags that are not None."""
    known = [flag for flag in flags if flag is not None]
    return _ratio(sum(known), len(known))


def summarize(results: Sequence[QuestionResult], k: int, bins: int = 10, split: str = "all") -> AnswerReport:
    answerable = [r for r in results if r.answerable]
    unanswerable = [r for r in results if not r.answerable]
    recalls = [r.source_recall for r in answerable if r.source_recall is not None]
    abstained = [r for r in results if r.abstained]
    table, ece = reliability_table([r.confidence for r in results], [r.correct for r in results], bins)
    return AnswerReport(
        questions=len(results),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        k=k,
        answer_hit_rate=_ratio(sum(r.hit for r in answerable), len(answerable)),
        source_recall_at_k=mean(recalls) if recalls else None,
        citation_precision=_ratio(sum(r.gold_citations for r in answerable), sum(r.citations for r in answerable)),
        gold_in_top_rate=_share([r.gold_in_top for r in answerable]),
        cited_gold_rate=_share([r.cited_gold for r in answerable]),
        abstention_precision=_ratio(sum(not r.answerable for r in abstained), len(abstained)),
        abstention_recall=_ratio(sum(r.abstained for r in unanswerable), len(unanswerable)),
        false_abstention_rate=_ratio(sum(r.abstained for r in answerable), len(answerable)),
        ece=ece,
        reliability=tuple(table),
        results=tuple(results),
        split=split,
    )


def evaluate_answers(
    kb: KnowledgeBase,
    qa_path: str | Path,
    k: int | None = None,
    bins: int = 10,
    on_question: Callable[[QuestionResult], None] | None = None,
    split: str = "all",
) -> AnswerReport:
    """Ask every question of `qa_path` in `split` with `kb.ask` and score the answers; k defaults
    to the hits `ask` draws on."""
    k = k or kb.settings.answer_sources
    results: list[QuestionResult] = []
    for item in read_qa(qa_path, split):
        results.append(score_answer(item, kb.ask(item.question), k))
        if on_question:
            on_question(results[-1])
    return summarize(results, k, bins, split)
