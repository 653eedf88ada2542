"""Real files made in the tests: PDF (fpdf2), Word, Excel and PowerPoint (the libraries Teamlore
reads them with write them too), and hostile ones (a zip bomb, a truncated PDF, a lying name)."""

from __future__ import annotations

import io
import zipfile

PDF_MIME = "application/pdf"
DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def pdf(pages: list[str]) -> bytes:
    from fpdf import FPDF

    made = FPDF()
    made.set_font("helvetica", size=12)
    for text in pages:
        made.add_page()
        made.multi_cell(0, 8, text)
    return bytes(made.output())


def docx(paragraphs: list[str], heading: str = "") -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    if heading:
        document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pptx(slides: list[tuple[str, str]]) -> bytes:
    import pptx as python_pptx

    deck = python_pptx.Presentation()
    for title, body in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def zip_bomb_docx(unpacked: int = 400_000_000) -> bytes:
    """A real .docx with one extra part of zeros that deflates about a thousand to one."""
    good = zipfile.ZipFile(io.BytesIO(docx(["The bomb carries a sentence too."])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bomb:
        for item in good.infolist():
            bomb.writestr(item, good.read(item))
        with bomb.open("word/media/zeros.bin", "w", force_zip64=True) as part:
            block = b"\0" * 1_000_000
            for _ in range(unpacked // len(block)):
                part.write(block)
    return out.getvalue()


def huge_text_docx(characters: int = 60_000_000) -> bytes:
    """A real .docx of ``characters`` of text in paragraphs of a thousand: it packs hundreds to
    one, and reading it needs its whole text in memory."""
    good = zipfile.ZipFile(io.BytesIO(docx(["placeholder"])))
    original = good.read("word/document.xml").decode()
    head, tail = original.split("placeholder")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as made:
        for item in good.infolist():
            if item.filename != "word/document.xml":
                made.writestr(item, good.read(item))
        with made.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(head.encode())
            close, reopen = tail.split("</w:p>", 1)[0], "<w:p><w:r><w:t>"
            block = (b"A" * 1000 + close.encode() + b"</w:p>" + reopen.encode()) * 1000
            for _ in range(characters // 1_000_000):
                part.write(block)
            part.write(tail.encode())
    return out.getvalue()
