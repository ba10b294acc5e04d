"""What a question asks for, and how strongly a retrieved sentence gives it.

Embedding similarity picks sentences *about* the question's topic; a reference question wants the
sentence that *states* the answer: the one naming the asked flag or variable, giving the default
when the default is asked, holding a value when a number is asked, and inside the entry of the
asked term (its definition) rather than a passing mention elsewhere. These cues order the
candidate sentences; they never decide abstention, which stays on the plain relevance score, so
a question the documents do not answer is not made to look answerable by a stray "default".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..chunking import sentence_texts
from ..models import StoredChunk
from ..reranking import ENTRY_NOTE, LETTER_MARK, identifiers, signature_names
from .lexical import content_terms

_DEFAULT = re.compile(r"\bdefaults?\b|\bdefault value\b", re.IGNORECASE)
# What a sentence giving a default states: a number, a truth value, a quoted value, or "default is
# X" / "defaults to X" / "default: X". "The default cache size can be altered at compile time"
# mentions the default and gives none.
_STATED_VALUE = re.compile(
    r"\d|\b(?:true|false|yes|no|none|on|off|enabled|disabled)\b|[‘“'\"`]\S"
    r"|\bdefaults?\s*(?:is|was|to|:|=)\s+\S",
    re.IGNORECASE,
)
_WANTS_NAME = re.compile(
    r"\b(?:how (?:do|can|should) (?:i|you|we)|which|what (?:option|flag|command|setting|variable|parameter|switch|key))\b",
    re.IGNORECASE,
)
# "Which command...", "what configuration variable...": the answer is a name of that kind.
# Up to two qualifying words, joined by "and"/"or" ("Which date and time function..."), but not an
# auxiliary verb: "What does the --foo option do?" asks what the option does, not for a name.
_WANTS_KIND = re.compile(
    r"\b(?:which|what)\s+(?:(?!(?:do|does|did|is|are|was|were|can|should|would|will)\b)[\w-]+\s+(?:(?:and|or)\s+)?){0,2}"
    r"(command|option|macro|flag|switch|variable|setting|parameter|key|environment|function|method|alias)s?\b",
    re.IGNORECASE,
)
_WANTS_NUMBER = re.compile(r"\b(?:how (?:many|much|long|large|big)|what (?:port|number|size|limit|version))\b", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
_CALLED_KINDS = frozenset({"function", "method"})
_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\(\)")
# "In which file...", "What file does Massif write...": the answer is a file name.
_WANTS_FILE = re.compile(r"\b(?:which|what)\s+(?:[\w-]+\s+)?files?\b", re.IGNORECASE)
_FILE_NAME = re.compile(r"\b\w[\w-]+\.[a-z]{2,5}\b")  # texmf.cnf, massif.out; not "e.g."
_LOWER_NAME = re.compile(r"[a-z][a-z0-9]*")  # "ort", "timeout": a lower-case word names something; "Overview" does not
# An operator or escape a shell or template language defines, led by a symbol, with at most one
# lower-case placeholder after it: `%~`, `%d`, `>| word`, `<<< word`; not a quoted or bracketed title,
# nor an option with its argument (`-T hsize`: a signature, whose name is the option alone).
_OPERATOR = re.compile(r"[^\w\s'\"‘“(\[{-]\S*(?:\s[a-z]+)?")
_OPENING_QUOTES = frozenset("‘“'\"`")
_CLOSING_QUOTES = frozenset("’”'\"`")
_NEGATABLE = re.compile(r"--\[no-\]([\w-]+)")

_BACK_REFERENCE = re.compile(
    r"^(?:\w+\s+){0,2}(?:this|the above)\s+(?:command|option|macro|environment|function|method|parameter|variable|key|setting|flag)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"\\[A-Za-z@]+\*?|--?[A-Za-z][\w-]*|\b[A-Za-z_]\w*(?:[._]\w+)+|\b[a-z]+[A-Z]\w*")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_TABLE_RULE = re.compile(r"\|(?:\s*:?-{3,}:?\s*\|)+")
_SIGNATURE_MAX_CHARS = 160  # a signature line, not a paragraph of prose
_LIST_MAX_LINES = 5  # "...reads options from three places:" then one short line each
_CLOSING_PUNCTUATION = frozenset(".!?;\"'")  # a sentence that ends so introduces nothing set apart
# A sentence cut at a paragraph's end after "run," or "via," introduces the display below it, as ":" does.
_INTRODUCING = frozenset(":,")
_PROMPT = re.compile(r"^[$%#>] ")  # a shell prompt: the line is a command to type
# A sentence whose subject is a pronoun ("This tells Valgrind to...", "It automatically enables...",
# "They are available as part of the ttfutils package"): what it is about is the sentence before it.
# "This option..." names its kind (`referent`).
_PRONOUN_SUBJECT = re.compile(
    r"^(?:(?:This|That|It)(?:\s+[a-z]+ly)?\s+[a-z]+s"
    r"|(?:They|These|Those)(?:\s+[a-z]+ly)?\s+(?:are|were|have|can|may|must|should|will|[a-z]+[^s\W]))\b"
)
_SIGNATURE_LINES = 2  # the name, then its arguments
# A sentence that opens by defining a name: "‘-w 1’ denotes the font is for vertical writing",
# "`--sys` means system-wide", "fsType indicates the licensing rights".
_DEFINES = re.compile(
    r"^(?:[‘“'\"`]([^’”'\"`]{1,40})[’”'\"`]|(\S{2,40}))\s+"
    r"(?:denotes|means|stands for|refers to|specifies|indicates|is short for|is used to)\b"
)

# Bonuses on the 0..1 relevance scale: about the gap between a right and a near-miss sentence.
IDENTIFIER_BONUS = 0.10
ENTRY_BONUS = 0.08
DEFINITION_BONUS = 0.03
DEFAULT_BONUS = 0.08
NAME_BONUS = 0.05
NUMBER_BONUS = 0.04


@dataclass(frozen=True)
class Focus:
    """The cues of one question."""

    identifiers: tuple[str, ...]
    terms: frozenset[str]
    wants_default: bool
    wants_name: bool
    wants_number: bool
    kind: str | None
    """The kind of name the question asks for ("Which command..."), not just how to do something."""
    wants_file: bool
    """The question asks for a file ("In which file..."): its answer writes a file name."""

    @classmethod
    def of(cls, question: str) -> Focus:
        return cls(
            tuple(identifiers(question)), frozenset(content_terms(question)), bool(_DEFAULT.search(question)),
            bool(_WANTS_NAME.search(question)), bool(_WANTS_NUMBER.search(question)),
            kind.group(1).lower() if (kind := _WANTS_KIND.search(question)) else None, bool(_WANTS_FILE.search(question)),
        )

    @property
    def wants_kind(self) -> bool:
        return self.kind is not None


def entry_term(chunk: StoredChunk) -> str | None:
    """The term a chunk defines, when it is a reference entry: its last heading names an option,
    variable or API (`--force`, `core.autocrlf`, `max_connections (integer)`, `<refspec>`)."""
    if not chunk.heading_path:
        return None
    term = unquoted(chunk.heading_path[-1])
    return term if looks_like_term(term) else None


def unquoted(heading: str) -> str:
    """A heading without the quotes around all of it: Texinfo writes its option entries as
    `‘-T hsize,vsize’`, and the quotes are typography, not part of the name."""
    stripped = heading.strip()
    while len(stripped) > 2 and stripped[0] in _OPENING_QUOTES and stripped[-1] in _CLOSING_QUOTES:
        stripped = stripped[1:-1].strip()
    return stripped


def looks_like_term(heading: str) -> bool:
    """A heading made of names only: `-n, --dry-run`, `core.autocrlf`, `max_connections (integer)`,
    `<refspec>`, `json.dumps()`, `\\microtypesetup` (a TeX macro: PDF manuals' margin names), or an
    option signature (`--leak-check=<no|summary|yes|full> [default: summary]`); not a title such
    as "git-push(1) Manual Page" or "3.1. Settings"."""
    return _plain_term(heading) or bool(signature_names(heading))


def _plain_term(heading: str) -> bool:
    return all(_plain_name(part) for part in heading.split(","))


def _plain_name(part: str) -> bool:
    """One name of a term: an option, identifier or lower-case word; any single word marked as an
    entry by Texinfo's letter marks (`HISTSIZE <S>`); an operator or escape written in symbols,
    alone or with its one placeholder word (`%~`, `>| word`, `<<< word`)."""
    name = ENTRY_NOTE.sub("", part).strip()
    if not name:
        return False
    if _OPERATOR.fullmatch(name) or " " not in name and LETTER_MARK.search(part):
        return True
    return " " not in name and bool(
        name.startswith(("-", "<", "\\")) or name.endswith("()") or identifiers(name) or _LOWER_NAME.fullmatch(name)
    )


def term_names(term: str) -> str:
    """What an entry's `term` names, without an option signature's arguments and default:
    `--leak-check` for `--leak-check=<no|summary|yes|full> [default: summary]`, `-m, --message`
    for `-m <msg>, --message=<msg>`; a term of names only as it is."""
    return term if _plain_term(term) else ", ".join(signature_names(term)) or term


def asks_about(focus: Focus, term: str) -> bool:
    """Whether the question names `term` (one of its identifiers, or all of its words)."""
    lowered = term.lower()
    if any(ident in lowered for ident in focus.identifiers):
        return True
    words = content_terms(term)
    return bool(words) and words <= focus.terms


def bonus(focus: Focus, sentence: str, chunk: StoredChunk, first_in_chunk: bool) -> float:
    """How much more `sentence` (of `chunk`) states what the question asks than its relevance says."""
    term = entry_term(chunk)
    # An entry's sentences name its term implicitly, a table row its column names.
    lowered = f"{term or ''} {table_header(sentence, chunk.text) or ''} {sentence}".lower()
    total = 0.0
    if focus.identifiers:
        total += IDENTIFIER_BONUS * sum(ident in lowered for ident in focus.identifiers) / len(focus.identifiers)
    if term is not None and asks_about(focus, term_names(term)):
        total += ENTRY_BONUS + (DEFINITION_BONUS if first_in_chunk else 0.0)
    if focus.wants_default and _DEFAULT.search(sentence) and _STATED_VALUE.search(sentence):
        total += DEFAULT_BONUS
    if focus.wants_name and (new_names(focus, sentence) or term is not None):
        total += NAME_BONUS + (DEFINITION_BONUS if defines_name(focus, sentence) else 0.0)
    if focus.wants_number and _DIGIT.search(sentence):
        total += NUMBER_BONUS
    return total


@dataclass(frozen=True)
class Wanted:
    """A test for a sentence stating what the answer misses, and where to look for one."""

    test: Callable[[str], bool]
    anywhere: bool = False
    """Any retrieved chunk may give it (a name asked for), not only the chunk of the best sentence:
    a default or a number from another entry would be that entry's, not the asked one's."""

    def __call__(self, sentence: str) -> bool:
        return self.test(sentence)


def missing_value(focus: Focus, chosen: Sequence[str]) -> Wanted | None:
    """What the `chosen` sentences (as the answer states them) fail to state although the question
    asks it (the default, a number, a file name, the name of the command asked for), as a test for a sentence
    that states it; None when nothing asked is missing. "The window size used by git gc
    --aggressive" describes the setting; "This defaults to 250" answers. "Accented characters
    should inherit the settings from the base character" does not answer "Which command lets
    accented characters inherit...?"; "Using the command \\DeclareCharacterInheritance..." does."""
    if focus.wants_default and not any(_DEFAULT.search(text) for text in chosen):
        return Wanted(lambda text: bool(_DEFAULT.search(text)))
    if focus.wants_number and not any(_DIGIT.search(text) for text in chosen):
        return Wanted(lambda text: bool(_DIGIT.search(text)))
    if focus.wants_file and not any(_FILE_NAME.search(text) for text in chosen):
        return Wanted(lambda text: bool(_FILE_NAME.search(text)))
    if focus.wants_kind and not any(names_kind(focus, text) for text in chosen):
        return Wanted(lambda text: names_kind(focus, text), anywhere=True)
    return None


def names_kind(focus: Focus, sentence: str) -> bool:
    """Whether `sentence` writes a name of the kind the question asks for, beyond its own names: a
    function as it is called (`unixepoch()`; "1970-01-01" and "built-in" are no functions). Options
    and flags need no dash: a package option (`selected`) or a font flag (`fsType`) has none."""
    if focus.kind in _CALLED_KINDS:
        return any(name.lower() not in focus.identifiers for name in _CALL.findall(sentence))
    return bool(new_names(focus, sentence))


def defines_name(focus: Focus, sentence: str) -> bool:
    """Whether `sentence` opens by defining a name the question does not write: for "Which option
    declares vertical writing?", "‘-w 1’ denotes the font is for vertical writing" is the
    definition, "It automatically enables vertical features" a consequence."""
    match = _DEFINES.match(sentence)
    return match is not None and bool(new_names(focus, match.group(1) or match.group(2)))


def new_names(focus: Focus, sentence: str) -> list[str]:
    """The names `sentence` writes that the question does not: a sentence that repeats the asked
    "OpenType" or "sqlite3" names nothing the reader was looking for ("Which OpenType flag...?" is
    answered by the sentence naming fsType)."""
    return [name for name in identifiers(sentence) if name not in focus.identifiers]


def referent(sentence: str, text: str) -> str | None:
    """The name "this command" (option, macro, function...) in `sentence` refers to: the name set
    on its own just before it in `text`, as manuals print a signature line above its description
    (`\\SetProtrusion[options]{fonts}{settings}`, then "Using this command, you can..."). A
    signature of arguments only (`[〈options〉]{〈fonts〉}`) has its name on the line above it, where
    a PDF's margin note puts it."""
    if not _BACK_REFERENCE.match(sentence) or sentence not in text:
        return None
    before = [part for part in _PARAGRAPH_BREAK.split(text[: text.index(sentence)]) if part.strip()]
    for line in reversed(before[-_SIGNATURE_LINES:]):
        if len(line) > _SIGNATURE_MAX_CHARS:
            return None
        names = _NAME.findall(line)
        commands = [name for name in names if name.startswith("\\")]
        if commands or names:
            return (commands or names)[0]
    return None


def table_header(sentence: str, text: str) -> str | None:
    """The header row of the Markdown table `sentence` is a body row of, in `text` (None for prose):
    a row quoted alone ("| top_k | 10 |") says nothing without its column names."""
    if not (sentence.startswith("|") and sentence.endswith("|")):
        return None
    lines = text[: text.find(sentence)].splitlines() if sentence in text else []
    for index in range(len(lines) - 1, 0, -1):
        if _TABLE_RULE.fullmatch(lines[index].strip()):
            header = lines[index - 1].strip()
            return header if header != sentence and header.startswith("|") else None
        if not lines[index].strip().startswith("|"):
            return None
    return None


def stated(sentence: str, chunk: StoredChunk) -> str:
    """`sentence` as the answer states it: led by its entry's term when it does not name it, so
    "Usually, git push refuses..." from the --force-with-lease entry says which option it is about,
    and followed by the line it introduces ("...by saying:" then the command to type)."""
    header = table_header(sentence, chunk.text)
    if header is not None:
        return f"{header} {sentence}"
    term = entry_term(chunk) or referent(sentence, chunk.text)
    shown = f"{sentence} {display}" if (display := introduced(sentence, chunk.text)) else sentence
    if (before := antecedent(sentence, chunk.text)) is not None:
        shown = f"{before} {shown}"
    if term is None or term.lower() in sentence.lower() or sentence.startswith(term) or _names_option(sentence, term):
        return shown
    # "--[no-]single-branch" documents two options; the answer names both as they are typed.
    named = _NEGATABLE.sub(r"--\1 (--no-\1)", term)
    return f"{named}: {shown}"


def _names_option(sentence: str, term: str) -> bool:
    """`sentence` writes one of the options of the signature `term` whole (`--log-file` of
    `--log-file=<filename>`, not inside `--log-file-exactly`)."""
    return any(
        re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sentence, re.IGNORECASE) for name in signature_names(term)
    )


