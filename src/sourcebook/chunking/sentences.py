"""Rule-based sentence splitting, tuned for prose and scientific abstracts.

pysbd handles more edge cases but is far too slow for ingestion throughput, so this is
a small tested rule set instead. Only whitespace can separate two sentences, which keeps
decimals (3.14), versions (v1.2.3), URLs, e-mail addresses and file names whole for
free; each whitespace gap that follows terminal punctuation or holds a newline is then
judged by the rules below.

A gap ends a sentence when
- it holds a blank line (a paragraph break);
- a newline in it opens a list item, a heading or a table row;
- it follows `.`, `!`, `?` or an ellipsis (runs such as `?!` and closing quotes or
  brackets included) and the next character is an uppercase letter, a digit or an
  opening quote/bracket, unless the word before is an abbreviation that is always
  followed by more of the sentence (e.g., Dr., Fig., et al., U.S.), or a single initial
  followed by what looks like the rest of a name ("J. Smith", "S. Typhi"; but not
  "vitamin D. This" or "degrees C. RNA");
- it holds a newline and the line does not visibly continue on the next one.

"etc." is deliberately not in the abbreviation list: before a capitalised word it
almost always ends the sentence ("apples, pears, etc. They ...").
"""

from __future__ import annotations

import re

Span = tuple[int, int]

_CLOSERS = "\"'”’»)]}"
_OPENERS = "\"'“‘«([{¿¡"
_TERMINALS = ".!?…"

# Whitespace after terminal punctuation (with trailing closers), or any newline run.
_CANDIDATE = re.compile(r"[.!?…]+[\"'”’»)\]}]*(\s+)|(\s*\n\s*)")
_NON_SPACE = re.compile(r"\S")
_INITIALISM = re.compile(r"(?:[^\W\d_]\.){2,}\Z")  # U.S.  e.g.  a.m.
_INITIAL = re.compile(r"[^\W\d_]\.\Z")  # J.  S. (Typhi)  p.
_NEW_LINE_ITEM = re.compile(r"(?:[-*+•◦▪‣]|\d{1,3}[.)]|\(?[a-zA-Z\d]{1,3}\)|#{1,6})\s|\|")

# Abbreviations that are followed by the rest of their sentence (compared lowercased):
# Latin, titles, references to figures and the like, and the journal names of
# scientific citations ("Proc. Natl. Acad. Sci.", "J. Mol. Biol."). Words that also
# end sentences in their own right ("cell.", "min.", "am.") are left out.
_ABBREVIATIONS = frozenset(
    "e.g. i.e. vs. cf. viz. al. approx. ca. dr. mr. mrs. ms. prof. st. fig. figs. "
    "eq. eqs. ref. refs. vol. ch. sec. tab. suppl. pp. resp. incl. dept. univ. "
    "proc. natl. acad. sci. biol. chem. mol. nat. med. br. res. clin. soc. int. rev. "
    "lett. phys. eur. ann. immunol. genet. physiol. biochem. pharmacol. neurosci. "
    "endocrinol. epidemiol. oncol. surg. pathol. microbiol. exp.".split()
)
# Abbreviations that only count as such before a number ("No. 5" but "said No. Then").
_NUMBER_ABBREVIATIONS = frozenset({"no.", "nos."})
# Words that open a sentence far more often than they follow an initial, so that
# "vitamin D. This" splits while "J. Smith" and "S. Typhi" do not.
_SENTENCE_STARTERS = frozenset(
    "The This These That Those There Here It Its We Our They Their He She In On At "
    "For From To With By As Of After Before Among Although Because Both Despite "
    "During Finally Furthermore However Moreover Overall Since Such Taken Therefore "
    "Thus Together Using When Where While Whereas An All No Not Only".split()
)
# Line endings that announce that the sentence goes on after the newline.
_CONTINUATION_ENDINGS = ",;-–—(/&+=" + "“‘«"
_FUNCTION_WORDS = frozenset(
    "a an the of and or nor but to in on at by for with from as into than that "
    "which who whose is are was were be been".split()
)


def split_sentences(text: str) -> list[Span]:
    """(start, end) spans of the sentences of `text`, trimmed of whitespace.

    The spans are in order, do not overlap and together cover every non-whitespace
    character of `text`.
    """
    spans: list[Span] = []
    if (first := _NON_SPACE.search(text)) is None:
        return spans
    start = first.start()
    for match in _CANDIDATE.finditer(text):
        gap_start, gap_end = match.span(1) if match.group(1) else match.span(2)
        if gap_end >= len(text) or gap_start <= start:
            continue
        if _is_boundary(text, gap_start, gap_end):
            spans.append((start, gap_start))
            start = gap_end
    spans.append((start, len(text.rstrip())))
    return spans


def sentence_texts(text: str) -> list[str]:
    """The sentences of `text` as strings (see `split_sentences`)."""
    return [text[start:end] for start, end in split_sentences(text)]


def _is_boundary(text: str, gap_start: int, gap_end: int) -> bool:
    """Whether the whitespace text[gap_start:gap_end] separates two sentences."""
    gap = text[gap_start:gap_end]
    newlines = gap.count("\n")
    if newlines >= 2:
        return True
    word = text[max(0, gap_start - 64) : gap_start].rsplit(None, 1)[-1]
    following = text[gap_end : gap_end + 64]
    if newlines and _NEW_LINE_ITEM.match(following):
        return True
    if _ends_sentence(word, following):
        return True
    return bool(newlines) and not _continues(word, following)


def _ends_sentence(word: str, following: str) -> bool:
    """Terminal punctuation before a sentence-like start, not after an abbreviation."""
    core = word.rstrip(_CLOSERS)
    if not core or core[-1] not in _TERMINALS:
        return False
    first = following[0]
    if not (first.isupper() or first.isdigit() or first in _OPENERS):
        return False
    return core[-1] != "." or core.endswith("..") or not _is_abbreviation(core, following)


def _is_abbreviation(core: str, following: str) -> bool:
    """Whether `core` (a word ending in ".") is an abbreviation inside a sentence."""
    bare = core.lstrip(_OPENERS)
    lowered = bare.lower()
    if lowered in _ABBREVIATIONS or _INITIALISM.match(lowered):
        return True
    if _INITIAL.match(bare):  # "p. 12", "n. 3" always go on; "J." or "D." may end
        return bare[0].islower() or _continues_initial(following.split(maxsplit=1)[0])
    return lowered in _NUMBER_ABBREVIATIONS and following[0].isdigit()


def _continues_initial(word: str) -> bool:
    """Whether `word`, after a single initial, reads as the rest of a name ("J. Smith",
    "R. A. Fisher", "S. Typhi") rather than a new sentence ("C. RNA", "D. This")."""
    if _INITIAL.match(word):
        return True
    looks_like_name = len(word) > 1 and word[0].isupper() and word[1].islower()
    return looks_like_name and word not in _SENTENCE_STARTERS


def _continues(word: str, following: str) -> bool:
    """Whether a line ending in `word` visibly runs on into the line `following`."""
    first = following[0]
    if first.islower() or first in ",;:)]}":
        return True
    if word[-1] in _CONTINUATION_ENDINGS or word.lower() in _FUNCTION_WORDS:
        return True
    return word[-1] == "." and _is_abbreviation(word.rstrip(_CLOSERS), following)
