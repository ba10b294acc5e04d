"""A large plain-text file parsed as a stream: its bytes and its text are never held whole.

Read whole, a 50 MB text file is held at once as bytes, as one string, and as cleaned blocks
(issue 17 #4: about 180 MB above the process at the peak of parsing, before any chunking),
so ingestion memory would grow with the file. A plain-text file of more than `STREAM_BYTES`
is instead read in pieces of `PIECE_BYTES`, three times: `open_text_file` hashes it (the same
fingerprint as `RawSource`'s, so an unchanged file is skipped however it was read before) and
checks that it decodes; `TextFile.parse` reads it through for what ingestion needs before
chunking (title, characters, opening); `TextFile.blocks` reads it again for the chunker, which
takes its blocks a part at a time (chunking/parts.py). Each pass hashes what it reads, so a
file that changes meanwhile fails with nothing written instead of storing other text under
its fingerprint.

The blocks are those `TextLoader` makes of the whole text (the same paragraphs, titles and
cleaning: `stream_paragraphs`, `add_paragraph`), so the chunks are the same. Only a paragraph
of more than `FORCED_CHARS` characters (a text without blank lines) differs: it becomes
several paragraphs cut at whitespace, where the chunker would cut its block at whitespace
anyway. A file in another encoding is streamed too, decoded with the encoding detected in its
opening (`open_text_file`); one that looks binary, starts with a UTF-16 or UTF-32 BOM or is a
man page is read whole as before (`read_source`, `TextLoader`).
"""

from __future__ import annotations

import codecs
import hashlib
import io
import itertools
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..chunking.parts import FORCED_CHARS
from ..errors import EmptyDocumentError, LoaderError
from ..models import Block, ParsedDocument
from .base import get_loader
from .plaintext import TextLoader, add_paragraph
from .reference import looks_like_man_page
from .sources import PIECE_BYTES, file_metadata
from .text import (
    DocumentBuilder, clean_inline, decode_text, first_line, looks_binary, short_title, stream_paragraphs, title_from_source,
)

STREAM_BYTES = 1 << 20
"""Plain-text files above this size are streamed; reading a smaller one whole costs a few MB."""
OPENING_CHARS = 1 << 16
"""About how many characters of opening blocks the streamed document keeps: its beginning, what
a contextual enricher shows the model of a document (enrichment.DOCUMENT_CHARS, 24,000)."""


@dataclass
class _Read:
    """What a pass over the file read: the hash and the count of its bytes."""

    digest: Any = field(default_factory=hashlib.sha256)
    size: int = 0


def _decoded(path: Path, encoding: str, errors: str, read: _Read, most: int) -> Iterator[str]:
    """The file's text a piece at a time, line breaks made "\\n" as `split_paragraphs` does, from
    at most `most` bytes, each counted and hashed into `read`."""
    decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder(encoding)(errors), translate=True)
    with path.open("rb") as handle:
        while read.size < most and (data := handle.read(min(PIECE_BYTES, most - read.size))):
            read.size += len(data)
            read.digest.update(data)
            yield decoder.decode(data)
    yield decoder.decode(b"", final=True)


def open_text_file(source: str, limit: int) -> TextFile | None:
    """The file at `source` to stream, hashed and checked, or None when it is to be read whole:
    not a plain-text file of `STREAM_BYTES` to `limit` bytes (max_file_bytes) that `TextLoader`
    would parse (or anything that cannot be read: `read_source` says why).

    Its encoding is what `decode_text` finds: a UTF-8 BOM, else UTF-8 if the whole file decodes,
    else the encoding `decode_text` detects in its first `PIECE_BYTES` (detection reads a bounded
    prefix; the rest is decoded with that encoding, an undecodable byte replaced)."""
    path = Path(source).expanduser()
    try:
        info = path.stat()
        if not (stat.S_ISREG(info.st_mode) and STREAM_BYTES < info.st_size <= limit):
            return None
        if not isinstance(get_loader(extension=path.suffix), TextLoader):
            return None
        with path.open("rb") as handle:
            head = handle.read(PIECE_BYTES)
    except OSError:
        return None
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or looks_binary(head):
        return None  # UTF-16 and UTF-32 (whose little-endian BOM starts with UTF-16's) are rare this large
    encoding, errors = ("utf-8-sig", "replace") if head.startswith(codecs.BOM_UTF8) else ("utf-8", "strict")
    try:
        try:
            read = _survey(path, encoding, errors, limit)
        except UnicodeDecodeError:  # not UTF-8: the encoding `decode_text` detects in the opening
            encoding, errors = _detected_encoding(head, source), "replace"
            read = _survey(path, encoding, errors, limit)
    except (OSError, LookupError, LoaderError):
        return None
    if read is None or read.size > limit:  # a man page, or it grew since stat(): read whole
        return None
    return TextFile(source, path, read.digest.hexdigest(), encoding, errors, file_metadata(path, read.size, info))


