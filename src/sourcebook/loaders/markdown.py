"""Markdown loader: markdown-it-py's token stream mapped onto blocks.

Working from tokens rather than raw lines means setext headings, fenced code
holding '#' lines, and inline syntax are all read the way a renderer reads them.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..models import ParsedDocument
from .html import html_fragment_text
from .tables import add_introduced_table
from .text import DocumentBuilder, decode_text

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_KEY_VALUE = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:[ \t]*(.*)$")
_LIST_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*)$")
_LIST_OPEN = frozenset({"bullet_list_open", "ordered_list_open"})
_LIST_CLOSE = frozenset({"bullet_list_close", "ordered_list_close"})


_NESTED = object()
_TERM_SEPARATOR = re.compile(r"^\s*(?:[:：]|\s[-–—]\s|[-–—]\s)\s*")
_DEFINITION = re.compile(r"^:[ \t]+(.+)$")


def bold_term(token: Token) -> tuple[str, str] | None:
    """(term, definition) of a list item written `**term**: definition` or `` `--flag` - definition ``
    (a bold or code term, then a colon or dash), else None."""
    children = [child for child in token.children or () if child.type != "text" or child.content]
    if not children:
        return None
    if children[0].type == "code_inline":
        term, rest = children[0].content, children[1:]
    elif children[0].type == "strong_open":
        close = next((i for i, child in enumerate(children) if child.type == "strong_close"), None)
        if close is None:
            return None
        term = "".join(child.content for child in children[1:close])
        rest = children[close + 1 :]
    else:
        return None
    after = "".join(child.content if child.type != "softbreak" else " " for child in rest)
    separator = _TERM_SEPARATOR.match(after)
    if term.rstrip().endswith(":"):  # "**Term:** definition": the colon is inside the bold
        definition = after.strip()
    elif separator is not None:
        definition = after[separator.end() :].strip()
    else:
        return None
    if not term.strip(" :") or not definition:
        return None
    return term.strip().rstrip(":").strip(), definition


def definition_lines(text: str) -> list[tuple[str, str]]:
    """The (term, definition) pairs of a paragraph in definition-list syntax (PHP Markdown Extra,
    Pandoc, MyST): a term line, then one or more `: definition` lines; [] for other paragraphs."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) < 2 or _DEFINITION.match(lines[0]) or not _DEFINITION.match(lines[1]):
        return []
    entries: list[tuple[str, str]] = []
    for line in lines:
        definition = _DEFINITION.match(line)
        if definition and entries:
            term, previous = entries[-1]
            entries[-1] = (term, f"{previous} {definition.group(1)}".strip())
        elif definition:
            return []
        else:
            entries.append((line, ""))
    return entries if all(definition for _, definition in entries) else []


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Separate a leading `---` block of `key: value` lines from the body.

    A deliberately small YAML subset (scalars, `[a, b]` and `- item` lists) covers
    real front matter without a YAML dependency; other lines are ignored.
    """
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    meta: dict[str, Any] = {}
    key: str | None = None
    for line in match.group(1).splitlines():
        item = _LIST_ITEM.match(line)
        pair = _KEY_VALUE.match(line)
        if item and key is not None and isinstance(meta.setdefault(key, []), list):
            meta[key].append(_scalar(item.group(1)))
        elif pair:
            key, value = pair.group(1), pair.group(2).strip()
            if value.startswith("[") and value.endswith("]"):
                meta[key] = [_scalar(part) for part in value[1:-1].split(",") if part.strip()]
            elif value:
                meta[key] = _scalar(value)
        else:
            key = None
    return meta, text[match.end() :]


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _inline_text(token: Token) -> str:
    """Text of an inline token without Markdown syntax; link text and image alt text stay."""
    parts = []
    for child in token.children or ():
        if child.type in {"text", "code_inline", "image"}:
            parts.append(child.content)
        elif child.type in {"softbreak", "hardbreak"}:
            parts.append("\n")
    return "".join(parts)


class _TokenWalker:
    """Turns the flat token stream into blocks.

    Lists and tables are gathered across their open/close tokens so each becomes
    one block (items as lines; a table as a Markdown table, split by rows if long).
    """

    def __init__(self, builder: DocumentBuilder) -> None:
        self.builder = builder
        self.heading_level: int | None = None
        self.list_depth = 0
        self.list_lines: list[str] = []
        self.list_terms: list[tuple[str, str] | None | object] = []
        """Per line of `list_lines`: (term, definition) of a top-level item that names a term,
        None for one that does not, `_NESTED` for a nested item's line or code."""
        self.table_rows: list[list[str]] | None = None
        self.row: list[str] | None = None

    def walk(self, tokens: list[Token]) -> None:
        for token in tokens:
            self._visit(token)

    def _visit(self, token: Token) -> None:
        kind = token.type
        if kind == "heading_open":
            self.heading_level = int(token.tag[1:])
        elif kind == "heading_close":
            self.heading_level = None
        elif kind == "inline":
            self._inline(token)
        elif kind in {"fence", "code_block"}:
            self._text(token.content, code=True)
        elif kind == "html_block":
            self._text(html_fragment_text(token.content))
        elif kind in _LIST_OPEN:
            self.list_depth += 1
        elif kind in _LIST_CLOSE:
            self.list_depth -= 1
            if self.list_depth == 0:
                self._list_done()
        elif kind == "table_open":
            self.table_rows = []
        elif kind == "table_close" and self.table_rows is not None:
            add_introduced_table(self.builder, self.table_rows)
            self.table_rows = None
        elif kind == "tr_open":
            self.row = []
        elif kind == "tr_close" and self.row is not None and self.table_rows is not None:
            self.table_rows.append(self.row)
            self.row = None

    def _inline(self, token: Token) -> None:
        """Inline text; a top-level list item that starts with a bold or code term, or a paragraph of
        `term` / `: definition` lines, is a reference entry."""
        text = _inline_text(token)
        if self.list_depth == 1 and self.heading_level is None and self.row is None:
            self.list_terms.append(bold_term(token))
        elif not self.list_depth and self.heading_level is None and self.row is None:
            entries = definition_lines(text)
            if entries:
                for term, definition in entries:
                    self.builder.entry(term)
                    self.builder.add("paragraph", definition)
                self.builder.end_entries()
                return
        self._text(text)

    def _list_done(self) -> None:
        """A finished list: one block, or one entry per item when every item names a term."""
        items = [term for term in self.list_terms if term is not _NESTED]
        if len(items) >= 2 and all(isinstance(term, tuple) for term in items):
            nested: list[str] = []
            for term, line in zip(self.list_terms, self.list_lines):
                if isinstance(term, tuple):
                    self.builder.add("list", "\n".join(nested))
                    nested = []
                    self.builder.entry(term[0])
                    self.builder.add("paragraph", line)  # the item as written: "timeout: seconds to wait"
                else:  # a nested item's line stays in its entry
                    nested.append(line)
            self.builder.add("list", "\n".join(nested))
            self.builder.end_entries()
        else:
            self.builder.add("list", "\n".join(self.list_lines))
        self.list_lines = []
        self.list_terms = []

    def _text(self, text: str, code: bool = False) -> None:
        """Route text to whatever encloses it: a heading, table cell, list item or the body."""
        if self.heading_level is not None:
            self.builder.heading(self.heading_level, text)
        elif self.row is not None:
            self.row.append(text)
        elif self.list_depth:
            self.list_lines.append(text if code else " ".join(text.split()))
            if len(self.list_terms) < len(self.list_lines):  # code or a nested item's line
                self.list_terms.append(_NESTED)
        else:
            self.builder.add("code" if code else "paragraph", text)


class MarkdownLoader:
    name: str = "markdown"
    media_types: tuple[str, ...] = ("text/markdown", "text/x-markdown")
    extensions: tuple[str, ...] = (".md", ".markdown")

    def load(self, data: bytes, source: str) -> ParsedDocument:
        text, encoding = decode_text(data, source)
        meta, body = split_front_matter(text.replace("\r\n", "\n"))
        builder = DocumentBuilder()
        _TokenWalker(builder).walk(_parser().parse(body))
        title = meta.get("title") if isinstance(meta.get("title"), str) else None
        metadata = {**meta, "encoding": encoding}
        return builder.build(source, title or builder.first_h1, self.media_types[0], metadata)
