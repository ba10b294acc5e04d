"""Whether a claim that shares its source's words still says what the source says.

An LLM turns a true sentence false while keeping almost all of its words: it changes a
number or its unit, an option or a name, drops in a "not" or an antonym, or makes a hedged
statement absolute. Word overlap and embeddings barely move for such a claim (the
embedding of "stops working" is close to that of "keeps working"), so the citation check
caps its support when one of these checks finds a difference:

- numbers: every number the claim states is in the source (digits or number words), and a
  unit after it ("2 days") is a word of the source;
- identifiers and names: options (-x, --prune), dotted keys and paths (gc.pruneExpire,
  /usr/bin/python), code-like words (GIT_EDITOR, python3, macOS, TCP), `code spans`,
  capitalised names and hyphenated words none of whose parts the source uses (gnome-keyring)
  are in the source, options with their case (git's -x and -X differ);
- negation, by scope rather than by sentence: a negated phrase of the claim (the content
  words after "not", "never", "without", "refuses to"...) must be negated in the source
  when the source speaks of it, and a phrase the source's nearest sentences negate must not
  be stated plainly by the claim (a one-word phrase only from the closest sentence); a
  negation elsewhere in a sentence ("if the size isn't known") says nothing about the claim,
  "unless" or "only" may restate a negation, "fails if X" negates X, and "unaware of" answers
  "does not know"; "not ... just X" is contradicted only by a claim that says "just X";
- antonyms: the claim does not use a word whose opposite (ANTONYMS, a small lexicon of
  documentation verbs and adjectives) the nearest sentences use, unless one side negates it;
- strength: a universal quantifier (all, every, always), a necessity (must, required) or an
  exclusive "only" in the claim appears in the nearest sentences in some form, about the same
  things ("Some people find vi difficult" does not support "Everyone finds vi difficult");
- word order: two terms the claim links by the same words as the source, in the other order;
- aligned support (alignment.py): aligned word for word with the source sentence it restates,
  the claim puts no other word in one of that sentence's slots.

WordNet would give more antonyms but is a 30 MB data package for a few dozen pairs that
matter in documentation; the lexicon is listed here and can grow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import accumulate

from ..stopwords import STOPWORDS
from .alignment import aligned_window, is_identifier, misaligned
from .lexical import stem_words

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())} | {
    "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100", "thousand": "1000"} | {
    w: str(i) for i, w in enumerate("third fourth fifth sixth seventh eighth ninth tenth".split(), 3)}
# ("first" and "second" are left out: "first telling it", "30 seconds".)
# "one" reads as an article as often as a number ("one gateway handles 250 sensors"): a claim's
# "one" is not checked, a source's still matches a claimed 1.
_LOOSE_NUMBER_WORDS = frozenset({"zero", "one"})
_UNITS = frozenset(
    "ms millisecond second sec minute min hour hr day week month year byte kb mb gb tb kib mib gib tib bit "
    "percent character char line row column page".split())
_CURRENCY_CODES = {"£": "GBP", "$": "USD", "€": "EUR", "¥": "JPY"}
_AMOUNT = re.compile(r"([£$€¥]|\b(?:USD|EUR|GBP|JPY|CHF|CAD|AUD)\b)\s?(\d+(?:[.,]\d+)*)", re.IGNORECASE)
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:=\S*)?")
_RATE = frozenset("per a an each every".split())
_WORD = re.compile(r"[\w'’]+(?:[./-][\w'’]+)*|[,;:.!?()]")
_BOUNDARY = frozenset(",;:.!?()") | frozenset("but since because unless although though while whereas which so if".split())
_NEGATION_CUES = frozenset(
    "not no never none neither nor cannot without refuse refuses refused fail fails failed unable lack lacks".split())
# "unless" (if not) and "only"/"except" restate a negation ("only exports marked directories" for
# "refuses to export unmarked ones") without being one: they answer a negation, never demand one.
_CONDITIONAL_CUES = frozenset({"unless", "only", "except"})
# "fails if the tag exists": the tag must not exist.
_CONDITION_FAILURES = frozenset("fail fails failed refuse refuses refused".split())
# Words that begin with "un" without negating what follows.
_UN_WORDS = ("unless", "until", "under", "unit", "union", "uniq", "univers", "unix", "unicode", "uniform", "unif")
_ELLIPTICAL_CUES = frozenset({"not", "isn't", "aren't", "doesn't", "don't"})
# "Not just X" says X and more: no negation of X.
_EXCLUSIVE = frozenset("only just solely merely alone".split())
# Adverbs inside a negation that carry nothing of what is negated ("must not yet exist").
_SCOPE_FILLER = frozenset("yet just also even still already ever longer necessarily".split())
_SENTENCE_END = frozenset(".;!?")
_SCOPE_TERMS = 3
_CONTEXT = 5
_SWAP_SPAN = 7
_PASSIVE = frozenset("by is are was were be been being".split())
_NAME = re.compile(r"\b[A-Z][\w-]*[a-z0-9][\w-]*")
_STRIP = "\"'`()[]{},;:!?<>*"

# Opposites that documentation states and a generator swaps. Each pair is matched in any of
# its words' forms (FORMS adds irregular ones).
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("increase", "decrease"), ("increase", "reduce"), ("raise", "lower"), ("grow", "shrink"), ("more", "less"),
    ("more", "fewer"), ("larger", "smaller"), ("bigger", "smaller"), ("higher", "lower"), ("longer", "shorter"),
    ("least", "most"), ("faster", "slower"), ("fast", "slow"), ("quickly", "slowly"), ("earlier", "later"),
    ("first", "last"),
    ("start", "stop"), ("keep", "stop"), ("keep", "discard"), ("keep", "lose"), ("keep", "delete"), ("keep", "strip"),
    ("enable", "disable"), ("allow", "deny"), ("allow", "forbid"), ("allow", "prevent"), ("accept", "reject"),
    ("include", "exclude"), ("add", "remove"), ("create", "delete"), ("create", "destroy"), ("open", "close"),
    ("lock", "unlock"), ("show", "hide"), ("remember", "forget"), ("use", "ignore"), ("permanent", "temporary"),
    ("permanently", "temporarily"), ("persistent", "temporary"), ("public", "private"), ("local", "remote"),
    ("internal", "external"), ("read", "write"), ("upload", "download"), ("push", "pull"), ("import", "export"),
    ("encrypt", "decrypt"), ("compress", "decompress"), ("succeed", "fail"), ("success", "failure"),
    ("valid", "invalid"), ("true", "false"), ("required", "optional"), ("mandatory", "optional"),
    ("minimum", "maximum"), ("upper", "lower"), ("above", "below"), ("inside", "outside"), ("online", "offline"),
    ("synchronous", "asynchronous"), ("absolute", "relative"), ("explicit", "implicit"), ("explicitly", "implicitly"),
    ("automatic", "manual"), ("automatically", "manually"), ("safe", "unsafe"), ("secure", "insecure"),
    ("easy", "difficult"), ("easy", "hard"), ("simple", "complex"), ("supported", "unsupported"),
    ("visible", "hidden"), ("same", "different"), ("attach", "detach"), ("mount", "unmount"),
    ("install", "uninstall"), ("upgrade", "downgrade"), ("ascending", "descending"), ("continue", "abort"),
    ("before", "after"), ("old", "new"), ("older", "newer"), ("oldest", "newest"), ("latest", "earliest"),
)
FORMS: dict[str, tuple[str, ...]] = {
    "forget": ("forgot", "forgotten"), "lose": ("lost",), "hide": ("hid", "hidden"), "write": ("wrote", "written"),
    "grow": ("grew", "grown"), "shrink": ("shrank", "shrunk"), "keep": ("kept",), "begin": ("began", "begun"),
    "strip": ("stripped", "stripping"),
}
# A claim word of each kind, and the source words that license it: "each" and "per" license
# "every" (a paraphrase of "27 days per year" says "each year"), "need" licenses "must".
_STRENGTH: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "universal": (frozenset("all every everyone everybody everything always".split()),
                  frozenset("each per any whenever".split())),
    "necessity": (frozenset("must required require requires mandatory necessary".split()),
                  frozenset("need needs needed unless only".split())),
    "exclusive": (frozenset("only solely exclusively".split()),
                  frozenset("specifically just alone sole unless except need needs must required requires".split())),
}


def contradiction(claim: str, source: str, sentence: str, span: str, heading: str = "") -> str | None:
    """Why the claim says something other than `source` while sharing its words, or None.

    `sentence` is the source's sentence closest to the claim and `span` its closest one or two
    sentences: negation, antonyms and strength are compared with both, word order with the
    sentence alone, numbers and names with the whole source and its `heading` (the title and
    section a reader of the citation sees: "cherry-pick" names git-cherry-pick(1)). The source
    window the claim aligns with word for word joins the nearest sentences: the embedding's
    closest sentence may be another one about the same things.
    """
    nearest = f"{span} {sentence} {aligned_window(claim, source)}"
    checks = (
        _listed(_numbers(claim, claimed=True) - _numbers(source, claimed=False), "number not in the source"),
        _listed(_unitless(claim, source), "unit not in the source"),
        _listed(_other_currency(claim, source), "amount the source gives in another currency"),
        _listed(_displaced_numbers(claim, source), "number the source says of something else"),
        _listed(_identifiers(claim, f"{heading} {source}"), "identifier not in the source"),
        _negation(claim, source, sentence, nearest),
        _antonym(claim, source, nearest),
        _strength(claim, nearest),
        _swapped(claim, sentence),
        misaligned(claim, source),
    )
    return next((reason for reason in checks if reason), None)


def _listed(found: Iterable[str], label: str) -> str | None:
    words = sorted(found)
    return f"{label}: {', '.join(words)}" if words else None


def _numbers(text: str, *, claimed: bool) -> set[str]:
    """Digits, and number words as digits; a claim's "one" is left out (see _LOOSE_NUMBER_WORDS)."""
    found = {m.group().replace(",", "") for m in _NUMBER.finditer(text)}
    for word in _tokens(text):
        if word in _NUMBER_WORDS and not (claimed and word in _LOOSE_NUMBER_WORDS):
            found.add(_NUMBER_WORDS[word])
    return found


