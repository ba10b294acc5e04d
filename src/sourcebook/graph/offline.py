"""The deterministic extractor: a knowledge graph from text alone, no LLM, no model.

Nodes, found per sentence:
- code identifiers: `backticked` text, snake_case, dotted.names, camelCase, call(), --flags,
  paths, URLs, e-mail addresses, and hyphenated names with a digit (eu-central-1);
- acronyms: two to six capitals (DCP, AWS, MQTT), except in shouted ALL-CAPS lines;
- proper nouns: runs of capitalised words ("Tobias Lindqvist", "Google Workspace", "Modbus
  TCP"). A capitalised word that opens a sentence or a heading counts only if the chunk
  also capitalises it mid-sentence ("Tidewater" is a name, "Processed" is not); month and
  weekday names and sentence openers ("Every", "Next") are never nodes;
- key phrases: runs of two or three lower-case content words between stopwords and
  punctuation ("client certificate", "alert rules"), and hyphenated words ("harbor-db",
  "on-call"). These are weak: the builder keeps one only when it recurs in the document or
  names an entity the graph already has, which removes most one-off word salad.
Acronym definitions ("Data Collection Pipeline (DCP)", "RPO (recovery point objective)",
"DCP, short for Data Collection Pipeline") make the acronym an alias of its expansion.

Edges: every pair of nodes in one sentence, weight 1 per sentence, labelled with the words
between them when no other node stands there and they say something ("is written in",
"publishes readings to"), else "co-occurs with".

What it cannot do (README "Knowledge graph"): it does not know what a name is (a person,
a product: every proper noun is typed "name"), resolve pronouns ("it", "the service"),
understand negation or direction beyond word order, find lower-case single-word concepts,
or merge synonyms that share no letters ("staff" and "employees").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..chunking import sentence_texts
from ..stopwords import STOPWORDS
from .models import ChunkExtraction, ExtractedEntity, ExtractedRelation
from .normalize import entity_key, expands, is_acronym

NAME = "offline"
VERSION = 1
RELATED = "co-occurs with"
MAX_LABEL_WORDS = 6
MAX_NODES_PER_SENTENCE = 12

_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
# Capitalised only because they open a sentence or a list item; never a name on their own.
_OPENERS = frozenset(
    "every next first last daily weekly monthly yearly today tomorrow yesterday please note yes also "
    "however new many most some several".split()
)
# Words that end a key phrase besides STOPWORDS: auxiliaries, quantifiers, adverbs, numerals.
_BREAKS = STOPWORDS | frozenset(
    """also always already another any around across can cannot could e.g etc every first get gets
    got i.e instead least less like made make makes may might much must need needs never new next
    normally often one per second several shall should since still three two usually via well
    within without yes using used use uses usually currently including include includes given
    many much than then there whether either neither however therefore thus whose""".split()
)
_CODE = re.compile(
    r"`(?P<tick>[^`\n]{1,80})`"
    r"|(?P<url>https?://[^\s<>\"')\]]+[^\s<>\"').,;:!?\]])"
    r"|(?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
    r"|(?P<flag>(?<![\w-])--?[a-z][\w-]{1,40})"
    r"|(?P<path>(?<![\w/])/[\w.-]+(?:/[\w.-]+)+)"
    r"|(?P<call>\b[A-Za-z_][\w.]*\(\))"
    r"|(?P<snake>\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b)"
    r"|(?P<dotted>\b[a-z][\w-]+(?:\.[a-z_][\w-]+)+\b)"
    r"|(?P<camel>\b[a-z]+[A-Z][A-Za-z0-9]*\b)"
    r"|(?P<hyphen>\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b)"
)
# A line written in capitals ("ACTION ITEMS", "2. HARBOR-DB UPGRADE"): a title, not names.
_SHOUTED = re.compile(r"^[^a-z\n]*[A-Z]{2}[^a-z\n]*[A-Z]{2}[^a-z\n]*$|^[^a-z\n]*[A-Z]{6,}[^a-z\n]*$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:['’][A-Za-z]+)?(?:[.-][A-Za-z0-9]+)*")
_DEFINITION = re.compile(r"\b([A-Z][A-Z0-9]{1,5})s?\b,?\s+(?:short for|stands for|which stands for)\s+((?:[\w-]+\s*){2,8})")


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    name: str
    type: str
    weak: bool = False


def extract_offline(text: str, headings: Sequence[str] = ()) -> ChunkExtraction:
    """Entities and co-occurrence relations of one chunk (`headings`: its heading path, whose
    lines in the text are judged like sentence openings)."""
    sentences = [s for s in sentence_texts(_SHOUTED.sub("", text)) if s.strip()]
    heading_lines = {h.strip() for h in headings}
    known = _midsentence_capitals(s for s in sentences if s.strip() not in heading_lines)
    counts: Counter[tuple[str, str, bool]] = Counter()
    names: dict[str, tuple[str, str, bool]] = {}
    weights: Counter[tuple[str, str, str]] = Counter()
    aliases: dict[str, set[str]] = {}
    for sentence in sentences:
        spans = _sentence_spans(sentence, known, sentence.strip() in heading_lines)[:MAX_NODES_PER_SENTENCE]
        for span in spans:
            key = entity_key(span.name)
            if not key:
                continue
            entry = names.setdefault(key, (span.name, span.type, span.weak))
            counts[entry] += 1
        for alias, expansion in _definitions(sentence):
            aliases.setdefault(expansion, set()).add(alias)
        for (a, b), label in _pairs(sentence, spans):
            source, target = names.get(entity_key(a.name)), names.get(entity_key(b.name))
            if source and target and source != target:
                weights[(source[0], label, target[0])] += 1
    for expansion in aliases:
        entry = names.setdefault(entity_key(expansion), (expansion, "name", False))
        counts[entry] += 0
    entities = tuple(
        ExtractedEntity(name, type_, "", tuple(sorted(aliases.get(name, ()))), count, weak)
        for (name, type_, weak), count in counts.items()
    )
    relations = tuple(ExtractedRelation(s, label, t, float(w)) for (s, label, t), w in weights.items())
    return ChunkExtraction(entities, relations)


def _midsentence_capitals(sentences: Sequence[str] | object) -> frozenset[str]:
    """Capitalised words the chunk uses after a sentence's first word: evidence of a name."""
    found: set[str] = set()
    for sentence in sentences:  # type: ignore[attr-defined]
        words = _WORD.findall(sentence)
        found.update(w for w in words[1:] if w[0].isupper())
    return frozenset(found)


