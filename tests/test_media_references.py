"""Attachments on messages: recorded from events, found by name and type inside a scope only,
gone with their message (deleted or erased), and the events-file contract unchanged without them."""

from __future__ import annotations

import json

import pytest

from teamlore.capabilities.importing import open_source
from teamlore.domain import Attachment, AttachmentKind, Scope, attachment_kind
from teamlore.errors import InvalidInput

from .conftest import WS, event
from .helpers import put

PDF = {"name": "Q3 roadmap.pdf", "mime_type": "application/pdf", "size": 52_000, "url": "https://x/f1"}
SHOT = {"name": "error_screenshot.png", "mime_type": "image/png", "size": 9_000, "url": "https://x/f2"}


def test_files_are_found_by_name_and_type_only_inside_the_scope(lore):
    put(
        lore,
        event(
            "See the plan.",
            channel="CPRIV",
            channel_visibility="private",
            message_id="m1",
            attachments=[PDF, SHOT],
        ),
    )
    inside = lore.search_media_references(Scope(WS, ["CPRIV"]), "roadmap")
    assert [(r.name, r.kind, r.size, r.url) for r in inside] == [
        ("Q3 roadmap.pdf", AttachmentKind.PDF, 52_000, "https://x/f1")
    ]
    assert lore.search_media_references(Scope(WS, ["C1"]), "roadmap") == []  # paired: another channel
    assert [r.name for r in lore.search_media_references(Scope(WS, ["CPRIV"]), "", kind="image")] == [
        "error_screenshot.png"
    ]
    assert [r.name for r in lore.search_media_references(Scope(WS, ["CPRIV"]), "pdf")] == ["Q3 roadmap.pdf"]
    assert lore.search_media_references(Scope(WS, ["CPRIV"]), "roadmap", kind="image") == []
    assert lore.search_media_references(Scope(WS, ["CPRIV"]), "100%_") == []  # LIKE wildcards are literal


def test_a_deleted_or_erased_message_takes_its_files_with_it(lore):
    put(lore, event("See the plan.", message_id="m1", attachments=[PDF]))
    put(lore, event("Screenshot of the bug.", message_id="m2", author_id="U2", attachments=[SHOT]))
    scope = Scope(WS, ["C1"])
    assert len(lore.search_media_references(scope, "", kind="pdf")) == 1
    put(lore, event(kind="message.deleted", message_id="m1", ts="2026-01-06T10:00:00Z"))
    assert lore.search_media_references(scope, "", kind="pdf") == []
    assert len(lore.search_media_references(scope, "screenshot")) == 1
    lore.erase_author(WS, "U2", "dpo@example.com")
    assert lore.search_media_references(scope, "screenshot") == []


def test_an_edit_without_files_keeps_them_and_one_with_files_replaces_them(lore):
    put(lore, event("See the plan.", message_id="m1", attachments=[PDF]))
    put(lore, event("See the new plan.", kind="message.edited", message_id="m1", ts="2026-01-05T11:00:00Z"))
    assert [r.name for r in lore.search_media_references(Scope(WS, ["C1"]), "roadmap")] == ["Q3 roadmap.pdf"]
    put(
        lore,
        event(
            "See the new plan.",
            kind="message.edited",
            message_id="m1",
            ts="2026-01-05T12:00:00Z",
            attachments=[SHOT],
        ),
    )
    assert lore.search_media_references(Scope(WS, ["C1"]), "roadmap") == []
    assert len(lore.search_media_references(Scope(WS, ["C1"]), "screenshot")) == 1


def test_the_events_file_contract_holds_with_and_without_attachments(tmp_path, lore):
    old = event("The launch date is 12 May.", message_id="m1").model_dump(mode="json")
    old.pop("attachments")
    new = event("See the plan.", message_id="m2", attachments=[PDF]).model_dump(mode="json")
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n")
    items = list(open_source(path, 40_000).items)
    assert [i.error for i in items] == [None, None]
    assert items[0].event.attachments == () and items[1].event.attachments[0] == Attachment(**PDF)


def test_bad_searches_and_bad_attachments_are_refused():
    with pytest.raises(InvalidInput, match="unknown kind"):
        from teamlore.capabilities.media import search_media_references

        search_media_references(None, Scope(WS, ["C1"]), "x", kind="hologram")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="attachments"):
        event("x", attachments=[{"name": "", "size": -1}])
    assert attachment_kind("", "budget.XLSX") is AttachmentKind.SPREADSHEET
    assert attachment_kind("application/octet-stream", "notes") is AttachmentKind.OTHER