def _number_contexts(text: str) -> dict[str, list[set[str]]]:
    """Each number of `text` (as digits), with the content stems around each of its occurrences."""
    words = re.findall(r"\d+(?:[.,:]\d+)*|[^\W\d_][\w'’-]*", text)
    keys = [w.replace(",", "") if w[0].isdigit() else _NUMBER_WORDS.get(w.lower()) for w in words]
    content = [k or (None if w.lower() in STOPWORDS else _terms(w)[0] if _terms(w) else None) for w, k in zip(words, keys)]
    contexts: dict[str, list[set[str]]] = {}
    for i, key in enumerate(keys):
        if key is not None and words[i].lower() not in _LOOSE_NUMBER_WORDS:
            around = content[max(0, i - _CONTEXT):i] + content[i + 1:i + 1 + _CONTEXT]
            contexts.setdefault(key, []).append({c for c in around if c})
    return contexts


def _displaced_numbers(claim: str, source: str) -> set[str]:
    """Numbers the source states, but never near any word the claim puts around them
    ("up to £250 per night" for London, when £250 is the source's figure for a week on call)."""
    in_source = _number_contexts(source)
    return {
        number for number, contexts in _number_contexts(claim).items() if number in in_source
        for around in contexts if around and not any(around & other for other in in_source[number])
    }


