"""Page chrome in HTML, and the anchors that start a page's entries.

Navigation, banners, tables of contents and footers repeat on every page of a site: indexed, they
match every query about the site and get cited as answers. Pages mark them by name (`<nav>`, ARIA
roles, the class and id names of common generators), which this module reads first. Many
generators use names of their own (SQLite's Tcl scripts, older DocBook styles), so it also drops
them by general signals, as boilerplate removers do (Readability, jusText and trafilatura measure
link density): a block made mostly of links before the page's first heading or after its last
section is navigation, and a block of links to the page's own headings is a table of contents.

The page's own in-page links also tell where its entries start when it marks them with nothing but
an anchor (`<a name="pragma_busy_timeout"></a>` and a bold signature paragraph, no heading): an
anchor that the page's index lists ("busy_timeout" in its list of PRAGMAs) opens an entry titled
by that index link (`PageStructure.entry_terms`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from selectolax.lexbor import LexborNode

from .text import clean_inline

DROP_TAGS = frozenset(
    {
        "script", "style", "noscript", "nav", "aside", "form", "svg", "iframe", "template",
        "head", "title", "button", "select", "textarea", "object", "embed", "canvas", "map",
    }
)  # fmt: skip
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo"})
# <header>/<footer> are the page's banner and footer only outside sectioning content
# (HTML's own rule for their implicit ARIA roles); inside an article they are content.
_PAGE_CHROME = frozenset({"header", "footer"})
HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Navigation that pages mark by class or id rather than by <nav> or a role: DocBook's Prev/Up/Next
# strips (navheader, navfooter) and tables of contents, AsciiDoc's #toc and "Last updated" #footer,
# Sphinx's sidebar, Texinfo's menus of a node's subsections, breadcrumbs everywhere. Dropped
# before chunking: they repeat on every page, or repeat the headings that follow.
_NAV_CLASSES = frozenset(
    {
        "navheader", "navfooter", "toc", "breadcrumb", "breadcrumbs", "sphinxsidebar", "list-of-tables",
        "list-of-figures", "list-of-examples", "navbar", "navigation", "skip-link", "headerlink",
        "section-toc", "mini-toc",
    }
)  # fmt: skip
_NAV_IDS = frozenset({"toc", "footer", "breadcrumb", "breadcrumbs", "navigation", "sidebar", "toctitle"})
# DocBook's stylesheets also write the Prev/Up/Next strip as a bare table that says what it is in
# its summary ("Navigation header", "Navigation footer"; Valgrind's manual): its "<< 4. Memcheck |
# Up | 6. Callgrind >>" row otherwise ends the page's last section and is quoted in answers.
_NAV_SUMMARY = re.compile(r"^\s*navigation\b", re.IGNORECASE)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)

MIN_NAV_LINKS = 2
"""Links a block needs before link density can make it navigation: one link is a reference."""
NAV_LINK_DENSITY = 0.5
"""Share of a block's characters inside links from which it reads as navigation (at a page's
edges); Readability and trafilatura draw the line near here."""
NAV_TEXT_PER_LINK = 8
"""Characters of text outside links per link at most in a strip of links ("Prev Up Home Next" as
images around a title): such a strip has little link text and is still nothing but links."""
TOC_LINK_DENSITY = 0.7
"""A table of contents anywhere in a page: this share of its characters in links, ..."""
TOC_HEADING_LINKS = 0.8
"""... this share of its links pointing at the page's own headings (it repeats them), ..."""
TOC_COVERAGE = 0.5
"""... and links to at least this share of the page's headings: a list that links to three of
thirty sections ("detected errors: misuses, deadlocks, races") is the text's own list."""
SEQUENCE_RELS = frozenset({"next", "prev", "previous", "up", "first", "last", "start", "contents", "index", "home"})
"""`rel` values of links that step through a manual (HTML's link types; Texinfo writes them on every
node's "Next: ... Previous: ... Up: ... [Contents][Index]" strip)."""
SEQUENCE_ACCESSKEYS = frozenset({"n", "p", "u"})
"""Access keys of next, previous and up links (Texinfo's and DocBook's strips carry them)."""
MIN_INDEX_ENTRIES = 3
"""Anchors an index must list before they are read as entries: an index is a list, and one
stray in-page link to an anchor does not make the text after it an entry."""
_INDEX_ITEMS = frozenset({"li", "td", "th", "dt"})
_CODE = frozenset({"pre", "code"})
"""Never navigation, however many links: an API synopsis links every type it names."""
_FOOTNOTE_MARKS = "*†‡§"


def dropped(node: LexborNode, in_section: bool) -> bool:
    """Whether `node` is chrome by its tag, role, class or id, or hidden."""
    return _chrome_by_name(node.tag, node.attributes, in_section)


