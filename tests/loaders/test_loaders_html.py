"""HTML loading: main content only, heading paths, lists/tables/code, decoding."""

from __future__ import annotations

import pytest

from sourcebook.errors import EmptyDocumentError
from sourcebook.loaders.html import HtmlLoader

load = HtmlLoader().load

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Guide · Docs</title>
<meta name="description" content="How to   use it"><style>p{}</style></head>
<body>
<header><h1>Site name</h1></header>
<nav><ul><li>Home</li><li>Blog</li></ul></nav>
<div role="navigation">crumbs</div>
<main>
  <article>
    <header><h1>User <em>guide</em></h1></header>
    <p>Intro with <a href="#">a link</a> and<br>a break.</p>
    <div>Loose text in a div <span>with inline</span><p>then a paragraph</p>and a tail</div>
    <h2>Install</h2>
    <ul><li>Step one<ul><li>detail</li></ul></li><li>Step two</li></ul>
    <pre><code>pip install  sourcebook
  --upgrade</code></pre>
    <h3>Options</h3>
    <table><tr><th>Name</th><th>Default</th></tr><tr><td>top_k</td><td>10</td></tr></table>
    <dl><dt>Term</dt><dd>Definition</dd></dl>
    <blockquote><p>Quoted</p></blockquote>
    <h2>Usage</h2>
    <p hidden>hidden text</p><p aria-hidden="true">aria hidden</p>
    <div style="display: none">invisible</div>
    <form><label>Search</label><input></form>
    <script>var tracking = 1;</script><noscript>enable js</noscript>
    <p>Use it.</p>
    <footer>Article footer</footer>
  </article>
</main>
<aside>Related posts</aside>
<footer>Copyright</footer>
</body></html>"""


def test_main_content_blocks_and_heading_paths() -> None:
    doc = load(PAGE.encode(), "guide.html")
    got = [(b.kind, b.text, b.heading_path) for b in doc.blocks]
    guide, install, options, usage = (
        ("User guide",),
        ("User guide", "Install"),
        ("User guide", "Install", "Options"),
        ("User guide", "Usage"),
    )
    assert got == [
        ("heading", "User guide", guide),
        ("paragraph", "Intro with a link and a break.", guide),
        ("paragraph", "Loose text in a div with inline", guide),
        ("paragraph", "then a paragraph", guide),
        ("paragraph", "and a tail", guide),
        ("heading", "Install", install),
        ("list", "Step one\ndetail\nStep two", install),
        ("code", "pip install  sourcebook\n  --upgrade", install),
        ("heading", "Options", options),
        ("table", "| Name | Default |\n| --- | --- |\n| top_k | 10 |", options),
        ("term", "Term", (*options, "Term")),
        ("paragraph", "Definition", (*options, "Term")),
        ("paragraph", "Quoted", options),
        ("heading", "Usage", usage),
        ("paragraph", "Use it.", usage),
        ("paragraph", "Article footer", usage),
    ]
    assert doc.title == "Guide · Docs"
    assert doc.media_type == "text/html"
    assert doc.metadata == {"encoding": "utf-8", "lang": "en", "description": "How to use it"}


def test_body_is_used_without_main_and_page_chrome_is_dropped() -> None:
    html = b"""<html><body><header><a>Logo</a></header><nav>Menu</nav>
    <div id="content"><h1>Post</h1><div>Body text in a div.</div></div>
    <div role="contentinfo">Legal</div><footer>Footer</footer></body></html>"""
    doc = load(html, "https://example.com/blog/post.html")
    assert [b.text for b in doc.blocks] == ["Post", "Body text in a div."]
    assert doc.title == "Post"  # no <title>: first h1


def test_title_falls_back_to_source_stem() -> None:
    assert load(b"<p>Just text</p>", "pages/about-us.htm").title == "about-us"


def test_several_articles_are_all_read() -> None:
    html = b"<body><article><h2>One</h2><p>a</p></article><article><h2>Two</h2><p>b</p></article></body>"
    doc = load(html, "list.html")
    assert [(b.text, b.heading_path) for b in doc.blocks if b.kind == "paragraph"] == [
        ("a", ("One",)),
        ("b", ("Two",)),
    ]


def test_empty_main_falls_back_to_body() -> None:
    doc = load(b"<body><main></main><div>Rendered elsewhere</div></body>", "x.html")
    assert [b.text for b in doc.blocks] == ["Rendered elsewhere"]


def test_a_table_caption_opens_every_part_of_a_long_table() -> None:
    rows = "".join(f"<tr><td>option_{i}</td><td>{i}</td></tr>" for i in range(60))
    doc = load(f"<body><table><caption>Table 3: Options</caption><tr><th>Name</th><th>Default</th></tr>{rows}</table></body>".encode(), "t.html")
    assert len(doc.blocks) > 1
    assert all(b.kind == "table" and b.text.startswith("Table 3: Options\n| Name | Default |\n| --- | --- |\n") for b in doc.blocks)
    assert [line for b in doc.blocks for line in b.text.split("\n")[3:]] == [f"| option_{i} | {i} |" for i in range(60)]


def test_layout_tables_are_read_as_containers() -> None:
    html = (
        b"<body><table><tr><td><h1>Old site</h1>"
        b"<table><tr><td>cell</td></tr></table><p>Para</p></td></tr></table></body>"
    )
    doc = load(html, "old.html")
    assert [(b.kind, b.text) for b in doc.blocks] == [("heading", "Old site"), ("table", "| cell |\n| --- |"), ("paragraph", "Para")]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ('<meta charset="windows-1251"><p>Привет мир</p>'.encode("cp1251"), "Привет мир"),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"><p>Café “x”</p>'.encode("cp1252"),
            "Café “x”",
        ),
        ("\ufeff<p>Grüße</p>".encode("utf-16"), "Grüße"),
        ("<p>déjà vu, naïve façade</p>".encode("latin-1"), "déjà vu, naïve façade"),
    ],
)
def test_decoding_uses_bom_meta_charset_or_detection(data: bytes, expected: str) -> None:
    assert load(data, "enc.html").blocks[0].text == expected


@pytest.mark.parametrize(
    "data",
    [b"", b"<html><head><title>T</title></head><body>  </body></html>", b"<nav>menu</nav><script>x()</script>"],
)
def test_pages_without_content_are_empty_documents(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError):
        load(data, "empty.html")


def test_the_sentence_introducing_a_table_opens_every_part_with_its_caption() -> None:
    rows = "".join(f"<tr><td>option_{i}</td><td>{i}</td></tr>" for i in range(60))
    page = (
        "<body><h1>Options</h1><p>Every option has a default.</p><p>The options are listed below:</p>"
        f"<table><caption>Table 3: Options</caption><tr><th>Name</th><th>Default</th></tr>{rows}</table></body>"
    )
    doc = load(page.encode(), "t.html")
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert len(tables) > 1
    assert all(t.text.startswith("The options are listed below:\nTable 3: Options\n| Name | Default |\n") for t in tables)
    assert [b.text for b in doc.blocks if b.kind == "paragraph"] == ["Every option has a default."]