def _amounts(text: str) -> set[tuple[str, str]]:
    """(currency, number) for each amount of money in `text`: "£250" and "GBP 250" are ("GBP", "250")."""
    return {(_CURRENCY_CODES.get(m.group(1), m.group(1).upper()), m.group(2).replace(",", ""))
            for m in _AMOUNT.finditer(text)}


def _other_currency(claim: str, source: str) -> set[str]:
    """Amounts of the claim whose number the source gives only in another currency."""
    in_source = _amounts(source)
    numbers = {number for _, number in in_source}
    return {f"{currency} {number}" for currency, number in _amounts(claim) - in_source if number in numbers}


def _unitless(claim: str, source: str) -> set[str]:
    """Units after the claim's numbers ("2 days", "32 clients per second") that the source never names."""
    words = _tokens(claim)
    source_words = {_singular(w) for w in _tokens(source)}
    units = set()
    for i, word in enumerate(words):
        if _NUMBER.fullmatch(word) or word in _NUMBER_WORDS:
            after = words[i + 1:i + 4]
            candidates = after[:1] + [b for a, b in zip(after, after[1:]) if a in _RATE]
            units |= {c for c in candidates if _singular(c) in _UNITS and _singular(c) not in source_words}
    return units


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _identifiers(claim: str, source: str) -> set[str]:
    """The claim's identifiers and names that the source lacks (see the module docstring)."""
    source_tokens = {_strip(t) for t in source.split()}
    words = [w.lower() for w in re.findall(r"[\w'-]+", source)]
    # A hyphenated name lends its parts: "git-cherry-pick" names "cherry-picking".
    lower_tokens = {t.lower() for t in source_tokens} | set(words) | {p for w in words for p in w.split("-")}
    missing = set()
    for raw in claim.split():
        token = _strip(raw)
        if re.fullmatch(r"-[A-Za-z]", token):
            if token not in source_tokens:
                missing.add(token)
        elif is_identifier(token) and token.lower() not in lower_tokens:
            missing.add(token)
        elif "-" in token.strip("-") and token.lower() not in lower_tokens and not any(
            part in lower_tokens for part in token.lower().split("-") if len(part) > 2
        ):
            missing.add(token)  # gnome-keyring; a paraphrase's "read-only" shares a word with "only read"
    squashed = " ".join(source.replace("`", "").split())
    missing |= {f"`{code}`" for code in re.findall(r"`([^`]+)`", claim) if " ".join(code.split()) not in squashed}
    first = _NAME.match(claim)
    names = {m.group() for m in _NAME.finditer(claim) if first is None or m.start() > 0}
    return missing | {n for n in names if n.lower() not in lower_tokens}


