"""Aligned support: a claim's words must be supported by the source sentence it restates, in place.

The checks of consistency.py look for a claim's words anywhere in the source, so a claim that
moves a word of the source to another slot passes them: `--track` for `--force` in "-D is short
for --delete --track" (the source names --track a sentence earlier), list items swapped ("listed
with git stash show and inspected with git stash list"), or one plain word replaced while the
frame around it stays ("a linear search" for "a binary search", "git worktree prune" for
"remove"). This module aligns the claim with the source's closest window (one sentence or two
adjacent ones, the longest common subsequence of content words) and looks at each gap between
aligned words where the claim has exactly one word and the source another:

- an identifier of the claim (option, dotted key, name with digits...) that the window lacks, or
  another value right after the same option, in the same sentence, when the option has none of
  its own ("-t rsa" for "-t ed25519"; "--leak-check=full automatically" is no such value);
- the two words swapped: each also appears on the other side (the claim has the source's word
  elsewhere and the source the claim's);
- a negative prefix: "aware" for "unaware", "unsigned" for "signed";
- (anywhere in the claim) a name one letter off a source word's end: "pip" for "pipx";
- a plain substitution in the same frame, the claim's word being nowhere in the source: the same
  function words before it (at least one: "employees get 27 days" / "receive 27 days" is a verb)
  and the next aligned word right after it, as a modifier ("the home directory" / "the working
  directory"), or the same words before it at the end of both sentences
  ("the client program starts" / "finishes").

A true paraphrase rewords more than one word at a time, so its gaps rarely keep the frame; the
price is a one-word synonym of a modifier in an unchanged frame, which these checks reject
(bench/citation_checker.py measures both sides). Not judged: gaps at the start of the claim
("Running git stash" / "Calling git stash"), numbers (consistency.py checks them), two vague
quantities ("several" / "multiple"), a last word against a word the source goes on from ("good
  disk space use." / "good disk space utilization and performance"), spelling variants ("behaviour"), and swaps across a passive
("the rerere.enabled variable is set" / "set the variable rerere.enabled").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..chunking import sentence_texts
from ..stopwords import STOPWORDS
from .lexical import stem_words

_TOKEN = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:=[^\s,;)]*)?|[\w'’]+(?:[./-][\w'’]+)*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve twenty hundred thousand "
    "first second third fourth fifth sixth seventh eighth ninth tenth".split())
_VAGUE_QUANTITIES = frozenset("several multiple many various numerous".split())
_NEGATIVE_PREFIXES = ("un", "in", "non", "dis")
_PASSIVE = frozenset("by is are was were be been being".split())


@dataclass(frozen=True)
class _Token:
    raw: str
    lower: str
    key: str
    """What aligns: the stem of a prose word, the exact spelling of an option (-x is not -X)."""
    content: bool
    last: bool
    """Followed by the end of a sentence (or of the text)."""


def _key(raw: str) -> str:
    if raw.startswith("-"):
        return raw
    stems = stem_words(raw.lower())
    stem = "-".join(stems) if stems else raw.lower()
    return stem[:-1] if len(stem) > 4 and stem.endswith("e") else stem


def tokens(text: str) -> list[_Token]:
    """The words of `text` in order; stopwords are kept (they make a gap's frame) but never align."""
    out = []
    for match in _TOKEN.finditer(text):
        raw = match.group().rstrip(".")
        last = re.match(r"[\s\"')\]]*(?:[.;!?]|$)", text[match.start() + len(raw):]) is not None
        if raw:
            out.append(_Token(raw, raw.lower(), _key(raw), raw.lower() not in STOPWORDS, last))
    return out


def is_identifier(raw: str) -> bool:
    """Code rather than prose: an option, a dotted key or path, snake_case, camelCase, ACRONYM, word+digits."""
    if re.fullmatch(r"[a-z]+/[a-z]+", raw):  # and/or, read/write
        return False
    return bool(
        re.fullmatch(r"--?[A-Za-z][\w-]*(?:=\S*)?", raw)
        or re.search(r"\w[._/]\w|^[~/]\w|_|[a-z][A-Z]", raw)
        or re.fullmatch(r"[A-Z][A-Z0-9]+", raw)
        or (re.search(r"[A-Za-z]", raw) and re.search(r"\d", raw) and not _NUMBER.fullmatch(raw))
    )


def _lcs(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of `a` and `b`."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _windows(source: str) -> list[str]:
    sentences = sentence_texts(source) or [source]
    return sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:])]


def _content(words: list[_Token]) -> list[int]:
    return [i for i, t in enumerate(words) if t.content]


