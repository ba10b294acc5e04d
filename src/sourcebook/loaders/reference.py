"""Reference structure shared by the loaders: entry terms and man pages rendered as text.

Reference documentation (man pages, option lists, configuration variables, API entries,
glossaries) answers questions entry by entry: "what does --force-with-lease do" is answered
by one term and its definition. The loaders turn each entry into a unit of its own
(`DocumentBuilder.entry`) whose heading path ends with the term, so retrieval, answers and
citations point at the entry itself rather than at a section of forty options.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .text import DocumentBuilder, clean_inline, short_title

TERM_MAX_CHARS = 60
"""Longest term kept whole in a heading path; a longer one (an API signature) is shortened."""

# Link markers Sphinx and others append to a term ("json.dumps(obj, ...)¶").
_TERM_MARKERS = "¶#§\u200b "


def entry_term(terms: Sequence[str]) -> str:
    """The term of an entry as it goes into the heading path: its `terms` (`-f`, `--force`) joined
    while they fit `TERM_MAX_CHARS`, without link markers, and a long signature cut to its name
    ("json.dumps(obj, *, skipkeys=False, ...)" -> "json.dumps()")."""
    names = [name for name in (_one_term(term) for term in terms) if name]
    joined = names[:1]
    for name in names[1:]:
        if len(", ".join([*joined, name])) > TERM_MAX_CHARS:
            break
        joined.append(name)
    return ", ".join(joined)


def _one_term(text: str) -> str:
    term = clean_inline(text).strip(_TERM_MARKERS)
    if len(term) <= TERM_MAX_CHARS:
        return term
    name, paren, _ = term.partition("(")
    if paren and 0 < len(name.strip()) <= TERM_MAX_CHARS:
        return name.strip() + "()"
    return short_title(term[:TERM_MAX_CHARS])


# -- man pages rendered as text (`man git-push | col -b`) -------------------------------------

_MAN_HEADER = re.compile(r"^\s*([\w.:+-]+)\((\d\w*)\)\s.*\s\1\(\2\)\s*$")
_MAN_SECTION = re.compile(r"^[A-Z][A-Z0-9 ,/()&'-]{1,40}$")
_SNIFF_CHARS = 16384  # a man page's header and NAME section are within its first 40 lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def looks_like_man_page(text: str) -> bool:
    """Text laid out as a rendered man page: a NAME section heading in column 0 and an
    indented body, or the "GIT-PUSH(1) ... GIT-PUSH(1)" header line."""
    lines = text[:_SNIFF_CHARS].splitlines()[:40]  # never every line of a large text
    has_name = any(line.rstrip() == "NAME" for line in lines)
    return bool(lines) and (bool(_MAN_HEADER.match(lines[0])) or has_name) and has_name


def add_man_page(builder: DocumentBuilder, text: str) -> str:
    """Add a rendered man page's sections and entries to `builder`; returns its title (the NAME line).

    Column-0 capitals are sections, lines indented less than the body are subsections, and a
    line at the body's indent followed by a more indented one is a term (an option) whose
    definition is the more indented lines after it.
    """
    lines = [line.replace("\t", "        ").rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    header = next((match for line in lines[:3] if (match := _MAN_HEADER.match(line))), None)
    if header is not None:  # the running header and footer ("Git 2.39.5  10/07/2025  GIT-PUSH(1)")
        page = f"{header.group(1)}({header.group(2)})"
        lines = [line for line in lines if not line.endswith(page)]
    title = ""
    sections: list[tuple[str, list[str]]] = []
    for line in lines:
        if line and _indent(line) == 0 and _MAN_SECTION.match(line):
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].append(line)
    for heading, body in sections:
        builder.heading(1, heading)
        if heading == "NAME" and not title:
            title = short_title(" ".join(line.strip() for line in body if line.strip()))
        _add_man_section(builder, body)
    return title


def _add_man_section(builder: DocumentBuilder, body: list[str]) -> None:
    indents = [_indent(line) for line in body if line.strip()]
    if not indents:
        return
    base = min(indents) if min(indents) > 3 else sorted(set(indents))[min(1, len(set(indents)) - 1)]
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            builder.add("paragraph", "\n".join(paragraph))
            paragraph.clear()

    in_entry = False
    for index, line in enumerate(body):
        if not line.strip():
            flush()
            continue
        indent = _indent(line)
        following = next((later for later in body[index + 1 :] if later.strip()), "")
        if indent < base:  # a subsection title (.SS, indented 3)
            flush()
            builder.heading(2, line.strip())
            in_entry = False
        elif indent == base and _indent(following) > base and len(line.strip()) <= TERM_MAX_CHARS and not paragraph:
            flush()
            builder.entry(line.strip())
            in_entry = True
        else:
            if indent == base and in_entry and not paragraph:
                builder.end_entries()
                in_entry = False
            paragraph.append(line.strip())
    flush()
    builder.end_entries()