def _chrome_by_name(tag: str, attrs: dict[str, str | None], in_section: bool) -> bool:
    """`dropped` on a tag and attributes already read (selectolax decodes them anew at each read)."""
    if tag in DROP_TAGS or (tag in _PAGE_CHROME and not in_section):
        return True
    classes = (attrs.get("class") or "").split()
    return (
        attrs.get("role") in _DROP_ROLES
        or attrs.get("id") in _NAV_IDS
        or any(name in _NAV_CLASSES for name in classes)
        or "breadcrumb" in (attrs.get("aria-label") or "").lower()
        or (tag == "table" and bool(_NAV_SUMMARY.match(attrs.get("summary") or "")))
        or ("hidden" in attrs and attrs["hidden"] != "until-found")  # until-found: collapsed, still content
        or attrs.get("aria-hidden") == "true"
        or bool(_HIDDEN_STYLE.search(attrs.get("style") or ""))
    )


def _names(tag: str, attrs: dict[str, str | None]) -> tuple[str, ...]:
    """The fragment names that target an element: its id, and an <a>'s name."""
    names = (attrs.get("id") or "", (attrs.get("name") or "") if tag == "a" else "")
    return tuple(name for name in names if name)


@dataclass
class _Links:
    """An element's tag and anchor names, its visible characters (without whitespace) and how many
    of them are link or heading text, and its links and headings: read once per page."""

    tag: str
    names: tuple[str, ...]
    """The fragment names that target the element (`_names`)."""
    chars: int = 0
    link_chars: int = 0
    links: int = 0
    headings: int = 0
    heading_chars: int = 0
    sequence_links: int = 0
    """Links marked as next, previous, up, contents or index (`SEQUENCE_RELS`, `SEQUENCE_ACCESSKEYS`)."""

    def add(self, other: _Links) -> None:
        self.chars += other.chars
        self.link_chars += other.link_chars
        self.links += other.links
        self.sequence_links += other.sequence_links
        self.headings += other.headings
        self.heading_chars += other.heading_chars

    @property
    def navigation(self) -> bool:
        """Mostly links (by characters), or a strip of links with next to no other text."""
        return (
            not self.headings
            and self.links >= MIN_NAV_LINKS
            and (
                self.link_chars >= NAV_LINK_DENSITY * self.chars
                or self.chars - self.link_chars <= NAV_TEXT_PER_LINK * self.links
            )
        )

    @property
    def sequence_strip(self) -> bool:
        """Navigation whose links are mostly marked as stepping through the manual: a "Next |
        Previous | Up" strip, chrome wherever it stands (Texinfo puts one before every node's
        heading, mid-page)."""
        return self.navigation and 2 * self.sequence_links >= self.links


