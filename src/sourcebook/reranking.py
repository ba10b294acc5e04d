"""Offline reranking of hybrid search's first candidates by features that embeddings and BM25 miss.

Fusion ranks by two similarity scores; neither knows that a question naming `core.autocrlf` is
answered by the entry whose heading *is* `core.autocrlf`, that every query term sits in one
sentence of a passage rather than scattered, or that an option name appears verbatim. The
reranker reorders the first `candidates` hits (30 by default) by a linear model over measured
features of each (query, chunk) pair:

    fused      the fusion score, standardised over the candidates (what hybrid already knows)
    terms      share of the query's content words in the chunk (heading path included)
    idents     share of the query's identifiers found verbatim: tokens with - _ . or digits,
               CamelCase, --flags (0 when the query has none)
    title      share of the query's content words in the document's title (and top heading)
    entry      1 when the chunk's last heading (an entry's term) names an identifier or a
               content word the query asks about, else 0
    proximity  matched query words / length of the shortest stretch of the chunk holding them all

The weights are not set by hand: `bench/fit_reranker.py` fits them (logistic regression of
"this candidate's document is judged relevant") on the fitting splits it names and prints them
for `LINEAR_WEIGHTS`. Hits past the candidates keep their order after the reranked ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .answering.lexical import content_terms, stem_words
from .models import StoredChunk

FEATURES = ("fused", "terms", "idents", "title", "entry", "proximity")

LINEAR_WEIGHTS: dict[str, float] = {
    "fused": 1.2395, "terms": 0.9339, "idents": 0.4663, "title": 1.9499, "entry": 0.1649, "proximity": 0.1309,
}
"""Fitted by `bench/fit_reranker.py --beir scifact --fold even --qa gitdoc --split dev` (SciFact's
even-hash half of the test queries, 135, and gitdoc's 30 answerable dev questions: 12,177 pairs);
only their ratios matter. SciFact's odd half, pydocs and the test splits were not fitted on."""

_TOKEN = re.compile(r"[\w.<>:/=+@-]+")
_TRIM = ".,:;?!()[]{}'\"`"
_CAMEL = re.compile(r"[a-z][A-Z]")
# What a reference entry's term carries after its name, no part of the name: a type
# ("max_clients (integer)"), an alias (zsh's "AUTO_LIST (-9)") and the letter marks Texinfo manuals
# set after a name ("HISTSIZE <S>" special, "APPEND_HISTORY <D>" on by default), in any order.
ENTRY_NOTE = re.compile(r"(?:\s*(?:\([^()]*\)|<[A-Z]{1,2}>))+\s*$")
LETTER_MARK = re.compile(r"\s<[A-Z]{1,2}>(?=\s|$)")
_ABBREVIATION = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]?")
# An option signature's argument placeholders and bracketed parts: `<file>`, `[default: no]`, `[,0xRR-0xSS]`.
_SIGNATURE_GROUP = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_SIGNATURE_SPLIT = re.compile(r"[\s,]+")
_OPTION = re.compile(r"--?[A-Za-z][\w-]*")
_VALUE_WORD = re.compile(r"[\w.|%:-]+")  # "hint2" of `--sim-hints=hint1,hint2,...`
MAX_SIGNATURE_VALUES = 2
# A PDF's typographic hyphens (U+2010, U+2011) in `‐‐sys` or `‐w`: the option is typed with ASCII dashes.
_HYPHENS = str.maketrans("\u2010\u2011", "--")
_FOOTNOTE_MARKS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_DOT_COMMAND = re.compile(r"\.[A-Za-z][\w-]*")
_WORD_NAME = re.compile(r"[A-Za-z_]\w*")


def identifiers(text: str) -> list[str]:
    """The tokens of `text` that name something exactly (lower-cased): `--force`, `core.autocrlf`,
    `max_connections`, `utf-8`, `log4j`, `HashMap`, the dot-command `.dump`, the call `unixepoch()`.
    Plain words are not identifiers."""
    found = []
    text = text.translate(_HYPHENS)
    for match in _TOKEN.finditer(text):
        # A PDF glues its footnote markers to the word they follow ("recorded.⁴"): no part of a name.
        token = match.group().strip(_TRIM).rstrip(_FOOTNOTE_MARKS).strip(_TRIM)
        if len(token) < 2:
            continue
        if _DOT_COMMAND.fullmatch(match.group().rstrip(_TRIM)) and not text[: match.start()][-1:].isalnum():
            token = "." + token  # `.dump`, `.nullvalue`: a dot-command or dot-file, named with its dot
        elif text.startswith("()", match.end()) and _WORD_NAME.fullmatch(token):
            found.append(token.lower())  # `unixepoch()`: a function, named as it is called
            continue
        inner = token.lstrip("-")
        if not any(ch.isalpha() for ch in inner) or _ABBREVIATION.fullmatch(inner):  # 2.39, e.g.
            continue
        if (
            token.startswith("-") and inner
            or any(mark in inner for mark in "_.-=:/") and any(ch.isalnum() for ch in inner)
            or any(ch.isdigit() for ch in inner) and any(ch.isalpha() for ch in inner)
            or _CAMEL.search(inner)
        ):
            found.append(token.lower())
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class QueryTerms:
    """What the features need of the query, computed once per search."""

    terms: frozenset[str]
    identifiers: tuple[str, ...]

    @classmethod
    def of(cls, query: str) -> QueryTerms:
        return cls(frozenset(content_terms(query)), tuple(identifiers(query)))


