"""Content-word overlap between a question and a passage.

Embeddings miss exact matches (numbers, names, codes); a lexical signal keeps
an extractive answer from quoting a sentence that merely sounds related.
"""

from __future__ import annotations

import re

from ..models import Answer, Hit
from ..stopwords import STOPWORDS

_WORD = re.compile(r"[^\W_]+(?:[.'-][^\W_]+)*", re.UNICODE)

# Question words that say nothing about the answer, on top of the shared stopwords.
_QUESTION_FILLER = frozenset("get gets got many much tell give given also may might must shall".split())
_IGNORED = STOPWORDS | _QUESTION_FILLER


def _stem(word: str) -> str:
    """A light suffix stripper: enough to match 'days'/'day', 'booking'/'booked'."""
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def stem_words(text: str) -> list[str]:
    """Every word of `text`, lower-cased and stemmed, in order (stopwords kept: positions count)."""
    return [_stem(m.group().lower()) for m in _WORD.finditer(text)]


def content_terms(text: str) -> set[str]:
    """Lower-cased, stemmed words of `text` that carry meaning (stopwords dropped)."""
    return {_stem(w) for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _IGNORED}


def overlap(question_terms: set[str], passage: str) -> float:
    """Share of the question's content terms present in `passage`, in [0, 1]."""
    if not question_terms:
        return 0.0
    return len(question_terms & content_terms(passage)) / len(question_terms)


def chunk_text(hit: Hit) -> str:
    """A hit's words as a reader of its citation sees them: headings, document title and text."""
    return " ".join((*hit.chunk.heading_path, hit.chunk.title, hit.chunk.text))


def cited_hits(answer: Answer) -> list[Hit]:
    """The hits `answer` cites, in citation order (a citation of a chunk it did not retrieve is skipped)."""
    by_chunk = {h.chunk.id: h for h in answer.hits}
    return [by_chunk[c.chunk_id] for c in answer.citations if c.chunk_id in by_chunk]
