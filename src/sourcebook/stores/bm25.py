"""The keyword analyser and BM25 constants both stores share, so both rank alike.

Analysis: lower-cased word characters, Porter stems (the algorithm of SQLite FTS5's
porter tokenizer, from PyStemmer); English stopwords are dropped from queries (not from
the index). Scoring is Okapi BM25 as FTS5 computes it (k1 = 1.2, b = 0.75, idf =
log((N - n + 0.5) / (n + 0.5)) floored at 1e-6): the SQLite store in numpy
(index/keywords.py), the Postgres store in SQL (postgres/keywords.py).
"""

from __future__ import annotations

import re
from collections import Counter

import Stemmer

from ..stopwords import STOPWORDS

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+")
_STEMMER = Stemmer.Stemmer("porter")


def analyze(text: str) -> list[str]:
    """Index terms of a text, in order: lower-cased, Porter-stemmed words (stopwords kept,
    so a query made only of stopwords, "to be or not to be", still finds its text)."""
    return _STEMMER.stemWords(_WORD.findall(text.lower()))


def query_words(query: str) -> list[str]:
    """A query's lower-cased words, stopwords dropped unless the query has nothing else
    (also what the Postgres store hands its own stemmer)."""
    words = _WORD.findall(query.lower())
    return [w for w in words if w not in STOPWORDS] or words


def query_terms(query: str) -> list[str]:
    """Distinct terms of a query, stopwords dropped unless the query has nothing else."""
    return list(dict.fromkeys(_STEMMER.stemWords(query_words(query))))


def term_counts(text: str) -> tuple[Counter[str], int]:
    """Term frequencies of a chunk's indexed text, and its length in terms."""
    terms = analyze(text)
    return Counter(terms), len(terms)
