"""Reference structure: definition lists, option entries and man pages become units whose heading
path ends with the term; navigation strips, tables of contents and footers are dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sourcebook.chunking import chunk_document
from sourcebook.loaders.html import HtmlLoader
from sourcebook.loaders.markdown import MarkdownLoader
from sourcebook.loaders.plaintext import TextLoader
from sourcebook.loaders.reference import entry_term
from sourcebook.models import ParsedDocument

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count(texts: Sequence[str]) -> list[int]:
    return [len(_TOKEN.findall(text)) for text in texts]


def paths_of(doc: ParsedDocument, text: str) -> list[tuple[str, ...]]:
    return [block.heading_path for block in doc.blocks if text in block.text]


# An AsciiDoc man page as git-doc ships it (git-push.html), cut down.
ASCIIDOC = """<html><head><title>git-push(1)</title></head><body class="manpage">
<div id="header"><h1>git-push(1) Manual Page</h1><h2>NAME</h2>
<div class="sectionbody"><p>git-push - Update remote refs</p></div></div>
<div id="toc"><div id="toctitle">Table of Contents</div><a href="#_options">OPTIONS</a></div>
<div id="content"><div class="sect1"><h2 id="_options">OPTIONS</h2><div class="sectionbody">
<div class="dlist"><dl>
<dt class="hdlist1">--all</dt><dd><p>Push all branches (i.e. refs under <code>refs/heads/</code>).</p></dd>
<dt class="hdlist1">-n</dt><dt class="hdlist1">--dry-run</dt><dd><p>Do everything except actually send the updates.</p></dd>
<dt class="hdlist1">--[no-]force-with-lease</dt>
<dt class="hdlist1">--force-with-lease=&lt;refname&gt;</dt>
<dt class="hdlist1">--force-with-lease=&lt;refname&gt;:&lt;expect&gt;</dt>
<dd><p>Usually, "git push" refuses to update a remote ref that is not an ancestor of the local ref.</p>
<div class="paragraph"><p>This option overrides this restriction if the current value of the remote ref is the expected value.</p></div>
<div class="dlist"><dl><dt class="hdlist1">&lt;expect&gt;</dt><dd><p>The value the ref must have.</p></dd></dl></div>
</dd>
</dl></div>
<div class="paragraph"><p>Options may be given in any order.</p></div>
</div></div></div>
<div id="footer"><div id="footer-text">Last updated 2024-05-31 00:35:55 UTC</div></div>
</body></html>"""

# A DocBook page (as xsltproc renders a variablelist) with its navigation strips.
DOCBOOK = """<html><head><title>Server Configuration</title></head><body>
<div class="navheader"><table width="100%"><tr><th colspan="3">Chapter 3. Server</th></tr>
<tr><td><a accesskey="p" href="a.html">Prev</a></td><th>Chapter 3</th><td><a href="c.html">Next</a></td></tr>
</table><hr></div>
<div class="sect1"><h2 class="title">3.1. Settings</h2>
<div class="toc"><dl class="toc"><dt><a href="#x">3.1.1. Memory</a></dt></dl></div>
<p>These settings control the server.</p>
<div class="variablelist"><dl class="variablelist">
<dt id="cache-size"><span class="term"><code class="varname">cache_size</code> (<code class="type">integer</code>)</span></dt>
<dd><p>Sets the size of the cache. The default is <code class="literal">128MB</code>.</p></dd>
<dt id="max-clients"><span class="term"><code class="varname">max_clients</code> (<code class="type">integer</code>)</span></dt>
<dd><p>Determines the maximum number of concurrent clients. The default is typically 100 clients.</p></dd>
</dl></div></div>
<p>Prev | Up | Next</p>
<div class="navfooter"><hr><table><tr><td><a href="a.html">Prev</a></td><td><a href="index.html">Home</a></td></tr></table></div>
<ol class="breadcrumb"><li>Docs</li><li>Server</li></ol>
</body></html>"""


def test_html_definition_list_entries_end_their_heading_path_with_the_term() -> None:
    doc = HtmlLoader().load(ASCIIDOC.encode(), "git-push.html")
    options = ("git-push(1) Manual Page", "OPTIONS")
    assert paths_of(doc, "Push all branches") == [(*options, "--all")]
    assert paths_of(doc, "Do everything except") == [(*options, "-n, --dry-run")]
    lease = (*options, "--[no-]force-with-lease, --force-with-lease=<refname>")
    assert paths_of(doc, "overrides this restriction") == [lease]
    assert paths_of(doc, "The value the ref must have") == [(*lease, "<expect>")]
    assert paths_of(doc, "any order") == [options]  # after the list: the section again, not its last term
    text = doc.text
    assert "Table of Contents" not in text and "Last updated" not in text


def test_docbook_variablelist_entries_and_navigation_dropped() -> None:
    doc = HtmlLoader().load(DOCBOOK.encode(), "config.html")
    assert paths_of(doc, "Sets the size of the cache") == [("3.1. Settings", "cache_size (integer)")]
    assert paths_of(doc, "maximum number of concurrent") == [("3.1. Settings", "max_clients (integer)")]
    for chrome in ("Prev", "Next", "Home", "Chapter 3", "3.1.1. Memory", "Docs"):
        assert chrome not in doc.text, chrome


def test_a_docbook_navigation_table_marked_by_its_summary_is_dropped() -> None:
    footer = ('<div><br><table class="nav" width="100%" summary="Navigation footer"><tr>'
              '<td><a accesskey="p" href="b.html">&lt;&lt; 4. Memcheck</a></td><td><a href="index.html">Up</a></td>'
              '<td><a accesskey="n" href="d.html">6. Callgrind &gt;&gt;</a></td></tr></table></div>')
    answers = '<table summary="Q and A Div"><tr><td>Why does it crash?</td><td>Read the FAQ.</td></tr></table>'
    page = DOCBOOK.replace("</dl></div></div>", f"</dl></div>{answers}{footer}</div>")
    text = HtmlLoader().load(page.encode(), "config.html").text
    assert "Memcheck" not in text and "Callgrind" not in text
    assert "Read the FAQ." in text  # a table summarised otherwise is content


def test_entries_are_chunks_of_their_own_with_the_term_in_the_heading_path() -> None:
    doc = HtmlLoader().load(DOCBOOK.encode(), "config.html")
    chunks = chunk_document(doc, count, max_tokens=48, overlap=0.0)
    by_term = {chunk.heading_path[-1]: chunk for chunk in chunks}
    cache, clients = by_term["cache_size (integer)"], by_term["max_clients (integer)"]
    assert "128MB" in cache.text and "concurrent" not in cache.text
    assert "concurrent" in clients.text and "128MB" not in clients.text
    assert clients.prefix == "Server Configuration > 3.1. Settings > max_clients (integer)"


MARKDOWN = """# Tool