def _strip(token: str) -> str:
    return token.strip(_STRIP + ".")


def _terms(text: str) -> list[str]:
    """Stems that match across inflections ("package", "packaged" -> "packag"), stopwords kept."""
    return [stem[:-1] if len(stem) > 4 and stem.endswith("e") else stem for stem in stem_words(text)]


def _tokens(text: str) -> list[str]:
    """Lower-cased words and clause punctuation; option names (--no-tags) are left out, being no prose."""
    return [t.lower().replace("’", "'") for t in _WORD.findall(_OPTION.sub(" ", text))]


def _negated_scopes(text: str, answers: frozenset[str] | None = None, exclusive: bool = False) -> list[set[str]]:
    """For each negation in `text`, the stems of the first content words it governs (up to a clause
    boundary; "fails if X" governs X); an elliptical one ("whether any work is required; if not,
    it exits") governs the clause before it. With `answers` (the cues that may answer a negation,
    on top of the negations themselves) every scope is listed; without, only those that demand an answer:
    "not just X" says X and more, so it demands no negation of X unless `exclusive` (the other
    side says "just X" too: "can remove a file from just your working directory")."""
    words = _tokens(text)
    scopes = []
    for i, word in enumerate(words):
        demanding = answers is None and (exclusive or not _EXCLUSIVE & set(words[i + 1:i + 1 + 2 * _SCOPE_TERMS]))
        if (_is_cue(word) and (answers is not None or demanding)) or word in (answers or ()):
            skip = 2 if word in _CONDITION_FAILURES and words[i + 1:i + 2] in (["if"], ["when"]) else 1
            scope = _scope(words[i + skip:])
            if not scope and word in _ELLIPTICAL_CUES:
                before = list(reversed(words[:i]))
                start = next((k for k, w in enumerate(before) if w not in _BOUNDARY), len(before))
                scope = _scope(before[start:])
            scopes.append(scope)
    return scopes


