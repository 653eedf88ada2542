"""Hostile and broken files shared in chat: each fails alone, with one line on the file, and every
other event (the messages that shared them included) is stored; the process reading them lives on.
Files are read in a subprocess with a time and memory limit (teamlore/files/sandbox.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from teamlore.app import Teamlore
from teamlore.domain import Scope
from teamlore.errors import Unreadable
from teamlore.files.sandbox import ReadLimits, read_file

from . import files_made as made
from .fake_slack import TEAM, FakeSlack
from .test_shared_files import BUDGET_PAGES, Chat, facts_found, open_lore


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.add_channel("C1", "eng")
        yield fake


@pytest.fixture
def lore(tmp_path, embedder, clock, slack) -> Iterator[Teamlore]:
    opened = open_lore(tmp_path, embedder, clock, slack, file_max_pages=40)
    yield opened
    opened.close()


def statuses(lore: Teamlore) -> dict[str, tuple[str, str]]:
    return {
        r.name: (r.status, r.detail) for r in lore.search_media_references(Scope(TEAM, ["C1"]), "", "pdf")
    } | {
        r.name: (r.status, r.detail)
        for r in lore.search_media_references(Scope(TEAM, ["C1"]), "", "document")
    }


def test_a_bomb_a_truncated_pdf_a_lying_name_and_500_pages_each_fail_alone(lore, slack):
    chat = Chat(lore, slack)
    good = made.pdf(BUDGET_PAGES)
    shares: list[tuple[str, str, bytes]] = [
        ("bomb.docx", made.DOCX_MIME, made.zip_bomb_docx()),
        ("truncated.pdf", made.PDF_MIME, good[: len(good) // 2]),
        ("photo.pdf", made.PDF_MIME, b"\x89PNG\r\n\x1a\n" + b"\0" * 500),
        ("slides.pdf", made.PDF_MIME, made.pptx([("Title", "Body")])),
        ("long.pdf", made.PDF_MIME, made.pdf([f"Page {n} of the long annex." for n in range(1, 501)])),
        ("report.pdf", made.PDF_MIME, good),
    ]
    for n, (name, mime, data) in enumerate(shares, start=1):
        file = slack.share(f"F{n}", name, mime, data)
        chat.post(n, f"Message {n} shares {name}.", files=[file])
    chat.post(10, "The Falcon kickoff is on Monday.")

    found = statuses(lore)
    assert found["bomb.docx"][0] == "unreadable"
    assert found["bomb.docx"][1].startswith("part word/media/zeros.bin unpacks ")
    assert found["bomb.docx"][1].endswith("(limit 200x): refused as a zip bomb")
    assert found["truncated.pdf"][0] == "unreadable" and found["truncated.pdf"][1].startswith(
        "a broken PDF: "
    )
    assert found["photo.pdf"] == ("unreadable", "named .pdf but its content is not a PDF")
    assert found["slides.pdf"] == ("unreadable", "named .pdf but its content is a PowerPoint deck")
    assert found["long.pdf"] == (
        "partial",
        "pdf: 500 pages, 40 passages; read 40 of 500 pages (TEAMLORE_FILE_MAX_PAGES)",
    )
    assert found["report.pdf"] == ("extracted", "pdf: 3 pages, 3 passages")
    assert all("\n" not in detail for _, detail in found.values())
    # Every message is stored, the good file's fact is there, and the process is still reading.
    stored = lore.stores.messages.live_messages(TEAM, "C1", "", 1000)
    assert sum(1 for m in stored if m.shared_in is None) == len(shares) + 1
    assert any("40 thousand" in h.fact.statement for h in facts_found(lore, "Falcon launch budget", "C1"))
    assert facts_found(lore, "Falcon kickoff", "C1")


def test_a_reader_over_its_time_limit_is_stopped_with_one_line():
    slow = ReadLimits(timeout_s=0.05)
    with pytest.raises(Unreadable, match=r"^reading took longer than 0.05 s \(TEAMLORE_FILE_TIMEOUT_S\)$"):
        read_file(made.pdf(BUDGET_PAGES), "report.pdf", made.PDF_MIME, slow)
    assert read_file(made.pdf(BUDGET_PAGES), "report.pdf", made.PDF_MIME, ReadLimits()).pages == 3  # control


def test_a_reader_over_its_memory_limit_is_stopped_with_one_line():
    # Past the zip checks (no ratio limit here), its one paragraph still needs the memory.
    data = made.huge_text_docx()
    tight = ReadLimits(memory_mb=100, max_ratio=10**6)
    with pytest.raises(Unreadable) as refused:
        read_file(data, "bomb.docx", made.DOCX_MIME, tight)
    assert "\n" not in str(refused.value)
    assert str(refused.value) == "needed more than 100 MB (TEAMLORE_FILE_MEMORY_MB)"
    roomy = ReadLimits(memory_mb=2000, max_ratio=10**6, max_chars=1000)  # control: with the memory
    assert read_file(data, "bomb.docx", made.DOCX_MIME, roomy).sections[0][1].startswith("A" * 1000)


def test_a_file_over_the_size_limit_is_not_fetched(tmp_path, embedder, clock, slack):
    small = open_lore(tmp_path, embedder, clock, slack, file_max_bytes=1000)
    try:
        chat = Chat(small, slack)
        big: dict[str, Any] = slack.share("F1", "report.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES))
        unsized = {**slack.share("F2", "other.pdf", made.PDF_MIME, made.pdf(BUDGET_PAGES)), "size": None}
        chat.post(1, "Two reports.", files=[big, unsized])
        refs = {r.name: r for r in small.search_media_references(Scope(TEAM, ["C1"]), "", "pdf")}
        assert refs["report.pdf"].status == "skipped"
        assert refs["report.pdf"].detail.endswith("bytes; the limit is 1,000 (TEAMLORE_FILE_MAX_BYTES)")
        # Without a declared size the download itself stops at the limit.
        assert refs["other.pdf"].status == "skipped"
        assert refs["other.pdf"].detail.startswith("not fetched: the file is ")
        assert len(slack.downloads) == 1  # only the unsized one was asked for
    finally:
        small.close()


def test_passages_keep_their_place_join_wrapped_lines_and_drop_what_no_message_may_hold():
    from teamlore.files.passages import PASSAGE_CHARS, passage_id, passages, reflow

    assert reflow("The vendor for the\nbadge printer is Acme.\nNext line.") == (
        "The vendor for the badge printer is Acme.\nNext line."
    )
    assert reflow("bell\x07 and\x00 nul") == "bell and nul"
    long = ("word " * 600).strip()
    found, cut = passages((("p. 1", long), ("p. 2", "Short.")), limit=10)
    assert [p.locator for p in found] == ["p. 1", "p. 1", "p. 1", "p. 2"] and not cut
    assert all(len(p.text) <= PASSAGE_CHARS for p in found)
    assert passages((("p. 1", long),), limit=2) == (found[:2], True)
    unbroken = passages((("", "x" * 5000),), limit=10)[0]
    assert [len(p.text) for p in unbroken] == [1200, 1200, 1200, 1200, 200]
    made_id = passage_id("m" * 200, "ab" * 32, 7)
    assert len(made_id) <= 200 and made_id.endswith("~fabababababababab~7")
