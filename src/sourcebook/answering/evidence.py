"""Knowledge-base-level evidence that a question can be answered: does the knowledge base name what it asks about at all.

The other confidence features (confidence.py) see only the retrieved chunks. A question on
topic but outside the documents ("How do I enable microtype on Overleaf?" over the microtype
manual) retrieves chunks that share most of its words, and nothing in them says whether the one
word they lack is absent from every document or merely from these five. The keyword index
knows: `SearchStore.term_statistics` gives each question term's document frequency over the
whole tenant, analysed as keyword search analyses it (stopwords dropped, Porter stems).

    missing_name_rarity    the rarest thing the question names (an acronym, a capitalised word inside
                           a sentence, an inner-capital or letters-and-digits word) that the chunks the
                           answer cites do not write as a name: its document frequency as a rarity in
                           [0, 1] (`TermStatistics.rarity`), 1 when no chunk holds it at all; 0 when
                           every name is cited or the question names nothing
    absent_from_kb         1 when a word of the question (not an adverb in -ly) occurs in no chunk of
                           the knowledge base at all (`unheld_words`), else 0

Rarity rather than a count, because a question also names the subject of the whole knowledge
base ("Git" over the Git pages), which a cited option entry need not repeat: a name most chunks hold
says little by its absence from the citation, a name no chunk holds says the most. Measured
and not kept (bench/calibrate_answers.py --leave-one-out on the dev questions, README): the share
of the question's terms the knowledge base holds (it adds nothing beyond this, and penalises
paraphrase in a small knowledge base, where ordinary words are absent by chance), whether a
name is absent from the knowledge base, the share of names absent from the citation (both
subsumed), and the rarity of the question's terms the retrieved chunks lack.

Names are found by their shape, not by a list: a user names products, platforms and tools
with capitals ("Windows", "LFS", "Overleaf", "ConTeXt"), and a manual about something else
tends to use the same letters, if at all, as a plain word ("windows" of a pager, "context").
Requiring a name to be written with a capital in the cited chunks keeps that distinction,
which the lower-cased keyword index loses.

One piece of evidence is a rule rather than a feature, `unknown_setting`: a question that closes by
setting what it asks in something ("... with git daemon?", "... on macOS?", "... in Visual Studio
Code?", "... with git send-email?") whose words no chunk holds, or whose compound name no
retrieved chunk writes, while the knowledge base holds every other word of the question. The
rest of the question is then in the documents' own words, so retrieval finds on-topic chunks and
the fitted features read it as answerable; but the one thing the question is about is never
mentioned. Both conditions are needed: a word absent from a small knowledge base
is often paraphrase ("...pushed in the meantime?" over a two-page manual, where other words of
the question are absent too), and a word absent outside the closing phrase is often a passing
one ("a linked worktree on a removable drive", "is it dangerous to load..."), which held-out
questions over the Python docs showed. A setting names a thing in a few words (at most
`MAX_SETTING_WORDS`); a longer closing phrase is the question's own clause ("...for composite
accented glyphs triggers the obsolete endchar warning during CFF conversion?" over the dvipdfmx
manual, where "triggers" is absent and the question is answered), not what it is set in.

A second rule, `unknown_name`: the question names something (by its shape, as above: "Python",
"CUDA", "Windows", "LFS") that no retrieved chunk writes as a name and few chunks of the knowledge
base hold at all (rarity at least `UNKNOWN_NAME_RARITY`; none, for most). A manual that never
writes the product, platform or tool a question is about cannot answer it, however well the rest
of the question's words match; one that writes the word only in passing, and not in any chunk
retrieved for the question, does not answer it either ("window" in a profiler's manual for "on
Windows"). The fitted `missing_name_rarity` weighs this against the other features and lets such
answers through when retrieval looks good. On the dev questions of gitdoc, microtype and valgrind
and the 60 pydocs queries, a name no retrieved chunk writes occurs in 20 unanswerable questions and
no answerable one; with the rarity bound the rule holds for 19 of them. The bound keeps it off the
subject of the knowledge base ("Git", "LaTeX" in "...in LaTeX?" over a LaTeX package's manual),
which a retrieved chunk need not repeat. A name spelled with a capital inside it (ConTeXt, macOS)
is unknown below the bound too when a keyword search for it finds no chunk writing it: its word's
rarity counts the plain word ("context"), not the name. Unlike an identifier (the rule tried and
not kept in the README: "queue-like", "one-line"), a capitalised name is not ordinary prose.

A third rule, `unknown_words`: at least `UNKNOWN_WORDS` of the question's words occur in no chunk
of a knowledge base of at least `UNKNOWN_WORDS_MIN_CHUNKS` chunks ("file system *monitor*
*daemon*" over Git's manual pages, "*bibliography* with *biblatex*" over microtype's manual). One
absent word is often paraphrase ("removable *drive*", "is it *dangerous*", "passing them
*positionally*": answerable questions over gitdoc, valgrind and pydocs); two were in 7 of the 34
unanswerable dev questions of gitdoc, microtype and valgrind and in none of their 80 answerable
ones nor of the 60 pydocs queries. In a small knowledge base ordinary words are absent by chance
(a six-chunk page lacks "losing", "somebody" and "meantime" of a question it answers), so the rule
waits for a manual's vocabulary: 200 chunks is about a 40-page manual (microtype's 37 pages make 205).
`absent_from_kb` is the plain form of that evidence, for words of any shape: "hyperref",
"landscape", "offsets", "licence", "indentation" are lower-case words a user asks about that a
manual on something else never writes. One absent word is weaker evidence than a name (a reader's
paraphrase, "removable *drive*", "*triggers* the warning", is absent by chance too), so it is a
feature the fit weighs against how well retrieval went, not a rule; leave-one-set-out over the
five answers sets' dev splits (bench/calibrate_answers.py, README) it carried where the coverage
features did not. An adverb is not counted: Porter keeps "positionally" and "quickly" apart from
the "positional" and "quick" a document writes, and an adverb says how, not what is asked about.
Nor does a knowledge base of a few pages count (`UNHELD_MIN_CHUNKS`): ordinary words are absent
from it by chance (as above), and no set the fit learned from is that small, so the fitted weight
would read chance as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ..models import Answer, Hit, TermStatistics
from ..stopwords import STOPWORDS
from ..stores.bm25 import query_terms, query_words
from .lexical import chunk_text, cited_hits

_WORD = re.compile(r"\w+")
# Hyphens a PDF's text writes for "-" (U+2010 HYPHEN, U+2011 NON-BREAKING HYPHEN): "16‐bit" is "16-bit".
_HYPHENS = str.maketrans("\u2010\u2011", "--")
UNKNOWN_NAME_RARITY = 0.5
"""How rare a name's word must be for `unknown_name` (`TermStatistics.rarity`): 0.5 is a word held
by about 25 of 1,300 chunks or 17 of 600; the subject of the knowledge base is far below."""
UNHELD_MIN_CHUNKS = 50
"""The smallest knowledge base `unheld_words` reads (about 10 pages; the smallest the calibration was
fitted on, examples/docs, has 99 chunks)."""
UNKNOWN_WORDS = 2
"""How many of the question's words no chunk holds make `unknown_words` abstain."""
UNKNOWN_WORDS_MIN_CHUNKS = 200
"""The smallest knowledge base `unknown_words` reads: below it, absent words are chance."""
MAX_SETTING_WORDS = 5
"""The longest closing phrase `unknown_setting` reads as a setting: those of the dev questions it
caught have 1-3 words ("macOS", "Visual Studio Code", "Python's sqlite3 module")."""
# The end of a sentence: the next word is capitalised by grammar, not because it is a name.
_SENTENCE_END = re.compile(r"[.!?:]\s*$")
# The question's closing prepositional phrase, after its last "with", "on", "in", ... (not its
# first word: "In which file..." opens a question, it does not set it in anything).
_PREPOSITIONS = r"(?:with|using|in|on|for|via|from|under|inside)"
_SETTING = re.compile(
    rf"(?<=\S\s){_PREPOSITIONS}\s+((?:(?!\b{_PREPOSITIONS}\b)[^?.,;])+)[?.]?\s*$", re.IGNORECASE
)
# A compound name: words joined by "-", ".", "/", ":", "@" or "=" (send-email, core.autocrlf), or a flag.
_COMPOUND = re.compile(r"(?<![\w-])(?:--?\w[\w-]*|\w+(?:[-./:@=]\w+)+)")


