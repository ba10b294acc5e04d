"""Image loader: PNG, JPEG and TIFF files read by OCR (the ``ocr`` extra, `ocr.py`).

Each frame of a multi-page TIFF is a page, read one at a time, so a long scan never sits in
memory whole. The recognised rows go through the PDF loader's paragraph, heading and
running-header rules, so a scanned page reads the same whether it came as a PDF or as an
image. Without the extra an image fails alone with a one-line MissingExtraError naming it.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..errors import EmptyDocumentError, LoaderError
from ..models import ParsedDocument
from .ocr import MAX_SIDE, ocr_metadata, read_image, require_engine
from .pdf import TextLine, build_blocks, drop_running_lines, ocr_lines, page_paragraphs
from .text import short_title

if TYPE_CHECKING:
    from PIL.Image import Image

_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "TIFF": "image/tiff"}
_KIND_BY_EXTENSION = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".tif": "TIFF", ".tiff": "TIFF"}


def _kind(source: str) -> str:
    """"PNG", "JPEG" or "TIFF" as the source's name says, for messages before the file is read."""
    for extension, kind in _KIND_BY_EXTENSION.items():
        if source.lower().endswith(extension):
            return f"{kind} image"
    return "image"


def _pages(data: bytes, source: str, kind: str) -> Iterator[Image]:
    """Each frame of the image, decoded one at a time.

    Pillow raises UnidentifiedImageError for other formats, OSError for truncated data and
    DecompressionBombError for absurd sizes; each becomes a LoaderError naming the file.
    Frames over Pillow's pixel limit are refused before they are decoded (Pillow itself only
    warns up to twice that limit, and would then decode them).
    """
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data), formats=list(_FORMATS))
    except UnidentifiedImageError:
        raise LoaderError(source, "not a PNG, JPEG or TIFF image, or one too damaged to identify") from None
    except Image.DecompressionBombError as exc:
        raise LoaderError(source, f"{kind} too large: {exc}") from None
    except (OSError, ValueError) as exc:
        raise LoaderError(source, f"corrupt or unreadable {kind}: {exc}") from exc
    limit = Image.MAX_IMAGE_PIXELS or 0
    with image:
        for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
            width, height = frame.size
            if limit and width * height > limit:
                raise LoaderError(source, f"page {number} is {width}x{height} pixels, over the limit of {limit:,}")
            if frame.format == "JPEG":  # decode at a reduced scale right away: the models see MAX_SIDE at most
                frame.draft(frame.mode, (MAX_SIDE, MAX_SIDE))
            try:
                frame.load()
            except (OSError, ValueError, SyntaxError) as exc:
                raise LoaderError(source, f"corrupt or unreadable {kind} (page {number}): {exc}") from exc
            yield frame


class ImageLoader:
    name: str = "image"
    media_types: tuple[str, ...] = tuple(_FORMATS.values())
    extensions: tuple[str, ...] = tuple(_KIND_BY_EXTENSION)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        if not data.strip():
            raise EmptyDocumentError(source, "empty file")
        kind = _kind(source)
        require_engine(source, kind)
        pages: list[list[TextLine]] = []
        confidences: dict[int, float | None] = {}
        media_type = _FORMATS["PNG"]
        for number, frame in enumerate(_pages(data, source, kind), start=1):
            media_type = _FORMATS.get(frame.format or "", media_type)
            page = read_image(frame, source, kind)
            pages.append(ocr_lines(page))
            confidences[number] = page.confidence
        paragraphs = [
            (number, paragraph)
            for number, lines in enumerate(drop_running_lines(pages), start=1)
            for paragraph in page_paragraphs(lines)
        ]
        builder = build_blocks(paragraphs)
        if builder.empty:
            raise EmptyDocumentError(source, f"no text found in the {kind} (OCR read nothing)")
        title = builder.first_h1 or short_title(paragraphs[0][1].text)
        return builder.build(source, title, media_type, {"pages": len(pages), **ocr_metadata(confidences)})