def _proximity(terms: frozenset[str], words: Sequence[str]) -> float:
    """Distinct query terms matched / the shortest window of `words` holding all of them (0 below two)."""
    positions = [(i, word) for i, word in enumerate(words) if word in terms]
    wanted = {word for _, word in positions}
    if len(wanted) < 2:
        return 0.0
    best = len(words)
    counts: dict[str, int] = {}
    left = 0
    for position, word in positions:
        counts[word] = counts.get(word, 0) + 1
        while len(counts) == len(wanted):
            best = min(best, position - positions[left][0] + 1)
            first = positions[left][1]
            counts[first] -= 1
            if not counts[first]:
                del counts[first]
            left += 1
    return len(wanted) / best


def features(query: QueryTerms, chunk: StoredChunk, fused: float) -> list[float]:
    """The feature vector (in `FEATURES` order) of one candidate; `fused` is its standardised score."""
    heading_text = " ".join((chunk.title, *chunk.heading_path))
    full = f"{heading_text}\n{chunk.text}"
    words = stem_words(chunk.text)
    chunk_terms = set(words) | content_terms(heading_text)
    terms = len(query.terms & chunk_terms) / len(query.terms) if query.terms else 0.0
    lowered = full.lower()
    idents = sum(ident in lowered for ident in query.identifiers) / len(query.identifiers) if query.identifiers else 0.0
    outer = " ".join((chunk.title, *chunk.heading_path[:1]))  # the document's name (title, top heading)
    title = len(query.terms & content_terms(outer)) / len(query.terms) if query.terms else 0.0
    entry = 0.0
    if chunk.heading_path:
        last = chunk.heading_path[-1].lower()
        named = set(identifiers(last)) | content_terms(last)
        if any(ident in last for ident in query.identifiers) or (named and named <= set(query.terms) | set(query.identifiers)):
            entry = 1.0
    return [fused, terms, idents, title, entry, _proximity(query.terms, words)]


def standardised(scores: Sequence[float]) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64)
    return (values - values.mean()) / (values.std() + 1e-9)


def feature_matrix(query: str, chunks: Sequence[StoredChunk], scores: Sequence[float]) -> np.ndarray:
    """One row of features per candidate (chunks and their fused scores, best first)."""
    terms = QueryTerms.of(query)
    fused = standardised(scores)
    return np.array([features(terms, chunk, float(z)) for chunk, z in zip(chunks, fused, strict=True)], dtype=np.float64)


class Reranker(Protocol):
    """What the reranking stage asks of a scorer (the linear model, or a cross-encoder)."""

    def rerank(self, query: str, chunks: Sequence[StoredChunk], fused: Sequence[float]) -> list[int]:
        """The candidates' indexes, best first."""


class LinearReranker:
    """Reorders candidates by `weights · features`; ties keep the fused order."""

    def __init__(self, weights: dict[str, float] | None = None) -> None:
        weights = weights or LINEAR_WEIGHTS
        self._weights = np.array([weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)

    def scores(self, query: str, chunks: Sequence[StoredChunk], fused: Sequence[float]) -> np.ndarray:
        if not chunks:
            return np.zeros(0)
        return feature_matrix(query, chunks, fused) @ self._weights

    def rerank(self, query: str, chunks: Sequence[StoredChunk], fused: Sequence[float]) -> list[int]:
        """The candidates' indexes, best first: the entries the query names by an identifier
        (`named_entry`), then the others by the linear score."""
        scores = self.scores(query, chunks, fused)
        idents = identifiers(query)
        named = [named_entry(idents, chunk) for chunk in chunks]
        return sorted(range(len(chunks)), key=lambda i: (not named[i], -scores[i], i))


def named_first(query: str, chunks: Sequence[StoredChunk]) -> list[int]:
    """The candidates' indexes with the entries the query names first, the rest in fused order:
    what hybrid search does with the linear model off (the lookup needs no fitted weights)."""
    idents = identifiers(query)
    return sorted(range(len(chunks)), key=lambda i: (not named_entry(idents, chunks[i]), i))


def signature_names(heading: str) -> tuple[str, ...]:
    """The options a heading that is an option signature names, as written: manuals generated from
    DocBook, Texinfo or asciidoc set an option's arguments and default in its term,
    `--leak-check=<no|summary|yes|full> [default: summary]`, `-m <msg>, --message=<msg>`,
    `--cache-sim=no|yes [yes]`, `-I<dir> --include=<dir>` -> `--leak-check`; `-m`, `--message`;
    `--cache-sim`; `-I`, `--include`. () when the heading does not open with an option or holds
    words that are not its options' values (a title that happens to start with a dash)."""
    tokens = [token for token in _SIGNATURE_SPLIT.split(_SIGNATURE_GROUP.sub(" ", heading)) if token and token != "..."]
    names: list[str] = []
    values = 0
    for token in tokens:
        option = _OPTION.match(token)
        if option is not None and token[option.end():][:1] in ("", "="):
            names.append(option.group())
        elif names and _VALUE_WORD.fullmatch(token):
            values += 1
        else:
            return ()
    return tuple(names) if values <= MAX_SIGNATURE_VALUES else ()


def named_entry(query_identifiers: Sequence[str], chunk: StoredChunk) -> bool:
    """Whether the chunk is the entry of an identifier the query names: its last heading is that
    option, variable or API name (`max_clients (integer)` for "default of max_clients?"; the
    options of a signature, `--num-callers=<number> [default: 12]` for "--num-callers"). Not a
    weight but a lookup: a reader who names a term wants its definition, not the passages that
    mention it, which the fused score cannot tell apart (both hold the name)."""
    if not query_identifiers or not chunk.heading_path:
        return False
    last = chunk.heading_path[-1].lower()
    names = {ENTRY_NOTE.sub("", part).strip().lower() for part in chunk.heading_path[-1].split(",")}
    names |= {name.replace("[no-]", "") for name in names} | set(signature_names(last))
    return any(ident in names or ident.split("=")[0] in names for ident in query_identifiers)
