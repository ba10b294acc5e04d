"""Optical character recognition of page images: scanned PDF pages and image files.

RapidOCR (the ``ocr`` extra) runs PaddleOCR's PP-OCRv4 detection and recognition models with
onnxruntime; the models ship inside its wheel, so nothing is downloaded at run time. It is
imported on first use, so the base install never loads it (nor OpenCV, which it needs).

The models take about a second to load, so one engine serves the whole process. Its calls
are serialised by a lock: rapidocr's detector keeps each call's resizing step on itself (two
threads would race), onnxruntime already spreads one page over every core, and one page at a
time bounds memory (a page image is at most `MAX_SIDE` pixels on its long side).

RapidOCR returns one box per detected line fragment. `read_image` puts them back in reading
order (rows top to bottom, fragments of a row left to right) and marks where paragraphs
start, so the PDF loader joins a paragraph's lines (and its hyphenated words) into one block
and the chunker's sentence splitter sees whole sentences. Box heights follow the ink (a
heading in capitals is no taller than body text with descenders), so no headings are
guessed from sizes: OCR'd text is paragraphs.
"""

from __future__ import annotations

import itertools
import logging
import statistics
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import LoaderError
from .office import require

if TYPE_CHECKING:
    from PIL.Image import Image

OCR_EXTRA = "ocr"
ENGINE_MODULE = "rapidocr_onnxruntime"
MAX_SIDE = 2000
"""Longest side, in pixels, of an image given to the models (rapidocr's own limit: it would
shrink a larger one itself, after holding it whole in memory)."""
PDF_RENDER_DPI = 150
"""Resolution scanned PDF pages are rendered at (then capped at `MAX_SIDE`): 10-point text is
21 pixels high, which the recognizer reads well (it reads lines at 48 pixels, and enlarges)."""
_DET_SHORT_SIDE = 960  # pixels: the short side of the copy lines are detected on (read_image)
_REC_HEIGHT = 48  # pixels: the height of the lines the recognition model reads
_ROW_HEIGHT_SHARE = 0.5  # of the smaller box's height two boxes must overlap by to share a row
_PARAGRAPH_GAP = 1.4  # of the page's median distance between rows: a wider one starts a paragraph
_INDENT = 1.5  # of the text height: a row starting further right than the others starts a paragraph

_engine: Any = None
_engine_lock = threading.Lock()


@dataclass(frozen=True)
class OcrPage:
    """What was read on one page: its lines in reading order, an empty line between
    paragraphs, and the recognizer's confidence (the mean of its line scores weighted by
    characters; None when nothing was read)."""

    lines: list[str]
    confidence: float | None


@dataclass(frozen=True)
class _Box:
    text: str
    top: float
    bottom: float
    left: float
    score: float

    @property
    def height(self) -> float:
        return self.bottom - self.top


def require_engine(source: str, kind: str, *also: str) -> None:
    """Raise MissingExtraError naming the ``ocr`` extra unless its modules (and the modules
    `also` named) import."""
    for module in (ENGINE_MODULE, "PIL.Image", *also):
        require(module, source, kind, OCR_EXTRA)


def _get_engine(source: str, kind: str) -> Any:
    """The process's one RapidOCR engine, made on first use (call under `_engine_lock`).

    The text-direction classifier is off: it exists for photos of rotated text, and on
    upright scans it turns some correct lines upside down (measured: one line of four lost
    on a rendered page), besides costing time.
    """
    global _engine
    if _engine is None:
        module = require(ENGINE_MODULE, source, kind, OCR_EXTRA)
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # it logs to stderr by default
        _engine = module.RapidOCR(use_cls=False, print_verbose=False)
    return _engine


