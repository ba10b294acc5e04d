"""Content-word overlap between a question and a passage.

Embeddings miss exact matches (numbers, names, codes); a lexical signal keeps
an extractive answer from quoting a sentence that merely sounds related.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:[.'-][^\W_]+)*", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves get gets got many much does tell give given also may might must shall""".split()
)


def _stem(word: str) -> str:
    """A light suffix stripper: enough to match 'days'/'day', 'booking'/'booked'."""
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_terms(text: str) -> set[str]:
    """Lower-cased, stemmed words of `text` that carry meaning (stopwords dropped)."""
    return {_stem(w) for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in STOPWORDS}


def overlap(question_terms: set[str], passage: str) -> float:
    """Share of the question's content terms present in `passage`, in [0, 1]."""
    if not question_terms:
        return 0.0
    return len(question_terms & content_terms(passage)) / len(question_terms)