def question_names(question: str) -> list[str]:
    """The words of `question` shaped like names, as written: all capitals (two letters or more),
    a capital after the first letter (GitHub, macOS), letters run into digits (utf8), or a
    capitalised word that does not open a sentence. Stopwords are never names ("IT", "US")."""
    names = []
    for match in _WORD.finditer(question):
        word = match.group()
        if word.lower() in STOPWORDS or not word[:1].isalpha():
            continue
        opens_sentence = not question[: match.start()].strip() or bool(_SENTENCE_END.search(question[: match.start()]))
        shaped = (
            (len(word) > 1 and word.isupper())
            or any(c.isupper() for c in word[1:])
            or (any(c.isdigit() for c in word) and any(c.isalpha() for c in word))
            or (word[0].isupper() and not opens_sentence)
        )
        if shaped:
            names.append(word)
    return list(dict.fromkeys(names))


def _written(name: str, texts: Iterable[str]) -> bool:
    """`name` occurs as a whole word in one of `texts`, with a capital somewhere if `name` has one.

    Not the exact case: PDF text writes TeX logos in small capitals ("pdfTEX" for pdfTeX) and a
    heading may be in capitals; but "context" or "windows" in lower case is a plain word, not
    the name ConTeXt or Windows. A name with a capital inside it (ConTeXt, GitHub, macOS) is
    not written by a word with a capital only at its start (the plain word opening a sentence or
    heading: "Context-sensitive setup") nor by the first part of a hyphenated word
    ("CONTEXT-SENSITIVE SETUP", a PDF's running header): its inner capital is what makes it a
    name (`written_as`)."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
    return any(written_as(name, match) for text in texts for match in pattern.finditer(text.translate(_HYPHENS)))


def written_as(name: str, match: re.Match[str]) -> bool:
    """Whether `match`, a case-blind occurrence of `name` in its text, writes it as the name
    (`_written`); confidence.quoted reads identifiers so too."""
    found = match.group()
    if name == name.lower():
        return True
    if found == found.lower():
        return False
    if not _spelled(name):
        return True
    compound = re.match(r"-\w", match.string[match.end():]) is not None
    return any(c.isupper() for c in found[1:]) and not compound


def missing_name_rarity(question: str, answer: Answer, stats: TermStatistics) -> float:
    """The `missing_name_rarity` of `answer` to `question`, from `stats` (the knowledge base's
    `term_statistics(question)`); an answer citing nothing lacks every name."""
    cited = [chunk_text(hit) for hit in cited_hits(answer)]
    uncited = [name for name in question_names(question) if not _written(name, cited)]
    return max((stats.rarity(term) for name in uncited for term in query_terms(name)), default=0.0)


def unknown_name(
    question: str, stats: TermStatistics, hits: Sequence[Hit], lookup: Callable[[str], Sequence[Hit]] | None = None
) -> tuple[str, ...]:
    """The names `question` writes (`question_names`) that none of `hits` (the chunks retrieved for
    it) writes as a name and whose rarest term is at least `UNKNOWN_NAME_RARITY` rare in the
    knowledge base; `stats` is its `term_statistics(question)`. () for an empty knowledge base.

    A name with a capital inside it (ConTeXt, GitHub, macOS: `_spelled`) is unknown however common
    its word, when none of the chunks `lookup(name)` finds (a keyword search for it) writes it
    either: the keyword index counts the plain word ("context" in "Context-sensitive setup" and
    "the current context", 15 of microtype's 205 chunks), not the name, so its rarity does not
    say whether the knowledge base ever names it. A subject the manual does write ("LaTeX" as
    "LATEX", "LuaTeX" as "LuaTEX") is found by that search."""
    if stats.chunks <= 0:
        return ()
    retrieved = [chunk_text(hit) for hit in hits]
    unwritten = [name for name in question_names(question) if not _written(name, retrieved)]
    return tuple(
        name for name in unwritten
        if max((stats.rarity(term) for term in query_terms(name)), default=0.0) >= UNKNOWN_NAME_RARITY
        or (lookup is not None and _spelled(name) and not _written(name, [chunk_text(hit) for hit in lookup(name)]))
    )


def _spelled(name: str) -> bool:
    """A name with a capital after its first letter that is not all capitals: ConTeXt, macOS, GitHub."""
    return any(c.isupper() for c in name[1:]) and not name.isupper()


def unknown_setting(question: str, stats: TermStatistics, hits: Sequence[Hit]) -> tuple[str, ...]:
    """What the phrase `question` closes with ("with git daemon", "with git send-email") names
    that the knowledge base does not: its terms no chunk holds, and its compound names (a command,
    option or file name: `send-email`, `--dry-run`, `postgresql.conf`) that no retrieved chunk
    writes whole; () when the knowledge base lacks any other term of the question, or when the
    question closes with no such phrase. `stats` is the knowledge base's
    `term_statistics(question)`; `hits` the chunks retrieved for it.

    A compound is looked for in the retrieved chunks, as the keyword index holds only its words
    (`send`, `email`): a chunk writing it would be retrieved for them."""
    match = _SETTING.search(question)
    counts = stats.frequencies
    if match is None or stats.chunks <= 0 or len(match.group(1).split()) > MAX_SETTING_WORDS:
        return ()
    setting = [term for term in query_terms(match.group(1)) if term in counts]
    if any(count == 0 for term, count in counts.items() if term not in setting):
        return ()
    retrieved = [chunk_text(hit) for hit in hits]
    unwritten = [name for name in _COMPOUND.findall(match.group(1)) if not _written(name.lower(), retrieved)]
    return (*(term for term in setting if counts[term] == 0), *unwritten)


def unheld_words(question: str, stats: TermStatistics) -> tuple[str, ...]:
    """The words of `question` (stopwords dropped) whose term no chunk of the knowledge base holds,
    adverbs in -ly aside; `stats` is the knowledge base's `term_statistics(question)`. () for a
    knowledge base of fewer than `UNHELD_MIN_CHUNKS` chunks."""
    if stats.chunks < UNHELD_MIN_CHUNKS:
        return ()
    absent = {term for term, count in stats.frequencies.items() if count == 0}
    return tuple(dict.fromkeys(
        word for word in query_words(question)
        if not (len(word) > 4 and word.endswith("ly")) and any(term in absent for term in query_terms(word))
    ))


def unknown_words(stats: TermStatistics) -> tuple[str, ...]:
    """The question's terms no chunk of the knowledge base holds, when there are at least
    `UNKNOWN_WORDS` of them and the knowledge base has at least `UNKNOWN_WORDS_MIN_CHUNKS` chunks;
    else (). `stats` is the knowledge base's `term_statistics(question)`."""
    absent = tuple(term for term, count in stats.frequencies.items() if count == 0)
    return absent if len(absent) >= UNKNOWN_WORDS and stats.chunks >= UNKNOWN_WORDS_MIN_CHUNKS else ()
