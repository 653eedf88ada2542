"""Mattermost bulk export (``mmctl export create``): JSON Lines, alone or inside the export zip.

The first line is ``{"type": "version", ...}``; then teams, channels, users, posts (with their
replies), direct channels and direct posts. The format names things, it has no ids: a channel is
``team/name``, a direct channel ``dm/`` and its members' names, a post ``create_at-user`` (Mattermost
itself refuses two posts by one person in one channel at the same millisecond). Attachments are
recorded by file name (their size when the zip holds the file); the export has no link to them.
"""

from __future__ import annotations

import mimetypes
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO, Any

from teamlore.connectors import MALFORMED, ImportItem, import_item
from teamlore.domain import EventKind, MessageEvent, Visibility, parse_event
from teamlore.errors import ExportError, InvalidInput
from teamlore.files.carried import carried_link
from teamlore.untrusted import load_json

_VISIBILITY = {"O": Visibility.PUBLIC, "P": Visibility.PRIVATE}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class _Layout:
    """What the first pass learns: channel types, and the first team (the default workspace)."""

    channels: dict[str, tuple[str, Visibility]] = field(default_factory=dict)  # id -> (name, visibility)
    first_team: str = ""
    posts: int = 0
    sizes: dict[str, int] = field(default_factory=dict)  # attachment path -> bytes (zip only)


def is_mattermost_export(path: Path) -> bool:
    """A .jsonl file, or a zip holding one, whose first line is the bulk format's version line."""
    if not path.is_file():
        return False
    with suppress(InvalidInput, OSError, ValueError, zipfile.BadZipFile), _lines(path) as (lines, _):
        first = next((line for line in lines if line.strip()), b"")
        data = load_json(first)
        return isinstance(data, dict) and data.get("type") == "version" and "kind" not in data
    return False


def count_mattermost_posts(path: Path) -> int:
    return _survey(path).posts


def read_mattermost_export(path: Path, max_chars: int, workspace: str | None = None) -> Iterator[ImportItem]:
    layout = _survey(path)
    team = workspace or layout.first_team or "mattermost"
    with _lines(path) as (lines, label):
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            where = f"{label}:{number}"
            try:
                line = load_json(raw)
            except InvalidInput as exc:
                yield ImportItem(where, error=exc)
                continue
            kind = line.get("type") if isinstance(line, dict) else None
            if kind in ("post", "direct_post"):
                yield from _post_items(where, line.get(kind), kind, team, layout, max_chars)


def _post_items(
    where: str, post: Any, kind: str, workspace: str, layout: _Layout, max_chars: int
) -> Iterator[ImportItem]:
    """The post, then its replies; a reply of a refused post is not read (it has no thread)."""
    if not isinstance(post, dict):
        yield ImportItem(where, error=InvalidInput(f"{kind} is not an object"))
        return
    try:
        channel = _channel_id(post, kind)
    except InvalidInput as exc:
        yield ImportItem(where, error=exc)
        return
    name, visibility = layout.channels.get(channel, (channel.rpartition("/")[2], Visibility.PUBLIC))
    if kind == "direct_post":
        name, visibility = channel.replace("/", "-"), Visibility.DM
    place = (channel, name, visibility)
    parent = import_item(where, partial(_event, post, *place, None, workspace, layout, max_chars))
    if parent is None:
        return
    yield parent
    if parent.event is None:
        return
    thread = parent.event.message_id
    replies = post.get("replies")
    for index, reply in enumerate(replies if isinstance(replies, list) else [], start=1):
        build = partial(_event, reply, *place, thread, workspace, layout, max_chars)
        if (item := import_item(f"{where} reply {index}", build)) is not None:
            yield item


def _channel_id(post: Mapping[str, Any], kind: str) -> str:
    if kind == "direct_post":
        members = post.get("channel_members")
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise InvalidInput("direct_post has no channel_members")
        return "dm/" + "+".join(sorted(members))
    team, channel = post.get("team"), post.get("channel")
    if not isinstance(team, str) or not team or not isinstance(channel, str) or not channel:
        raise InvalidInput("post has no team or no channel")
    return f"{team}/{channel}"


def _event(
    post: Any,
    channel: str,
    name: str,
    visibility: Visibility,
    thread: str | None,
    workspace: str,
    layout: _Layout,
    max_chars: int,
) -> MessageEvent:
    if not isinstance(post, dict):
        raise InvalidInput("a post or reply must be an object")
    user, created = post.get("user"), post.get("create_at")
    if not isinstance(user, str) or not user:
        raise InvalidInput("post has no user")
    if isinstance(created, bool) or not isinstance(created, int) or created <= 0:
        raise InvalidInput(f"create_at {created!r:.40} is not milliseconds since the epoch")
    moment = _EPOCH + timedelta(milliseconds=created)  # OverflowError, not OSError, when absurd
    data = {
        "kind": EventKind.CREATED.value,
        "platform": "mattermost",
        "workspace": workspace,
        "channel": channel,
        "channel_name": name,
        "channel_visibility": visibility.value,
        "message_id": f"{created}-{user}",
        "thread_id": thread,
        "author_id": user,
        "author_name": user,
        "ts": moment.isoformat().replace("+00:00", "Z"),
        "text": post.get("message") if isinstance(post.get("message"), str) else "",
        "permalink": "",
        "attachments": _attachments(post, layout),
    }
    return parse_event(data, max_chars)


def _attachments(post: Mapping[str, Any], layout: _Layout) -> list[dict[str, Any]]:
    found = []
    for item in post.get("attachments") or []:
        path = item.get("path") if isinstance(item, dict) else None
        if not isinstance(path, str) or not (name := PurePosixPath(path).name):
            continue
        mime = mimetypes.guess_type(name)[0] or ""
        found.append(
            {
                "name": name,
                "mime_type": mime,
                "size": layout.sizes.get(path),
                "url": "",
                "download_url": carried_link(path),  # read from the export by its import
            }
        )
    return found


def _survey(path: Path) -> _Layout:
    layout = _Layout()
    with _lines(path) as (lines, _label):
        for raw in lines:
            with suppress(InvalidInput, *MALFORMED):
                line = load_json(raw)
                kind = line.get("type")
                if kind == "team" and not layout.first_team:
                    layout.first_team = str(line["team"].get("name") or "")
                elif kind == "channel":
                    channel = line["channel"]
                    key = f"{channel['team']}/{channel['name']}"
                    layout.channels[key] = (
                        channel["name"],
                        _VISIBILITY.get(channel.get("type"), Visibility.PUBLIC),
                    )
                elif kind in ("post", "direct_post"):
                    replies = line[kind].get("replies")
                    layout.posts += 1 + (len(replies) if isinstance(replies, list) else 0)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                layout.sizes[info.filename] = info.file_size
                layout.sizes[info.filename.partition("/")[2]] = info.file_size  # data/... under a top folder
    return layout


@contextmanager
def _lines(path: Path) -> Iterator[tuple[IO[bytes], str]]:
    """The export's lines: the file itself, or the one .jsonl member of the zip."""
    handle: IO[bytes]
    if not zipfile.is_zipfile(path):
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise ExportError(f"cannot read {path}: {exc.strerror}") from exc
        with handle:
            yield handle, path.name
        return
    with zipfile.ZipFile(path) as archive:
        members = [n for n in archive.namelist() if n.endswith(".jsonl") and not n.startswith("__MACOSX/")]
        if len(members) != 1:
            raise ExportError(f"{path.name} holds {len(members)} .jsonl files; a Mattermost export holds one")
        with archive.open(members[0]) as handle:
            yield handle, f"{path.name}/{members[0]}"
