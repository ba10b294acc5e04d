"""HTML page chrome told by link density, and entries a page marks only with anchors (issue 15, item 1).

The fixtures are cut down from generators whose class names the loader does not know: SQLite's
Tcl-made pages, DocBook with a plain `nav` table, Texinfo, AsciiDoc index pages.
"""

from __future__ import annotations

from sourcebook.loaders.html import HtmlLoader
from sourcebook.models import ParsedDocument


def load(html: str, source: str = "page.html") -> ParsedDocument:
    return HtmlLoader().load(html.encode(), source)


def texts(doc: ParsedDocument) -> list[str]:
    return [block.text for block in doc.blocks]


SITE_MENU = """<div class=nosearch><a href="index.html"><img src="logo.gif" alt="SQLite"></a>
<div class="tagline">Small. Fast. Reliable.<br>Choose any three.</div>
<div class="menu"><ul><li><a href="index.html">Home</a><li><a href="about.html">About</a>
<li><a href="docs.html">Documentation</a><li><a href="download.html">Download</a></ul></div></div>"""


def test_link_dense_blocks_before_the_first_heading_are_dropped() -> None:
    titles = ["Overview", "How WAL Works", "Checkpointing", "Concurrency"]
    toc = "".join(f'<div><a href="#s{i}">{i}. {title}</a></div>' for i, title in enumerate(titles, 1))
    sections = "".join(f'<h1 id="s{i}">{i}. {title}</h1><p>About {title}.</p>' for i, title in enumerate(titles, 1))
    html = f"""<body>{SITE_MENU}
<div class=fancy><div class=nosearch><div class="fancy_title">Write-Ahead Logging</div>
<div class="fancy_toc"><a onclick="toggle()">Table Of Contents</a><div id="toc_sub">{toc}</div></div></div>
<p>The default method uses a <a href="lockingv3.html">rollback journal</a>.</p>{sections}</div></body>"""
    assert texts(load(html, "wal.html"))[:4] == [
        "The default method uses a rollback journal.",  # before the first heading, but text
        "1. Overview",
        "About Overview.",
        "2. How WAL Works",
    ]


def test_prev_up_next_strips_around_a_docbook_chapter_are_dropped() -> None:
    html = """<body><div><table class="nav"><tr>
<td><a accesskey="p" href="a.html"><img src="prev.png" alt="Prev"></a></td>
<td><a accesskey="u" href="manual.html"><img src="up.png" alt="Up"></a></td>
<th>Valgrind User Manual</th><td><a accesskey="n" href="c.html"><img src="next.png" alt="Next"></a></td></tr></table></div>
<div class="chapter"><div class="titlepage"><h1>4. Memcheck</h1></div><p>Memcheck is a memory error detector.</p>
<p>See also <a href="a.html">Cachegrind</a> and <a href="c.html">Massif</a>.</p></div>
<div><table class="nav"><tr><td><a accesskey="p" href="a.html">&lt;&lt; 3. Core</a></td>
<td><a accesskey="u" href="manual.html">Up</a></td><td><a accesskey="n" href="c.html">5. Cachegrind &gt;&gt;</a></td></tr>
<tr><td><a href="index.html">Home</a></td></tr></table></div></body>"""
    assert texts(load(html, "mc-manual.html")) == [
        "4. Memcheck",
        "Memcheck is a memory error detector.",
        "See also Cachegrind and Massif.",  # inside the chapter: its text, not the page's footer
    ]


def test_link_lists_that_are_a_sections_own_text_are_kept() -> None:
    # A flat page: what follows the last heading is that section's text, however many links it has.
    flat = """<body><h1>git-add(1)</h1><p>Add file contents.</p><h2>SEE ALSO</h2>
<p><a href="git-status.html">git-status(1)</a> <a href="git-rm.html">git-rm(1)</a> <a href="git-reset.html">git-reset(1)</a></p></body>"""
    assert texts(load(flat))[-1] == "git-status(1) git-rm(1) git-reset(1)"
    # After a title block that holds only the heading comes the page's body, not its footer.
    index = """<body><div id="header"><h1>Git API Documents</h1></div><div id="content">
<p>Internal APIs.</p><ul><li><a href="api-merge.html">merge API</a></li><li><a href="api-trace2.html">Trace2 API</a></li></ul>
</div></body>"""
    assert texts(load(index)) == ["Git API Documents", "Internal APIs.", "merge API\nTrace2 API"]
    # A page without headings may be nothing but links: it keeps them.
    links = '<body><ul><li><a href="a.html">Alpha</a></li><li><a href="b.html">Beta</a></li></ul></body>'
    assert texts(load(links)) == ["Alpha\nBeta"]


