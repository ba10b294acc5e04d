"""PDF loading from real generated PDFs: pages, paragraphs, titles, and every failure."""

from __future__ import annotations

import gc
import logging
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from sourcebook.errors import EmptyDocumentError, LoaderError
from sourcebook.loaders import pdf as pdf_module
from sourcebook.loaders.pdf import Paragraph, PdfLoader, TextLine, drop_running_lines, page_lines, page_paragraphs

load = PdfLoader().load

LONG = (
    "Retrieval augmented generation combines a search step with a language model so that answers "
    "can quote the documents they rely on. This paragraph is long enough to wrap over several lines."
)


def test_pages_paragraphs_and_metadata_title(make_pdf: Callable[..., bytes]) -> None:
    data = make_pdf([[LONG, "Second paragraph on page one."], ["Page two says hello."]], title="Design Notes")
    doc = load(data, "notes.pdf")
    assert doc.title == "Design Notes"
    assert [(b.kind, b.text, b.page) for b in doc.blocks] == [
        ("paragraph", LONG, 1),
        ("paragraph", "Second paragraph on page one.", 1),
        ("paragraph", "Page two says hello.", 2),
    ]
    assert all(b.heading_path == () for b in doc.blocks)
    assert doc.media_type == "application/pdf"
    assert doc.metadata["pages"] == 2


def test_larger_type_becomes_headings_with_paths(make_pdf: Callable[..., bytes]) -> None:
    pages = [
        [("User Guide", 24), ("Installing", 16), LONG, ("Upgrades", 14), "Run the upgrade command."],
        [("Usage", 16), "Search from the command line."],
    ]
    doc = load(make_pdf(pages), "guide.pdf")
    guide, install = ("User Guide",), ("User Guide", "Installing")
    assert [(b.kind, b.text, b.heading_path, b.page) for b in doc.blocks] == [
        ("heading", "User Guide", guide, 1),
        ("heading", "Installing", install, 1),
        ("paragraph", LONG, install, 1),
        ("heading", "Upgrades", (*install, "Upgrades"), 1),
        ("paragraph", "Run the upgrade command.", (*install, "Upgrades"), 1),
        ("heading", "Usage", (*guide, "Usage"), 2),
        ("paragraph", "Search from the command line.", (*guide, "Usage"), 2),
    ]
    assert doc.title == "User Guide"  # no metadata title: the first level-1 heading


def test_title_falls_back_to_first_line(make_pdf: Callable[..., bytes]) -> None:
    doc = load(make_pdf([["Quarterly report", LONG]]), "q3.pdf")
    assert doc.title == "Quarterly report"


def _lines(text: str) -> list[TextLine]:
    return [TextLine(line) for line in text.split("\n")]


def _texts(paragraphs: list[Paragraph]) -> list[str]:
    return [paragraph.text for paragraph in paragraphs]


def test_hyphenated_line_breaks_are_rejoined() -> None:
    text = "An exam-\nple of a hyphen-\nated word and Jean-\nPaul.\n\nNext paragraph."
    assert _texts(page_paragraphs(_lines(text))) == [
        "An example of a hyphenated word and Jean-Paul.",
        "Next paragraph.",
    ]


def test_short_line_ending_a_sentence_ends_a_paragraph() -> None:
    text = (
        "A long line of text that fills the measure of the page\nwith more words.\n"
        "A new paragraph begins here and\ncontinues."
    )
    assert _texts(page_paragraphs(_lines(text))) == [
        "A long line of text that fills the measure of the page with more words.",
        "A new paragraph begins here and continues.",
    ]


def test_bullets_start_paragraphs() -> None:
    text = "Features of the library that it offers:\n• one long item that fills up the line\nand wraps\n• two"
    assert _texts(page_paragraphs(_lines(text))) == [
        "Features of the library that it offers:",
        "• one long item that fills up the line and wraps",
        "• two",
    ]


def test_text_without_positions_is_still_split() -> None:
    """Should pypdf's visitor fragments ever disagree with its text, the text wins."""

    class Page:
        def extract_text(self, visitor_text: Callable[..., None]) -> str:
            visitor_text("something else", [1, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, 700], None, 12)
            return "Real text\n\nof the page."

    assert page_lines(Page()) == [TextLine("Real text"), TextLine(""), TextLine("of the page.")]  # type: ignore[arg-type]


def test_gaps_font_sizes_and_columns_separate_paragraphs() -> None:
    lines = [
        TextLine("Results", 700, 16),  # heading: larger font
        TextLine("first line of a paragraph that fills", 680, 10),
        TextLine("the whole measure of the column too", 668, 10),
        TextLine("after a wide gap a new paragraph that", 640, 10),
        TextLine("also fills the measure of the column", 628, 10),
        TextLine("top of the second column continues", 700, 10),
        TextLine("on the next line of that column text", 688, 10),
    ]
    assert _texts(page_paragraphs(lines)) == [
        "Results",
        "first line of a paragraph that fills the whole measure of the column too",
        "after a wide gap a new paragraph that also fills the measure of the column",
        "top of the second column continues on the next line of that column text",
    ]


def test_footnotes_set_tighter_do_not_split_the_prose_into_lines() -> None:
    """Each size has its own line spacing: 8pt footnotes 7 apart do not make the 12-apart lines
    of the 10pt text above them look like paragraphs of one line each."""
    lines = [
        TextLine("a paragraph of the body text that fills", 700, 10),
        TextLine("the measure, on a page with footnotes", 688, 10),
        TextLine("after a wide gap a new paragraph that", 660, 10),
        TextLine("also fills the measure of the column", 648, 10),
        TextLine("1A footnote set in smaller type that", 100, 8),
        TextLine("runs over two lines at a tight spacing", 93, 8),
    ]
    assert _texts(page_paragraphs(lines)) == [
        "a paragraph of the body text that fills the measure, on a page with footnotes",
        "after a wide gap a new paragraph that also fills the measure of the column",
        "1A footnote set in smaller type that runs over two lines at a tight spacing",
    ]


