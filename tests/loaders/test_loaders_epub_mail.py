"""EPUB and e-mail loading: chapters in spine order, DRM refused; .eml and .mbox with
subject, sender and date as metadata."""

from __future__ import annotations

import pytest

from sourcebook.errors import EmptyDocumentError, LoaderError
from sourcebook.loaders.epub import EpubLoader
from sourcebook.loaders.mail import EmlLoader, MboxLoader
from sourcebook.loaders.sources import _sniff
from tests.loaders.office_files import make_epub, make_mbox, make_message

CHAPTERS = [
    ("one.xhtml", "<h1>Letter 1</h1><p>To Mrs. Saville, England.</p>"),
    ("two.xhtml", "<h1>Chapter 1</h1><h2>Geneva</h2><p>I am by birth a Genevese.</p>"
                  "<table><tr><th>Name</th><th>Age</th></tr><tr><td>Victor</td><td>17</td></tr></table>"),
]  # fmt: skip


def test_epub_reads_chapters_in_spine_order_with_heading_paths() -> None:
    data = make_epub(CHAPTERS, title="Frankenstein")
    doc = EpubLoader().load(data, "book.epub")
    assert doc.title == "Frankenstein"
    assert doc.metadata == {"author": "Mary Shelley", "lang": "en", "chapters": 2}
    geneva = ("Chapter 1", "Geneva")
    assert [(b.kind, b.text, b.heading_path) for b in doc.blocks] == [
        ("heading", "Letter 1", ("Letter 1",)),
        ("paragraph", "To Mrs. Saville, England.", ("Letter 1",)),
        ("heading", "Chapter 1", ("Chapter 1",)),  # the next chapter's h1 closes the first
        ("heading", "Geneva", geneva),
        ("paragraph", "I am by birth a Genevese.", geneva),
        ("table", "| Name | Age |\n| --- | --- |\n| Victor | 17 |", geneva),
    ]
    assert _sniff(data) == "application/epub+zip"  # recognised without an extension


def test_epub_with_drm_or_without_its_package_document_is_refused() -> None:
    with pytest.raises(LoaderError, match=r"^book.epub: the EPUB's chapters are encrypted \(DRM\)"):
        EpubLoader().load(make_epub(CHAPTERS, encrypted=True), "book.epub")
    with pytest.raises(LoaderError, match=r"^book.epub: not an EPUB file \(it is not a zip package\)$"):
        EpubLoader().load(b"<html>no</html>", "book.epub")
    with pytest.raises(LoaderError, match=r"^book.epub: corrupt EPUB file"):
        EpubLoader().load(make_epub(CHAPTERS)[:300], "book.epub")
    with pytest.raises(EmptyDocumentError, match=r"^book.epub: no text found$"):
        EpubLoader().load(make_epub([("a.xhtml", "<p> </p>")]), "book.epub")


def test_eml_subject_sender_and_date_are_metadata_and_the_plain_body_is_read() -> None:
    message = make_message("Budget 2027", "Ada Lovelace <ada@example.org>", "Hello team,\n\nThe budget is 40k.\n",
                           html="<p>Hello <b>team</b></p><p>HTML version</p>")  # fmt: skip
    message.add_attachment(b"%PDF-", maintype="application", subtype="pdf", filename="plan.pdf")
    doc = EmlLoader().load(message.as_bytes(), "budget.eml")
    assert doc.title == "Budget 2027"
    assert doc.metadata == {
        "subject": "Budget 2027",
        "sender": "Ada Lovelace <ada@example.org>",
        "to": "team@example.org",
        "date": "2026-03-03T10:00:00+01:00",
        "attachments": ["plan.pdf"],
    }
    assert [b.text for b in doc.blocks] == [
        "From: Ada Lovelace <ada@example.org> · To: team@example.org · Date: 2026-03-03T10:00:00+01:00",
        "Hello team,",
        "The budget is 40k.",
    ]


def test_eml_with_only_an_html_body_reads_it_as_a_page() -> None:
    message = make_message("Offsite", "bob@example.org", "")
    message.clear_content()
    message.set_content("<h2>Plan</h2><ul><li>Train at 9</li><li>Lunch</li></ul>", subtype="html")
    doc = EmlLoader().load(message.as_bytes(), "offsite.eml")
    assert [(b.kind, b.text, b.heading_path) for b in doc.blocks][1:] == [
        ("heading", "Plan", ("Plan",)),
        ("list", "Train at 9\nLunch", ("Plan",)),
    ]


def test_mbox_has_a_section_per_message_and_escaped_from_lines_read_as_written() -> None:
    first = make_message("Budget 2027", "ada@example.org", "The budget is 40k.\nFrom now on, ask first.\n")
    second = make_message("Re: Budget 2027", "bob@example.org", "Agreed.\n", when="Wed, 04 Mar 2026 08:30:00 +0000")
    doc = MboxLoader().load(make_mbox([first, second]), "team.mbox")
    assert doc.title == "team"
    assert doc.metadata == {"messages": 2}
    assert [(b.kind, b.text, b.heading_path) for b in doc.blocks] == [
        ("heading", "Budget 2027", ("Budget 2027",)),
        ("paragraph", "From: ada@example.org · To: team@example.org · Date: 2026-03-03T10:00:00+01:00", ("Budget 2027",)),
        ("paragraph", "The budget is 40k. From now on, ask first.", ("Budget 2027",)),  # escaped in the file
        ("heading", "Re: Budget 2027", ("Re: Budget 2027",)),
        ("paragraph", "From: bob@example.org · To: team@example.org · Date: 2026-03-04T08:30:00+00:00", ("Re: Budget 2027",)),
        ("paragraph", "Agreed.", ("Re: Budget 2027",)),
    ]


def test_files_that_are_not_mail_are_refused_by_name() -> None:
    with pytest.raises(LoaderError, match=r"^x.eml: not an e-mail message \(it does not start with header fields\)$"):
        EmlLoader().load(b"\x89PNG\r\n\x1a\n...", "x.eml")
    with pytest.raises(LoaderError, match=r'^x.mbox: not an mbox mailbox \(it does not start with a "From " line\)$'):
        MboxLoader().load(b"Subject: hi\n\nbody\n", "x.mbox")
    with pytest.raises(EmptyDocumentError, match=r"^x.eml: no text found$"):
        EmlLoader().load(b"X-Empty: yes\n\n", "x.eml")