SECTIONS = "".join(f'<h2 id="s{i}">Section {i}</h2><p>Text of section {i}.</p>' for i in range(1, 9))


def test_a_table_of_contents_after_the_title_is_dropped_but_a_list_citing_a_few_sections_is_kept() -> None:
    toc = "".join(f'<li><a href="#s{i}">Section {i}</a></li>' for i in range(1, 9))
    doc = load(f"<body><h1>Manual</h1><ul>{toc}</ul>{SECTIONS}</body>")
    assert "Section 1\nSection 2" not in "\n".join(texts(doc))
    assert texts(doc)[:3] == ["Manual", "Section 1", "Text of section 1."]
    cited = '<ol><li><a href="#s2">Misuses of the API.</a></li><li><a href="#s5">Lock orders.</a></li><li><a href="#s7">Races.</a></li></ol>'
    doc = load(f"<body><h1>Helgrind</h1><p>It detects three classes of errors:</p>{cited}{SECTIONS}</body>")
    assert "Misuses of the API.\nLock orders.\nRaces." in texts(doc)


def test_an_api_synopsis_is_never_a_table_of_contents() -> None:
    synopsis = "<pre>" + "\n".join(f'int <a href="#s{i}">section_{i}</a>(void);' for i in range(1, 9)) + "</pre>"
    doc = load(f"<body><h1>API</h1>{synopsis}{SECTIONS}</body>")
    assert doc.blocks[1].kind == "code" and "section_8" in doc.blocks[1].text


PRAGMAS = """<body><h1>PRAGMA Statements</h1><h2>List Of PRAGMAs</h2>
<ul><li><a href='pragma.html#pragma_busy_timeout'>busy_timeout</a></li>
<li><a href='pragma.html#pragma_count_changes'><s>count_changes&sup1;</s></a></li>
<li><a href='pragma.html#pragma_synchronous'>synchronous</a></li></ul>
<p>Notes: struck-through pragmas are deprecated.
<a name="pragma_busy_timeout"></a>
<h _id=pragma_busy_timeout style="display:none"> PRAGMA busy_timeout</h><hr>
<p><b>PRAGMA busy_timeout = </b><i>milliseconds</i><b>;</b></p>
<p>Query or change the setting of the busy timeout.
<p>See also <a href="c3ref/busy_timeout.html">sqlite3_busy_timeout()</a> and <a href="c3ref/busy_handler.html">sqlite3_busy_handler()</a>.
<a name="pragma_count_changes"></a>
<h _id=pragma_count_changes style="display:none"> PRAGMA count_changes</h><hr>
<p>This pragma is deprecated.
<a name="pragma_synchronous"></a>
<h _id=pragma_synchronous style="display:none"> PRAGMA synchronous</h><hr>
<p>Query or change the "synchronous" flag.</p>
<dl><dt><b>NORMAL</b> (1)</dt><dd>The database engine still syncs at the most critical moments.</dd></dl>
<p>The default setting is FULL.</p>
<h2>PRAGMA command syntax</h2><p>A pragma may have an optional schema-name.</p></body>"""


def paths_of(doc: ParsedDocument, start: str) -> list[tuple[str, ...]]:
    return [block.heading_path for block in doc.blocks if block.text.startswith(start)]


def test_anchors_the_pages_index_lists_start_entries_titled_by_the_index() -> None:
    doc = load(PRAGMAS, "pragma.html")
    pragmas = ("PRAGMA Statements", "List Of PRAGMAs")
    assert paths_of(doc, "Notes: struck-through") == [pragmas]
    assert paths_of(doc, "PRAGMA busy_timeout =") == [(*pragmas, "busy_timeout")]
    # The next anchor stands in this unclosed paragraph of links: it still starts its entry.
    assert paths_of(doc, "See also sqlite3_busy_timeout()") == [(*pragmas, "busy_timeout")]
    assert paths_of(doc, "This pragma is deprecated") == [(*pragmas, "count_changes")]  # without the footnote mark
    assert paths_of(doc, "The database engine still syncs") == [(*pragmas, "synchronous", "NORMAL (1)")]
    assert paths_of(doc, "The default setting is FULL") == [(*pragmas, "synchronous")]
    assert paths_of(doc, "A pragma may have") == [("PRAGMA Statements", "PRAGMA command syntax")]
    assert [b.text for b in doc.blocks if b.kind == "term"] == ["busy_timeout", "count_changes", "synchronous", "NORMAL (1)"]