def _prefixed_scopes(text: str) -> list[set[str]]:
    """The scope of each word negated by its prefix, the word included: "unaware of the constraints"
    answers "do not know the constraints" when two words are shared. It demands nothing ("untracked
    files" is a name more than a negation) and answers only on two words ("unused days may be
    carried over" says nothing of "cannot be carried over")."""
    words = _tokens(text)
    return [set(_terms(w[2:])) | _scope(words[i + 1:]) for i, w in enumerate(words)
            if w.startswith("un") and len(w) > 5 and not w.startswith(_UN_WORDS)]


def _is_cue(word: str) -> bool:
    return word in _NEGATION_CUES or word.endswith("n't")


def _scope(words: list[str]) -> set[str]:
    """The stems of the first content words of `words`, up to a clause boundary."""
    scope: set[str] = set()
    for word in words:
        if word in _BOUNDARY or len(scope) == _SCOPE_TERMS:
            break
        if word not in STOPWORDS and word not in _SCOPE_FILLER and not _is_cue(word):
            scope.update(_terms(word))
    return scope


def _negation(claim: str, source: str, sentence: str, nearest: str) -> str | None:
    """A negated phrase of the claim the source states plainly, or the reverse. "unless", "only"
    and "except" only answer a negation (see _CONDITIONAL_CUES); a one-word negated phrase is thin
    evidence, so it counts only in the closest sentence."""
    claim_scopes = _negated_scopes(claim, _CONDITIONAL_CUES)
    source_scopes = _negated_scopes(source, frozenset({"unless"}))  # a source's "only" answers nothing
    source_terms = set(_terms(source))
    prefixed = _prefixed_scopes(source)
    for scope in _negated_scopes(claim):
        answered = any(scope & s for s in source_scopes) or any(len(scope & s) > 1 for s in prefixed)
        if scope & source_terms and not answered:
            return f"negated in the claim, not in the source: {' '.join(sorted(scope))}"
    claim_terms = set(_terms(claim))
    one_word = [s for s in _negated_scopes(sentence) if len(s) == 1]
    exclusive = bool(_EXCLUSIVE & {w for w, _ in _plain_words(claim)})
    for scope in [s for s in _negated_scopes(nearest, exclusive=exclusive) if len(s) > 1] + one_word:
        shared = scope & claim_terms
        if len(shared) >= min(2, len(scope)) and not any(scope & s for s in claim_scopes):
            return f"negated in the source, not in the claim: {' '.join(sorted(scope))}"
    return None


def _forms(word: str) -> set[str]:
    """The inflections of a lexicon word that a sentence may use."""
    stem = word[:-1] if word.endswith("e") else word
    forms = {word, word + "s", word + "es", word + "d", word + "ed", stem + "ing", word + "ing", *FORMS.get(word, ())}
    if word.endswith("y"):
        forms |= {word[:-1] + "ies", word[:-1] + "ied"}
    return forms


