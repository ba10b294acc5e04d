"""A long document chunked a part at a time: chunking holds one part's state, not the whole text's.

The chunker keeps per-sentence token counts and spans for the text it is given (several
times the text's size in Python objects), so a 50 MB file chunked whole would hold gigabytes.
`chunk_in_parts` cuts the document's blocks into parts of about `PART_CHARS` characters and
chunks each on its own, renumbering positions and shifting character offsets so that the
chunks are those of one document.

A part ends where the chunker starts a new section anyway (a heading, or a heading-path or
page change after a body: `_DocumentChunker._sections`), where chunks are the same as the
whole document's, since sections are packed apart. Only a run of more than `FORCED_CHARS`
without such a boundary (plain text, which has no headings) is cut at a block boundary,
and a single block longer than that (a text without paragraph breaks) at whitespace: there,
one chunk ends early and the next starts without overlap, once every `FORCED_CHARS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ..models import Block, Chunk, ParsedDocument
from .chunker import TokenCounter, chunk_document

PART_CHARS = 1 << 19
"""Characters after which a part ends at the next section boundary."""
FORCED_CHARS = 1 << 20
"""The most characters of a part: a block that would take it over starts the next part, and a
longer block is cut at whitespace."""
_SEPARATOR = 2
"""len("\\n\\n"): blocks are joined by a blank line in `ParsedDocument.text`."""


def chunk_in_parts(
    doc: ParsedDocument, count_tokens: TokenCounter, max_tokens: int, overlap: float
) -> Iterator[list[Chunk]]:
    """`chunk_document(doc, ...)` a part at a time: each part's chunks, positions and
    offsets in the whole document's numbering. A document of at most `PART_CHARS`
    characters is one part, chunked exactly as `chunk_document` does."""
    position = 0
    for part, offset in document_parts(doc):
        chunks = chunk_document(part, count_tokens, max_tokens, overlap)
        yield [replace(c, position=c.position + position, start=c.start + offset, end=c.end + offset) for c in chunks]
        position += len(chunks)


def document_parts(doc: ParsedDocument) -> Iterator[tuple[ParsedDocument, int]]:
    """The document's blocks as consecutive parts of at most `FORCED_CHARS` characters, each
    with the offset of its text in `doc.text`."""
    blocks: list[Block] = []
    size = 0
    offset = 0  # of blocks[0] in doc.text
    previous: Block | None = None
    for block in doc.blocks:
        section = _starts_section(previous, block)
        for index, piece in enumerate(_pieces(block)):
            # a later piece of a giant block follows the previous one directly, in a part of its own
            gap = 0 if index else _SEPARATOR
            if blocks and (index or size + gap + len(piece.text) > FORCED_CHARS or (size >= PART_CHARS and section)):
                yield replace(doc, blocks=tuple(blocks)), offset
                offset += size + gap
                blocks, size = [], 0
            size += len(piece.text) + (gap if blocks else 0)
            blocks.append(piece)
        previous = block
    if blocks:
        yield replace(doc, blocks=tuple(blocks)), offset


def _starts_section(previous: Block | None, block: Block) -> bool:
    """Whether the chunker starts a new section at `block` (`_DocumentChunker._sections`):
    at a heading or a heading-path or page change, once the section has a body (a bare
    heading joins the next section, so a heading is never the last block of a part)."""
    if previous is None or previous.kind == "heading":
        return False
    return block.kind == "heading" or (block.heading_path, block.page) != (previous.heading_path, previous.page)


def _pieces(block: Block) -> list[Block]:
    """The block, or a giant block cut at whitespace into pieces of at most `FORCED_CHARS`
    characters that cover its text exactly (whitespace stays at the end of a piece)."""
    text = block.text
    if len(text) <= FORCED_CHARS:
        return [block]
    pieces, start = [], 0
    while len(text) - start > FORCED_CHARS:
        limit = start + FORCED_CHARS
        cut = max(text.rfind("\n", start + FORCED_CHARS // 2, limit), text.rfind(" ", start + FORCED_CHARS // 2, limit))
        end = cut + 1 if cut >= 0 else limit
        pieces.append(replace(block, text=text[start:end]))
        start = end
    pieces.append(replace(block, text=text[start:]))
    return pieces
