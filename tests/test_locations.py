"""`locations.location`: the place a citation names, for each kind of document."""

from __future__ import annotations

import pytest

from sourcebook.locations import cited_as, location
from sourcebook.models import Citation


@pytest.mark.parametrize(
    ("source", "title", "heading_path", "page", "expected"),
    [
        ("/d/policy.pdf", "Policy", ("Policy", "3. Accommodation"), 2, "3. Accommodation · page 2"),
        ("/d/scan.pdf", "Scan", (), 7, "page 7"),
        ("https://example.org/report.PDF?x=1", "Report", ("Scope",), 3, "Scope · page 3"),
        ("/d/deck.pptx", "Deck", ("Slide 2: Pricing",), 2, "slide 2: Pricing"),
        ("/d/deck.pptx", "Deck", ("Slide 4", "Speaker notes"), 4, "slide 4 › Speaker notes"),
        ("/d/book.xlsx", "Book", ("Sales", "Rows 2-40"), None, "sheet Sales, rows 2-40"),
        ("/d/book.xlsm", "Sales", ("Sales", "Row 9"), None, "sheet Sales, row 9"),  # a sheet named as the title stays
        ("/d/cities.csv", "cities", ("Rows 2-3",), None, "rows 2-3"),
        ("/d/handbook.md", "Handbook", ("Handbook", "Leave", "Parental leave"), None, "Leave › Parental leave"),
        ("/d/notes.txt", "notes", (), None, ""),
        ("/d/table.md", "T", ("Rows 2-3",), None, "Rows 2-3"),  # only a sheet's rows are rows
    ],
)
def test_location(source: str, title: str, heading_path: tuple[str, ...], page: int | None, expected: str) -> None:
    assert location(source, title, heading_path, page) == expected


def test_a_citation_carries_its_location_through_json() -> None:
    citation = Citation(1, "d1", "/d/deck.pptx", "c1", "Prices rise.", "Deck", ("Slide 2: Pricing",), 2, True)
    data = citation.to_dict()
    assert data["location"] == "slide 2: Pricing"
    assert Citation.from_dict(data) == citation
    assert cited_as(citation.title, citation.location) == "Deck · slide 2: Pricing"
    assert cited_as("Notes", "") == "Notes"