def test_anchors_start_no_entry_without_an_index_or_before_a_heading() -> None:
    two = PRAGMAS.replace("<li><a href='pragma.html#pragma_synchronous'>synchronous</a></li>", "")
    assert [b.text for b in load(two, "pragma.html").blocks if b.kind == "term"] == ["NORMAL (1)"]
    # Named in running text, not by an index item: a reference, not an entry.
    prose = PRAGMAS.replace("<ul>", "<p>See ").replace("</ul>", "</p>").replace("<li>", " ").replace("</li>", " ")
    assert [b.text for b in load(prose, "pragma.html").blocks if b.kind == "term"] == ["NORMAL (1)"]
    # Another page's anchors of the same name are not this page's.
    assert [b.text for b in load(PRAGMAS, "other.html").blocks if b.kind == "term"] == ["NORMAL (1)"]


def test_texinfo_node_anchors_before_a_navigation_strip_still_point_at_headings() -> None:
    nodes = "".join(
        f'<span id="N{i}"></span><div class="header"><p>Next: <a href="#N{i + 1}">N{i + 1}</a>, '
        f'Up: <a href="#Top">Top</a></p></div><h2 class="chapter">{i} Chapter</h2><p>Body {i}.</p>'
        for i in range(1, 5)
    )
    contents = "".join(f'<li><a id="toc-{i}" href="#N{i}">{i} Chapter</a></li>' for i in range(1, 5))
    doc = load(f'<body><h1 id="Top">Manual</h1><div class="contents"><ul>{contents}</ul></div>{nodes}</body>')
    assert not [b for b in doc.blocks if b.kind == "term"]  # the contents name headings, not entries
    assert "1 Chapter\n2 Chapter\n3 Chapter\n4 Chapter" not in texts(doc)  # and are dropped


def test_a_hidden_main_is_still_read_as_the_pages_content() -> None:
    html = f'<body>{SITE_MENU}<main hidden><h1>Guide</h1><p>Read <a href="a.html">this</a> and <a href="b.html">that</a>.</p></main></body>'
    assert texts(load(html)) == ["Guide", "Read this and that."]


TEXINFO_NODE = """<div class="section-level-extent" id="{id}"><div class="nav-panel"><p>
Next: <a href="#{next}" accesskey="n" rel="next">{next}</a>, Previous: <a href="#{prev}" accesskey="p" rel="prev">{prev}</a>,
Up: <a href="#Top" accesskey="u" rel="up">Time</a> &nbsp; [<a href="#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a
href="#Index" title="Index" rel="index">Index</a>]</p></div>
<h3 class="section">{id}</h3><p>{body}</p>{menu}</div>"""


def test_texinfo_next_previous_up_strips_mid_page_and_node_menus_are_dropped() -> None:
    menu = '<ul class="mini-toc"><li><a href="#Format" accesskey="1">Format</a></li><li><a href="#Examples" accesskey="2">Examples</a></li></ul>'
    nodes = [("Setting", "Top", "Format", "The format string decides what is shown.", menu),
             ("Format", "Setting", "Examples", "Use %e for the elapsed time.", ""),
             ("Examples", "Format", "Accuracy", "See <a href='#Format'>Format</a> and <a href='#Setting'>Setting</a>.", "")]
    body = "".join(TEXINFO_NODE.format(id=i, prev=p, next=n, body=b, menu=m) for i, p, n, b, m in nodes)
    assert texts(load(f'<body><h1 id="Top">GNU time</h1><p>Measures programs.</p>{body}</body>', "time.html")) == [
        "GNU time", "Measures programs.",
        "Setting", "The format string decides what is shown.",
        "Format", "Use %e for the elapsed time.",
        "Examples", "See Format and Setting.",  # links in running text are the text's own
    ]


def test_a_short_list_of_links_in_a_section_is_not_a_sequence_strip_without_sequence_links() -> None:
    html = """<body><h1>Tools</h1><p>Intro.</p><h2>Related</h2><p><a href="a.html">Memcheck</a> | <a href="b.html">Massif</a></p>
<h2>Next</h2><p>Last words.</p></body>"""
    assert "Memcheck | Massif" in texts(load(html))
