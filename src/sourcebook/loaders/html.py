"""HTML loader: the main text of a page, with its heading structure.

Navigation, banners, forms and hidden elements are page chrome, not content:
indexing them would make every page of a site match the same queries. So the
loader reads `<main>` (else a lone `<article>`, else `<body>`) and skips chrome
(html_boilerplate.py tells what is chrome).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ..errors import LoaderError
from ..models import ParsedDocument
from .html_boilerplate import HEADINGS, PageStructure, dropped
from .reference import entry_term
from .tables import add_introduced_table
from .text import DocumentBuilder, clean_inline, decode_text

# <header>/<footer> are the page's banner and footer only outside sectioning content, which the
# walk tracks (`in_section`) for `dropped`.
_SECTIONING = frozenset({"article", "section", "main"})
_LISTS = frozenset({"ul", "ol", "menu"})
_BLOCKS = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "header",
        "hgroup", "hr", "html", "legend", "li", "main", "p", "section", "summary", "table",
        "tbody", "td", "tfoot", "th", "thead", "tr",
    }
)  # fmt: skip
_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w:.-]+)|<\?xml[^>]+encoding\s*=\s*["']([\w:.-]+)""",
    re.IGNORECASE,
)


def _declared_charset(data: bytes) -> str | None:
    """The charset a page declares in its first bytes (<meta charset>, http-equiv, <?xml?>)."""
    match = _CHARSET.search(data[:4096])
    if match is None:
        return None
    return (match.group(1) or match.group(2)).decode("ascii")


def _elements(node: LexborNode) -> Iterator[LexborNode]:
    return (child for child in node.iter() if child.is_element_node)


def _text(node: LexborNode, skip: frozenset[str] = frozenset()) -> str:
    """All visible text under `node`; block boundaries and <br> separate words."""
    parts = []
    for child in node.iter(include_text=True):
        if child.is_text_node:
            parts.append(child.text(deep=False))
        elif child.is_element_node and child.tag not in skip and not dropped(child, True):
            separator = " " if child.tag in _BLOCKS or child.tag in HEADINGS or child.tag == "br" else ""
            parts.extend((separator, _text(child, skip), separator))
    return "".join(parts)


def _has_descendant(node: LexborNode, selector: str) -> bool:
    """Like css_first, which also matches `node` itself, but for descendants only."""
    return any(match.mem_id != node.mem_id for match in node.css(selector))


def _list_lines(node: LexborNode) -> list[str]:
    """One line per item; nested lists follow their parent item's line."""
    lines = []
    for child in _elements(node):
        if dropped(child, True):
            continue
        if child.tag in _LISTS:
            lines.extend(_list_lines(child))
            continue
        lines.append(clean_inline(_text(child, skip=_LISTS)))
        for nested in _nested_lists(child):
            lines.extend(_list_lines(nested))
    return lines


def _nested_lists(node: LexborNode) -> Iterator[LexborNode]:
    for child in _elements(node):
        if child.tag in _LISTS:
            yield child
        elif not dropped(child, True):
            yield from _nested_lists(child)


def _table_rows(table: LexborNode) -> list[list[str]]:
    return [[_text(cell) for cell in _elements(row) if cell.tag in {"td", "th"}] for row in table.css("tr")]


def _is_layout_table(table: LexborNode) -> bool:
    """Tables used for page layout hold headings or other tables: read them as containers."""
    return table.attributes.get("role") in {"presentation", "none"} or _has_descendant(
        table, "table, h1, h2, h3, h4, h5, h6"
    )


