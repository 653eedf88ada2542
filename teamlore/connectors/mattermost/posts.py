"""A Mattermost post (REST or the websocket's ``data.post``) -> ``MessageEvent``: the one
translation every Mattermost path uses (live, backfill)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from teamlore.domain import EventKind, MessageEvent, Visibility, parse_event
from teamlore.errors import InvalidInput

# Mattermost's channel types: Open, Private, Direct, Group message.
VISIBILITY_BY_TYPE = {"O": Visibility.PUBLIC, "P": Visibility.PRIVATE, "D": Visibility.DM, "G": Visibility.DM}


@dataclass(frozen=True, slots=True)
class MattermostChannel:
    id: str
    name: str
    visibility: Visibility
    team_id: str  # "" for direct and group messages
    total_posts: int | None = None  # the server's count (total_msg_count), for a backfill's progress


@dataclass(frozen=True, slots=True)
class PostContext:
    workspace: str
    server_url: str  # https://chat.example.com, no trailing slash
    max_chars: int


def decode_object(raw: Any, what: str = "post") -> dict[str, Any]:
    """``data.post`` (or ``data.channel``) of a websocket event: a JSON string of an object."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise InvalidInput(f"{what} is {type(raw).__name__}, not a JSON string")
    try:
        found = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{what} is not JSON: {exc.msg}") from None
    if not isinstance(found, dict):
        raise InvalidInput(f"{what} is not a JSON object")
    return found


def is_system(post: Mapping[str, Any]) -> bool:
    """Joins, header changes, renames: posts Mattermost writes about a channel, not people's."""
    kind = post.get("type")
    return isinstance(kind, str) and kind.startswith("system_")


def ms_time(value: Any) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInput(f"time {value!r:.40} is not milliseconds since the epoch")
    return datetime.fromtimestamp(value / 1000, UTC)


def post_event(
    post: Mapping[str, Any],
    kind: EventKind,
    channel: MattermostChannel,
    author_name: str,
    team_name: str,
    context: PostContext,
) -> MessageEvent:
    post_id = post.get("id")
    if not isinstance(post_id, str) or not post_id:
        raise InvalidInput("post has no id")
    created = ms_time(post.get("create_at"))
    if kind is EventKind.EDITED:
        moment = ms_time(post.get("edit_at") or post.get("update_at"))
    elif kind is EventKind.DELETED:
        moment = ms_time(post.get("delete_at") or post.get("update_at"))
    else:
        moment = created
    # /TEAM/pl/ID is Mattermost's permalink; _redirect/pl/ID finds the team itself (direct messages).
    where = team_name or "_redirect"
    root, text = post.get("root_id"), post.get("message")
    data = {
        "kind": kind.value,
        "platform": "mattermost",
        "workspace": context.workspace,
        "channel": channel.id,
        "channel_name": channel.name,
        "channel_visibility": channel.visibility.value,
        "message_id": post_id,
        "thread_id": root if isinstance(root, str) and root and root != post_id else None,
        "author_id": str(post.get("user_id") or ""),
        "author_name": author_name or str(post.get("user_id") or ""),
        "ts": moment.isoformat().replace("+00:00", "Z"),
        "text": text if isinstance(text, str) and kind is not EventKind.DELETED else "",
        "permalink": f"{context.server_url}/{where}/pl/{post_id}",
        "attachments": _files(post, context.server_url),
    }
    return parse_event(data, context.max_chars)


def _files(post: Mapping[str, Any], server_url: str) -> list[dict[str, Any]]:
    metadata = post.get("metadata")
    files = metadata.get("files") if isinstance(metadata, dict) else None
    found = []
    for file in files if isinstance(files, list) else []:
        if not isinstance(file, dict) or not isinstance(file.get("name"), str) or not file["name"]:
            continue
        size, file_id = file.get("size"), file.get("id")
        # The files API needs the bot token (sent to this server's origin only, files/fetch.py).
        link = (
            f"{server_url}/api/v4/files/{quote(file_id, safe='')}"
            if isinstance(file_id, str) and file_id
            else ""
        )
        found.append(
            {
                "name": file["name"],
                "mime_type": file.get("mime_type") if isinstance(file.get("mime_type"), str) else "",
                "size": size if isinstance(size, int) and size >= 0 else None,
                "url": link,
                "download_url": link,
            }
        )
    return found