def _sentence_spans(sentence: str, known: frozenset[str], heading: bool) -> list[_Span]:
    """The sentence's node mentions in order: code first, then names and acronyms, then phrases."""
    spans = [_code_span(m) for m in _CODE.finditer(sentence)]
    taken = [False] * len(sentence)
    for span in spans:
        taken[span.start : span.end] = [True] * (span.end - span.start)
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(sentence) if not any(taken[m.start() : m.end()])]
    spans += _name_spans(words, sentence, known, heading)
    used = {i for s in spans for i in range(s.start, s.end)}
    free = [(s, e, w) for s, e, w in words if s not in used]
    ends = {s.end for s in spans}
    spans += _phrase_spans(free, sentence, ends)
    return sorted(spans, key=lambda s: s.start)


def _code_span(match: re.Match[str]) -> _Span:
    kind = match.lastgroup or "code"
    value = match.group(kind)
    if kind == "hyphen" and not any(c.isdigit() for c in value):
        return _Span(match.start(), match.end(), value, "phrase", weak=True)
    if kind == "tick":
        return _Span(match.start(), match.end(), value.strip(), "code")
    return _Span(match.start(kind), match.end(kind), value, "code")


def _is_name_word(word: str) -> bool:
    lower = word.lower()
    return word[0].isupper() and lower not in STOPWORDS and lower not in _CALENDAR and lower not in _OPENERS


def _name_spans(words: list[tuple[int, int, str]], sentence: str, known: frozenset[str], heading: bool) -> list[_Span]:
    """Runs of capitalised words, joined by spaces or "of" ("Head of People"), broken by other
    punctuation; two adjacent acronyms stay apart ("AWS KMS"), "Modbus TCP" is one name. A
    name from a heading, or one capitalised word opening a line or sentence without
    evidence elsewhere in the chunk, is weak: kept only if the document or graph confirms it."""
    spans: list[_Span] = []
    run: list[tuple[int, int, str]] = []

    def close() -> None:
        if not run:
            return
        start, end = run[0][0], run[-1][1]
        if len(run) == 1 and is_acronym(run[0][2]):
            spans.append(_Span(start, end, run[0][2], "acronym", weak=heading))
        else:
            opening = len(run) == 1 and run[0][2] not in known and _opens(sentence, start)
            name = re.sub(r"['’]s$", "", sentence[start:end])
            spans.append(_Span(start, end, name, "name", weak=heading or opening))
        run.clear()

    for start, end, word in words:
        if not _is_name_word(word):
            if not (word == "of" and run):
                close()
            continue
        gap = sentence[run[-1][1] : start].strip() if run else ""
        if run and (gap not in ("", "of") or (is_acronym(run[-1][2]) and is_acronym(word))):
            close()
        run.append((start, end, word))
    close()
    return spans


