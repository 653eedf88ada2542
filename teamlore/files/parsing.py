"""The file reader that runs in a subprocess (``teamlore.files.sandbox`` starts it by path).

It imports nothing of Teamlore, limits its own memory, CPU time and writes first, then reads one
file from stdin (a JSON header line, then the bytes) and prints one JSON object: the file's
sections (``[locator, text]``: "p. 3", "sheet Budget", "slide 2", "" for the whole) or the one
line saying why it could not be read. Nothing in a file is executed: Office files are read as
XML (macros are never looked at), PDFs by pypdf's text extraction, HTML by the stdlib parser.
"""

from __future__ import annotations

import csv
import io
import json
import re
import resource
import sys
import zipfile
from html.parser import HTMLParser
from typing import Any

Sections = list[tuple[str, str]]


class Unreadable(Exception):
    """The one line a file that cannot be read is recorded with."""


class Limits:
    def __init__(self, raw: dict[str, int]) -> None:
        self.pages = raw["max_pages"]
        self.chars = raw["max_chars"]
        self.unzipped = raw["max_unzipped_bytes"]
        self.ratio = raw["max_ratio"]
        self.notes: list[str] = []
        self.used = 0

    def take(self, text: str) -> str:
        """``text`` as far as the character budget of the whole file still goes."""
        room = self.chars - self.used
        if len(text) > room:
            if not self.notes or "characters" not in self.notes[-1]:
                self.notes.append(f"stopped at {self.chars:,} characters (TEAMLORE_FILE_MAX_CHARS)")
            text = text[: max(room, 0)]
        self.used += len(text)
        return text

    @property
    def full(self) -> bool:
        return self.used >= self.chars


_OFFICE = {"word/document.xml": "docx", "xl/workbook.xml": "xlsx", "ppt/presentation.xml": "pptx"}
_CLAIMED = {"pdf": "pdf", "docx": "docx", "xlsx": "xlsx", "xlsm": "xlsx", "pptx": "pptx"}
_TEXT = {"txt": "text", "log": "text", "md": "markdown", "markdown": "markdown", "csv": "csv"}
_TEXT |= {"tsv": "tsv", "html": "html", "htm": "html", "json": "text", "yaml": "text", "yml": "text"}
_NAMES = {"pdf": "a PDF", "docx": "a Word document", "xlsx": "an Excel workbook", "pptx": "a PowerPoint deck"}
_LEGACY = ("doc", "xls", "ppt")


def sniff(data: bytes, name: str, mime: str) -> str:
    """The format the bytes are (never only what the name says): pdf, docx, xlsx, pptx, text,
    markdown, csv, tsv or html; ``Unreadable`` for anything else or a name that lies."""
    extension = name.rpartition(".")[2].lower() if "." in name else ""
    found = _content_kind(data)
    claimed = _CLAIMED.get(extension)
    if claimed and found != claimed:
        what = _NAMES.get(found or "", "not " + _NAMES[claimed])
        raise Unreadable(f"named .{extension} but its content is {what}")
    if found:
        return found
    if extension in _LEGACY or data.startswith(b"\xd0\xcf\x11\xe0"):
        raise Unreadable(
            f"a legacy Office file (.{extension or 'doc/xls/ppt'}) is not read; share it as .docx/.xlsx/.pptx"
        )
    kind = _TEXT.get(extension) or ("html" if "html" in mime else "text" if mime.startswith("text/") else "")
    if not kind:
        raise Unreadable(f"files of this type are not read ({mime or extension or 'unknown type'})")
    if b"\x00" in data[:8192]:
        raise Unreadable(f"named as {kind} but its content is binary")
    return kind


def _content_kind(data: bytes) -> str | None:
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        try:
            names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        except zipfile.BadZipFile as exc:
            raise Unreadable(f"a broken zip container: {exc}") from None
        return next((kind for part, kind in _OFFICE.items() if part in names), "zip")
    return None


def check_zip(data: bytes, limits: Limits) -> None:
    """Refuse an Office file whose parts unpack past the limit or at a bomb's ratio, before any
    part is inflated."""
    total = 0
    for info in zipfile.ZipFile(io.BytesIO(data)).infolist():
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > 1_000_000 and ratio > limits.ratio:
            raise Unreadable(
                f"part {info.filename[:80]} unpacks {ratio:,.0f} times its size"
                f" (limit {limits.ratio}x): refused as a zip bomb"
            )
    if total > limits.unzipped:
        raise Unreadable(
            f"unpacks to {total:,} bytes (limit {limits.unzipped:,},"
            " TEAMLORE_FILE_MAX_UNZIPPED_BYTES): refused"
        )


def read_pdf(data: bytes, limits: Limits) -> tuple[Sections, int]:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)  # it logs every repaired object
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("the PDF is encrypted with a password")
        count = len(reader.pages)
        sections: Sections = []
        for number, page in enumerate(reader.pages, start=1):
            if number > limits.pages:
                limits.notes.append(f"read {limits.pages} of {count} pages (TEAMLORE_FILE_MAX_PAGES)")
                break
            sections.append((f"p. {number}", limits.take(page.extract_text() or "")))
            if limits.full:
                break
    except PdfReadError as exc:
        raise Unreadable(f"a broken PDF: {_line(exc)}") from None
    return sections, count