def _detected_encoding(head: bytes, source: str) -> str:
    """The encoding of a file that is not UTF-8 throughout, from its opening `head`: UTF-8 still
    if the damage lies beyond the head (which may end inside a character: decoded as a piece,
    not as a whole), else what `decode_text` detects in it."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head)
    except UnicodeDecodeError:
        return decode_text(head, source)[1]
    return "utf-8"


def _survey(path: Path, encoding: str, errors: str, limit: int) -> _Read | None:
    """The file read through with `encoding` (UnicodeDecodeError where it does not decode), or
    None if it opens as a man page (`TextLoader` reads those whole)."""
    read = _Read()
    texts = _decoded(path, encoding, errors, read, limit + 1)
    if looks_like_man_page(next(texts)):
        return None
    for _ in texts:
        pass
    return read


@dataclass(frozen=True)
class TextFile:
    """A large plain-text file known to decode with `encoding`, and its `fingerprint`: the sha256
    of its bytes, as a `RawSource` of the same bytes has."""

    source: str
    path: Path
    fingerprint: str
    encoding: str
    errors: str
    metadata: dict[str, Any]
    """What reading it records (`file_metadata`), as `read_source` would."""

    def parse(self) -> StreamedText:
        """Read the file through for its title (the first reST-style title, else its first line,
        as `TextLoader` names it), its characters and its opening blocks."""
        paragraphs = self._paragraphs()
        first = next(paragraphs, None)
        if first is None:
            raise EmptyDocumentError(self.source, "no text found")
        opening: list[Block] = []
        title: str | None = None
        characters = 0
        for block in _blocks(itertools.chain([first], paragraphs)):
            if characters < OPENING_CHARS:
                opening.append(block)
            characters += len(block.text)
            if title is None and block.kind == "heading":
                title = block.text
        if not opening:
            raise EmptyDocumentError(self.source, "no text found")
        document = ParsedDocument(
            source=self.source,
            title=clean_inline(title or short_title(first_line(first))) or title_from_source(self.source),
            blocks=tuple(opening),
            media_type=TextLoader.media_types[0],
            metadata={"encoding": self.encoding, **self.metadata},
        )
        return StreamedText(document, characters, self)

    def blocks(self) -> Iterator[Block]:
        """All the file's blocks, read again; LoaderError at the end if the file changed since
        it was hashed."""
        return _blocks(self._paragraphs())

    def _paragraphs(self) -> Iterator[str]:
        return stream_paragraphs(self._text(), FORCED_CHARS)

    def _text(self) -> Iterator[str]:
        read = _Read()
        yield from _decoded(self.path, self.encoding, self.errors, read, self.metadata["size"] + 1)
        if read.digest.hexdigest() != self.fingerprint:
            raise LoaderError(self.source, "the file changed while it was read; nothing was stored, add it again")


@dataclass(frozen=True)
class StreamedText:
    """A parsed large text file: `document` has its title, media type, metadata and opening
    blocks (not all: `file.blocks()` reads those), `characters` the length of all its blocks."""

    document: ParsedDocument
    characters: int
    file: TextFile


def _blocks(paragraphs: Iterable[str]) -> Iterator[Block]:
    """`TextLoader`'s blocks of these paragraphs, each handed on as soon as it is made."""
    builder = DocumentBuilder()
    styles: list[tuple[str, bool]] = []
    for paragraph in paragraphs:
        add_paragraph(builder, paragraph, styles)
        yield from builder.drain()
