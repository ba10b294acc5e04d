"""Entity names to merge keys: the same thing named differently gets one key.

"Keel workers", "keel worker" and "the Keel Workers" all become "keel worker": Unicode
NFKC, lower case, surrounding punctuation and leading articles dropped, whitespace
collapsed, and the last word of the name made singular (plural nouns end names:
"alert rules", "Northwind Labs"). Acronyms and code identifiers are never singularised
(AWS is not the plural of AW, `readings.raw` is a name). Aliases such as an acronym and
its expansion are not guessed here: extractors report them and the store maps one key
to the other.
"""

from __future__ import annotations

import re
import unicodedata

_EDGE_PUNCTUATION = " \t\n\"'`“”‘’()[]{}<>,;:.!?*_"
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_CODE_LIKE = re.compile(r"[._/#]|[a-z][A-Z]|\d")
# Endings that look plural but are singular words (status, analysis, access, kubernetes).
_NOT_PLURAL = ("ss", "us", "is", "ics", "ous", "ies", "netes", "sis")


def singular(word: str) -> str:
    """English singular of a lower-case word, by the regular rules only (it never has to be
    a real word: both spellings just have to meet at the same key)."""
    if len(word) <= 3 or _CODE_LIKE.search(word):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(_NOT_PLURAL):
        return word[:-1]
    return word


def is_acronym(name: str) -> bool:
    """DCP, AWS, MQTT, S3: two to six capitals (digits allowed after the first letter)."""
    return bool(re.fullmatch(r"[A-Z][A-Z0-9]{1,5}s?", name)) and sum(c.isupper() for c in name) >= 2


def entity_key(name: str) -> str:
    """The merge key of an entity name ("" for a name with no word in it)."""
    text = unicodedata.normalize("NFKC", name).strip(_EDGE_PUNCTUATION)
    text = _SPACE.sub(" ", _LEADING_ARTICLE.sub("", text))
    if not text:
        return ""
    words = text.split(" ")
    last = words[-1]
    if is_acronym(last) and last.endswith("s"):  # "APIs" -> "API"
        words[-1] = last[:-1]
    elif not is_acronym(last):
        words[-1] = singular(last.lower())
    return " ".join(words).lower()


def initials(words: list[str]) -> str:
    """Upper-case initials of the words that carry meaning ("Data Collection Pipeline" -> "DCP";
    "recovery point objective" -> "RPO"; "Amazon Web Services" -> "AWS")."""
    skip = {"of", "and", "for", "the", "a", "an", "to", "in", "on", "&"}
    return "".join(w[0].upper() for w in words if w and w.lower() not in skip and w[0].isalnum())


def expands(acronym: str, words: list[str]) -> bool:
    """Whether `words` spell out `acronym` by their initials (a trailing plural "s" ignored)."""
    letters = acronym.rstrip("s").upper()
    return len(words) >= 2 and initials(words) == letters
