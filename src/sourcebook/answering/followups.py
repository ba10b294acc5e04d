"""Three follow-up questions for an answer: written by the LLM when there is one, else drawn
from the sections of the retrieved sources that the answer did not use.

The offline questions name a real section ("What does the Travel policy say about Mileage?"),
so each one is answerable from the knowledge base by construction.
"""

from __future__ import annotations

import re

from collections.abc import Iterable, Sequence

from ..errors import GeneratorError
from ..generators import Generation, Generator
from ..models import StoredChunk
from .prompts import follow_up_request

COUNT = 3


def _section(chunk: StoredChunk) -> str:
    return " > ".join((chunk.title, *chunk.heading_path[-1:])) if chunk.heading_path else chunk.title


def _topic(heading: str) -> str:
    """A heading as the object of a question: without its numbering ("4. ") or final "?"."""
    return re.sub(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+", "", heading).rstrip(" ?")


def llm_follow_ups(
    generator: Generator, question: str, answer: str, chunks: Sequence[StoredChunk]
) -> tuple[tuple[str, ...], Generation | None, str | None]:
    """(questions, the call, an error): up to three questions, or none when the LLM fails."""
    sections = list(dict.fromkeys(_section(c) for c in chunks))
    try:
        generation = generator.generate(follow_up_request(question, answer, sections))
        values = generation.json().get("questions")
    except GeneratorError as exc:
        return (), None, str(exc)
    questions = [v.strip() for v in values or [] if isinstance(v, str) and v.strip()]
    return tuple(dict.fromkeys(questions))[:COUNT], generation, None


def offline_follow_ups(chunks: Iterable[StoredChunk], used_chunk_ids: set[str]) -> tuple[str, ...]:
    """Questions about the sections of unused sources, then of used ones, up to three."""
    ordered = sorted(chunks, key=lambda c: c.id in used_chunk_ids)
    questions: dict[str, None] = {}
    for chunk in ordered:
        if not chunk.heading_path or chunk.heading_path[-1].strip().lower() == chunk.title.strip().lower():
            continue
        questions[f"What does {chunk.title} say about {_topic(chunk.heading_path[-1])}?"] = None
        if len(questions) == COUNT:
            break
    return tuple(questions)