class _HtmlWalker:
    """Walks the DOM in reading order; inline text gathers until a block boundary."""

    def __init__(self, builder: DocumentBuilder, chrome: set[int], entry_anchors: dict[int, str]) -> None:
        self.builder = builder
        self.chrome = chrome
        """mem_ids of the blocks `PageStructure.chrome` found to be navigation: skipped like named chrome."""
        self.inline: list[str] = []
        self.entry_depth = 0
        """How many definition lists the walk is inside (their entries nest in the heading path),
        plus one while an entry opened by an anchor is open (`_anchor_entry`)."""
        self.entry_anchors = entry_anchors
        self.in_anchor_entry = False

    def walk(self, node: LexborNode, in_section: bool) -> None:
        """Read a block container: its content, then close the paragraph it left open."""
        self._children(node, in_section)
        self.flush()

    def _children(self, node: LexborNode, in_section: bool) -> None:
        for child in node.iter(include_text=True):
            if child.is_text_node:
                self.inline.append(child.text(deep=False))
            elif child.is_element_node and not dropped(child, in_section) and child.mem_id not in self.chrome:
                if child.mem_id in self.entry_anchors:
                    self._anchor_entry(self.entry_anchors[child.mem_id])
                self._element(child, in_section)

    def _anchor_entry(self, term: str) -> None:
        """An anchor the page's index lists, with no heading after it, starts an entry titled by the
        index's text (PageStructure), outside definition lists. Text before it in an unclosed
        paragraph (`<p>See also ... <a name=next></a>`, as SQLite's pages have) ends there. The
        entry lasts to the next one or the next heading; definition lists inside it nest under it."""
        if self.entry_depth != int(self.in_anchor_entry):
            return
        self.flush()
        self.builder.entry(term)
        self.in_anchor_entry = True
        self.entry_depth = 1

    def _element(self, node: LexborNode, in_section: bool) -> None:
        tag = node.tag
        if tag == "br":
            self.inline.append("\n")
        elif tag in HEADINGS:
            self.flush()
            self.builder.heading(HEADINGS[tag], _text(node))
            if self.in_anchor_entry and self.entry_depth == 1:  # the heading closed the entry
                self.in_anchor_entry = False
                self.entry_depth = 0
        elif tag in _LISTS:
            self.flush()
            self.builder.add("list", "\n".join(_list_lines(node)))
        elif tag == "pre":
            self.flush()
            self.builder.add("code", node.text(deep=True, strip=False))
        elif tag == "dl":
            self.flush()
            self._definitions(node)
            self.builder.end_entries(self.entry_depth)
        elif tag == "table" and not _is_layout_table(node):
            self.flush()
            caption = node.css_first("caption")
            add_introduced_table(self.builder, _table_rows(node), [_text(caption)] if caption is not None else [])
        elif tag in _BLOCKS:
            self.flush()
            self.walk(node, in_section or tag in _SECTIONING)
        else:  # inline: adds to the open paragraph (blocks inside it still break it)
            self._children(node, in_section)

    def _definitions(self, node: LexborNode) -> None:
        """A definition list (`<dl>`: AsciiDoc and man-page options, DocBook variablelists, Sphinx
        API entries, glossaries): each term opens an entry that holds its definition, so an option
        or parameter is a unit of its own with the term in its heading path. Terms given together
        (`-f`, `--force`) name one entry; `<div>` groups of dt/dd (allowed by HTML) are read through."""
        depth = self.entry_depth
        terms: list[str] = []
        for child in _elements(node):
            if dropped(child, True):
                continue
            if child.tag == "dt":
                terms.append(_text(child))
            elif child.tag == "dd":
                self._entry(terms, depth)
                terms = []
                self.entry_depth = depth + 1
                self.walk(child, True)
                self.entry_depth = depth
            elif child.tag == "div":
                self._definitions(child)
        if terms:  # a term with no definition is text of the section it stands in
            self.builder.end_entries(depth)
            self.builder.add("paragraph", ", ".join(terms))

    def _entry(self, terms: list[str], depth: int) -> None:
        full = ", ".join(clean_inline(term) for term in terms if term.strip())
        if not full:
            return
        term = entry_term(terms)
        self.builder.entry(term, depth)
        if term != full:  # a long signature: the heading names it, the text keeps all of it
            self.builder.add("paragraph", full)

    def flush(self) -> None:
        self.builder.add("paragraph", "".join(self.inline))
        self.inline.clear()


def _content_roots(tree: LexborHTMLParser) -> Iterator[LexborNode]:
    """Candidate content containers, best first: <main>, a lone <article>, <body>."""
    main = tree.css_first("main") or tree.css_first('[role="main"]')
    if main is not None:
        yield main
    articles = tree.css("article")
    if len(articles) == 1:
        yield articles[0]
    if tree.body is not None:
        yield tree.body


def html_fragment_text(html: str) -> str:
    """Visible text of an HTML fragment (e.g. raw HTML inside Markdown)."""
    tree = LexborHTMLParser(html)
    root = tree.body or tree.root
    return _text(root) if root is not None else ""


def add_html(builder: DocumentBuilder, text: str, source: str) -> LexborHTMLParser:
    """Add the main content of the page `text` to `builder` (after what it holds), and
    return the parsed page. E-book chapters and HTML e-mail bodies are pages too."""
    tree = LexborHTMLParser(text)
    blocks_before = builder.block_count
    try:
        page = PageStructure(tree.body or tree.root, source)
        for root in _content_roots(tree):
            walker = _HtmlWalker(builder, page.chrome(root), page.entry_terms)
            walker.walk(root, in_section=root.tag != "body")
            if builder.block_count > blocks_before:
                break
    except RecursionError:
        raise LoaderError(source, "HTML is nested too deeply to read") from None
    return tree


class HtmlLoader:
    name: str = "html"
    media_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    extensions: tuple[str, ...] = (".html", ".htm", ".xhtml")

    def load(self, data: bytes, source: str) -> ParsedDocument:
        text, encoding = decode_text(data, source, declared=_declared_charset(data))
        builder = DocumentBuilder()
        tree = add_html(builder, text, source)
        title_node = tree.css_first("title")
        title = clean_inline(title_node.text()) if title_node is not None else ""
        return builder.build(source, title or builder.first_h1, self.media_types[0], self._metadata(tree, encoding))

    @staticmethod
    def _metadata(tree: LexborHTMLParser, encoding: str) -> dict[str, str]:
        metadata = {"encoding": encoding}
        html = tree.css_first("html")
        if html is not None and html.attributes.get("lang"):
            metadata["lang"] = html.attributes["lang"] or ""
        description = tree.css_first('meta[name="description"]')
        if description is not None and description.attributes.get("content"):
            metadata["description"] = clean_inline(description.attributes["content"] or "")
        return metadata
