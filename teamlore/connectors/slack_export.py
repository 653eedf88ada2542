"""Slack export reader: a zip or an unpacked folder of channel listings and daily JSON files.

Every message a person wrote becomes a ``message.created`` event built through ``parse_event``, so
the same validation applies as for the events file. ``slack_event_data`` is the one translation of
a Slack message object (text, author, thread, permalink, files); the live connector uses it too.
A broken message or day file becomes an error item and the import goes on; an export that cannot
be read at all raises ``ExportError``.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from teamlore.connectors import ImportItem, import_item
from teamlore.domain import EventKind, MessageEvent, Visibility, parse_event
from teamlore.errors import ExportError, InvalidInput
from teamlore.untrusted import load_json

LISTINGS: tuple[tuple[str, Visibility], ...] = (
    ("channels.json", Visibility.PUBLIC),
    ("groups.json", Visibility.PRIVATE),
    ("dms.json", Visibility.DM),
    ("mpims.json", Visibility.DM),
)
_LISTING_NAMES = frozenset(name for name, _ in LISTINGS)

# Subtypes Slack writes for things that happened to a channel, not for something a person said.
SKIPPED_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "tombstone",
        "channel_archive",
        "channel_unarchive",
        "group_join",
        "group_leave",
        "pinned_item",
        "unpinned_item",
    }
)

_TS = re.compile(r"([0-9]{1,11})(?:\.([0-9]{1,9}))?")
_T = TypeVar("_T", str, dict[str, Any], list[Any])
_NOT_IDENTIFIER = re.compile(r"[\s\x00-\x1f]+")
# A damaged zip member fails in any of these ways, depending on where the damage is.
_READ_ERRORS = (OSError, EOFError, RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error)


@dataclass(frozen=True, slots=True)
class SlackChannel:
    id: str
    name: str
    visibility: Visibility
    folder: str = ""  # in an export: the folder holding its day files


@dataclass(frozen=True, slots=True)
class SlackContext:
    workspace: str
    users: Mapping[str, Mapping[str, Any]]  # user id -> users.json entry (or users.info's "user")
    archives_url: str  # https://DOMAIN.slack.com/archives
    max_chars: int


@dataclass(frozen=True, slots=True)
class _Export:
    """The export's files, named relative to the folder that holds the listings."""

    label: str
    readers: dict[str, Callable[[], bytes]]
    days: dict[str, list[str]]  # channel folder -> its day files, sorted


def read_slack_export(
    path: Path, max_chars: int, workspace: str | None = None, domain: str | None = None
) -> Iterator[ImportItem]:
    """Yield one item per message, by channel name, day file and position in the day."""
    with _open_export(path) as export:
        users = _load_users(export)
        channels, problems = _load_channels(export)
        yield from problems
        team = workspace or _first_team(export, channels) or _name_as_workspace(path)
        url = f"https://{domain}.slack.com/archives" if domain else "https://slack.com/archives"
        context = SlackContext(team, users, url, max_chars)
        for channel, member, messages in _day_files(export, channels):
            yield from _read_day(channel, member, messages, context)


def count_slack_messages(path: Path) -> int:
    """Message objects in the day files (skipped subtypes included); a broken file counts once."""
    with _open_export(path) as export:
        days = _day_files(export, _load_channels(export)[0])
        return sum(len(messages) if isinstance(messages, list) else 1 for *_, messages in days)


def is_slack_export(path: Path) -> bool:
    """A zip or folder holding channels.json, groups.json, dms.json or mpims.json."""
    with suppress(ExportError, OSError), _open_export(path):
        return True
    return False


@contextmanager
def _open_export(path: Path) -> Iterator[_Export]:
    if path.is_dir():  # listings and day files, perhaps inside one more folder
        files = [p for pattern in ("*", "*/*", "*/*/*") for p in path.glob(pattern) if p.is_file()]
        names = [p.relative_to(path).as_posix() for p in files]
        yield _export(path, names, lambda name: (path / name).read_bytes())
        return
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise ExportError(
            f"{path.name} is not a readable zip (truncated or damaged?): re-download the export"
        ) from exc
    except OSError as exc:
        hint = "give the Slack export zip or the folder it unpacks to"
        raise ExportError(f"cannot read {path}: {exc.strerror}; {hint}") from exc
    with archive:
        yield _export(path, archive.namelist(), archive.read)