def aligned_window(claim: str, source: str) -> str:
    """The source sentence, or pair of adjacent ones, sharing the longest ordered run of content
    words with the claim (the shorter one on a tie): the passage the claim restates."""
    keys = [t.key for t in tokens(claim) if t.content]
    return max(_windows(source), key=lambda w: (len(_lcs(keys, [t.key for t in tokens(w) if t.content])), -len(w)))


def misaligned(claim: str, source: str) -> str | None:
    """Why the claim, aligned with its closest source window, puts other words in its slots (see
    the module docstring), or None."""
    window = aligned_window(claim, source)
    said, near = tokens(claim), tokens(window)
    said_at, near_at = _content(said), _content(near)
    pairs = _lcs([said[i].key for i in said_at], [near[j].key for j in near_at])
    source_keys = {t.key for t in tokens(source)} | {t.lower for t in tokens(source)}
    bounds = [(-1, -1), *pairs, (len(said_at), len(near_at))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        if i0 < 0 or i1 - i0 != 2 or j1 - j0 < 2 or (j1 - j0 != 2 and i1 < len(said_at)):
            continue
        x, y = said_at[i0 + 1], near_at[j0 + 1]
        reason = _substituted(said, near, (said_at[i0], x, said_at[i1] if i1 < len(said_at) else None),
                              (near_at[j0], y, near_at[j1] if j1 < len(near_at) else None), source_keys)
        if reason:
            return reason
    return _near_miss(said, tokens(source), source_keys)


def _near_miss(said: list[_Token], source: list[_Token], source_keys: set[str]) -> str | None:
    """A short name of the claim that the source spells with one more letter at its end, or one
    fewer: "pip" for "pipx", "gitk" for "git" are other programs (an inflection is no such letter)."""
    for word in said:
        if not word.content or word.key in source_keys or word.lower in source_keys:
            continue
        for other in source:
            short, long = sorted((word.lower, other.lower), key=len)
            if len(short) >= 3 and long[:-1] == short and long[-1].isalpha() and long[-1] not in "sdeyr":
                return f"near-miss name: {word.raw} for {other.raw}"
    return None


def _substituted(said: list[_Token], near: list[_Token], claim_slot: tuple[int, int, int | None],
                 source_slot: tuple[int, int, int | None], source_keys: set[str]) -> str | None:
    """Why the claim's word in a one-word gap (anchor before, word, anchor after or None at the
    claim's end) is not the source's, or None."""
    (left, x, right), (near_left, y, near_right) = claim_slot, source_slot
    word, other = said[x], near[y]
    if word.key == other.key or _is_number(word) or _is_number(other):
        return None
    if is_identifier(word.raw) and word.key not in {t.key for t in near}:
        return f"identifier in another's place: {word.raw} for {other.raw}"
    option = said[left].raw
    if option.startswith("-") and "=" not in option and x == left + 1 and y == near_left + 1 and not near[near_left].last:
        return f"another value of {said[left].raw}: {word.raw} for {other.raw}"
    passive = _PASSIVE & {t.lower for t in [*said[left + 1:x], *near[near_left + 1:y]]}
    if word.key in {t.key for t in near} and other.key in {t.key for t in said} and not passive:
        return f"swapped: {word.raw} and {other.raw}"
    if _negative_prefix(word.lower, other.lower) and not _negated(said[left + 1:x]):
        return f"negative prefix: {word.raw} for {other.raw}"
    same_left = [t.lower for t in said[left + 1:x]] == [t.lower for t in near[near_left + 1:y]]
    modifier = (right is None and other.last) or (right == x + 1 and near_right == y + 1 and x > left + 1)
    vague = word.lower in _VAGUE_QUANTITIES and other.lower in _VAGUE_QUANTITIES
    absent = word.key not in source_keys and word.lower not in source_keys
    if same_left and modifier and absent and not vague and not _spelling_variant(word.lower, other.lower):
        return f"substituted: {word.raw} for {other.raw}"
    return None


def _spelling_variant(a: str, b: str) -> bool:
    """"behaviour" and "behavior": one letter more or less in a word of five letters or more."""
    short, long = sorted((a, b), key=len)
    return len(short) >= 5 and len(long) == len(short) + 1 and any(
        long[:i] + long[i + 1:] == short for i in range(len(long)))


def _is_number(token: _Token) -> bool:
    return bool(_NUMBER.fullmatch(token.raw)) or token.lower in _NUMBER_WORDS


def _negative_prefix(a: str, b: str) -> bool:
    return any(a == p + b or b == p + a for p in _NEGATIVE_PREFIXES)


def _negated(words: list[_Token]) -> bool:
    return any(t.lower in {"not", "no", "never"} or t.lower.endswith("n't") for t in words)