def fit_image(image: Image) -> Image:
    """`image` as the models take it: flattened onto white (a transparent PNG's background
    would read as black), grey or RGB, and at most `MAX_SIDE` pixels on its long side."""
    from PIL import Image as PILImage

    if image.mode in {"RGBA", "LA", "PA"} or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        image = PILImage.new("RGB", rgba.size, "white")
        image.paste(rgba, mask=rgba.getchannel("A"))
    elif image.mode.startswith("I"):  # 16- or 32-bit grey: scale to 8 bits rather than clip at 255
        image = image.convert("I").point(lambda value: value / 256).convert("L")
    elif image.mode not in {"L", "RGB"}:
        image = image.convert("L" if image.mode in {"1", "F"} else "RGB")
    if max(image.size) > MAX_SIDE:
        image = image.copy()
        image.thumbnail((MAX_SIDE, MAX_SIDE))
    return image


def read_image(image: Image, source: str, kind: str) -> OcrPage:
    """OCR one page image: detect line boxes on a reduced copy, then recognise each line
    from its crop of the full image.

    Two departures from RapidOCR's one-call pipeline, both measured on rendered A4 pages
    (bench/ocr.py, README "Formats"). Detection runs on a copy at most `_DET_SHORT_SIDE`
    pixels on its short side: it found the same lines at a sixth of the cost (an A4 page at
    150 dpi: 3.1 CPU seconds full size, 0.5 at 736, 0.7 at 960). And line crops lower than
    the recognizer's 48 pixels are enlarged with cubic interpolation first (`_sharp_crop`):
    its own linear resize often loses the spaces between words ("endofMarch."), which took
    a page from 0.97 to 1.0 character accuracy. The steps are rapidocr 1.4.4's own
    (`auto_text_det`, `get_crop_img_list`, `text_rec`); the extra pins that version.
    """
    import cv2  # installed with rapidocr, which imports it first

    with _engine_lock:
        engine = _get_engine(source, kind)
        array, _ = engine.maybe_add_letterbox(engine.load_img(fit_image(image)), {})  # pads one-line images
        scale = min(1.0, _DET_SHORT_SIDE / min(array.shape[:2]))
        small = array if scale == 1.0 else cv2.resize(array, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        found, _ = engine.auto_text_det(small)
        if found is None:
            return OcrPage([], None)
        found = [points / scale for points in found]
        crops = [_sharp_crop(crop, cv2) for crop in engine.get_crop_img_list(array, found)]
        recognised, _ = engine.text_rec(crops, False)
    boxes = [
        _box(points, text, score)
        for points, (text, score, *_) in zip(found, recognised, strict=True)
        if float(score) >= engine.text_score and str(text).strip()
    ]
    return OcrPage(_lines(_rows(boxes)), _confidence(boxes))


def _sharp_crop(crop: Any, cv2: Any) -> Any:
    """A line crop at least the recognizer's 48 pixels high, enlarged with cubic interpolation."""
    height = crop.shape[0]
    if height >= _REC_HEIGHT or height == 0:
        return crop
    return cv2.resize(crop, None, fx=_REC_HEIGHT / height, fy=_REC_HEIGHT / height, interpolation=cv2.INTER_CUBIC)


def _box(points: Any, text: str, score: float) -> _Box:
    """A detected box (its four corners) and what was read in it, as the box's edges."""
    xs = [float(point[0]) for point in points]
    ys = [float(point[1]) for point in points]
    return _Box(str(text).strip(), min(ys), max(ys), min(xs), float(score))


def _confidence(boxes: Sequence[_Box]) -> float | None:
    characters = sum(len(box.text) for box in boxes)
    if not characters:
        return None
    return round(sum(box.score * len(box.text) for box in boxes) / characters, 4)


def _rows(boxes: Sequence[_Box]) -> list[list[_Box]]:
    """Boxes grouped into rows (a box joins the row it overlaps vertically by half the
    smaller height), rows top to bottom, each row's boxes left to right."""
    rows: list[list[_Box]] = []
    for box in sorted(boxes, key=lambda box: (box.top + box.bottom) / 2):
        if rows and _same_row(rows[-1], box):
            rows[-1].append(box)
        else:
            rows.append([box])
    return [sorted(row, key=lambda box: box.left) for row in rows]


def _same_row(row: Sequence[_Box], box: _Box) -> bool:
    top = min(other.top for other in row)
    bottom = max(other.bottom for other in row)
    overlap = min(bottom, box.bottom) - max(top, box.top)
    return overlap >= _ROW_HEIGHT_SHARE * min(box.height, bottom - top)


def _lines(rows: Sequence[Sequence[_Box]]) -> list[str]:
    """Each row's text, with an empty line where a paragraph starts: after a gap wider than
    `_PARAGRAPH_GAP` times the page's usual distance between rows, or at a first line
    indented by more than `_INDENT` times the text height.

    Box edges move with the letters (a line without descenders has a higher bottom), so
    rows are measured centre to centre and against the median spacing, not the smallest:
    the PDF loader's own rules, made for exact baselines, would cut sentences apart.
    """
    centres = [statistics.fmean((box.top + box.bottom) / 2 for box in row) for row in rows]
    pitches = [below - above for above, below in itertools.pairwise(centres)]
    pitch = statistics.median(pitches) if pitches else 0.0
    height = statistics.median(box.height for row in rows for box in row) if rows else 0.0
    margin = statistics.median(row[0].left for row in rows) if rows else 0.0
    lines: list[str] = []
    for index, row in enumerate(rows):
        gap = centres[index] - centres[index - 1] if index else 0.0
        if index and (gap > _PARAGRAPH_GAP * pitch or row[0].left - margin > _INDENT * height):
            lines.append("")
        lines.append(" ".join(box.text for box in row))
    return lines


def pdf_page_images(data: bytes, numbers: Sequence[int], source: str) -> Iterator[tuple[int, Image]]:
    """Render the PDF's pages `numbers` (1-based), one at a time, as (number, image),
    skipping pages that draw nothing (OCR of a blank page would find nothing).

    pypdfium2 renders what the page shows, whatever holds the text: one scanned image,
    image strips, or glyphs drawn as outlines, which extracting the page's embedded images
    (pypdf can) would miss or have to piece together.
    """
    pdfium = require("pypdfium2", source, "scanned PDF", OCR_EXTRA)
    try:
        document = pdfium.PdfDocument(data)
    except Exception as exc:  # pypdf read the file, so this is rare: say which library failed
        raise LoaderError(source, f"cannot render the PDF's scanned pages for OCR: {exc}") from exc
    try:
        for number in numbers:
            image = _render(document, number)
            if image is not None:
                yield number, image
    finally:
        document.close()


def _render(document: Any, number: int) -> Image | None:
    """Page `number` as a grey image; None for a page that draws nothing or that pdfium
    cannot render (it stays a page without text, as it was)."""
    page = document[number - 1]
    try:
        if next(iter(page.get_objects(max_depth=1)), None) is None:
            return None
        width, height = page.get_size()
        scale = min(PDF_RENDER_DPI / 72, MAX_SIDE / max(width, height, 1.0))
        return page.render(scale=scale, grayscale=True).to_pil()
    except Exception:
        return None
    finally:
        page.close()


def ocr_metadata(confidences: dict[int, float | None]) -> dict[str, Any]:
    """What a document records of its OCR'd pages: ``ocr`` (true), ``ocr_confidence`` (the
    mean over those pages) and ``ocr_pages`` (page number -> its confidence), so a chunk's
    page tells whether its text was recognised and how surely. Pages where OCR read nothing
    (a logo, a blank scan) hold no OCR'd text and are left out; empty when no page is left."""
    read = {number: value for number, value in sorted(confidences.items()) if value is not None}
    if not read:
        return {}
    return {
        "ocr": True,
        "ocr_confidence": round(statistics.fmean(read.values()), 4),
        "ocr_pages": {str(number): value for number, value in read.items()},
    }
