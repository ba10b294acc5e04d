"""Reading BEIR corpora (corpus.jsonl), the format of the evaluation datasets.

Streams one ParsedDocument per line so a corpus of millions of passages never
sits in memory, and keeps the BEIR `_id` as the source so evaluation can map
retrieved documents back to qrels.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..errors import LoaderError
from ..models import ParsedDocument
from .text import DocumentBuilder, clean_inline, split_paragraphs

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/x-beir"


def iter_beir(path: str | Path) -> Iterator[ParsedDocument]:
    """Documents of a BEIR corpus.jsonl, in file order.

    The title is carried by the document (and so by every chunk's prefix), so it is
    not repeated as a block; a record with a title but no text keeps the title as
    its one paragraph, and a record with neither is skipped with a warning.
    """
    with _open(path) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            document = _document(_record(line, path, number), path, number)
            if document is not None:
                yield document


def count_beir(path: str | Path) -> int:
    """Number of records (non-blank lines), for progress bars; reads without parsing."""
    with _open(path) as lines:
        return sum(1 for line in lines if line.strip())


def _open(path: str | Path) -> TextIO:
    try:
        return open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise LoaderError(str(path), f"cannot open BEIR corpus: {exc.strerror or exc}") from None


def _record(line: str, path: str | Path, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LoaderError(str(path), f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict) or record.get("_id") in (None, ""):
        raise LoaderError(str(path), f"line {number}: not a BEIR record (a JSON object with an '_id')")
    return record


def _document(record: dict[str, Any], path: str | Path, number: int) -> ParsedDocument | None:
    beir_id = str(record["_id"])
    title = clean_inline(str(record.get("title") or ""))
    builder = DocumentBuilder()
    for paragraph in split_paragraphs(str(record.get("text") or "")):
        builder.add("paragraph", paragraph)
    if builder.empty and title:
        builder.add("paragraph", title)
    if builder.empty:
        logger.warning("%s line %d: skipping BEIR record %r with no title and no text", path, number, beir_id)
        return None
    extra = record.get("metadata")
    metadata = {**(extra if isinstance(extra, dict) else {}), "beir_id": beir_id}
    return builder.build(beir_id, title or beir_id, MEDIA_TYPE, metadata)
