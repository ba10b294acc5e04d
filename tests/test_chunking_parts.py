"""A long document chunked a part at a time (chunking/parts.py) gives the chunks of one document."""

from __future__ import annotations

import pytest

from sourcebook.chunking import chunk_document
from sourcebook.chunking import parts as parts_module
from sourcebook.chunking.parts import chunk_in_parts, document_parts
from sourcebook.models import Block, ParsedDocument

from .test_chunking import check_chunks, doc_of, prose, simple_count


def _sectioned() -> ParsedDocument:
    """Chapters of sections over pages, each heading before a body, like a long PDF or manual."""
    blocks: list[Block] = []
    for chapter in range(6):
        path = (f"Chapter {chapter}",)
        blocks.append(Block("heading", path[0], path, page=chapter + 1))
        for section in range(3):
            sub = (*path, f"Part {section}")
            blocks.append(Block("heading", sub[-1], sub, page=chapter + 1))
            blocks += [Block("paragraph", prose(60, seed=chapter * 10 + section * 3 + n), sub, page=chapter + 1 + n // 2)
                       for n in range(3)]
    return doc_of(*blocks, title="Manual")


def test_cut_at_section_boundaries_the_chunks_are_those_of_the_whole_document(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _sectioned()
    monkeypatch.setattr(parts_module, "PART_CHARS", 900)
    monkeypatch.setattr(parts_module, "FORCED_CHARS", 10**9)
    assert len(list(document_parts(doc))) > 5
    in_parts = [chunk for part in chunk_in_parts(doc, simple_count, 64, 0.15) for chunk in part]
    assert in_parts == chunk_document(doc, simple_count, 64, 0.15)


def test_plain_text_and_a_giant_block_are_cut_into_parts_that_cover_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    paragraphs = [Block("paragraph", prose(40, seed=n)) for n in range(12)]
    giant = Block("paragraph", prose(900, seed=99))  # no paragraph break in about 6,000 characters
    doc = doc_of(*paragraphs[:6], giant, *paragraphs[6:])
    monkeypatch.setattr(parts_module, "PART_CHARS", 400)
    monkeypatch.setattr(parts_module, "FORCED_CHARS", 800)
    parts = list(document_parts(doc))
    assert len(parts) > 5 and max(len(part.text) for part, _ in parts) <= 800
    assert all(doc.text[offset : offset + len(part.text)] == part.text for part, offset in parts)
    chunks = [chunk for part in chunk_in_parts(doc, simple_count, 48, 0.15) for chunk in part]
    check_chunks(doc, chunks, simple_count, 48, 0.15)


def test_a_short_document_is_one_part_chunked_as_usual() -> None:
    doc = _sectioned()
    assert [part for part, _ in document_parts(doc)] == [doc]
    assert list(chunk_in_parts(doc, simple_count, 64, 0.15)) == [chunk_document(doc, simple_count, 64, 0.15)]
