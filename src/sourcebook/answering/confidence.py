"""Calibrated confidence of an answer, and whether the documents hold one at all.

Confidence is a probability, fitted on data, that the answer is right. It is computed
from features measured on the finished answer, never on how an answerer chose its
sentences, so the extractive answerer and an LLM answerer (through its checked
citations) are calibrated alike:

    top_similarity        cosine of the question to the best retrieved chunk
    similarity_margin     how far that best chunk leads the second one
    cited_similarity      cosine of the question to the best chunk the answer cites
    answer_similarity     cosine of the question to the answer's own text
    terms_in_sources      share of the question's content words found in the retrieved chunks
    missing_terms         how many of them no retrieved chunk contains (at most 3): a question
                          the documents do not answer tends to name one thing they never mention
    terms_in_cited        share of them in the chunks the answer cites
    terms_in_answer       share of them in the answer (its text and its citations' headings)
    identifiers_in_answer share of the identifiers asked about (`--force-with-lease`,
                          `core.autocrlf`, `\\textls`, `libfoo33`) quoted verbatim by the answer
                          or its citations' headings (`quoted`: a whole token, and a name with an
                          inner capital written as one); 0 when none is asked
    asks_identifier       1 when the question names an identifier, else 0
    keyword_rank          1 / (rank of the best cited chunk in the keyword list), 0 when absent
    missing_name_rarity   how rare, in the whole knowledge base, the rarest name of the question
                          the cited chunks lack is: 1 when no chunk holds it (evidence.py)
    absent_from_kb        1 when a word of the question occurs in no chunk of the knowledge base
                          at all ("hyperref", "landscape" over a manual that never writes them), else 0
                          (evidence.unheld_words)

Two logistic regressions over them, fitted by bench/calibrate_answers.py on the dev
splits of the seven answers sets (eval/gitdoc, microtype, valgrind, sqlite, dvipdfmx, zsh, vrbtabs) and
examples/questions.jsonl (never on the test splits), whose output it pastes below (`--write`):

* `p_correct`: the answer contains the expected fact. `Answer.confidence` is p_correct
  times the citation check's supported share of the answer's sentences: an LLM's
  claims its sources do not bear out are not right answers, however well retrieval
  went. The extractive answerer quotes verbatim (share 1), so no data to fit the check's
  weight exists offline; the product is the prior that stands in for it.
* `p_answerable`: the documents hold an answer at all. An answer with p_answerable
  below `ABSTAIN_BELOW` becomes an abstention. Abstaining on p_correct instead would
  also withhold right-looking answers to answerable questions that happen to be wrong,
  which is a different failure (false abstention) from answering what the documents
  do not say; the threshold was chosen on the dev splits as the highest that keeps
  false abstention within 5% of the answerable questions, and of the pydocs queries (all
  answerable, in a user's words rather than the manuals').

An abstention's confidence is p_correct of the answer it withheld: a high value flags
a probably missed answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields

import numpy as np

from ..embedders.base import Embedder
from ..models import Answer, CitationCheck, Hit, TermStatistics
from .evidence import missing_name_rarity, unheld_words, written_as
from .lexical import chunk_text, cited_hits, content_terms, overlap

MAX_MISSING_TERMS = 3
# An identifier: a flag (--force, -x), a TeX command (\textls), a dotted or key=value name
# (core.autocrlf, verbose=errors, stash@{0}), a mixedCase / inner-capital name (excludesFile,
# LetterSpace), or letters run into digits (libfoo33, utf8, cmr10). Plain hyphenated words
# (pre-commit) are prose.
_IDENTIFIER = re.compile(
    r"(?<![\w-])--?[A-Za-z][\w-]*"
    r"|\\[A-Za-z@]+"
    r"|\w{2,}(?:[.=@/:][\w{][\w{}]*)+"
    r"|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*"
    r"|\b[A-Za-z]+\d\w*"
)


@dataclass(frozen=True)
class ConfidenceFeatures:
    """What confidence is computed from; the field order is the order of the fitted weights."""

    top_similarity: float
    similarity_margin: float
    cited_similarity: float
    answer_similarity: float
    terms_in_sources: float
    missing_terms: float
    terms_in_cited: float
    terms_in_answer: float
    identifiers_in_answer: float
    asks_identifier: float
    keyword_rank: float
    missing_name_rarity: float
    absent_from_kb: float

    def vector(self) -> tuple[float, ...]:
        return astuple(self)


FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ConfidenceFeatures))


@dataclass(frozen=True)
class LogisticModel:
    """p = 1 / (1 + exp(-(intercept + weights . features)))."""

    intercept: float
    weights: tuple[float, ...]

    def probability(self, values: Sequence[float]) -> float:
        """The probability for one feature vector (`ConfidenceFeatures.vector()`)."""
        z = self.intercept + sum(w * x for w, x in zip(self.weights, values, strict=True))
        return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))


# Fitted by `python bench/calibrate_answers.py` (see its docstring for the data); do not edit by hand.
# Fitted on 2026-11-28 (code at 9c16d88) on 242 dev questions of dvipdfmx, examples, gitdoc, microtype, sqlite, valgrind, vrbtabs, zsh.
P_CORRECT = LogisticModel(-8.8859, (-0.9874, 4.5914, 2.7752, 4.6749, 1.9019, 0.3423, 1.2431, 2.6616, 0.2725, -0.7212, 0.9126, -2.644, -0.2466))
P_ANSWERABLE = LogisticModel(-7.5215, (2.5516, 1.8707, -0.7177, 6.4223, 2.8118, 0.5373, 1.3115, -0.3241, 0.6316, -0.6635, 0.9411, -3.2853, -1.571))
ABSTAIN_BELOW = 0.4301


@dataclass(frozen=True)
class Calibrated:
    """The two probabilities for one answer."""

    p_correct: float
    p_answerable: float


def asked_identifiers(question: str) -> set[str]:
    """Identifiers named in the question, lower-cased."""
    return {m.group().lower() for m in _IDENTIFIER.finditer(question)}


def quoted(question: str, text: str) -> float:
    """The share of the identifiers `question` names that `text` quotes: each as a whole token (not
    `--force` inside `--force-with-lease`, not `ConTeXt` inside `\\microtypecontext`), case aside,
    but a name with a capital inside it (ConTeXt, GitHub) written as that name (`evidence.written_as`:
    not "context" nor "Context-sensitive"). 0 when the question names none.

    A case-blind substring test counted the plain word "context" of an answer about microtype's
    contexts as quoting the ConTeXt a question asked about, and the gate let the answer through
    as one that quotes what was asked (`quotes_what_was_asked`)."""
    asked = {m.group().lower(): m.group() for m in _IDENTIFIER.finditer(question)}
    if not asked:
        return 0.0
    found = sum(
        any(written_as(name, m) for m in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE))
        for name in asked.values()
    )
    return found / len(asked)


def _vector_scores(hits: Sequence[Hit]) -> list[float]:
    return sorted((h.vector_score or 0.0 for h in hits), reverse=True)


def answer_features(
    question: str, answer: Answer, question_vector: np.ndarray, embedder: Embedder, stats: TermStatistics
) -> ConfidenceFeatures:
    """The features of `answer` (its citations and the hits it drew on) for `question`;
    `stats` is the knowledge base's `term_statistics(question)`.

    An abstention has no text or citations: its answer-side features are 0, and what
    the retrieved chunks and the knowledge base say about the question still counts.
    """
    rarity = missing_name_rarity(question, answer, stats)
    absent = 1.0 if unheld_words(question, stats) else 0.0
    hits = list(answer.hits)
    scores = _vector_scores(hits)
    top = scores[0] if scores else 0.0
    second = scores[1] if len(scores) > 1 else 0.0
    terms = content_terms(question)
    source_terms = content_terms(" ".join(chunk_text(h) for h in hits))
    in_sources = len(terms & source_terms) / len(terms) if terms else 0.0
    missing = float(min(len(terms - source_terms), MAX_MISSING_TERMS))
    asks = 1.0 if asked_identifiers(question) else 0.0
    if answer.abstained or not answer.citations:
        return ConfidenceFeatures(
            top, max(top - second, 0.0), 0.0, 0.0, in_sources, missing, 0.0, 0.0, 0.0, asks, 0.0, rarity, absent
        )
    cited = cited_hits(answer)
    answer_text = " ".join((answer.answer, *(" ".join(c.heading_path) for c in answer.citations)))
    keyword_ranks = [h.keyword_rank for h in cited if h.keyword_rank]
    similarity = embedder.embed_documents([answer.answer])[0] @ question_vector
    return ConfidenceFeatures(
        top_similarity=top,
        similarity_margin=max(top - second, 0.0),
        cited_similarity=max((h.vector_score or 0.0 for h in cited), default=0.0),
        answer_similarity=float(similarity),
        terms_in_sources=in_sources,
        missing_terms=missing,
        terms_in_cited=overlap(terms, " ".join(chunk_text(h) for h in cited)),
        terms_in_answer=overlap(terms, answer_text),
        identifiers_in_answer=quoted(question, answer_text),
        asks_identifier=asks,
        keyword_rank=1.0 / min(keyword_ranks) if keyword_ranks else 0.0,
        missing_name_rarity=rarity,
        absent_from_kb=absent,
    )


def quotes_what_was_asked(features: ConfidenceFeatures) -> bool:
    """Whether the answer quotes every identifier the question names, from the chunk keyword
    search ranks first: then the documents do hold something on exactly what was asked, and
    the gate does not withhold it. The fitted gate reads mostly how close the answer's wording
    is to the question's, which a table row (`| libfoo33 | 1.33 | 2221 |`) or a terse option
    entry never is: it withheld such right answers, and the dev sets had no table questions
    to learn from."""
    return bool(features.asks_identifier) and features.identifiers_in_answer == 1.0 and features.keyword_rank == 1.0


def calibrate(features: ConfidenceFeatures, check: CitationCheck | None = None) -> Calibrated:
    """The calibrated probabilities; `check` is the citation check of an LLM answer (None: verbatim quotes)."""
    values = features.vector()
    support = check.supported_ratio if check is not None else 1.0
    return Calibrated(P_CORRECT.probability(values) * support, P_ANSWERABLE.probability(values))
