"""Real office, e-book and e-mail files for the loader tests, written by the libraries that
make them (python-docx, python-pptx, openpyxl, odfpy, the email package) or, for EPUB and
the DOCX footnotes python-docx cannot write, by assembling the zip package as the formats
specify it."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Sequence
from email.message import EmailMessage

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_FOOTNOTES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:footnotes xmlns:w="{W_NS}">
<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>
<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>
<w:footnote w:id="1"><w:p><w:r><w:t>Counted in working days, not calendar days.</w:t></w:r></w:p></w:footnote>
</w:footnotes>"""


def _with_footnotes(docx: bytes) -> bytes:
    """Add a footnotes part (with id 1) and its relationship and content type to a package."""
    source = zipfile.ZipFile(io.BytesIO(docx))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "[Content_Types].xml":
                data = data.replace(b"</Types>", b'<Override PartName="/word/footnotes.xml" ContentType='
                                    b'"application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/></Types>')
            elif item.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", b'<Relationship Id="rIdNotes" Type="http://schemas.'
                                    b'openxmlformats.org/officeDocument/2006/relationships/footnotes" '
                                    b'Target="footnotes.xml"/></Relationships>')
            target.writestr(item, data)
        target.writestr("word/footnotes.xml", _FOOTNOTES)
    return out.getvalue()


def make_docx() -> bytes:
    """A handbook: title, headings, a bulleted list, a table, a footnote, core properties."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    document.core_properties.author = "Ada Lovelace"
    document.add_paragraph("Staff handbook", style="Title")
    document.add_heading("Leave", level=1)
    paragraph = document.add_paragraph("Full-time staff get 27 days of paid holiday a year.")
    reference = OxmlElement("w:footnoteReference")
    reference.set(qn("w:id"), "1")
    paragraph.add_run()._r.append(reference)
    document.add_paragraph("Book leave in the portal", style="List Bullet")
    document.add_paragraph("Tell your manager", style="List Bullet")
    document.add_heading("Pay grades", level=2)
    table = document.add_table(rows=3, cols=2)
    for r, values in enumerate([("Grade", "Salary"), ("A", "41,000"), ("B", "52|000")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    document.add_heading("Travel", level=1)
    document.add_paragraph("Book trains, not flights, under 500 km.")
    out = io.BytesIO()
    document.save(out)
    return _with_footnotes(out.getvalue())


def make_pptx() -> bytes:
    """Three slides: a bulleted body with speaker notes, a table, and a title-only divider."""
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    presentation.core_properties.title = "Quarterly review"
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Results"
    body = first.placeholders[1].text_frame
    body.text = "Revenue grew 12%"
    body.add_paragraph().text = "Costs fell by a third"
    first.notes_slide.notes_text_frame.text = "Mention the new office in Lyon."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Sales by region"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r, values in enumerate([("Region", "Sales"), ("Europe", "40 M"), ("Asia", "25 M")]):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    third = presentation.slides.add_slide(presentation.slide_layouts[5])
    third.shapes.title.text = "Outlook"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def make_xlsx(staff_rows: int = 60) -> bytes:
    """Two sheets: a long staff list (dates, numbers) and a short budget with an empty row."""
    from openpyxl import Workbook

    workbook = Workbook()
    staff = workbook.active
    staff.title = "Staff"
    staff.append(["Name", "Team", "Started", "Hours"])
    for i in range(staff_rows):
        staff.append([f"Person {i}", "Ops" if i % 2 else "Dev", dt.datetime(2020, 1, 1 + i % 28), 37.5 if i % 3 else 40.0])
    budget = workbook.create_sheet("Budget")
    budget.append(["Item", "Cost"])
    budget.append(["Laptops", 1200])
    budget.append([])
    budget.append(["Desks", 300.0])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def make_odt() -> bytes:
    """Headings, a paragraph citing a footnote, a list, a table with a repeated cell."""
    from odf import dc, meta
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, Note, NoteBody, NoteCitation, P

    document = OpenDocumentText()
    document.meta.addElement(dc.Title(text="Field guide"))
    document.meta.addElement(meta.InitialCreator(text="Grace Hopper"))
    document.text.addElement(H(outlinelevel=1, text="Birds"))
    paragraph = P(text="Robins sing at dawn")
    note = Note(id="ftn1", noteclass="footnote")
    note.addElement(NoteCitation(text="1"))
    note_body = NoteBody()
    note_body.addElement(P(text="Mostly in spring."))
    note.addElement(note_body)
    paragraph.addElement(note)
    paragraph.addText(" and at dusk.")
    document.text.addElement(paragraph)
    items = List()
    for text in ("wren", "robin"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    document.text.addElement(H(outlinelevel=2, text="Counts"))
    table = Table(name="Counts")
    table.addElement(TableColumn(numbercolumnsrepeated=3))
    for values, repeat in ((("Bird", "Spring", "Autumn"), 1), (("Wren", "12"), 2)):
        row = TableRow()
        for index, value in enumerate(values):
            cell = TableCell(numbercolumnsrepeated=repeat) if index == len(values) - 1 and repeat > 1 else TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        table.addElement(row)
    document.text.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


_CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""


def make_epub(chapters: Sequence[tuple[str, str]], title: str = "A small book", encrypted: bool = False) -> bytes:
    """An EPUB 3 of (file name, XHTML body) chapters, spine in the given order (reversed in
    the manifest, so reading order must come from the spine)."""
    manifest = "".join(
        f'<item id="c{i}" href="text/{name}" media-type="application/xhtml+xml"/>'
        for i, (name, _) in reversed(list(enumerate(chapters)))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    opf = f"""<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:x</dc:identifier>
<dc:title>{title}</dc:title><dc:creator>Mary Shelley</dc:creator><dc:language>en</dc:language></metadata>
<manifest>{manifest}<item id="css" href="style.css" media-type="text/css"/></manifest>
<spine>{spine}</spine></package>"""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # first and stored
        package.writestr("META-INF/container.xml", _CONTAINER)
        package.writestr("OEBPS/content.opf", opf)
        package.writestr("OEBPS/style.css", "p { margin: 0 }")
        for name, body in chapters:
            package.writestr(
                f"OEBPS/text/{name}",
                f'<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{name}</title></head><body>{body}</body></html>",
            )
        if encrypted:
            references = "".join(
                f'<enc:EncryptedData><enc:CipherData><enc:CipherReference URI="OEBPS/text/{name}"/>'
                f"</enc:CipherData></enc:EncryptedData>"
                for name, _ in chapters
            )
            package.writestr(
                "META-INF/encryption.xml",
                f'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                f'xmlns:enc="http://www.w3.org/2001/04/xmlenc#">{references}</encryption>',
            )
    return out.getvalue()


def make_message(subject: str, sender: str, body: str, html: str | None = None, when: str = "Tue, 03 Mar 2026 10:00:00 +0100") -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = sender
    message["To"] = "team@example.org"
    message["Date"] = when
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    return message


def make_mbox(messages: Sequence[EmailMessage]) -> bytes:
    """An mbox: each message after a "From " line, with body lines starting "From " escaped."""
    parts = []
    for message in messages:
        lines = message.as_bytes().replace(b"\r\n", b"\n").split(b"\n")
        escaped = [b">" + line if line.startswith(b"From ") else line for line in lines]
        parts.append(b"From sender@example.org Tue Mar  3 10:00:00 2026\n" + b"\n".join(escaped) + b"\n")
    return b"".join(parts)
