"""DOCX, PPTX and ODT loading: headings, lists, tables, notes, slides, and bad files."""

from __future__ import annotations

import io
import sys
import zipfile

import pytest

from sourcebook.errors import EmptyDocumentError, LoaderError, MissingExtraError
from sourcebook.loaders.odt import OdtLoader
from sourcebook.loaders import office
from sourcebook.loaders.slides import PptxLoader
from sourcebook.loaders.word import DocxLoader
from tests.loaders.office_files import make_docx, make_odt, make_pptx

OLE_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504


def _blocks(doc):
    return [(b.kind, b.text, b.heading_path) for b in doc.blocks]


def test_docx_headings_lists_tables_and_footnotes() -> None:
    doc = DocxLoader().load(make_docx(), "handbook.docx")
    leave, pay, travel = ("Leave",), ("Leave", "Pay grades"), ("Travel",)
    assert doc.title == "Staff handbook"  # the Title-styled paragraph
    assert doc.metadata == {"author": "Ada Lovelace"}
    assert _blocks(doc) == [
        ("heading", "Leave", leave),
        ("paragraph", "Full-time staff get 27 days of paid holiday a year.", leave),
        ("paragraph", "Footnote 1: Counted in working days, not calendar days.", leave),  # right after its citation
        ("list", "Book leave in the portal\nTell your manager", leave),
        ("heading", "Pay grades", pay),
        ("table", "| Grade | Salary |\n| --- | --- |\n| A | 41,000 |\n| B | 52\\|000 |", pay),
        ("heading", "Travel", travel),
        ("paragraph", "Book trains, not flights, under 500 km.", travel),
    ]
    assert all(b.page is None for b in doc.blocks)


def test_pptx_one_section_per_slide_with_notes_and_tables() -> None:
    doc = PptxLoader().load(make_pptx(), "review.pptx")
    results, notes = ("Slide 1: Results",), ("Slide 1: Results", "Speaker notes")
    sales = ("Slide 2: Sales by region",)
    assert doc.title == "Quarterly review"
    assert doc.metadata == {"pages": 3, "slides": 3}
    assert [(b.kind, b.text, b.heading_path, b.page) for b in doc.blocks] == [
        ("heading", "Slide 1: Results", results, 1),
        ("list", "Revenue grew 12%\nCosts fell by a third", results, 1),
        ("heading", "Speaker notes", notes, 1),
        ("paragraph", "Mention the new office in Lyon.", notes, 1),
        ("heading", "Slide 2: Sales by region", sales, 2),
        ("table", "| Region | Sales |\n| --- | --- |\n| Europe | 40 M |\n| Asia | 25 M |", sales, 2),
        # a title-only divider keeps its title as body text, so it is a section of its own
        ("heading", "Slide 3", ("Slide 3",), 3),
        ("paragraph", "Outlook", ("Slide 3",), 3),
    ]


def test_odt_headings_notes_lists_and_repeated_cells() -> None:
    doc = OdtLoader().load(make_odt(), "guide.odt")
    birds, counts = ("Birds",), ("Birds", "Counts")
    assert doc.title == "Field guide"
    assert doc.metadata == {"author": "Grace Hopper"}
    assert _blocks(doc) == [
        ("heading", "Birds", birds),
        ("paragraph", "Robins sing at dawn and at dusk.", birds),  # the note's body is not inline
        ("paragraph", "Footnote 1: Mostly in spring.", birds),
        ("list", "wren\nrobin", birds),
        ("heading", "Counts", counts),
        ("table", "| Bird | Spring | Autumn |\n| --- | --- | --- |\n| Wren | 12 | 12 |", counts),
    ]


LOADERS = [(DocxLoader(), "a.docx", make_docx), (PptxLoader(), "a.pptx", make_pptx), (OdtLoader(), "a.odt", make_odt)]


@pytest.mark.parametrize(("loader", "name", "make"), LOADERS)
def test_truncated_files_are_named_loader_errors(loader, name, make) -> None:
    data = make()
    with pytest.raises(LoaderError, match=rf"^{name}: corrupt") as info:
        loader.load(data[: len(data) // 2], name)
    assert info.value.source == name


@pytest.mark.parametrize(("loader", "name", "make"), LOADERS)
def test_password_protected_and_legacy_files_say_so(loader, name, make) -> None:
    with pytest.raises(LoaderError, match=r"encrypted .* \(password-protected\) or an old binary Office format"):
        loader.load(OLE_HEADER, name)


@pytest.mark.parametrize(("loader", "name", "make"), LOADERS)
def test_other_content_under_the_extension_is_refused(loader, name, make) -> None:
    with pytest.raises(LoaderError, match=r"not an? [A-Z]+ file \(it is not a zip package\)$"):
        loader.load(b"just some text, renamed", name)
    other, other_kind = (make_pptx(), "a PPTX file") if name != "a.pptx" else (make_docx(), "a DOCX file")
    if name == "a.odt":
        other_kind = "a zip package of another kind"
    kind = name.removeprefix("a.").upper()
    with pytest.raises(LoaderError, match=rf"^{name}: not an? {kind} file \(it is {other_kind}\)$"):
        loader.load(other, name)


def test_encrypted_odt_is_refused_by_name() -> None:
    source = zipfile.ZipFile(io.BytesIO(make_odt()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "META-INF/manifest.xml":
                entry = b'manifest:full-path="content.xml" manifest:media-type="text/xml"'
                assert entry + b"/>" in data
                data = data.replace(entry + b"/>", entry + b"><manifest:encryption-data/></manifest:file-entry>")
            target.writestr(item, data)
    with pytest.raises(LoaderError, match=r"^a.odt: encrypted ODT \(password-protected\)"):
        OdtLoader().load(out.getvalue(), "a.odt")


def test_a_zip_bomb_is_refused_before_it_is_unpacked(monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_docx()
    unpacked = sum(item.file_size for item in zipfile.ZipFile(io.BytesIO(data)).infolist())
    monkeypatch.setattr(office, "MAX_UNPACKED_BYTES", unpacked - 1)  # a real bomb would take a minute to write
    with pytest.raises(LoaderError, match=rf"^bomb.docx: DOCX unpacks to {unpacked:,} bytes, over the limit"):
        DocxLoader().load(data, "bomb.docx")


def test_empty_document_is_an_empty_document_error() -> None:
    import docx

    out = io.BytesIO()
    docx.Document().save(out)
    with pytest.raises(EmptyDocumentError, match="^empty.docx: no text found"):
        DocxLoader().load(out.getvalue(), "empty.docx")


def test_a_missing_extra_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_docx()
    monkeypatch.setitem(sys.modules, "docx", None)  # what an install without the extra sees
    with pytest.raises(MissingExtraError) as info:
        DocxLoader().load(data, "handbook.docx")
    assert str(info.value) == (
        "handbook.docx: reading DOCX files needs the 'office' extra (docx missing): pip install 'sourcebook[office]'"
    )
