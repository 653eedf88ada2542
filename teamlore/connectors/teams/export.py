"""Graph channel-messages JSON, as the Graph API returns it, imported like any other export.

A file is one response of ``GET /teams/{team}/channels/{channel}/messages`` (an object with a
``value`` list, replies inline when fetched with ``$expand=replies``) or a plain list of
chatMessage objects; a folder holds several such pages. A file holding the channel resource itself
(``GET /teams/{team}/channels/{channel}``, with ``displayName`` and ``membershipType``) names the
channel and sets its visibility; without one the channel is taken as private.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from teamlore.connectors import ImportItem, import_item
from teamlore.connectors.teams.graph import graph_event, tenant_of
from teamlore.connectors.teams.normalize import Place, visibility_of
from teamlore.domain import MessageEvent
from teamlore.errors import ExportError, InvalidInput
from teamlore.untrusted import load_json

_SNIFF_BYTES = 4096


def is_teams_export(path: Path) -> bool:
    if path.is_dir():
        return any(_looks_like_messages(p) for p in sorted(path.glob("*.json")))
    return _looks_like_messages(path)


def count_teams_messages(path: Path) -> int:
    total = 0
    for file in _message_files(path):
        try:
            total += sum(1 + len(_replies(m)) for m in _messages(_load(file)) if isinstance(m, dict))
        except ExportError:
            total += 1
    return total


def read_teams_export(path: Path, max_chars: int, workspace: str | None = None) -> Iterator[ImportItem]:
    channels = _channel_resources(path)
    for file in _message_files(path):
        try:
            messages = _messages(_load(file))
        except ExportError as exc:
            yield ImportItem(file.name, error=InvalidInput(str(exc)))
            continue
        for number, message in enumerate(messages, start=1):
            where = f"{file.name}:message {number}"
            if not isinstance(message, dict):
                yield ImportItem(where, error=InvalidInput("a message must be a JSON object"))
                continue
            for offset, item in enumerate([message, *_replies(message)]):
                label = where if offset == 0 else f"{where} reply {offset}"
                built = import_item(label, partial(_event, item, channels, workspace, max_chars))
                if built is not None:
                    yield built


def _replies(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    replies = message.get("replies")
    return [r for r in replies if isinstance(r, dict)] if isinstance(replies, list) else []


def _event(
    message: Mapping[str, Any],
    channels: Mapping[str, Mapping[str, Any]],
    workspace: str | None,
    max_chars: int,
) -> MessageEvent | None:
    return graph_event(message, _place(message, channels, workspace), max_chars)


def _place(
    message: Mapping[str, Any], channels: Mapping[str, Mapping[str, Any]], workspace: str | None
) -> Place:
    identity = message.get("channelIdentity") or {}
    channel = str(identity.get("channelId") or message.get("chatId") or "")
    if not channel:
        raise InvalidInput("message has no channelIdentity.channelId (nor chatId)")
    tenant = workspace or tenant_of(message)
    if not tenant:
        raise InvalidInput("no tenant id in the message; pass --workspace TENANT_ID")
    if message.get("chatId") and not identity:
        return Place(tenant, channel, "", visibility_of(None, "groupChat"))
    known = channels.get(channel, {})
    return Place(
        tenant, channel, str(known.get("displayName") or ""), visibility_of(known.get("membershipType"))
    )


def _looks_like_messages(path: Path) -> bool:
    head = _head(path)
    return '"messageType"' in head or ('"@odata.context"' in head and "/messages" in head)


def _looks_like_channel(path: Path) -> bool:
    return '"membershipType"' in _head(path) and not _looks_like_messages(path)


def _head(path: Path) -> str:
    if path.suffix.lower() != ".json" or not path.is_file():
        return ""
    try:
        with path.open("rb") as handle:
            return handle.read(_SNIFF_BYTES).decode("utf-8", "ignore")
    except OSError:
        return ""


def _message_files(path: Path) -> list[Path]:
    if path.is_dir():
        return [p for p in sorted(path.glob("*.json")) if _looks_like_messages(p)]
    return [path]


def _channel_resources(path: Path) -> dict[str, dict[str, Any]]:
    folder = path if path.is_dir() else path.parent
    found: dict[str, dict[str, Any]] = {}
    for file in sorted(folder.glob("*.json")):
        if not _looks_like_channel(file):
            continue
        try:
            data = _load(file)
        except ExportError:
            continue
        listed = data.get("value") if isinstance(data, dict) else None
        for item in listed if isinstance(listed, list) else [data]:
            if isinstance(item, dict) and item.get("id"):
                found[str(item["id"])] = item
    return found


def _load(file: Path) -> Any:
    try:
        return load_json(file.read_bytes())
    except OSError as exc:
        raise ExportError(f"cannot read {file.name}: {exc.strerror}") from exc
    except InvalidInput as exc:
        raise ExportError(f"{file.name} is not valid JSON: {exc}") from exc


def _messages(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(value := data.get("value"), list):
        return value
    raise ExportError("expected a Graph response with a 'value' list, or a list of chatMessage objects")