def _opens(sentence: str, start: int) -> bool:
    """Whether a word at `start` opens the sentence or a line (after a bullet, number or label)."""
    line = sentence[: start].rsplit("\n", 1)[-1]
    return not re.search(r"[A-Za-z]", line) or line.rstrip().endswith(":")


def _phrase_spans(words: list[tuple[int, int, str]], sentence: str, name_ends: set[int]) -> list[_Span]:
    """Two or three adjacent lower-case content words: weak key-phrase candidates. A run right
    after a name that starts with a verb-like word ("Tidewater publishes readings") is the
    name's predicate, not a phrase."""
    spans: list[_Span] = []
    run: list[tuple[int, int, str]] = []

    def close() -> None:
        first = run[0] if run else None
        if first and first[2].endswith(("s", "ed")) and not first[2].endswith("ss") and (
            sentence[: first[0]].rstrip() and len(sentence[: first[0]]) - len(sentence[: first[0]].rstrip()) <= 1
            and len(sentence[: first[0]].rstrip()) in name_ends
        ):
            run.clear()
            return
        if 2 <= len(run) <= 3:
            start, end = run[0][0], run[-1][1]
            spans.append(_Span(start, end, sentence[start:end], "phrase", weak=True))
        run.clear()

    for start, end, word in words:
        adjacent = bool(run) and sentence[run[-1][1] : start] == " "
        content = word.islower() and word.isalpha() and len(word) > 2 and word not in _BREAKS and not word.endswith("ly")
        if not content:
            close()
            continue
        if run and not adjacent:
            close()
        run.append((start, end, word))
    close()
    return spans


def _definitions(sentence: str) -> list[tuple[str, str]]:
    """(acronym, expansion) pairs the sentence defines."""
    found: list[tuple[str, str]] = []
    for match in re.finditer(r"\(([^()]{2,80})\)", sentence):
        inside = match.group(1).strip()
        before = _WORD.findall(sentence[: match.start()])
        if is_acronym(inside):
            for size in range(2, len(inside.rstrip("s")) + 3):  # the shortest run that spells it
                if len(before) >= size and expands(inside, before[-size:]):
                    found.append((inside, " ".join(before[-size:])))
                    break
        elif before and is_acronym(before[-1]) and expands(before[-1], inside.split()):
            found.append((before[-1], inside))
    for match in _DEFINITION.finditer(sentence):
        acronym, rest = match.group(1), match.group(2).split()
        size = len(acronym)
        candidates = [rest[:n] for n in (size, size + 1, size + 2) if len(rest) >= n]
        for words in candidates:
            if expands(acronym, words):
                found.append((acronym, " ".join(words)))
                break
    return found


def _pairs(sentence: str, spans: list[_Span]) -> list[tuple[tuple[_Span, _Span], str]]:
    """Every ordered pair of the sentence's mentions with its label: the words between them
    when nothing but key-phrase candidates stands there, else RELATED."""
    pairs = []
    for i, a in enumerate(spans):
        for j in range(i + 1, len(spans)):
            b = spans[j]
            between_free = all(s.type == "phrase" for s in spans[i + 1 : j])
            label = _label(sentence[a.end : b.start]) if between_free else RELATED
            pairs.append(((a, b), label))
    return pairs


def _label(between: str) -> str:
    """The words joining two adjacent mentions, when they are a short phrase that says something."""
    words = [w.lower() for w in _WORD.findall(between)]
    if re.search(r"[;:()\[\]]", between) or not words or len(words) > MAX_LABEL_WORDS:
        return RELATED
    words = [w for w in words if w not in ("the", "a", "an", "its", "their", "our", "his", "her")]
    if not any(w not in STOPWORDS for w in words):
        return RELATED
    return " ".join(words)