def _contexts(words: list[str]) -> list[tuple[str, set[str]]]:
    """Each word with the content stems around it in its sentence, which tell whether two words
    speak of the same thing."""
    content = [None if w in STOPWORDS or w in _BOUNDARY else (_terms(w) or [None])[0] for w in words]
    sentence = list(accumulate(w in _SENTENCE_END for w in words))
    return [(word, {c for k, c in enumerate(content[max(0, i - _CONTEXT):i + 1 + _CONTEXT], max(0, i - _CONTEXT))
                    if c and k != i and sentence[k] == sentence[i]})
            for i, word in enumerate(words)]


def _plain_words(text: str) -> list[tuple[str, set[str]]]:
    """The words of `text` outside any negation's scope (a negated antonym restates the original), in context."""
    words = _tokens(text)
    negated: set[int] = set()
    for i, word in enumerate(words):
        if _is_cue(word):
            end = next((j for j in range(i + 1, len(words)) if words[j] in _BOUNDARY), len(words))
            negated.update(range(i + 1, min(end, i + 1 + 2 * _SCOPE_TERMS)))
    return [item for i, item in enumerate(_contexts(words)) if i not in negated]


def _antonym(claim: str, source: str, nearest: str) -> str | None:
    """A claim word whose opposite the nearest sentences use about the same things (two content
    words in common around them) while the source never uses the word itself."""
    claim_words = _plain_words(claim)
    nearest_words = _plain_words(nearest)
    source_words = set(_tokens(source))
    for left, right in ANTONYMS:
        for said, opposite in ((left, right), (right, left)):
            if source_words & _forms(said):
                continue
            for word, around in claim_words:
                if word in _forms(said) and any(
                    other in _forms(opposite) and len(around & near) >= 2 for other, near in nearest_words
                ):
                    return f"antonym: {said} for {opposite}"
    return None


def _strength(claim: str, nearest: str) -> str | None:
    """A universal, necessary or exclusive word in the claim with no word of its kind near the same
    things in the source ("all users push" does not license "all hosting providers"); a negation
    licenses "only" ("refuses to export unmarked directories": "only exports marked ones")."""
    nearest_words = _plain_words(nearest)  # "refuses to export any directory" licenses no "every"
    for kind, (words, licences) in _STRENGTH.items():
        for word, around in _contexts(_tokens(claim)):
            if word in words and not any(
                (other in words | licences or (kind == "exclusive" and _is_cue(other))) and (around & near or not around)
                for other, near in nearest_words
            ):
                return f"{kind} in the claim only: {word}"
    return None


def _content_positions(text: str) -> tuple[list[str], list[str]]:
    """The words of `text` (lower-cased) and, at the same positions, their stems ("" for stopwords)."""
    words = [w for w in _tokens(text) if w not in _BOUNDARY]
    return words, ["" if w in STOPWORDS else (_terms(w) or [""])[0] for w in words]


def _swapped(claim: str, sentence: str) -> str | None:
    """Two terms the claim links by the same words as the source, but in the other order: "Git
    handles the HTTP support for libcurl" from "libcurl, which handles the HTTP support for Git".
    A passive ("is set", "by") or a plain list ("A and B") reorders without swapping, so it does
    not count, and only terms found once in each text are compared."""
    claim_words, claim_stems = _content_positions(claim)
    near_words, near_stems = _content_positions(sentence)
    once = {t for t in claim_stems if t and claim_stems.count(t) == 1 and near_stems.count(t) == 1}
    anchors = [(i, t) for i, t in enumerate(claim_stems) if t in once]
    for x, (i, first) in enumerate(anchors):
        for j, second in anchors[x + 1:]:
            k, m = near_stems.index(second), near_stems.index(first)
            if not k < m or j - i > _SWAP_SPAN or m - k > _SWAP_SPAN:
                continue
            between = {t for t in claim_stems[i + 1:j] if t} & {t for t in near_stems[k + 1:m] if near_stems.count(t) == 1}
            if between and not _PASSIVE & {*claim_words[i + 1:j], *near_words[k + 1:m]}:
                return f"swapped: {first} and {second} around {' '.join(sorted(between))}"
    return None
