"""Importing the normalized events file: per-line errors, idempotency, nothing half-written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from teamlore.capabilities.importing import import_items
from teamlore.connectors.events_file import read_events_file
from teamlore.domain import Scope

from .conftest import SAMPLE, WS


def _line(**overrides) -> str:
    data = {
        "kind": "message.created",
        "platform": "slack",
        "workspace": WS,
        "channel": "C1",
        "channel_name": "eng",
        "channel_visibility": "public",
        "message_id": "1.1",
        "thread_id": None,
        "author_id": "U1",
        "author_name": "alice",
        "ts": "2026-01-05T10:00:00Z",
        "text": "We decided to use Redis for the queue.",
        "permalink": "https://x.slack.com/archives/C1/p11",
    }
    data.update(overrides)
    return json.dumps(data)


def _counts(lore) -> dict[str, int]:
    conn = sqlite3.connect(lore.settings.db_path)
    tables = ("messages", "fact_versions", "audit_log", "embeddings", "fact_evidence", "channels")
    return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def _import(lore, path: Path):
    return import_items(read_events_file(path, lore.settings.max_message_chars), lore.pipeline)


def test_bad_lines_are_reported_with_their_line_number_and_the_rest_is_imported(lore, tmp_path):
    path = tmp_path / "events.jsonl"
    good = [
        _line(message_id=f"{i}.1", text=f"The deploy window for service {i} is Tuesday.") for i in range(3)
    ]
    bad = [
        "{not json",
        _line(kind="message.exploded", message_id="9.1"),
        _line(message_id=""),
        json.dumps({k: v for k, v in json.loads(_line()).items() if k != "message_id"}),
        _line(message_id="9.2", text="The limit is " + "x" * 1_048_576),
        _line(ts="yesterday", message_id="9.3"),
        "[1, 2, 3]",
    ]
    lines = [good[0], *bad[:4], good[1], *bad[4:]]
    raw = ("\n".join(lines) + "\n").encode() + b'{"text": "caf\xe9"}\n' + (good[2] + "\n").encode()
    path.write_bytes(raw)

    summary = _import(lore, path)
    assert summary.taken == 3 and summary.skipped == 8
    by_line = {e.split(":")[1]: e for e in summary.errors}
    assert set(by_line) == {"2", "3", "4", "5", "7", "8", "9", "10"}
    assert "not JSON" in by_line["2"]
    assert "kind: must be one of" in by_line["3"]
    assert "message_id" in by_line["4"] and "message_id" in by_line["5"]
    assert "the limit is 40,000" in by_line["7"]
    assert "ts" in by_line["8"]
    assert "must be a JSON object" in by_line["9"]
    assert "UTF-8" in by_line["10"]
    assert all("\n" not in e for e in summary.errors)
    conn = sqlite3.connect(lore.settings.db_path)
    ids = {r[0] for r in conn.execute("SELECT message_id FROM messages")}
    assert ids == {"0.1", "1.1", "2.1"}  # nothing of the bad lines was written


def test_importing_the_same_file_twice_changes_nothing(lore):
    first = _import(lore, SAMPLE)
    assert first.skipped == 0 and first.facts_created > 100
    before = _counts(lore)
    computed = lore.embedder.stats.computed
    second = _import(lore, SAMPLE)
    assert second.facts_created == 0 and second.evidence_added == 0 and second.retracted == 0
    assert set(second.outcomes) <= {"duplicate", "unchanged", "already_deleted"}
    assert _counts(lore) == before
    assert lore.embedder.stats.computed == computed  # no passage embedded twice


def test_a_failing_event_is_undone_alone_and_its_neighbours_land(lore, tmp_path, monkeypatch):
    from teamlore.errors import BackendUnavailable
    from teamlore.workers import mutations

    real = mutations.create_or_revive

    def flaky(facts, candidate, message, now, key, **kwargs):
        if message.message_id == "2.1":
            real(facts, candidate, message, now, key, **kwargs)  # written, then the event fails
            raise BackendUnavailable("simulated failure after a partial write")
        return real(facts, candidate, message, now, key, **kwargs)

    monkeypatch.setattr(mutations, "create_or_revive", flaky)
    path = tmp_path / "events.jsonl"
    path.write_text(
        "\n".join(_line(message_id=f"{i}.1", text=f"Service {i} deploys on Tuesday.") for i in range(1, 4))
    )
    summary = _import(lore, path)
    assert summary.taken == 2 and summary.skipped == 1
    assert "2.1" not in {
        r[0] for r in sqlite3.connect(lore.settings.db_path).execute("SELECT message_id FROM messages")
    }
    statements = {h.fact.statement for h in lore.reader.list(Scope(WS, ["C1"])).hits}
    assert statements == {"Service 1 deploys on Tuesday.", "Service 3 deploys on Tuesday."}


def test_an_edit_replaces_the_facts_of_the_old_text(lore, tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(
        "\n".join(
            [
                _line(text="The API rate limit is 100 requests per minute."),
                _line(
                    kind="message.edited",
                    ts="2026-01-05T11:00:00Z",
                    text="The API rate limit is 120 requests per minute.",
                ),
            ]
        )
    )
    _import(lore, path)
    shown = [h.fact.statement for h in lore.reader.search("rate limit", Scope(WS, ["C1"])).hits]
    assert shown == ["The API rate limit is 120 requests per minute."]


def test_a_deleted_message_stays_gone_when_imported_again(lore, tmp_path):
    created = _line(text="The vendor contract with Initech ends in May.")
    deleted = _line(kind="message.deleted", ts="2026-01-06T10:00:00Z", text="")
    (tmp_path / "a.jsonl").write_text(created + "\n" + deleted + "\n")
    # The same create again is a duplicate by its key; a create with other text (an export taken
    # after an edit) is a new version, refused because the message was deleted.
    later = _line(text="The vendor contract with Initech ends in June.")
    (tmp_path / "b.jsonl").write_text(created + "\n" + later + "\n")
    _import(lore, tmp_path / "a.jsonl")
    again = _import(lore, tmp_path / "b.jsonl")
    assert dict(again.outcomes) == {"duplicate": 1, "already_deleted": 1}
    assert lore.reader.search("Initech vendor contract", Scope(WS, ["C1"])).hits == ()
    row = sqlite3.connect(lore.settings.db_path).execute("SELECT text FROM messages").fetchone()
    assert row == ("",)  # the deleted text is not kept


def test_a_delete_that_arrives_before_its_create_keeps_the_message_out(lore, tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(
        _line(kind="message.deleted", text="")
        + "\n"
        + _line(text="The office lease ends in December.")
        + "\n"
    )
    summary = _import(lore, path)
    assert dict(summary.outcomes) == {"deleted": 1, "already_deleted": 1}
    assert lore.reader.search("office lease", Scope(WS, ["C1"])).hits == ()
