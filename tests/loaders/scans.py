"""Scanned pages made from known text, for the OCR tests and bench/ocr.py.

Text is drawn with Pillow in a real TrueType font (DejaVu Sans, shipped inside matplotlib's
wheel, which the dev extra installs), and the page images are put into PDFs with fpdf2, the
way a scanner's PDF holds one image per page and no text layer. `character_accuracy`
compares what OCR read with the text drawn.
"""

from __future__ import annotations

import importlib.util
import io
import textwrap
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

PAGE_SIDE = 760  # pixels: square pages, just over the 736 pixels the detector enlarges smaller images to
BODY_PX = 30
HEADING_PX = 44
MARGIN = 50
DPI = 150

# One paragraph per page: ordinary prose with digits, capitals and punctuation.
PARAGRAPHS = (
    "Employees accrue 25 days of paid holiday each year, plus public holidays. Unused days may be carried over, up to a maximum of five, and must be taken before the end of March.",
    "The warehouse in Rotterdam receives about 340 pallets a day. Deliveries arrive between 6:00 and 14:00, and each one is checked against its order before it is stored.",
    "Parental leave is paid at full salary for the first twelve weeks. After that, statutory pay applies for a further 27 weeks, and the employee keeps the right to return.",
    "Backups run every night at 02:30 and are kept for ninety days. A monthly copy goes to a second site, so a single failure never loses more than one day of work.",
    "The committee meets on the first Tuesday of each month. Minutes are published within five working days, and any member may ask for an item to be added to the agenda.",
    "Travel costs are refunded within 30 days of a claim. Train fares are preferred over flights for journeys under six hours, and receipts must be attached to every claim.",
    "The library lends up to eight books at a time for three weeks. Reference works stay in the reading room, which is open from nine in the morning until seven at night.",
    "New laptops are issued with an encrypted disk and a managed browser. Lost equipment must be reported to the service desk within 24 hours so that it can be locked remotely.",
    "The annual report shows revenue of 4.2 million euros, up 8 percent on the previous year. Most of the growth came from maintenance contracts signed in the autumn.",
    "Fire drills take place twice a year without warning. Everyone leaves by the nearest exit, gathers at the car park on Mill Lane, and waits for the wardens to count them.",
)


@cache
def font_path() -> str:
    """DejaVu Sans from matplotlib's package data, else the system's copy (fonts-dejavu)."""
    spec = importlib.util.find_spec("matplotlib")
    candidates = [Path(location) / "mpl-data/fonts/ttf/DejaVuSans.ttf" for location in (spec and spec.submodule_search_locations) or []]
    candidates.append(Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    raise FileNotFoundError("no DejaVuSans.ttf: install matplotlib (the dev extra) or fonts-dejavu")


def render_page(paragraph: str, heading: str | None = None, side: int = PAGE_SIDE) -> Image.Image:
    """A white greyscale page, `side` pixels wide and at least as high, with `heading`
    (larger) above `paragraph`, wrapped to fit."""
    body = ImageFont.truetype(font_path(), BODY_PX)
    big = ImageFont.truetype(font_path(), HEADING_PX)
    average = body.getlength("abcdefghijklmnopqrstuvwxyz ") / 27
    lines = textwrap.wrap(paragraph, int((side - 2 * MARGIN) / average))
    top = MARGIN + (int(HEADING_PX * 1.8) if heading else 0)
    height = max(side, top + len(lines) * int(BODY_PX * 1.5) + MARGIN)
    page = Image.new("L", (side, height), 255)
    draw = ImageDraw.Draw(page)
    if heading:
        draw.text((MARGIN, MARGIN), heading, font=big, fill=0)
    for index, line in enumerate(lines):
        draw.text((MARGIN, top + index * int(BODY_PX * 1.5)), line, font=body, fill=0)
    return page


def render_a4_page(paragraphs: Sequence[str], body_px: int = 23) -> tuple[Image.Image, str]:
    """An A4 page scanned at 150 dpi (1240 x 1754 pixels) filled with `paragraphs` in
    `body_px` text (23 pixels: 11-point type), a blank line between them; and the text drawn
    (paragraphs that do not fit are left out)."""
    width, height, margin = 1240, 1754, 110
    body = ImageFont.truetype(font_path(), body_px)
    average = body.getlength("abcdefghijklmnopqrstuvwxyz ") / 27
    pitch = int(body_px * 1.45)
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    top, drawn = margin, []
    for paragraph in paragraphs:
        lines = textwrap.wrap(paragraph, int((width - 2 * margin) / average * 0.97))
        if top + len(lines) * pitch > height - margin:
            break
        for line in lines:
            draw.text((margin, top), line, font=body, fill=0)
            top += pitch
        top += pitch
        drawn.append(paragraph)
    return page, "\n".join(drawn)


def page_text(paragraph: str, heading: str | None = None) -> str:
    """The text `render_page` draws, as one string."""
    return f"{heading}\n{paragraph}" if heading else paragraph


def scanned_pdf(pages: Sequence[Image.Image | str]) -> bytes:
    """A PDF of one page per item: an image is placed as a scan (no text layer), a string is
    set as real text (for mixed documents)."""
    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    for item in pages:
        if isinstance(item, str):
            pdf.add_page(format=(PAGE_SIDE * 72 / DPI, PAGE_SIDE * 72 / DPI))
            pdf.set_font("Helvetica", size=12)
            pdf.set_xy(36, 36)
            pdf.multi_cell(PAGE_SIDE * 72 / DPI - 72, 16, item)
        else:
            size = (item.width * 72 / DPI, item.height * 72 / DPI)
            pdf.add_page(format=size)
            pdf.image(item, x=0, y=0, w=size[0], h=size[1])
    return bytes(pdf.output())


def image_bytes(pages: Sequence[Image.Image], image_format: str) -> bytes:
    """The pages saved as one PNG/JPEG (the first page) or a multi-page TIFF."""
    buffer = io.BytesIO()
    first, *rest = pages
    if image_format == "TIFF":
        first.save(buffer, "TIFF", save_all=True, append_images=rest, compression="tiff_deflate", dpi=(DPI, DPI))
    else:
        first.save(buffer, image_format, dpi=(DPI, DPI))
    return buffer.getvalue()


def _normalized(text: str) -> str:
    return " ".join(text.split())


def edit_distance(first: str, second: str) -> int:
    """Levenshtein distance (insertions, deletions and substitutions of one character)."""
    previous = list(range(len(second) + 1))
    for i, char in enumerate(first, start=1):
        current = [i]
        for j, other in enumerate(second, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def character_accuracy(read: str, truth: str) -> float:
    """1 - edit distance / length of the truth, whitespace runs counted as one space."""
    read, truth = _normalized(read), _normalized(truth)
    return 1 - edit_distance(read, truth) / max(len(truth), 1)
