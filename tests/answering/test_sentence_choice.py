"""Which sentences of the retrieved chunks an offline answer may quote."""

from __future__ import annotations

from sourcebook.answering.extractive import heading_keys
from sourcebook.chunking import sentence_texts
from tests.answering.test_reference_answers import chunk as make_chunk


def test_a_numbered_section_title_is_a_heading_not_an_answer_sentence() -> None:
    """The splitter cuts "10." off a numbered title; the rest must still be known as the heading."""
    title = "10. Converting An Entire Database To A Text File"
    text = f'{title}\n\nUse the ".dump" command to convert the entire contents of a database into a text file.'
    chunk = make_chunk((title,), text, title="cli")
    keys = heading_keys(chunk)
    sentences = [s for s in sentence_texts(text) if " ".join(s.lower().split()) not in keys]
    assert sentences == [s for s in sentence_texts(text) if s.startswith(("10.", "Use"))]
    assert "converting an entire database to a text file" in keys
