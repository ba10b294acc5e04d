"""A folder mixing every format, added to a real knowledge base (SQLite file, bundled model):
each file is a ready document, bad files are named failures that store nothing else, and
search hits cite the slide, the sheet and row range, or the heading path."""

from __future__ import annotations

from pathlib import Path

from sourcebook import KnowledgeBase
from sourcebook.chunking import chunk_document
from sourcebook.embedders import create_embedder
from sourcebook.loaders.sheets import XlsxLoader
from sourcebook.settings import Settings
from tests.loaders.office_files import make_docx, make_epub, make_message, make_mbox, make_odt, make_pptx, make_xlsx

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
