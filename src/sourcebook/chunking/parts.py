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

from collections.abc import Iterable, Iterator
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
    doc: ParsedDocument,
    count_tokens: TokenCounter,
    max_tokens: int,
    overlap: float,
    blocks: Iterable[Block] | None = None,
) -> Iterator[list[Chunk]]:
    """`chunk_document(doc, ...)` a part at a time: each part's chunks, positions and
    offsets in the whole document's numbering. A document of at most `PART_CHARS`
    characters is one part, chunked exactly as `chunk_document` does. `blocks`: see
    `document_parts`."""
    position = 0
    for part, offset in document_parts(doc, blocks):
        chunks = chunk_document(part, count_tokens, max_tokens, overlap)
        yield [replace(c, position=c.position + position, start=c.start + offset, end=c.end + offset) for c in chunks]
        position += len(chunks)


def document_parts(doc: ParsedDocument, blocks: Iterable[Block] | None = None) -> Iterator[tuple[ParsedDocument, int]]:
    """The document's blocks as consecutive parts of at most `FORCED_CHARS` characters, each
    with the offset of its text in `doc.text`. `blocks`, when given, stand for `doc.blocks`:
    the blocks of a document too large to hold them all (a streamed file, loaders/textfile.py),
    read as the parts are taken."""
    held: list[Block] = []
    size = 0
    offset = 0  # of held[0] in doc.text
    previous: Block | None = None
    for block in doc.blocks if blocks is None else blocks:
        section = _starts_section(previous, block)
        for index, piece in enumerate(_pieces(block)):
            # a later piece of a giant block follows the previous one directly, in a part of its own
            gap = 0 if index else _SEPARATOR
            if held and (index or size + gap + len(piece.text) > FORCED_CHARS or (size >= PART_CHARS and section)):
                yield replace(doc, blocks=tuple(held)), offset
                offset += size + gap
                held, size = [], 0
            size += len(piece.text) + (gap if held else 0)
            held.append(piece)
        previous = block
    if held:
        yield replace(doc, blocks=tuple(held)), offset


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
        end = cut_at_whitespace(text, start, FORCED_CHARS)
        pieces.append(replace(block, text=text[start:end]))
        start = end
    pieces.append(replace(block, text=text[start:]))
    return pieces


def cut_at_whitespace(text: str, start: int, most: int) -> int:
    """Where a piece of `text` from `start` of at most `most` characters ends: just after the
    last space or line break in its second half (so a word is not cut), else at `most`.
    Shared with the streamed paragraphs of a large text file (loaders/text.py), which are
    cut the same way before they become blocks."""
    limit = start + most
    cut = max(text.rfind("\n", start + most // 2, limit), text.rfind(" ", start + most // 2, limit))
    return cut + 1 if cut >= 0 else limit
