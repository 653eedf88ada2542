"""The Slack export reader: folders and zips in, one item per message (or per broken part) out."""

from __future__ import annotations

import json
import random
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from teamlore.connectors.slack_export import (
    count_slack_messages,
    is_slack_export,
    read_slack_export,
)
from teamlore.domain import MessageEvent, Visibility
from teamlore.errors import ExportError

MAX_CHARS = 40_000
JAN5 = 1767607200  # 2026-01-05T10:00:00Z
JAN6 = JAN5 + 86_400


def ts(seconds: int, micros: int = 0) -> str:
    return f"{seconds}.{micros:06d}"


def msg(stamp: str, text: str, user: str = "U1", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "user": user, "text": text, "ts": stamp, **extra}


def standard_files() -> dict[str, Any]:
    """A small export: two public channels, a private one, a dm and a group dm."""
    parent = ts(JAN5)
    return {
        "users.json": [
            {
                "id": "U1",
                "name": "alice",
                "real_name": "Alice Anders",
                "profile": {"display_name": "Alice A", "real_name": "Alice Anders"},
            },
            {
                "id": "U2",
                "name": "bob",
                "real_name": "Bob Berg",
                "profile": {"display_name": "", "real_name": "Bob Berg"},
            },
            {"id": "U3", "name": "carol", "profile": {}},
        ],
        "channels.json": [{"id": "C1", "name": "general"}, {"id": "C2", "name": "eng"}],
        "groups.json": [{"id": "G1", "name": "secret"}],
        "dms.json": [{"id": "D1", "members": ["U1", "U2"]}],
        "mpims.json": [{"id": "G2", "name": "mpdm-alice--bob--carol-1"}],
        "general/2026-01-05.json": [
            msg(ts(JAN5 - 60), "<@U3> has joined the channel", "U3", subtype="channel_join"),
            msg(parent, "we ship friday", team="T1", thread_ts=parent, reply_count=1),
            msg(ts(JAN5 + 60), "agreed", "U2", team="T1", thread_ts=parent),
            msg(
                ts(JAN5 + 120),
                "release notes v2 (final)",
                team="T1",
                edited={"user": "U1", "ts": ts(JAN5 + 300)},
            ),
            msg(ts(JAN5 + 180), "<@U2> has left the channel", "U2", subtype="channel_leave"),
        ],
        "general/2026-01-06.json": [msg(ts(JAN6), "morning", "U3", team="T1")],
        "eng/2026-01-05.json": [msg(ts(JAN5 + 5), "build is green", "U2", team="T1")],
        "secret/2026-01-05.json": [msg(ts(JAN5 + 7), "salary talk", team="T1")],
        "D1/2026-01-05.json": [msg(ts(JAN5 + 9), "hi bob", team="T1")],
        "mpdm-alice--bob--carol-1/2026-01-05.json": [msg(ts(JAN5 + 11), "lunch?", team="T1")],
    }


def write_export(root: Path, files: dict[str, Any]) -> Path:
    """Write files under root: bytes as they are, str as text, anything else as JSON."""
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        elif isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        else:
            target.write_text(json.dumps(content), encoding="utf-8")
    return root


