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
from .tables import add_table
from .text import DocumentBuilder, decode_text

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_KEY_VALUE = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:[ \t]*(.*)$")
_LIST_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*)$")
_LIST_OPEN = frozenset({"bullet_list_open", "ordered_list_open"})
_LIST_CLOSE = frozenset({"bullet_list_close", "ordered_list_close"})


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
            self._text(_inline_text(token))
        elif kind in {"fence", "code_block"}:
            self._text(token.content, code=True)
        elif kind == "html_block":
            self._text(html_fragment_text(token.content))
        elif kind in _LIST_OPEN:
            self.list_depth += 1
        elif kind in _LIST_CLOSE:
            self.list_depth -= 1
            if self.list_depth == 0:
                self.builder.add("list", "\n".join(self.list_lines))
                self.list_lines = []
        elif kind == "table_open":
            self.table_rows = []
        elif kind == "table_close" and self.table_rows is not None:
            add_table(self.builder, self.table_rows)
            self.table_rows = None
        elif kind == "tr_open":
            self.row = []
        elif kind == "tr_close" and self.row is not None and self.table_rows is not None:
            self.table_rows.append(self.row)
            self.row = None

    def _text(self, text: str, code: bool = False) -> None:
        """Route text to whatever encloses it: a heading, table cell, list item or the body."""
        if self.heading_level is not None:
            self.builder.heading(self.heading_level, text)
        elif self.row is not None:
            self.row.append(text)
        elif self.list_depth:
            self.list_lines.append(text if code else " ".join(text.split()))
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
