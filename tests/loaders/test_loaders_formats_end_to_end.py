"""A folder mixing every format, added to a real knowledge base (SQLite file, bundled model):
each file is a ready document, bad files are named failures that store nothing else, and
search hits cite the page, the slide, the sheet and row range, or the heading path."""

from __future__ import annotations

from pathlib import Path

from sourcebook import KnowledgeBase
from sourcebook.chunking import chunk_document
from sourcebook.embedders import create_embedder
from sourcebook.loaders.sheets import XlsxLoader
from sourcebook.settings import DEFAULT_INCLUDE, Settings
from tests.loaders.office_files import make_docx, make_epub, make_message, make_mbox, make_odt, make_pptx, make_xlsx
from tests.loaders.scans import PARAGRAPHS, image_bytes, render_page, scanned_pdf
from tests.loaders.test_loaders_pdf_tables import make_table_pdf

FILES = {
    "handbook.docx": make_docx,
    "review.pptx": make_pptx,
    "staff.xlsx": lambda: make_xlsx(staff_rows=60),
    "guide.odt": make_odt,
    "cities.csv": lambda: b"city,population\nLyon,522000\nNantes,320000\n",
    "book.epub": lambda: make_epub([("one.xhtml", "<h1>Letter 1</h1><p>To Mrs. Saville, England.</p>")]),
    "budget.eml": lambda: make_message("Budget 2027", "ada@example.org", "The budget is 40k euros.\n").as_bytes(),
    "team.mbox": lambda: make_mbox([make_message("Offsite", "bob@example.org", "The offsite is in Annecy.\n")]),
    "notes.md": lambda: b"# Notes\n\nPlain Markdown still loads.\n",
}


def test_a_folder_of_every_format_is_added_and_searchable_with_citations(tmp_path: Path, kb: KnowledgeBase) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name, make in FILES.items():
        (folder / name).write_bytes(make())
    (folder / "broken.docx").write_bytes(make_docx()[:4000])  # cut short
    results = {Path(r.source).name: r for r in kb.add(str(folder))}

    assert {name for name, r in results.items() if r.action == "added"} == set(FILES)
    assert results["broken.docx"].action == "failed"
    assert results["broken.docx"].error.endswith("broken.docx: corrupt DOCX file: File is not a zip file")
    assert {d.status for d in kb.documents() if not d.source.endswith("broken.docx")} == {"ready"}

    slide = kb.search("new office in Lyon", top_k=1)[0].chunk
    assert (Path(slide.source).name, slide.page, slide.heading_path) == (
        "review.pptx", 1, ("Slide 1: Results", "Speaker notes"),
    )
    assert slide.location == "slide 1: Results › Speaker notes"
    row = kb.search("Person 50", mode="keyword", top_k=1)[0].chunk
    sheet, rows = row.heading_path
    first, last = (int(n) for n in rows.removeprefix("Rows ").split("-"))
    assert (Path(row.source).name, sheet, row.page) == ("staff.xlsx", "Staff", None)
    assert first <= 52 <= last  # Person 50 is on sheet row 52 (header row 1, Person 0 row 2)
    assert row.location == f"sheet Staff, rows {first}-{last}"
    cities = kb.search("population of Nantes", mode="keyword", top_k=1)[0].chunk
    assert (Path(cities.source).name, cities.location) == ("cities.csv", "rows 2-3")
    assert f"{rows}\n\n| Name | Team | Started | Hours |\n| --- |" in row.text  # the header, repeated
    holiday = kb.search("how many days of paid holiday", top_k=1)[0].chunk
    assert Path(holiday.source).name == "handbook.docx"
    assert "working days" in holiday.text  # the footnote sits with the passage citing it
    mail = kb.search("budget 40k euros", top_k=1)[0].chunk
    assert Path(mail.source).name == "budget.eml"
    assert kb.document(mail.document_id).metadata["sender"] == "ada@example.org"


def test_sheet_parts_fit_a_default_chunk_whole() -> None:
    """Each row range is one chunk, its header included: the part size suits the default
    budget and model (a part over budget would be cut into chunks sharing its heading path)."""
    settings = Settings()
    counter = create_embedder(settings).count_tokens
    doc = XlsxLoader().load(make_xlsx(staff_rows=300), "staff.xlsx")
    chunks = chunk_document(doc, counter, settings.chunk_max_tokens, settings.chunk_overlap)
    tables = [c for c in chunks if c.heading_path[0] == "Staff"]
    assert len(tables) == len({c.heading_path for c in tables}) > 10  # one chunk per row range
    assert all(c.text.count("| Name | Team | Started | Hours |") == 1 for c in tables)


