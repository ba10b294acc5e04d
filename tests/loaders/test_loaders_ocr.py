"""OCR of scanned PDF pages and of image files (loaders/ocr.py, loaders/images.py).

The pages are drawn from known text with a real TrueType font (tests/loaders/scans.py) and
read by the real RapidOCR models; accuracy is measured against the text drawn.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfWriter

from sourcebook import KnowledgeBase
from sourcebook.errors import EmptyDocumentError, LoaderError, MissingExtraError
from sourcebook.loaders import ocr
from sourcebook.loaders.images import ImageLoader
from sourcebook.loaders.pdf import PdfLoader
from tests.loaders.scans import PARAGRAPHS, character_accuracy, image_bytes, page_text, render_page, scanned_pdf

pytest.importorskip("rapidocr_onnxruntime")

HEADINGS = ("Holidays", "Deliveries", "Parental leave", "Backups", "Meetings", "Travel", "Library", "Laptops",
            "Annual report", "Fire drills")  # fmt: skip


@pytest.mark.slow  # about 20 s on two idle cores (OCR of ten pages); `make test` runs it
def test_a_scanned_pdf_of_ten_pages_is_read_at_95_percent_accuracy_with_its_pages(tmp_path: Path) -> None:
    """Issue 16's target: 10 scanned pages rendered from known text, added to a real knowledge
    base; every page's chunks, compared with the text drawn on it, are >= 95% accurate."""
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf([render_page(text, heading) for text, heading in zip(PARAGRAPHS, HEADINGS)]))
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        [result] = kb.add(str(path))
        assert result.action == "added", result.error
        chunks = kb.chunks(result.document_id)
        record = kb.document(result.document_id)
        hits = kb.search("How many pallets does the Rotterdam warehouse receive?", top_k=1)
        assert kb.search("pallets", metadata={"ocr": True}) and not kb.search("pallets", metadata={"ocr": False})
    assert hits[0].chunk.page == 2 and "340 pallets" in hits[0].chunk.text
    assert record.metadata["ocr"] is True and set(record.metadata["ocr_pages"]) == {str(n) for n in range(1, 11)}
    assert 0.9 < record.metadata["ocr_confidence"] <= 1
    accuracies = []
    for number, (text, heading) in enumerate(zip(PARAGRAPHS, HEADINGS), start=1):
        read = " ".join(chunk.text for chunk in chunks if chunk.page == number)
        accuracies.append(character_accuracy(read, page_text(text, heading)))
    assert min(accuracies) >= 0.95, accuracies


def test_a_mixed_pdf_keeps_its_page_numbers_and_marks_only_the_scanned_pages() -> None:
    text_pages = ["The canteen opens at half past seven and closes after lunch.",
                  "Visitors sign in at the front desk and wear a badge at all times."]  # fmt: skip
    data = scanned_pdf([text_pages[0], render_page(PARAGRAPHS[1]), text_pages[1], render_page(PARAGRAPHS[3])])
    document = PdfLoader().load(data, "mixed.pdf")
    by_page = {page: " ".join(b.text for b in document.blocks if b.page == page) for page in (1, 2, 3, 4)}
    assert by_page[1] == text_pages[0] and by_page[3] == text_pages[1]
    assert character_accuracy(by_page[2], PARAGRAPHS[1]) >= 0.95
    assert character_accuracy(by_page[4], PARAGRAPHS[3]) >= 0.95
    assert document.metadata["pages"] == 4 and document.metadata["ocr"] is True
    assert set(document.metadata["ocr_pages"]) == {"2", "4"}


