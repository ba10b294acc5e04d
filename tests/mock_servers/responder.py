"""A scripted LLM for knowledge-base tests: it recognises which Sourcebook prompt it received
(answer, rewrite, follow-ups, standalone question, chunk context) and replies accordingly.

Answers are written by a test-supplied function of the question and the numbered sources
parsed out of the prompt, so a test can cite "the source that says X" without knowing
how retrieval numbered it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sourcebook.answering import prompts

from .core import Action, Recorded, Reply

_SOURCE = re.compile(r'<source n="(\d+)"[^>]*>\n(.*?)\n</source>', re.DOTALL)

AnswerWriter = Callable[[str, dict[int, str]], str]


def purpose_of(system: str) -> str:
    return {
        prompts.ANSWER_SYSTEM: "answer", prompts.REWRITE_SYSTEM: "rewrite", prompts.FOLLOW_UP_SYSTEM: "follow_ups",
        prompts.STANDALONE_SYSTEM: "standalone", prompts.ENRICH_SYSTEM: "enrich",
    }.get(system, "unknown")


def anthropic_prompt(body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, last user message) of an Anthropic Messages request."""
    return str(body.get("system", "")), str(body["messages"][-1]["content"])


def sources_of(prompt: str) -> dict[int, str]:
    return {int(n): text for n, text in _SOURCE.findall(prompt)}


def question_of(prompt: str) -> str:
    return prompt.rsplit("Question: ", 1)[-1].strip()


def citing(phrase: str, claim: str) -> AnswerWriter:
    """An answer writer: `claim`, cited to the first source containing `phrase` (or [99] if none)."""

    def write(question: str, sources: dict[int, str]) -> str:
        n = next((n for n, text in sorted(sources.items()) if phrase.lower() in text.lower()), 99)
        return f"{claim} [{n}]."

    return write


@dataclass
class Responder:
    """Callable as a MockServer default: replies by purpose; records the purposes it saw."""

    answer: AnswerWriter | str = "The sources do not contain the answer."
    rewrite: dict[str, Any] | Action = field(default_factory=lambda: {"queries": ["q one", "q two", "q three"], "keywords": ["k1"]})
    follow_ups: dict[str, Any] | Action = field(default_factory=lambda: {"questions": ["F1?", "F2?", "F3?"]})
    standalone: dict[str, Any] | Action = field(default_factory=lambda: {"question": "standalone question"})
    context: str = "This chunk is part of the test document."
    seen: list[str] = field(default_factory=list)

    def __call__(self, request: Recorded) -> Action:
        system, prompt = anthropic_prompt(request.body)
        purpose = purpose_of(system)
        self.seen.append(purpose)
        if purpose == "answer":
            text = self.answer if isinstance(self.answer, str) else self.answer(question_of(prompt), sources_of(prompt))
            return Reply(text, input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
        if purpose == "enrich":
            return Reply(self.context)
        payload = {"rewrite": self.rewrite, "follow_ups": self.follow_ups, "standalone": self.standalone}.get(purpose)
        if payload is None:
            raise AssertionError(f"unexpected prompt: {system[:80]!r}")
        return Reply(data=payload) if isinstance(payload, dict) else payload