## Options

`--force`
: Overwrite existing files.

`--depth`
: How deep to go. The default is `3`.

Options come after the command.

## Settings

- **timeout**: seconds to wait before giving up. Default: 30.
- **retries** - how many times to retry.
  - nested note

## Roles

- **Lead:** runs the call.
- **Scribe:** takes notes.

## Steps

- **Bold** start of a plain list
- a plain item
"""


def test_markdown_definition_lists_and_bold_term_lists() -> None:
    doc = MarkdownLoader().load(MARKDOWN.encode(), "tool.md")
    assert paths_of(doc, "How deep to go") == [("Tool", "Options", "--depth")]
    assert paths_of(doc, "Overwrite existing") == [("Tool", "Options", "--force")]
    assert paths_of(doc, "come after the command") == [("Tool", "Options")]
    assert paths_of(doc, "timeout: seconds to wait") == [("Tool", "Settings", "timeout")]  # the item as written
    assert paths_of(doc, "nested note") == [("Tool", "Settings", "retries")]
    assert paths_of(doc, "Lead: runs the call") == [("Tool", "Roles", "Lead")]  # the colon inside the bold
    assert paths_of(doc, "a plain item") == [("Tool", "Steps")]  # not every item names a term: a list


MAN_PAGE = """GIT-PUSH(1)                       Git Manual                       GIT-PUSH(1)

NAME
       git-push - Update remote refs along with associated objects

SYNOPSIS
       git push [--all | --mirror | --tags] [--follow-tags] [--atomic] [-n | --dry-run]
                  [--repo=<repository>] [-f | --force]

OPTIONS
       --all
           Push all branches (i.e. refs under refs/heads/); cannot be used
           with other <refspec>.

       -n, --dry-run
           Do everything except actually send the updates.

       Unrelated closing remark of the section.

Git 2.39.5                        10/07/2025                       GIT-PUSH(1)
"""


def test_man_page_text_options_are_entries() -> None:
    doc = TextLoader().load(MAN_PAGE.encode(), "git-push.1.txt")
    assert doc.title == "git-push - Update remote refs along with associated objects"
    assert paths_of(doc, "Push all branches") == [("OPTIONS", "--all")]
    assert paths_of(doc, "Do everything except") == [("OPTIONS", "-n, --dry-run")]
    assert paths_of(doc, "Unrelated closing remark") == [("OPTIONS",)]
    assert paths_of(doc, "[--repo=<repository>]") == [("SYNOPSIS",)]  # a long wrapped line is no term
    assert "10/07/2025" not in doc.text


def test_entry_term_shortens_signatures_and_strips_link_markers() -> None:
    signature = "json.dumps(obj, *, skipkeys=False, ensure_ascii=True, check_circular=True, allow_nan=True)¶"
    assert entry_term([signature]) == "json.dumps()"
    assert entry_term(["--all¶"]) == "--all"