def zip_folder(folder: Path, target: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(file, prefix + file.relative_to(folder).as_posix())
    return target


def events(path: Path, **kwargs: Any) -> list[MessageEvent]:
    items = list(read_slack_export(path, MAX_CHARS, **kwargs))
    assert [i for i in items if i.error] == []
    return [i.event for i in items if i.event is not None]


def by_text(found: list[MessageEvent]) -> dict[str, MessageEvent]:
    return {e.text: e for e in found}


@pytest.fixture
def export_dir(tmp_path: Path) -> Path:
    return write_export(tmp_path / "acme-export", standard_files())


def test_channels_get_visibility_and_names_from_the_file_that_lists_them(export_dir: Path) -> None:
    found = by_text(events(export_dir))
    seen = {(e.channel, e.channel_name, e.channel_visibility) for e in found.values()}
    assert seen == {
        ("C1", "general", Visibility.PUBLIC),
        ("C2", "eng", Visibility.PUBLIC),
        ("G1", "secret", Visibility.PRIVATE),
        ("D1", "dm-D1", Visibility.DM),
        ("G2", "mpdm-alice--bob--carol-1", Visibility.DM),
    }


def test_events_come_in_channel_name_then_day_then_position_order(export_dir: Path) -> None:
    order = [(e.channel_name, e.text) for e in events(export_dir)]
    assert order == [
        ("dm-D1", "hi bob"),
        ("eng", "build is green"),
        ("general", "we ship friday"),
        ("general", "agreed"),
        ("general", "release notes v2 (final)"),
        ("general", "morning"),
        ("mpdm-alice--bob--carol-1", "lunch?"),
        ("secret", "salary talk"),
    ]


def test_every_event_is_a_slack_message_created_with_utc_time(export_dir: Path) -> None:
    found = by_text(events(export_dir))
    first = found["we ship friday"]
    assert first.kind == "message.created" and first.platform == "slack"
    assert first.message_id == ts(JAN5)
    assert first.ts.isoformat() == "2026-01-05T10:00:00+00:00"
    assert found["morning"].ts.isoformat() == "2026-01-06T10:00:00+00:00"


def test_timestamp_microseconds_are_kept_exactly(tmp_path: Path) -> None:
    files = standard_files() | {"eng/2026-01-05.json": [msg("1767607200.000100", "precise")]}
    event = by_text(events(write_export(tmp_path / "x", files)))["precise"]
    assert event.ts.microsecond == 100 and event.message_id == "1767607200.000100"


def test_thread_replies_get_thread_id_and_parents_get_none(export_dir: Path) -> None:
    found = by_text(events(export_dir))
    assert found["agreed"].thread_id == ts(JAN5)
    assert found["we ship friday"].thread_id is None
    assert found["morning"].thread_id is None


def test_author_names_come_from_users_json_display_then_real_then_name(export_dir: Path) -> None:
    found = by_text(events(export_dir))
    first = found["we ship friday"]
    assert (first.author_id, first.author_name) == ("U1", "Alice A")
    assert found["agreed"].author_name == "Bob Berg"
    assert found["morning"].author_name == "carol"


def test_unknown_author_falls_back_to_message_profile_then_id(tmp_path: Path) -> None:
    files = standard_files() | {
        "eng/2026-01-05.json": [
            msg(ts(JAN5), "guest", "U9", user_profile={"display_name": "", "real_name": "Gus Guest"}),
            msg(ts(JAN5 + 1), "ghost", "U8"),
            {
                "type": "message",
                "subtype": "bot_message",
                "bot_id": "B1",
                "text": "deploy done",
                "ts": ts(JAN5 + 2),
            },
        ]
    }
    found = by_text(events(write_export(tmp_path / "x", files)))
    assert found["guest"].author_name == "Gus Guest"
    assert found["ghost"].author_name == "U8"
    assert (found["deploy done"].author_id, found["deploy done"].author_name) == ("B1", "B1")


def test_missing_users_json_uses_ids_as_names(tmp_path: Path) -> None:
    files = standard_files()
    del files["users.json"]
    found = by_text(events(write_export(tmp_path / "x", files)))
    assert found["we ship friday"].author_name == "U1"


def test_unreadable_users_json_raises_export_error(tmp_path: Path) -> None:
    path = write_export(tmp_path / "x", standard_files() | {"users.json": "[{not json"})
    with pytest.raises(ExportError, match=r"users\.json.*not JSON.*re-download"):
        list(read_slack_export(path, MAX_CHARS))


def test_join_and_leave_are_skipped_and_positions_stay_those_of_the_file(tmp_path: Path) -> None:
    day = [
        msg(ts(JAN5), "joined", subtype="channel_join"),
        msg(ts(JAN5 + 1), "said something"),
        msg(ts(JAN5 + 2), "left", subtype="channel_leave"),
        msg(ts(JAN5 + 3), "topic", subtype="channel_topic"),
        msg(ts(JAN5 + 4), "This message was deleted.", subtype="tombstone"),
        msg(ts(JAN5 + 5), "also to channel", subtype="thread_broadcast"),
        msg(ts(JAN5 + 6), "shared a file", subtype="file_share"),
        msg(ts(JAN5 + 7), "waves", subtype="me_message"),
    ]
    path = write_export(
        tmp_path / "x", {"channels.json": [{"id": "C1", "name": "general"}], "general/2026-01-05.json": day}
    )
    items = list(read_slack_export(path, MAX_CHARS))
    assert [(i.location, i.event.text) for i in items if i.event] == [
        ("general/2026-01-05.json#2", "said something"),
        ("general/2026-01-05.json#6", "also to channel"),
        ("general/2026-01-05.json#7", "shared a file"),
        ("general/2026-01-05.json#8", "waves"),
    ]


def test_edited_message_imports_its_final_text(export_dir: Path) -> None:
    texts = [e.text for e in events(export_dir)]
    assert "release notes v2 (final)" in texts


def test_zip_and_folder_give_the_same_events(export_dir: Path, tmp_path: Path) -> None:
    archive = zip_folder(export_dir, tmp_path / "acme-export.zip")
    assert events(archive) == events(export_dir)
    assert len(events(archive)) == 8


def test_zip_with_a_top_level_folder_is_read(export_dir: Path, tmp_path: Path) -> None:
    archive = zip_folder(export_dir, tmp_path / "wrapped.zip", prefix="acme-export/")
    assert events(archive) == events(export_dir)


def test_folder_around_the_export_folder_is_read(export_dir: Path, tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    export_dir.rename(outer / "acme-export")
    assert len(events(outer, workspace="T1")) == 8


def test_invalid_json_day_file_yields_one_error_and_the_other_files_import(tmp_path: Path) -> None:
    files = standard_files() | {"general/2026-01-05.json": '[{"type": "message", "ts": '}
    items = list(read_slack_export(write_export(tmp_path / "x", files), MAX_CHARS))
    errors = [i for i in items if i.error]
    assert [e.location for e in errors] == ["general/2026-01-05.json"]
    assert "not JSON" in str(errors[0].error)
    assert len([i for i in items if i.event]) == 5


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"\xff\xfe[]", "not valid UTF-8"), ('{"messages": []}', "not a JSON array")],
)
def test_day_file_that_is_not_a_utf8_array_is_one_error_item(
    tmp_path: Path, content: bytes | str, reason: str
) -> None:
    files = standard_files() | {"eng/2026-01-05.json": content}
    items = list(read_slack_export(write_export(tmp_path / "x", files), MAX_CHARS))
    errors = [i for i in items if i.error]
    assert [e.location for e in errors] == ["eng/2026-01-05.json"]
    assert reason in str(errors[0].error)


