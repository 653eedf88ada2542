"""Mattermost bulk export (JSON Lines, alone or in its zip) through ``teamlore import``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from teamlore.app import Teamlore
from teamlore.capabilities.importing import open_source
from teamlore.cli import app as cli_app
from teamlore.config import Settings
from teamlore.connectors.mattermost.bulk_export import is_mattermost_export, read_mattermost_export
from teamlore.domain import Scope, Visibility

JAN5_MS = 1_767_607_200_000


def export_lines() -> list[dict[str, Any]]:
    return [
        {"type": "version", "version": 1, "info": {"generator": "mmctl", "version": "10.5.0"}},
        {"type": "team", "team": {"name": "acme", "display_name": "Acme", "type": "O"}},
        {"type": "channel", "channel": {"team": "acme", "name": "eng", "display_name": "Eng", "type": "O"}},
        {
            "type": "channel",
            "channel": {"team": "acme", "name": "deals", "display_name": "Deals", "type": "P"},
        },
        {"type": "user", "user": {"username": "alice", "email": "alice@example.com"}},
        {
            "type": "post",
            "post": {
                "team": "acme",
                "channel": "eng",
                "user": "alice",
                "message": "Which database for the billing service?",
                "create_at": JAN5_MS,
                "replies": [
                    {
                        "user": "bob",
                        "message": "We chose Postgres for the billing service.",
                        "create_at": JAN5_MS + 60_000,
                        "attachments": [{"path": "data/2026/01/05/abc/billing-schema.png"}],
                    },
                ],
            },
        },
        {
            "type": "post",
            "post": {
                "team": "acme",
                "channel": "deals",
                "user": "bob",
                "create_at": JAN5_MS + 1,
                "message": "The Globex renewal price is 40 dollars per seat.",
            },
        },
        {"type": "direct_channel", "direct_channel": {"members": ["alice", "bob"]}},
        {
            "type": "direct_post",
            "direct_post": {
                "channel_members": ["bob", "alice"],
                "user": "alice",
                "create_at": JAN5_MS + 2,
                "message": "The launch date is 12 May.",
            },
        },
        {"type": "post", "post": {"team": "acme", "channel": "eng", "message": "no user", "create_at": 5}},
    ]


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_a_bulk_export_is_detected_and_an_events_file_is_not(tmp_path):
    export = write_jsonl(tmp_path / "export.jsonl", export_lines())
    events = write_jsonl(tmp_path / "events.jsonl", [{"kind": "message.created", "type": "version"}])
    assert is_mattermost_export(export) and not is_mattermost_export(events)
    assert open_source(export, 40_000).kind == "mattermost export"
    assert open_source(events, 40_000).kind == "events file"


def test_posts_replies_channels_and_attachments_become_events(tmp_path):
    items = list(read_mattermost_export(write_jsonl(tmp_path / "e.jsonl", export_lines()), 40_000))
    events = [i.event for i in items if i.event]
    errors = [(i.location, str(i.error)) for i in items if i.error]
    assert errors == [("e.jsonl:10", "post has no user")]
    parent, reply, deal, direct = events
    assert (parent.workspace, parent.channel, parent.channel_visibility) == (
        "acme",
        "acme/eng",
        Visibility.PUBLIC,
    )
    assert reply.thread_id == parent.message_id == f"{JAN5_MS}-alice"
    assert [(a.name, a.mime_type, a.kind.value) for a in reply.attachments] == [
        ("billing-schema.png", "image/png", "image")
    ]
    assert deal.channel_visibility is Visibility.PRIVATE
    assert (direct.channel, direct.channel_visibility) == ("dm/alice+bob", Visibility.DM)


def test_teamlore_import_takes_the_export_zip_with_its_files(tmp_path):
    archive = tmp_path / "mm_export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("import.jsonl", "\n".join(json.dumps(line) for line in export_lines()[:-1]) + "\n")
        z.writestr("data/2026/01/05/abc/billing-schema.png", b"\x89PNG" + b"0" * 2044)
    data = tmp_path / "store"
    result = CliRunner().invoke(cli_app, ["import", str(archive), "--data-dir", str(data), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["kind"] == "mattermost export" and summary["taken"] == 4 and summary["skipped"] == 0
    lore = Teamlore(Settings(data_dir=data, _env_file=None))
    try:
        files = lore.search_media_references(Scope("acme", ["acme/eng"]), "schema", kind="image")
        assert [(f.name, f.size) for f in files] == [("billing-schema.png", 2048)]
        hits = lore.reader.search("Globex renewal price", Scope("acme", ["acme/deals"])).hits
        assert hits and "40 dollars" in hits[0].text
        outside = lore.reader.search("Globex renewal price", Scope("acme", ["acme/eng"])).hits  # paired
        assert not any("40 dollars" in h.text for h in outside)
    finally:
        lore.close()
