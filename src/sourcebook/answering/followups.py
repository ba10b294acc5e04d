"""Three follow-up questions for an answer: written by the LLM when there is one, else drawn
from what was retrieved and not yet asked.

Offline, the subjects are the reference entries (options, variables, API terms) and sections of
the retrieved chunks the answer did not use, then of those it used; each becomes the question a
user would ask about it ("What does --force-with-lease do?", "What is the default of
core.autocrlf?", "What does the Travel policy say about Mileage?"). A subject is offered only when
it is specific (generic headings such as "Note", "Examples" or "OPTIONS" are not) and the question
is not already about it, and only when `answerable` (a quick keyword search) finds a passage that
names it. No follow-ups follow an abstention: the caller does not ask.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ..errors import GeneratorError
from ..generators import Generation, Generator
from ..models import StoredChunk
from .focus import Focus, asks_about, entry_term, term_names, unquoted
from .prompts import follow_up_request

COUNT = 3
Answerable = Callable[[str], bool]
"""Whether the knowledge base holds a passage about a subject (it names it)."""

GENERIC_HEADINGS = frozenset(
    """
    note notes tip tips warning warnings caution important example examples description overview
    introduction intro summary synopsis name options option usage details detail discussion see also
    references reference bugs author authors files environment history return value returns errors
    exit status configuration config contents index background misc miscellaneous other faq
    parameters arguments more information further reading footnotes appendix changelog
    changes limitations caveats remarks comments general
    """.split()
)
"""Headings that name a kind of section, not a subject: no one asks "what does it say about Note?"."""
_HOW_TO = re.compile(r"how to\s+(.+)", re.IGNORECASE)
_GENERIC_PHRASES = frozenset({"see also", "return value", "exit status", "more information", "further reading"})


def _section(chunk: StoredChunk) -> str:
    return " > ".join((chunk.title, *chunk.heading_path[-1:])) if chunk.heading_path else chunk.title


def _topic(heading: str) -> str:
    """A heading as the object of a question: without its numbering ("4. "), quotes or final "?"."""
    return unquoted(re.sub(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+", "", heading)).rstrip(" ?:")


def _short_title(title: str) -> str:
    """What a user calls a document: "Dvips" for "Dvips: A DVI-to-PostScript translator"."""
    name = re.split(r":\s| [-–—] ", title, maxsplit=1)[0].strip()
    return name if 2 <= len(name) <= 40 else title


def _section_question(heading: str, topic: str, title: str) -> str:
    """The question a section answers, in a user's words: a FAQ's own question, "How do I ...?"
    for a how-to, else what the document says about the topic."""
    if heading.rstrip().endswith("?") and len(topic.split()) >= 3:
        return topic + "?"
    how_to = _HOW_TO.match(topic)
    if how_to:
        return f"How do I {how_to.group(1)}?"
    return f"What does {_short_title(title)} say about {topic}?"


def is_generic(topic: str) -> bool:
    """A heading too general to ask about: a kind of section, a lone word in capitals, no letters."""
    words = topic.lower().split()
    return (
        not any(ch.isalpha() for ch in topic)
        or " ".join(words) in _GENERIC_PHRASES
        or all(word.strip("()[]:,.") in GENERIC_HEADINGS for word in words)
        or (topic.isupper() and len(words) <= 2)
    )


def _entry_question(term: str, chunk: StoredChunk) -> str:
    """The question a user asks about a reference entry: an option's effect, a variable's default."""
    name = term.split(",")[0].split(" (")[0].strip()
    if name.startswith("-"):
        return f"What does {name} do?"
    if "default" in chunk.text.lower():
        return f"What is the default of {name}?"
    return f"What is {name}?"


def _candidate(chunk: StoredChunk) -> tuple[str, str] | None:
    """(subject, question) for a chunk, or None when it offers nothing specific to ask."""
    term = entry_term(chunk)
    if term is not None:
        names = term_names(term)
        return names.split(",")[0].split(" (")[0].strip(), _entry_question(names, chunk)
    if not chunk.heading_path or chunk.heading_path[-1].strip().lower() == chunk.title.strip().lower():
        return None
    topic = _topic(chunk.heading_path[-1])
    if len(topic) < 3 or is_generic(topic):
        return None
    return topic, _section_question(chunk.heading_path[-1], topic, chunk.title)


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


def offline_follow_ups(
    chunks: Iterable[StoredChunk], used_chunk_ids: set[str], question: str = "", answerable: Answerable | None = None
) -> tuple[str, ...]:
    """Up to three questions about the specific subjects of the unused chunks, then of the used ones,
    not about what `question` already asks, each checked by `answerable` when given."""
    ordered = sorted(chunks, key=lambda c: c.id in used_chunk_ids)
    focus = Focus.of(question)
    questions: dict[str, None] = {}
    subjects: set[str] = set()
    for chunk in ordered:
        candidate = _candidate(chunk)
        if candidate is None:
            continue
        subject, follow_up = candidate
        key = subject.lower()
        if key in subjects or follow_up in questions or (question and asks_about(focus, subject)):
            continue
        subjects.add(key)
        if answerable is not None and not answerable(subject):
            continue
        questions[follow_up] = None
        if len(questions) == COUNT:
            break
    return tuple(questions)


def names_subject(subject: str, chunks: Sequence[StoredChunk]) -> bool:
    """Whether one of `chunks` (a quick search's hits for `subject`) holds it in its heading path or text."""
    lowered = subject.lower()
    return any(
        lowered in chunk.text.lower() or any(lowered in heading.lower() for heading in chunk.heading_path)
        for chunk in chunks
    )