def test_message_with_1mb_text_is_an_error_item_and_neighbours_import(tmp_path: Path) -> None:
    day = [msg(ts(JAN5), "before"), msg(ts(JAN5 + 1), "x" * 1_000_000), msg(ts(JAN5 + 2), "after")]
    files = standard_files() | {"eng/2026-01-05.json": day}
    items = [
        i
        for i in read_slack_export(write_export(tmp_path / "x", files), MAX_CHARS)
        if i.location.startswith("eng/")
    ]
    assert [i.event.text if i.event else None for i in items] == ["before", None, "after"]
    assert items[1].location == "eng/2026-01-05.json#2"
    assert "limit is 40,000" in str(items[1].error)


def test_broken_messages_become_error_items_with_their_position(tmp_path: Path) -> None:
    day = [
        "just a string",
        {"type": "message", "text": "no ts"},
        msg("yesterday", "bad ts"),
        msg(ts(JAN5), "fine"),
    ]
    files = standard_files() | {"eng/2026-01-05.json": day}
    items = [
        i
        for i in read_slack_export(write_export(tmp_path / "x", files), MAX_CHARS)
        if i.location.startswith("eng/")
    ]
    assert [(i.location, i.error is not None) for i in items] == [
        ("eng/2026-01-05.json#1", True),
        ("eng/2026-01-05.json#2", True),
        ("eng/2026-01-05.json#3", True),
        ("eng/2026-01-05.json#4", False),
    ]
    reasons = [str(i.error) for i in items[:3]]
    assert "JSON object" in reasons[0] and "no ts" in reasons[1] and "yesterday" in reasons[2]
    assert all("\n" not in r for r in reasons)


def test_truncated_zip_raises_export_error_saying_to_redownload(export_dir: Path, tmp_path: Path) -> None:
    archive = zip_folder(export_dir, tmp_path / "cut.zip")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    with pytest.raises(ExportError, match=r"cut\.zip is not a readable zip.*re-download"):
        list(read_slack_export(archive, MAX_CHARS))
    assert not is_slack_export(archive)


def _flip_middle_of_member(archive: Path, member: str) -> None:
    with zipfile.ZipFile(archive) as opened:
        info = opened.getinfo(member)
    data = bytearray(archive.read_bytes())
    header = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[header + 26 : header + 30])
    start = header + 30 + name_len + extra_len
    middle = start + info.compress_size // 2
    for i in range(middle, middle + 16):
        data[i] ^= 0xFF
    archive.write_bytes(bytes(data))