def _cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


# What issue 16 added beside the formats above: PDF tables, scanned pages (in a PDF with a text
# page, and as an image) and the formats read before it, all in the folder with the new ones.
OLDER_AND_SCANNED = {
    "sizes.pdf": lambda: make_table_pdf(rows=12),
    "mixed.pdf": lambda: scanned_pdf(["Visitors sign in at the front desk.", render_page(PARAGRAPHS[1])]),
    "notice.png": lambda: image_bytes([render_page(PARAGRAPHS[3])], "PNG"),
    "faq.html": lambda: b"<html><body><main><h1>FAQ</h1><p>The canteen opens at half past seven.</p></main></body></html>",
    "readme.txt": lambda: b"Keys are collected from reception on the first day.\n",
}

# A damaged or mislabelled file of each format, and the start of the one-line reason it fails with.
BAD = {
    "cut.docx": (lambda: _cut(make_docx()), "corrupt DOCX file"),
    "cut.pptx": (lambda: _cut(make_pptx()), "corrupt PPTX file"),
    "cut.xlsx": (lambda: make_xlsx()[:2000], "corrupt XLSX file"),
    "cut.odt": (lambda: _cut(make_odt()), "corrupt ODT file"),
    "binary.csv": (make_xlsx, "binary data, not text"),
    "cut.epub": (lambda: make_epub([("a.xhtml", "<p>Chapter one.</p>")])[:300], "corrupt EPUB file"),
    "picture.eml": (lambda: b"\x89PNG\r\n\x1a\n...", "not an e-mail message"),
    "letter.mbox": (lambda: b"Subject: hi\n\nbody\n", "not an mbox mailbox"),
    "cut.pdf": (lambda: b"%PDF-1.4 not really a pdf", "corrupt or unreadable PDF"),
    "cut.png": (lambda: _cut(image_bytes([render_page("A page cut short.")], "PNG")), "corrupt or unreadable PNG image"),
}


def test_every_format_and_a_bad_file_of_each_in_one_folder(tmp_path: Path) -> None:
    """`add` of one folder holding every format (images named in `include`, as the README says)
    and a bad file of each: the good ones are ready and cite their page, the bad ones fail alone
    with a reason naming the file and store no chunk; a good file broken later keeps its chunks."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    good = {**FILES, **OLDER_AND_SCANNED}
    for name, make in good.items():
        (folder / name).write_bytes(make())
    for name, (make, _) in BAD.items():
        (folder / name).write_bytes(make())
    with KnowledgeBase.open(tmp_path / "kb.db", include=(*DEFAULT_INCLUDE, "*.png")) as kb:
        results = {Path(r.source).name: r for r in kb.add(str(folder))}
        assert {name: r.action for name, r in results.items() if name in good} == dict.fromkeys(good, "added")
        for name, (_, reason) in BAD.items():
            result = results[name]
            assert (result.action, result.error_code) == ("failed", "loader_error"), result
            assert f"{name}: {reason}" in result.error and "\n" not in result.error, result.error
            assert kb.document(result.document_id).chunk_count == 0
        assert sorted(Path(d.source).name for d in kb.documents(status="ready")) == sorted(good)

        cell = kb.search("installed size of libfoo7", mode="keyword", top_k=1)[0].chunk
        assert (Path(cell.source).name, cell.page) == ("sizes.pdf", 1) and "| libfoo7 | 1.7 | 1259 |" in cell.text
        scanned = kb.search("pallets Rotterdam", mode="keyword", top_k=1)[0].chunk
        assert (Path(scanned.source).name, scanned.page) == ("mixed.pdf", 2)
        assert kb.document(scanned.document_id).metadata["ocr_pages"].keys() == {"2"}
        backups = kb.search("nightly backups kept ninety days", mode="keyword", top_k=1)[0].chunk
        assert (Path(backups.source).name, backups.page) == ("notice.png", 1)

        handbook = kb.document(str(folder / "handbook.docx"))
        (folder / "handbook.docx").write_bytes(_cut(make_docx()))
        [again] = kb.add(str(folder / "handbook.docx"))
        assert again.action == "failed" and "corrupt DOCX file" in again.error
        kept = kb.document(handbook.id)
        assert (kept.status, kept.chunk_count, kept.content_hash) == ("ready", handbook.chunk_count, handbook.content_hash)
        assert Path(kb.search("how many days of paid holiday", top_k=1)[0].chunk.source).name == "handbook.docx"