def test_running_headers_and_footers_are_dropped(make_pdf: Callable[..., bytes]) -> None:
    content = ["Welcome to the handbook.", "Holidays are 25 days.", "Expenses need receipts."]
    pages = [["ACME Internal", text, f"Page {n} of 3"] for n, text in enumerate(content, start=1)]
    doc = load(make_pdf(pages), "handbook.pdf")
    assert [(b.text, b.page) for b in doc.blocks] == [(text, n) for n, text in enumerate(content, start=1)]
    assert doc.title == "Welcome to the handbook."


def test_running_lines_need_enough_pages() -> None:
    pages = [[TextLine("Header"), TextLine("Body")], [TextLine("Header"), TextLine("Other")]]
    assert drop_running_lines(pages) == pages


def test_a_pdf_of_drawings_without_text_is_empty(make_pdf: Callable[..., bytes]) -> None:
    """Its pages go to OCR, which reads nothing in a black square (test_loaders_ocr.py has real scans)."""
    pytest.importorskip("rapidocr_onnxruntime")
    with pytest.raises(EmptyDocumentError, match=r"scan.pdf: no text found: no page has a text layer, and OCR read"):
        load(make_pdf([[], []]), "scan.pdf")


def test_encrypted_pdf_needing_a_password(make_pdf: Callable[..., bytes], encrypt_pdf: Callable[..., bytes]) -> None:
    data = encrypt_pdf(make_pdf([["Secret plans."]]), user_password="hunter2")
    with pytest.raises(LoaderError, match="encrypted PDF") as info:
        load(data, "secret.pdf")
    assert info.value.source == "secret.pdf"


def test_pdf_encrypted_with_empty_user_password_is_read(
    make_pdf: Callable[..., bytes], encrypt_pdf: Callable[..., bytes]
) -> None:
    data = encrypt_pdf(make_pdf([["Readable by anyone."]]), user_password="")
    assert load(data, "perms.pdf").blocks[0].text == "Readable by anyone."


def test_aes_encrypted_pdf_with_empty_password(
    make_pdf: Callable[..., bytes], encrypt_pdf: Callable[..., bytes]
) -> None:
    pytest.importorskip("cryptography")
    data = encrypt_pdf(make_pdf([["AES protected."]]), user_password="", algorithm="AES-256")
    assert load(data, "aes.pdf").blocks[0].text == "AES protected."


@pytest.mark.parametrize(
    "mangle",
    [
        lambda data: b"%PDF-1.7\nthis is not really a pdf",
        lambda data: data[: len(data) // 3],
        lambda data: b"PK\x03\x04" + b"a zip archive named .pdf " * 40,
    ],
    ids=["garbage", "truncated", "not-a-pdf"],
)
def test_corrupt_pdf(make_pdf: Callable[..., bytes], mangle: Callable[[bytes], bytes]) -> None:
    data = mangle(make_pdf([[LONG]]))
    with pytest.raises(LoaderError, match="corrupt or unreadable PDF: ") as info:
        load(data, "broken.pdf")
    assert info.value.source == "broken.pdf"


def test_a_damaged_page_does_not_lose_the_others(
    make_pdf: Callable[..., bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pdf_module.read_page
    calls: list[int] = []

    def flaky(page: Any, reader: Any = None) -> tuple[list[TextLine], list[Any]]:
        calls.append(1)
        if len(calls) == 2:
            raise KeyError("/Contents")
        return real(page, reader)

    monkeypatch.setattr(pdf_module, "read_page", flaky)
    doc = load(make_pdf([["One."], ["Two."], ["Three."]]), "flaky.pdf")
    assert [(b.text, b.page) for b in doc.blocks] == [("One.", 1), ("Three.", 3)]
    assert doc.metadata["unreadable_pages"] == [2]


def test_empty_pdf_file() -> None:
    with pytest.raises(EmptyDocumentError, match="empty file"):
        load(b"", "zero.pdf")


def test_pypdf_noise_is_silenced(make_pdf: Callable[..., bytes], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(LoaderError):
        load(b"%PDF-1.4\n1 0 obj garbage", "noisy.pdf")
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]


def test_pages_are_read_one_at_a_time_not_held_whole(
    make_pdf: Callable[..., bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17: a long PDF's lines are spooled as each page is read, so when a page is read at
    most the page before it is still in memory (all earlier pages were held before: memory grew
    with the pages), and the document is what it was: running footers dropped, every page's text
    kept."""
    real = pdf_module.read_page
    alive: weakref.WeakSet[TextLine] = weakref.WeakSet()
    held_back: list[int] = []
    read: list[int] = []

    def tracked(page: Any, reader: Any = None) -> tuple[list[TextLine], list[Any]]:
        gc.collect()
        held_back.append(len(alive))
        lines, tables = real(page, reader)
        alive.update(lines)
        read.append(len(lines))
        return lines, tables

    monkeypatch.setattr(pdf_module, "read_page", tracked)
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    pages = [[f"The {word} page says something.", f"Running footer, page {n}"] for n, word in enumerate(words, 1)]
    doc = load(make_pdf(pages), "long.pdf")
    assert held_back[0] == 0
    assert all(held <= before for held, before in zip(held_back[1:], read, strict=False))
    assert [(b.text, b.page) for b in doc.blocks] == [(f"The {w} page says something.", n) for n, w in enumerate(words, 1)]