def test_corrupt_zip_member_yields_an_error_item_and_the_rest_imports(tmp_path: Path) -> None:
    words = random.Random(0).choices(["ship", "deploy", "rollback", "review", "lunch"], k=4000)
    noisy = [msg(ts(JAN5 + n), " ".join(words[n * 40 : (n + 1) * 40])) for n in range(100)]
    folder = write_export(tmp_path / "x", standard_files() | {"eng/2026-01-05.json": noisy})
    archive = zip_folder(folder, tmp_path / "damaged.zip")
    _flip_middle_of_member(archive, "eng/2026-01-05.json")
    items = list(read_slack_export(archive, MAX_CHARS))
    errors = [i for i in items if i.error]
    assert [e.location for e in errors] == ["eng/2026-01-05.json"]
    assert "damaged" in str(errors[0].error)
    assert len([i for i in items if i.event]) == 7


def test_folder_without_listings_is_not_an_export(tmp_path: Path) -> None:
    folder = write_export(tmp_path / "photos", {"general/2026-01-05.json": []})
    with pytest.raises(ExportError, match="no channels.json"):
        list(read_slack_export(folder, MAX_CHARS))
    assert not is_slack_export(folder)


def test_missing_path_and_non_zip_file_raise_export_error(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="cannot read .*nope.zip: No such file"):
        list(read_slack_export(tmp_path / "nope.zip", MAX_CHARS))
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello")
    with pytest.raises(ExportError, match="not a readable zip"):
        list(read_slack_export(text_file, MAX_CHARS))


def test_is_slack_export_accepts_folders_and_zips_with_listings(export_dir: Path, tmp_path: Path) -> None:
    assert is_slack_export(export_dir)
    assert is_slack_export(zip_folder(export_dir, tmp_path / "a.zip", prefix="top/"))
    only_dms = write_export(tmp_path / "dms-only", {"dms.json": []})
    assert is_slack_export(only_dms)


def test_workspace_comes_from_the_team_field_and_the_argument_overrides_it(
    export_dir: Path,
) -> None:
    assert {e.workspace for e in events(export_dir)} == {"T1"}
    assert {e.workspace for e in events(export_dir, workspace="acme")} == {"acme"}


def test_workspace_falls_back_to_the_export_name_without_spaces(tmp_path: Path) -> None:
    files = {
        "channels.json": [{"id": "C1", "name": "general"}],
        "general/2026-01-05.json": [msg(ts(JAN5), "no team here")],
    }
    folder = write_export(tmp_path / "src", files)
    archive = zip_folder(folder, tmp_path / "Acme Slack export.zip")
    assert {e.workspace for e in events(archive)} == {"Acme-Slack-export"}


def test_permalink_uses_the_domain_when_given_and_slack_com_otherwise(export_dir: Path) -> None:
    plain = by_text(events(export_dir))["we ship friday"]
    named = by_text(events(export_dir, domain="acme"))["we ship friday"]
    assert plain.permalink == f"https://slack.com/archives/C1/p{JAN5}000000"
    assert named.permalink == f"https://acme.slack.com/archives/C1/p{JAN5}000000"


def test_listed_channel_without_folder_is_empty_and_unlisted_folder_is_ignored(
    tmp_path: Path,
) -> None:
    files = {
        "channels.json": [{"id": "C1", "name": "general"}, {"id": "C2", "name": "empty"}],
        "general/2026-01-05.json": [msg(ts(JAN5), "listed")],
        "stray/2026-01-05.json": [msg(ts(JAN5), "unlisted")],
    }
    found = events(write_export(tmp_path / "x", files))
    assert [e.text for e in found] == ["listed"]


def test_unusable_channel_entry_is_an_error_item(tmp_path: Path) -> None:
    files = {
        "channels.json": [{"name": "no-id"}, {"id": "C1", "name": "general"}],
        "general/2026-01-05.json": [msg(ts(JAN5), "still here")],
    }
    items = list(read_slack_export(write_export(tmp_path / "x", files), MAX_CHARS))
    assert items[0].location == "channels.json#1" and items[0].event is None
    assert "no id" in str(items[0].error)
    assert [i.event.text for i in items[1:] if i.event] == ["still here"]


def test_count_counts_message_objects_in_day_files(export_dir: Path, tmp_path: Path) -> None:
    assert count_slack_messages(export_dir) == 10
    assert count_slack_messages(zip_folder(export_dir, tmp_path / "a.zip")) == 10