def test_png_and_jpeg_are_one_page_and_a_tiff_one_page_per_frame() -> None:
    png = ImageLoader().load(image_bytes([render_page(PARAGRAPHS[0])], "PNG"), "notice.png")
    assert png.media_type == "image/png" and {b.page for b in png.blocks} == {1}
    assert character_accuracy(png.text, PARAGRAPHS[0]) >= 0.95
    assert png.title.startswith("Employees accrue 25 days")
    assert png.metadata["pages"] == 1 and png.metadata["ocr_pages"].keys() == {"1"}
    jpeg = ImageLoader().load(image_bytes([render_page(PARAGRAPHS[2]).convert("RGB")], "JPEG"), "photo.jpeg")
    assert jpeg.media_type == "image/jpeg" and character_accuracy(jpeg.text, PARAGRAPHS[2]) >= 0.95

    tiff = ImageLoader().load(image_bytes([render_page(PARAGRAPHS[4]), render_page(PARAGRAPHS[5])], "TIFF"), "scan.tif")
    assert tiff.media_type == "image/tiff" and tiff.metadata["pages"] == 2
    for number, text in ((1, PARAGRAPHS[4]), (2, PARAGRAPHS[5])):
        read = " ".join(b.text for b in tiff.blocks if b.page == number)
        assert character_accuracy(read, text) >= 0.95, read


def test_the_engine_is_made_once_per_process() -> None:
    ImageLoader().load(image_bytes([render_page("Lunch is served at noon.")], "PNG"), "a.png")
    engine = ocr._engine
    ImageLoader().load(image_bytes([render_page("Dinner is served at seven.")], "PNG"), "b.png")
    assert engine is not None and ocr._engine is engine


