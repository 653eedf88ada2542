"""DiscordChatExporter JSON: one file per channel (or a folder of them), as its ``Json`` format writes.

Each file holds ``guild``, ``channel`` and ``messages``. For a thread, DiscordChatExporter writes
its parent channel as ``categoryId``/``category`` (its schema predates threads), so a thread's
messages land in the parent channel with ``thread_id`` set, as live capture does. The export
carries no permissions: guild channels are taken as public, private threads as private and
direct messages as dm.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from teamlore.connectors import MALFORMED, ImportItem, import_item, malformed
from teamlore.connectors.discord import DM_WORKSPACE, PLATFORM
from teamlore.domain import EventKind, Visibility, parse_event
from teamlore.errors import ExportError, InvalidInput
from teamlore.files.carried import carried_link
from teamlore.untrusted import load_json

CONVERSATION = frozenset({"Default", "Reply"})
THREADS = frozenset({"GuildPublicThread", "GuildPrivateThread", "GuildNewsThread"})
DIRECT = frozenset({"DirectTextChat", "DirectGroupTextChat"})
_SNIFF_BYTES = 4096


def is_discord_export(path: Path) -> bool:
    """A JSON file that opens with DiscordChatExporter's ``guild`` object, or a folder of them."""
    if path.is_dir():
        return any(_looks_like_export(p) for p in sorted(path.glob("*.json")))
    return _looks_like_export(path)


def count_discord_messages(path: Path) -> int:
    total = 0
    for file in _files(path):
        try:
            messages = _load(file).get("messages")
        except ExportError:
            messages = None
        total += len(messages) if isinstance(messages, list) else 1
    return total


def read_discord_export(path: Path, max_chars: int) -> Iterator[ImportItem]:
    for file in _files(path):
        try:
            data = _load(file)
            channel = _channel(data)
        except (ExportError, InvalidInput) as exc:
            yield ImportItem(file.name, error=InvalidInput(str(exc)))
            continue
        except MALFORMED as exc:
            yield ImportItem(file.name, error=malformed(exc))
            continue
        messages = data.get("messages")
        if not isinstance(messages, list):
            yield ImportItem(file.name, error=InvalidInput("no 'messages' list"))
            continue
        for number, message in enumerate(messages, start=1):
            build = partial(_event, message, channel, max_chars)
            if (item := import_item(f"{file.name}:message {number}", build)) is not None:
                yield item


def _looks_like_export(path: Path) -> bool:
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES).decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    return head.startswith("{") and '"guild"' in head and '"channel"' in head


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return [p for p in sorted(path.glob("*.json")) if _looks_like_export(p)]
    return [path]


def _load(file: Path) -> dict[str, Any]:
    try:
        data = load_json(file.read_bytes())
    except OSError as exc:
        raise ExportError(f"cannot read {file.name}: {exc.strerror}") from exc
    except InvalidInput as exc:
        raise ExportError(f"{file.name} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ExportError(f"{file.name}: expected a JSON object with guild, channel and messages")
    return data


def _channel(data: Mapping[str, Any]) -> dict[str, Any]:
    guild, channel = data.get("guild"), data.get("channel")
    if not isinstance(guild, dict) or not isinstance(channel, dict) or not channel.get("id"):
        raise InvalidInput("missing 'guild' or 'channel' object")
    kind = str(channel.get("type") or "")
    direct = kind in DIRECT or str(guild.get("id")) == "0"
    workspace = DM_WORKSPACE if direct else str(guild.get("id") or "")
    own_id = str(channel["id"])
    place: tuple[str, str, str | None]
    if kind in THREADS and channel.get("categoryId"):
        place = str(channel["categoryId"]), str(channel.get("category") or ""), own_id
    else:
        place = own_id, str(channel.get("name") or ""), None
    visibility = (
        Visibility.DM if direct else Visibility.PRIVATE if kind == "GuildPrivateThread" else Visibility.PUBLIC
    )
    return {
        "workspace": workspace,
        "channel": place[0],
        "channel_name": place[1],
        "thread_id": place[2],
        "channel_visibility": visibility.value,
        "own_id": own_id,
        "url_guild": "@me" if direct else workspace,
    }


def _event(message: Any, channel: Mapping[str, Any], max_chars: int) -> Any:
    if not isinstance(message, dict):
        raise InvalidInput("a message must be a JSON object")
    if str(message.get("type") or "Default") not in CONVERSATION:
        return None
    given = message.get("author")
    author = given if isinstance(given, dict) else {}
    mid = str(message.get("id") or "")
    return parse_event(
        {
            "kind": EventKind.CREATED.value,
            "platform": PLATFORM,
            "workspace": channel["workspace"],
            "channel": channel["channel"],
            "channel_name": channel["channel_name"],
            "channel_visibility": channel["channel_visibility"],
            "thread_id": channel["thread_id"],
            "message_id": mid,
            "author_id": str(author.get("id") or ""),
            "author_name": str(author.get("nickname") or author.get("name") or "")[:200],
            "ts": message.get("timestamp"),
            "text": message.get("content") if isinstance(message.get("content"), str) else "",
            "permalink": f"https://discord.com/channels/{channel['url_guild']}/{channel['own_id']}/{mid}",
            "attachments": [
                _attachment(a)
                for a in message.get("attachments") or []
                if isinstance(a, dict) and a.get("fileName")
            ],
        },
        max_chars,
    )


def _attachment(data: Mapping[str, Any]) -> dict[str, Any]:
    name = str(data.get("fileName") or "")
    size = data.get("fileSizeBytes")
    url = str(data.get("url") or "")
    return {
        "name": name,
        "mime_type": mimetypes.guess_type(name)[0] or "",
        "size": size if isinstance(size, int) else None,
        "url": url,
        # A CDN link is fetched like a live one; media saved beside the export (``--media``) is
        # read from there by the import (``files.carried``).
        "download_url": url if url.startswith(("https://", "http://")) else carried_link(url),
    }