def _export(path: Path, names: list[str], reader: Callable[[str], bytes]) -> _Export:
    prefix = _listings_prefix(names, path)
    relative = sorted(name[len(prefix) :] for name in names if name.startswith(prefix))
    days: dict[str, list[str]] = {}
    for folder, slash, day in (name.partition("/") for name in relative):
        if slash and "/" not in day and day.endswith(".json") and not day.startswith("."):
            days.setdefault(folder, []).append(day)
    readers: dict[str, Callable[[], bytes]] = {name: partial(reader, prefix + name) for name in relative}
    return _Export(path.name, readers, days)


def _listings_prefix(names: list[str], path: Path) -> str:
    """Where the listings live: "" or a top folder some tools add when zipping the folder."""
    split = (name.rpartition("/") for name in names if not name.startswith("__MACOSX/"))
    prefixes = [head + slash for head, slash, tail in split if tail in _LISTING_NAMES]
    if not prefixes:
        raise ExportError(
            f"{path.name} has no channels.json, groups.json, dms.json or mpims.json: "
            "give the zip from Slack's export page or the folder it unpacks to"
        )
    return min(prefixes, key=lambda prefix: (prefix.count("/"), prefix))


def _read_json_array(export: _Export, member: str) -> list[Any]:
    """One JSON array from the export; ``InvalidInput`` with a one-line reason otherwise."""
    try:
        raw = export.readers[member]()
    except _READ_ERRORS as exc:
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise InvalidInput(f"cannot be read ({detail}); the export is damaged") from exc
    data = load_json(raw)
    if not isinstance(data, list):
        raise InvalidInput(f"not a JSON array (got {type(data).__name__})")
    return data


def _optional_array(export: _Export, member: str) -> list[Any]:
    """A listing or users.json: absent is empty, present but unreadable stops the import."""
    if member not in export.readers:
        return []
    try:
        return _read_json_array(export, member)
    except InvalidInput as exc:
        raise ExportError(f"{member} in {export.label}: {exc}; re-download the export") from exc


def _load_users(export: _Export) -> dict[str, dict[str, Any]]:
    """User id -> users.json entry; without users.json authors are known by id."""
    entries = _optional_array(export, "users.json")
    return {e["id"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}


def _load_channels(export: _Export) -> tuple[list[SlackChannel], list[ImportItem]]:
    """The listed channels sorted by name, and an error item per unusable listing entry."""
    channels: list[SlackChannel] = []
    problems: list[ImportItem] = []
    for listing, visibility in LISTINGS:
        for number, entry in enumerate(_optional_array(export, listing), start=1):
            try:
                channels.append(_channel(entry, listing, visibility))
            except InvalidInput as exc:
                problems.append(ImportItem(f"{listing}#{number}", error=exc))
    return sorted(channels, key=lambda c: (c.name, c.id)), problems


def _channel(entry: Any, listing: str, visibility: Visibility) -> SlackChannel:
    fields = entry if isinstance(entry, dict) else {}
    channel_id, name = _field(fields, "id", str), _field(fields, "name", str)
    if listing == "dms.json" and channel_id:  # a dm has no name; its folder is named by its id
        return SlackChannel(channel_id, f"dm-{channel_id}", visibility, channel_id)
    if not channel_id or not name:
        raise InvalidInput(f"channel entry {str(entry)[:80]} has no id or no name; it is skipped")
    return SlackChannel(channel_id, name, visibility, name)


def _day_files(
    export: _Export, channels: list[SlackChannel]
) -> Iterator[tuple[SlackChannel, str, list[Any] | InvalidInput]]:
    """Each listed channel's day files in order, with their messages or why they are unusable."""
    for channel in channels:
        for day in export.days.get(channel.folder, []):
            member = f"{channel.folder}/{day}"
            try:
                yield channel, member, _read_json_array(export, member)
            except InvalidInput as exc:
                yield channel, member, exc


def _first_team(export: _Export, channels: list[SlackChannel]) -> str | None:
    """The first "team" on any message, scanning in import order; broken files are passed over."""
    days = (
        m for *_, messages in _day_files(export, channels) if isinstance(messages, list) for m in messages
    )
    return next((t for m in days if isinstance(m, dict) and (t := _field(m, "team", str))), None)


def _name_as_workspace(path: Path) -> str:
    name = path.name if path.is_dir() else path.stem
    return _NOT_IDENTIFIER.sub("-", name).strip("-")[:200] or "slack"


def _read_day(
    channel: SlackChannel, member: str, messages: list[Any] | InvalidInput, context: SlackContext
) -> Iterator[ImportItem]:
    if isinstance(messages, InvalidInput):
        yield ImportItem(member, error=messages)
        return
    for index, message in enumerate(messages, start=1):
        if isinstance(message, dict) and _field(message, "subtype", str) in SKIPPED_SUBTYPES:
            continue
        build = partial(_message_event, message, channel, context)
        if (item := import_item(f"{member}#{index}", build)) is not None:
            yield item


def _message_event(message: Any, channel: SlackChannel, context: SlackContext) -> MessageEvent:
    return parse_event(slack_event_data(message, channel, context), context.max_chars)


def slack_time(ts: Any) -> datetime:
    """A Slack timestamp ("seconds.micros", also the message id) as an aware UTC time."""
    if (match := _TS.fullmatch(ts) if isinstance(ts, str) else None) is None:
        problem = f"ts {ts!r:.60} is not a Slack timestamp like '1767607200.000100'"
        raise InvalidInput("message has no ts" if ts is None else problem)
    # Read "seconds.micros" exactly: a float would round the micros.
    seconds, micros = int(match[1]), int((match[2] or "").ljust(6, "0")[:6])
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)