class PageStructure:
    """Link statistics of every visible element of a page, and what its own in-page links point
    at: which targets are headings (links to them make a table of contents) and which empty
    anchors start entries (an index names them)."""

    def __init__(self, page: LexborNode, source: str) -> None:
        self.name = PurePosixPath(urlsplit(source).path).name
        self.of: dict[int, _Links] = {}
        """mem_id of every element not dropped by name -> its statistics."""
        self._measure(page, page.tag, page.attributes)
        self.heading_targets: set[str] = set()
        """Fragment names whose target's first text (past navigation) is in a heading."""
        self._targets: dict[str, LexborNode] = {}
        self._pending: list[str] = []
        self._scan(page, in_heading=False)
        self.entry_terms = self._entries(page)
        """mem_id of an empty anchor the page's index lists -> the index's text for it."""

    def fragment(self, link: LexborNode) -> str | None:
        """The fragment an in-page link (`#x`, or `page.html#x` on page.html itself) points at."""
        href = (link.attributes.get("href") or "").strip()
        path, hash_mark, fragment = href.partition("#")
        if not hash_mark or not fragment or path.removeprefix("./") not in ("", self.name):
            return None
        return unquote(fragment)

    def _visible_children(self, node: LexborNode) -> list[LexborNode]:
        """Element children that are not named chrome (`_measure` measured only those)."""
        return [child for child in node.iter() if child.is_element_node and child.mem_id in self.of]

    def _measure(self, node: LexborNode, tag: str, attrs: dict[str, str | None]) -> _Links:
        links = _Links(tag, _names(tag, attrs))
        for child in node.iter(include_text=True):
            if child.is_text_node:
                links.chars += len("".join((child.text(deep=False) or "").split()))
            elif child.is_element_node:
                child_tag, child_attrs = child.tag, child.attributes
                if not _chrome_by_name(child_tag, child_attrs, True):
                    links.add(self._measure(child, child_tag, child_attrs))
        if tag == "a" and "href" in attrs:
            links.link_chars, links.links = links.chars, 1
            rels = set((attrs.get("rel") or "").lower().split())
            access_key = (attrs.get("accesskey") or "").lower()
            links.sequence_links = int(bool(rels & SEQUENCE_RELS) or access_key in SEQUENCE_ACCESSKEYS)
        elif tag in HEADINGS:
            links.headings, links.heading_chars = 1, links.chars
        self.of[node.mem_id] = links
        return links

    def _scan(self, node: LexborNode, in_heading: bool, read: bool = True) -> None:
        """Walk in reading order; the first visible text after a target names what it points at.
        Text in navigation (`read` False) does not count: Texinfo puts its "Next: ... Up: ..."
        strip between a node's anchor and its heading, and an anchor may stand at the end of a
        "See also" paragraph of links."""
        for child in node.iter(include_text=True):
            if child.is_text_node:
                if read and self._pending and (child.text(deep=False) or "").strip():
                    if in_heading:
                        self.heading_targets.update(self._pending)
                    self._pending.clear()
            elif child.is_element_node and child.mem_id in self.of:  # measured: not dropped
                links = self.of[child.mem_id]
                for name in links.names:
                    self._targets.setdefault(name, child)
                    self._pending.append(name)
                navigation = links.navigation and links.tag not in _CODE
                self._scan(child, in_heading or links.tag in HEADINGS, read and not navigation)

    def _entries(self, page: LexborNode) -> dict[int, str]:
        """Empty anchors, not followed by a heading, that an index item of the page links to: the
        link is all the text of its list item or table cell (in running text a link is a
        reference, not an index entry)."""
        terms: dict[int, str] = {}
        for link in page.css("a[href]"):
            name = self.fragment(link)
            target = self._targets.get(name or "")
            if target is None or name in self.heading_targets or (target.text(deep=True) or "").strip():
                continue
            term = _index_entry_text(link)
            if term:
                terms.setdefault(target.mem_id, term)
        return terms if len(terms) >= MIN_INDEX_ENTRIES else {}

    def chrome(self, root: LexborNode) -> set[int]:
        """The mem_ids of blocks under `root` to drop as navigation: link-dense blocks before the
        first heading and after the section holding the last one, and tables of contents and
        next/previous/up strips anywhere. A page without a heading keeps all: its links may be all it has (an index)."""
        links = self.of.get(root.mem_id)  # a <main hidden> is still read when it is the root
        headings = links.headings if links is not None else 0
        if not headings:
            return set()
        found: list[LexborNode] = []
        self._edge(root, found, reverse=False)
        self._edge(root, found, reverse=True)
        chrome = {node.mem_id for node in found}
        self._chrome_anywhere(root, chrome, headings)
        return chrome

    def _edge(self, node: LexborNode, chrome: list[LexborNode], reverse: bool) -> bool:
        """Collect navigation blocks from the start (or the end) of `node` up to the first (last)
        heading; returns whether a heading was reached. At the end, blocks count only when a
        section holding text besides its headings separates them from the last heading: in a
        flat page what follows the last heading is its section's text (a "See also" list as much
        as a paragraph), and what follows a title block is the page's body."""
        found: list[LexborNode] = []
        children = self._visible_children(node)
        for child in reversed(children) if reverse else children:
            links = self.of[child.mem_id]
            if links.headings:
                if not reverse or links.chars > links.heading_chars:
                    chrome.extend(found)
                    return links.tag in HEADINGS or self._edge(child, chrome, reverse)
                return True
            if links.navigation and links.tag not in _CODE:
                found.append(child)
            else:  # no heading inside: navigation blocks within it are found with the rest
                self._edge(child, found, reverse)
        chrome.extend(found)
        return False

    def _chrome_anywhere(self, node: LexborNode, chrome: set[int], headings: int) -> None:
        """Tables of contents and sequence strips under `node`, whatever their place in the page."""
        for child in self._visible_children(node):
            if child.mem_id in chrome or self.of[child.mem_id].tag in _CODE:
                continue
            if self.of[child.mem_id].sequence_strip or self._table_of_contents(child, headings):
                chrome.add(child.mem_id)
            else:
                self._chrome_anywhere(child, chrome, headings)

    def _table_of_contents(self, node: LexborNode, headings: int) -> bool:
        """Links to the page's own headings, to many of them, and little else: the headings again."""
        links = self.of[node.mem_id]
        if links.headings or links.links < MIN_INDEX_ENTRIES or links.link_chars < TOC_LINK_DENSITY * links.chars:
            return False
        targets = [self.fragment(link) for link in node.css("a[href]")]
        to_headings = [target for target in targets if target in self.heading_targets]
        return len(to_headings) >= TOC_HEADING_LINKS * len(targets) and len(set(to_headings)) >= max(
            MIN_INDEX_ENTRIES, TOC_COVERAGE * headings
        )


def _index_entry_text(link: LexborNode) -> str:
    """The link's text if it is all the text of the list item or table cell it stands in, without
    the footnote marks an index puts after a name ("count_changes¹")."""
    text = clean_inline(link.text(deep=True) or "")
    item = link.parent
    while item is not None and item.tag not in _INDEX_ITEMS:
        if clean_inline(item.text(deep=True) or "") != text:
            return ""
        item = item.parent
    if item is None or clean_inline(item.text(deep=True) or "") != text:
        return ""
    while text and (unicodedata.category(text[-1]) == "No" or text[-1] in _FOOTNOTE_MARKS):
        text = text[:-1]
    return text.strip()