def _corrupt_images() -> dict[str, bytes]:
    png = image_bytes([render_page("A page cut short.")], "PNG")
    jpeg = io.BytesIO()
    render_page("Another page.").save(jpeg, "JPEG")
    return {
        "cut.png": png[: len(png) // 2],
        "cut.jpg": jpeg.getvalue()[:300],
        "noise.tiff": b"II*\x00" + bytes(range(256)) * 4,
        "text.png": b"this is not an image at all",
    }


def test_a_corrupt_image_fails_alone_with_a_named_error_and_nothing_stored(tmp_path: Path) -> None:
    for name, data in _corrupt_images().items():
        with pytest.raises(LoaderError) as info:
            ImageLoader().load(data, name)
        assert str(info.value).startswith(f"{name}: ") and "\n" not in str(info.value), info.value
    for name, data in _corrupt_images().items():
        (tmp_path / name).write_bytes(data)
    fine = tmp_path / "fine.md"
    fine.write_text("# Lunch\n\nLunch is served at noon in the atrium.\n")
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        results = {Path(r.source).name: r for r in kb.add([str(fine), *(str(tmp_path / n) for n in _corrupt_images())])}
        assert results["fine.md"].action == "added"
        for name in _corrupt_images():
            assert results[name].action == "failed" and results[name].error_code == "loader_error", results[name]
            assert kb.document(results[name].document_id).chunk_count == 0
        assert [Path(d.source).name for d in kb.documents(status="ready")] == ["fine.md"]


def test_an_image_over_the_pixel_limit_is_refused_before_it_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow only warns up to twice its limit (after decoding); the loader refuses from the limit on."""
    data = image_bytes([render_page("Too big.")], "PNG")  # 760 x 760 = 577,600 pixels
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 400_000)
    with pytest.warns(Image.DecompressionBombWarning), pytest.raises(LoaderError) as info:
        ImageLoader().load(data, "big.png")
    assert str(info.value) == "big.png: page 1 is 760x760 pixels, over the limit of 400,000"
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    with pytest.raises(LoaderError, match=r"^big.png: PNG image too large: Image size \(577600 pixels\) exceeds"):
        ImageLoader().load(data, "big.png")


def test_a_blank_scan_is_an_empty_document() -> None:
    blank = Image.new("L", (760, 760), 255)
    with pytest.raises(EmptyDocumentError, match="blank.png: no text found in the PNG image"):
        ImageLoader().load(image_bytes([blank], "PNG"), "blank.png")
    with pytest.raises(EmptyDocumentError, match="OCR read nothing on the page images"):
        PdfLoader().load(scanned_pdf([blank]), "blank.pdf")
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)  # draws nothing: not even rendered
    empty = io.BytesIO()
    writer.write(empty)
    with pytest.raises(EmptyDocumentError, match=r"empty.pdf: no extractable text \(no page has a text layer, nor draws"):
        PdfLoader().load(empty.getvalue(), "empty.pdf")


def test_without_the_extra_images_and_scans_name_it_and_text_pages_still_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # import fails as if not installed
    monkeypatch.setattr(ocr, "_engine", None)
    with pytest.raises(MissingExtraError) as info:
        ImageLoader().load(image_bytes([render_page("Hello.")], "PNG"), "notice.png")
    assert str(info.value) == (
        "notice.png: reading PNG image files needs the 'ocr' extra (rapidocr_onnxruntime missing): "
        "pip install 'sourcebook[ocr]'"
    )
    with pytest.raises(EmptyDocumentError) as empty:
        PdfLoader().load(scanned_pdf([render_page(PARAGRAPHS[0])]), "scan.pdf")
    assert str(empty.value) == (
        "scan.pdf: no extractable text (a scanned PDF? OCR needs the 'ocr' extra: pip install 'sourcebook[ocr]')"
    )
    mixed = PdfLoader().load(scanned_pdf(["Only this page has text.", render_page(PARAGRAPHS[0])]), "mixed.pdf")
    assert [(b.page, b.text) for b in mixed.blocks] == [(1, "Only this page has text.")]
    assert "ocr" not in mixed.metadata


def _box(text: str, left: float, top: float) -> ocr._Box:
    return ocr._Box(text, top, top + 30, left, 0.9)


def test_boxes_are_put_in_reading_order_and_paragraphs_marked() -> None:
    """Rows by height on the page, a row's boxes left to right (a box a few pixels lower is
    still in its row); a wide gap and an indented first line start paragraphs."""
    boxes = [
        _box("line.", 300, 54), _box("Second", 50, 95), _box("A first", 50, 50), _box("line.", 170, 96),
        _box("After a gap.", 50, 200), _box("Indented start.", 120, 245), _box("Last line.", 50, 290),
    ]  # fmt: skip
    assert ocr._lines(ocr._rows(boxes)) == [
        "A first line.", "Second line.", "", "After a gap.", "", "Indented start.", "Last line.",
    ]  # fmt: skip


def test_only_pages_where_ocr_read_text_are_marked() -> None:
    assert ocr.ocr_metadata({2: 0.9, 3: None, 5: 0.8}) == {
        "ocr": True, "ocr_confidence": 0.85, "ocr_pages": {"2": 0.9, "5": 0.8},
    }  # fmt: skip
    assert ocr.ocr_metadata({3: None}) == {} and ocr.ocr_metadata({}) == {}


def test_the_confidence_is_the_mean_score_weighted_by_characters() -> None:
    boxes = [ocr._Box("abc", 0, 30, 0, 0.9), ocr._Box("a", 40, 70, 0, 0.5)]
    assert ocr._confidence(boxes) == pytest.approx((3 * 0.9 + 0.5) / 4)
    assert ocr._confidence([]) is None


def test_ocr_runs_after_usearch_and_beside_the_embedder_in_one_process(tmp_path: Path) -> None:
    """Native libraries can clash by import order (onnxruntime after usearch crashes, see
    index/ann.py); OpenCV and rapidocr come last here, after a usearch index and before the
    embedding model, in a fresh process, as in a server that searches and then ingests a scan."""
    (tmp_path / "page.png").write_bytes(image_bytes([render_page("Lunch is served at noon.")], "PNG"))
    script = f"""
import numpy as np
from sourcebook.index.ann import _index_class
index = _index_class()(ndim=4)
index.add(1, np.ones(4, dtype=np.float32))
from sourcebook.loaders.images import ImageLoader
document = ImageLoader().load(open({str(tmp_path / "page.png")!r}, "rb").read(), "page.png")
from sourcebook.embedders.local import LocalEmbedder
print(document.text, LocalEmbedder().embed_documents([document.text]).shape)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Lunch is served at noon. (1, 384)"