def read_docx(data: bytes, limits: Limits) -> tuple[Sections, int]:
    import docx

    document = docx.Document(io.BytesIO(data))
    sections: Sections = []
    heading, held = "", 0
    lines: list[str] = []
    for paragraph in document.paragraphs:
        # The style id from the XML ("Heading1", "Title"): resolving the style object per
        # paragraph costs a lookup through the styles part each time.
        style = (paragraph._p.style or "").lower()
        text = paragraph.text
        if style.startswith(("heading", "title")) and text.strip():
            sections.append((heading, "\n".join(lines)))
            heading, lines = f"§ {text.strip()[:80]}", [text]
        else:
            lines.append(text)
        held += len(text)
        if held > limits.chars:
            break
    sections.append((heading, "\n".join(lines)))
    for number, table in enumerate(document.tables, start=1):
        rows = [[cell.text.strip() for cell in row.cells] for row in table.rows]
        sections.append((f"table {number}", _rows_text(rows)))
    return [(where, limits.take(text)) for where, text in sections if text.strip()], 0


def read_xlsx(data: bytes, limits: Limits) -> tuple[Sections, int]:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    sections: Sections = []
    for sheet in book.worksheets:
        rows, held = [], 0
        for row in sheet.iter_rows(values_only=True):
            rows.append(["" if v is None else str(v) for v in row])
            held += sum(len(c) for c in rows[-1])
            if held > limits.chars:
                break
        sections.append((f"sheet {sheet.title}", limits.take(_rows_text(rows))))
        if limits.full:
            break
    book.close()
    return sections, len(book.worksheets)


def read_pptx(data: bytes, limits: Limits) -> tuple[Sections, int]:
    import pptx

    deck = pptx.Presentation(io.BytesIO(data))
    sections: Sections = []
    for number, slide in enumerate(deck.slides, start=1):
        if number > limits.pages:
            limits.notes.append(f"read {limits.pages} of {len(deck.slides)} slides (TEAMLORE_FILE_MAX_PAGES)")
            break
        lines = []
        for shape in slide.shapes:
            if shape.has_text_frame:
                lines += [p.text for p in shape.text_frame.paragraphs if p.text.strip()]
            if getattr(shape, "has_table", False) and shape.has_table:
                lines.append(_rows_text([[c.text for c in row.cells] for row in shape.table.rows]))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            lines.append(slide.notes_slide.notes_text_frame.text)
        sections.append((f"slide {number}", limits.take("\n".join(lines))))
    return sections, len(deck.slides)


def _rows_text(rows: list[list[str]]) -> str:
    """A table as sentences: each row after the first as "header: value" pairs, so a row stands
    alone ("Region: EMEA; Budget: 40000")."""
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        return "\n".join("; ".join(c for c in r if c.strip()) for r in rows)
    header = [h.strip() for h in rows[0]]
    lines = []
    for row in rows[1:]:
        pairs = [
            f"{h}: {v.strip()}" if h else v.strip() for h, v in zip(header, row, strict=False) if v.strip()
        ]
        lines.append("; ".join(pairs) + ".")
    return "\n".join(lines)


class _Text(HTMLParser):
    _SKIP = frozenset({"script", "style", "head", "template"})
    _BREAK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._skipping += tag in self._SKIP
        if tag in self._BREAK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        self._skipping -= tag in self._SKIP and self._skipping > 0
        if tag in self._BREAK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def read_text(data: bytes, kind: str, limits: Limits) -> tuple[Sections, int]:
    text = data.decode("utf-8-sig", errors="replace")
    if kind == "html":
        parser = _Text()
        parser.feed(text)
        text = re.sub(r"\n\s*\n+", "\n\n", "".join(parser.parts))
    elif kind in ("csv", "tsv"):
        text = _rows_text(
            [list(r) for r in csv.reader(io.StringIO(text), delimiter="\t" if kind == "tsv" else ",")]
        )
    return [("", limits.take(text))], 0


def read(data: bytes, name: str, mime: str, limits: Limits) -> dict[str, Any]:
    kind = sniff(data, name, mime)
    if kind == "zip":
        raise Unreadable("a zip archive: its files are not read")
    if kind in ("docx", "xlsx", "pptx"):
        check_zip(data, limits)
    readers = {"pdf": read_pdf, "docx": read_docx, "xlsx": read_xlsx, "pptx": read_pptx}
    sections, pages = readers[kind](data, limits) if kind in readers else read_text(data, kind, limits)
    return {"ok": True, "kind": kind, "pages": pages, "sections": sections, "notes": limits.notes}


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return text or type(exc).__name__


def _confine(memory_mb: int, cpu_s: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # it writes nothing but its answer
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    header = json.loads(sys.stdin.buffer.readline())
    _confine(header["memory_mb"], header["cpu_s"])
    data = sys.stdin.buffer.read()
    try:
        answer = read(data, header["name"], header["mime"], Limits(header["limits"]))
    except Unreadable as exc:
        answer = {"ok": False, "reason": str(exc)}
    except ImportError as exc:  # the core install, without the files extra
        answer = {"ok": False, "missing": str(exc.name), "reason": "pip install 'teamlore[files]'"}
    except MemoryError:
        answer = {
            "ok": False,
            "reason": f"needed more than {header['memory_mb']} MB (TEAMLORE_FILE_MEMORY_MB)",
        }
    except RecursionError:
        answer = {"ok": False, "reason": "nested too deeply to read"}
    except Exception as exc:  # noqa: BLE001 - any library failure on hostile bytes is this file's one line
        answer = {"ok": False, "reason": f"unreadable ({type(exc).__name__}: {_line(exc)})"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