def introduced(sentence: str, text: str) -> str | None:
    """The short line, or short list of lines, `sentence` introduces, set apart below it in `text`:
    after a closing colon, an example command, a setting or the items counted (without it "you
    could disable expansion by saying:" or "Valgrind also reads options from three places:" says
    nothing); after an example's caption, which has no closing punctuation ("To restore a file in
    the index to match the version in HEAD"), the shell command it captions (`$ git restore
    --staged hello.c`); after a paragraph that ends in a comma ("To use the IPAex fonts, for example,
    run,"), the line set apart below it (`kanji-config-updmap --sys ipaex`). Lines of a list are
    joined by "; ". None when the sentence does not end so or what follows is prose (a line that
    continues the one above it in lower case)."""
    end = sentence.rstrip()[-1:]
    if end in _CLOSING_PUNCTUATION or sentence not in text:
        return None
    rest = text[text.index(sentence) + len(sentence) :]
    if end == "," and not _PARAGRAPH_BREAK.match(rest.lstrip(" \t")):  # a comma inside a paragraph introduces nothing
        return None
    following = _PARAGRAPH_BREAK.split(rest.lstrip(), maxsplit=1)[0].strip()
    lines = [line.strip() for line in following.splitlines() if line.strip()]
    if not lines or len(lines) > _LIST_MAX_LINES or any(len(line) > _SIGNATURE_MAX_CHARS for line in lines):
        return None
    if any(line[0].islower() for line in lines[1:]):  # a paragraph wrapped over lines, not a list
        return None
    if end not in _INTRODUCING and not all(_PROMPT.match(line) for line in lines):  # a caption introduces commands only
        return None
    return "; ".join(lines)


def antecedent(sentence: str, text: str) -> str | None:
    """The sentence before `sentence` in `text` when `sentence` opens with a pronoun as its subject:
    "This tells Valgrind to print out a suppression for each reported error" answers "how do I get
    a suppression printed?" only with the sentence before it, "...you can use the
    --gen-suppressions=yes option."; None otherwise, or when it opens its paragraph."""
    if not _PRONOUN_SUBJECT.match(sentence):
        return None
    sentences = sentence_texts(text)
    index = sentences.index(sentence) if sentence in sentences else 0
    if index == 0:
        return None
    before = sentences[index - 1]
    between = text[text.index(before) + len(before) : text.index(sentence)]
    return None if _PARAGRAPH_BREAK.search(between) else before
