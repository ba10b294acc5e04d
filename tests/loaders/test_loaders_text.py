"""Plain-text loading: paragraphs, titles, reST headings, encodings, bad input."""

from __future__ import annotations

import codecs

import pytest

from sourcebook.errors import EmptyDocumentError, LoaderError
from sourcebook.loaders.plaintext import TextLoader
from sourcebook.loaders.text import clean_code, clean_inline, decode_text, title_from_source

load = TextLoader().load


def test_paragraphs_split_on_blank_lines_and_title_is_first_line() -> None:
    doc = load(b"Release notes\n\nFirst   paragraph\nwraps here.\n  \t\nSecond one.\n", "notes.txt")
    assert doc.title == "Release notes"
    assert [b.text for b in doc.blocks] == ["Release notes", "First paragraph wraps here.", "Second one."]
    assert {b.kind for b in doc.blocks} == {"paragraph"}
    assert all(b.heading_path == () and b.page is None for b in doc.blocks)
    assert doc.media_type == "text/plain"
    assert doc.metadata["encoding"] == "utf-8"


def test_long_first_line_title_is_cut_at_a_word() -> None:
    doc = load(("word " * 60).encode(), "long.txt")
    assert len(doc.title) <= 101 and doc.title.endswith("…")


def test_rst_section_titles_become_headings_with_paths() -> None:
    rst = (
        "=========\nGuide\n=========\n\nIntro.\n\n"
        "Install\n-------\nRun pip.\n\n"
        "Details\n~~~~~~~\n\nMore.\n\n"
        "Usage\n-----\n\nUse it.\n\n"
        "=====\n\nnot a heading\n"
    )
    doc = load(rst.encode(), "guide.rst")
    assert doc.title == "Guide"
    got = [(b.kind, b.text, b.heading_path) for b in doc.blocks]
    assert got == [
        ("heading", "Guide", ("Guide",)),
        ("paragraph", "Intro.", ("Guide",)),
        ("heading", "Install", ("Guide", "Install")),
        ("paragraph", "Run pip.", ("Guide", "Install")),
        ("heading", "Details", ("Guide", "Install", "Details")),
        ("paragraph", "More.", ("Guide", "Install", "Details")),
        ("heading", "Usage", ("Guide", "Usage")),
        ("paragraph", "Use it.", ("Guide", "Usage")),
        ("paragraph", "=====", ("Guide", "Usage")),
        ("paragraph", "not a heading", ("Guide", "Usage")),
    ]


@pytest.mark.parametrize(
    ("data", "expected", "encoding"),
    [
        ("Café déjà vu à Noël, naïve façade.".encode("latin-1"), "Café déjà vu à Noël, naïve façade.", "cp1252"),
        ("Smart “quotes” – and € signs".encode("cp1252"), "Smart “quotes” – and € signs", "cp1252"),
        (codecs.BOM_UTF8 + "Grüße aus Köln".encode(), "Grüße aus Köln", "utf-8-sig"),
        ("Grüße, ὕαλον ϕαγεῖν".encode("utf-16"), "Grüße, ὕαλον ϕαγεῖν", "utf-16"),
        ("Ünïcödé in UTF-32".encode("utf-32"), "Ünïcödé in UTF-32", "utf-32"),
    ],
)
def test_encodings_are_detected(data: bytes, expected: str, encoding: str) -> None:
    assert decode_text(data, "x.txt") == (expected, encoding)


def test_cyrillic_legacy_encoding_is_not_mistaken_for_western() -> None:
    russian = "Съешь же ещё этих мягких французских булок, да выпей чаю. " * 5
    text, encoding = decode_text(russian.encode("cp1251"), "ru.txt")
    assert text == russian
    assert encoding != "cp1252"


def test_utf8_with_a_damaged_byte_stays_utf8() -> None:
    data = "résumé, naïve, déjà vu, façade".encode() + b" and a stray \xe9 byte"
    text, encoding = decode_text(data, "mixed.txt")
    assert encoding == "utf-8"
    assert text.startswith("résumé, naïve") and "stray \ufffd byte" in text


def test_declared_latin1_is_read_as_windows_1252() -> None:
    text, encoding = decode_text(b"\x93quoted\x94", "x.html", declared="ISO-8859-1")
    assert (text, encoding) == ("“quoted”", "cp1252")


@pytest.mark.parametrize(
    "data",
    [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"%PDF-1.7\n" + bytes(range(1, 32)) * 20, bytes(range(256)) * 4],
)
def test_binary_data_named_txt_is_refused(data: bytes) -> None:
    with pytest.raises(LoaderError, match="binary data, not text") as info:
        load(data, "photo.txt")
    assert info.value.source == "photo.txt"


@pytest.mark.parametrize("data", [b"", b"   \n\t\n  \r\n", codecs.BOM_UTF8, "\u200b\u00ad".encode()])
def test_empty_or_blank_text_is_an_empty_document(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError, match=r"empty\.txt"):
        load(data, "empty.txt")


def test_text_is_nfc_normalised_and_invisible_characters_dropped() -> None:
    doc = load("Cafe\u0301 co\u00adop\u200beration".encode(), "n.txt")
    assert doc.blocks[0].text == "Caf\u00e9 cooperation"


def test_cleaners() -> None:
    assert clean_inline("  a \n\t b\u00a0 c ") == "a b c"
    assert clean_code("\n\n  x = 1\r\n    y\n\n") == "  x = 1\n    y"


@pytest.mark.parametrize(
    ("source", "title"),
    [
        ("docs/My Notes.txt", "My Notes"),
        ("https://example.com/a/guide.html?x=1", "guide"),
        ("https://example.com/", "example.com"),
    ],
)
def test_fallback_title_from_source(source: str, title: str) -> None:
    assert title_from_source(source) == title
