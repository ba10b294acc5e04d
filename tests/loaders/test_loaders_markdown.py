"""Markdown loading: structure from the token stream, front matter, inline syntax."""

from __future__ import annotations

import pytest

from sourcebook.errors import EmptyDocumentError, LoaderError
from sourcebook.loaders.markdown import MarkdownLoader, split_front_matter

load = MarkdownLoader().load

DOC = b"""# Getting *started*

Install with **pip** from [the index](https://pypi.org) and run `sourcebook`
on a folder.

## Options

- first item
  continued
- second item
  - nested item
1. ordered

| Name | Default |
|------|---------|
| top_k | 10 |

```python
# not a heading
def f():
    return  1
```

    indented code

> quoted text

<div>raw <b>html</b><script>alert(1)</script></div>

### Deep

Text ![diagram](d.png) here.

Setext Title
============

After setext.
"""


def test_blocks_kinds_text_and_heading_paths() -> None:
    doc = load(DOC, "guide.md")
    got = [(b.kind, b.text, b.heading_path) for b in doc.blocks]
    section = ("Getting started", "Options")
    assert got == [
        ("heading", "Getting started", ("Getting started",)),
        (
            "paragraph",
            "Install with pip from the index and run sourcebook on a folder.",
            ("Getting started",),
        ),
        ("heading", "Options", section),
        ("list", "first item continued\nsecond item\nnested item", section),
        ("list", "ordered", section),
        ("table", "| Name | Default |\n| --- | --- |\n| top_k | 10 |", section),
        ("code", "# not a heading\ndef f():\n    return  1", section),
        ("code", "indented code", section),
        ("paragraph", "quoted text", section),
        ("paragraph", "raw html", section),
        ("heading", "Deep", (*section, "Deep")),
        ("paragraph", "Text diagram here.", (*section, "Deep")),
        ("heading", "Setext Title", ("Setext Title",)),
        ("paragraph", "After setext.", ("Setext Title",)),
    ]
    assert doc.title == "Getting started"
    assert doc.media_type == "text/markdown"
    assert all(b.page is None for b in doc.blocks)


def test_front_matter_goes_to_metadata_and_title() -> None:
    data = b"""---
title: "Team Handbook"
tags: [onboarding, hr]
authors:
  - Ann
  - Bob
draft: false
---
# Welcome

Hello.
"""
    doc = load(data, "handbook.md")
    assert doc.title == "Team Handbook"
    assert doc.metadata["tags"] == ["onboarding", "hr"]
    assert doc.metadata["authors"] == ["Ann", "Bob"]
    assert doc.metadata["draft"] == "false"
    assert [b.text for b in doc.blocks] == ["Welcome", "Hello."]


def test_thematic_break_is_not_front_matter() -> None:
    meta, body = split_front_matter("Intro\n\n---\n\nkey: value\n")
    assert meta == {} and body.startswith("Intro")


def test_title_falls_back_to_first_h1_then_file_stem() -> None:
    assert load(b"## Only h2\n\ntext", "notes/release-notes.md").title == "release-notes"
    assert load(b"text\n\n# Late H1\n", "x.md").title == "Late H1"


def test_headings_reset_deeper_levels() -> None:
    doc = load(b"# A\n### C\nx\n## B\ny\n", "h.md")
    assert [b.heading_path for b in doc.blocks if b.kind == "paragraph"] == [("A", "C"), ("A", "B")]


@pytest.mark.parametrize("data", [b"", b"\n\n   \n", b"---\ntitle: x\n---\n", b"<!-- only a comment -->\n"])
def test_empty_markdown_is_an_empty_document(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError):
        load(data, "empty.md")


def test_binary_markdown_is_refused() -> None:
    with pytest.raises(LoaderError, match="binary"):
        load(b"\x00\x01\x02# hi", "bad.md")


def test_a_table_keeps_its_caption_and_introducing_sentence_in_every_part() -> None:
    """As in PDFs (loaders/pdf_tables.py): the paragraph introducing a table (ending with ":")
    and a caption paragraph before it open every part, so each chunk says what its rows are."""
    rows = "".join(f"| libfoo{i} | {1000 + i} |\n" for i in range(60))
    text = (
        "# Sizes\n\nMirrors keep the archive small.\n\nSizes were measured on Debian 13:\n\n"
        f"Table 1: Installed size\n\n| Package | Size (kB) |\n| --- | --- |\n{rows}\nThe end.\n"
    )
    doc = MarkdownLoader().load(text.encode(), "sizes.md")
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert len(tables) > 2
    lead = "Sizes were measured on Debian 13:\nTable 1: Installed size\n| Package | Size (kB) |\n| --- | --- |\n"
    assert all(t.text.startswith(lead) for t in tables)
    assert [b.text for b in doc.blocks if b.kind == "paragraph"] == ["Mirrors keep the archive small.", "The end."]
    plain = MarkdownLoader().load(b"A sentence that ends here.\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n", "t.md")
    assert [b.kind for b in plain.blocks] == ["paragraph", "table"]  # not introducing the table: stays
