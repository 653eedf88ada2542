"""The idempotency key: platform, workspace, channel, message id and edit version."""

from __future__ import annotations

import pytest

from teamlore.domain import Scope
from teamlore.workers.pipeline import Outcome, record_orphan

from .conftest import WS, event
from .helpers import put

BASE = dict(message_id="m1", ts="2026-03-01T10:00:00Z")


def test_the_same_event_twice_is_applied_once(lore):
    first = event("The launch date is 12 May.", **BASE)
    assert put(lore, first)[0].outcome is Outcome.STORED
    again = put(lore, first)[0]
    assert again.outcome is Outcome.DUPLICATE and again.changed == []
    assert len(lore.reader.list(Scope(WS, ["C1"])).hits) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"platform": "discord"},
        {"workspace": "T2"},
        {"channel": "C2"},
        {"message_id": "m2"},
        {"text": "The launch date is 19 May."},  # a new version of the text
        {"kind": "message.edited", "ts": "2026-03-01T11:00:00Z"},
        {"kind": "message.deleted"},
    ],
)
def test_every_part_of_the_key_tells_events_apart(change):
    fields = {**BASE, "text": "The launch date is 12 May.", **change}
    text = fields.pop("text")
    original = event("The launch date is 12 May.", **BASE)
    assert event(text, **fields).idempotency_key != original.idempotency_key
    assert event("The launch date is 12 May.", **BASE).idempotency_key == original.idempotency_key


def test_an_export_reimported_after_an_edit_is_not_taken_for_a_duplicate(lore):
    put(lore, event("The launch date is 12 May.", **BASE))
    result = put(lore, event("The launch date is 19 May.", **BASE))[0]
    assert result.outcome is Outcome.EDITED
    statements = [v.fact.statement for v in lore.reader.list(Scope(WS, ["C1"])).hits]
    assert statements == ["The launch date is 19 May."]


def test_an_orphan_edit_is_recorded_but_applies_once_its_message_arrives(lore):
    edit = event(
        "The launch date is 19 May.", kind="message.edited", message_id="m1", ts="2026-03-01T11:00:00Z"
    )
    result = put(lore, edit)[0]
    assert result.outcome is Outcome.ORPHAN
    record_orphan(edit, lore.pipeline)
    assert not lore.stores.ledger.seen(edit.idempotency_key)
    put(lore, event("The launch date is 12 May.", **BASE))
    assert put(lore, edit)[0].outcome is Outcome.EDITED
    assert lore.stores.ledger.seen(edit.idempotency_key)