def slack_event_data(
    message: Any,
    channel: SlackChannel,
    context: SlackContext,
    kind: EventKind = EventKind.CREATED,
    at: datetime | None = None,
) -> dict[str, Any]:
    """The event fields of one Slack message object; ``at`` is the edit or deletion time."""
    if not isinstance(message, dict):
        raise InvalidInput(f"a message must be a JSON object, got {type(message).__name__}")
    ts = message.get("ts")
    moment = slack_time(ts)
    assert isinstance(ts, str)  # slack_time refuses anything else
    author_id = _field(message, "user", str) or _field(message, "bot_id", str)
    thread_ts, text = message.get("thread_ts"), message.get("text")
    return {
        "kind": kind.value,
        "platform": "slack",
        "workspace": context.workspace,
        "channel": channel.id,
        "channel_name": channel.name,
        "channel_visibility": channel.visibility.value,
        "message_id": ts,
        "thread_id": None if thread_ts in (None, "", ts) else thread_ts,
        "author_id": author_id,
        "author_name": _author_name(message, author_id, context.users),
        "ts": (at or moment).isoformat().replace("+00:00", "Z"),
        "text": "" if text is None or kind is EventKind.DELETED else text,
        "permalink": f"{context.archives_url}/{channel.id}/p{ts.replace('.', '')}",
        "attachments": slack_files(message),
    }


def slack_files(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The message's files as attachments; a file Slack hides (deleted, no access) has no name."""
    found = []
    for file in _field(message, "files", list):
        if not isinstance(file, dict) or not (name := _first_text(file.get("name"), file.get("title"))):
            continue
        size = file.get("size")
        found.append(
            {
                "name": name,
                "mime_type": _field(file, "mimetype", str),
                "size": size if isinstance(size, int) and size >= 0 else None,
                "url": _field(file, "permalink", str) or _field(file, "url_private", str),
                # Fetched with the bot token (teamlore/files/fetch.py); an export's links too.
                "download_url": _field(file, "url_private", str) or _field(file, "url_private_download", str),
            }
        )
    return found


def _author_name(message: Mapping[str, Any], author_id: str, users: Mapping[str, Mapping[str, Any]]) -> str:
    """users.json display, real or user name; else the message's own profile; else the id."""
    user = users.get(author_id, {})
    known, attached = _field(user, "profile", dict), _field(message, "user_profile", dict)
    return (
        _first_text(
            known.get("display_name"),
            user.get("real_name"),
            known.get("real_name"),
            user.get("name"),
            attached.get("display_name"),
            attached.get("real_name"),
            attached.get("name"),
            message.get("username"),
        )
        or author_id
    )


def _first_text(*candidates: Any) -> str:
    return next((c.strip()[:200] for c in candidates if isinstance(c, str) and c.strip()), "")


def _field(data: Mapping[str, Any], key: str, kind: type[_T]) -> _T:
    """``data[key]`` if it has the expected JSON type, else that type's empty value."""
    value = data.get(key)
    return value if isinstance(value, kind) else kind()
