"""Teams messages (bot activities and Graph chatMessage resources) -> ``MessageEvent``.

Identity, shared by live capture, Graph history and Graph export import so the three agree:
- workspace: the tenant (the Microsoft 365 organization); channel ids are unique within it.
- channel: the channel id (``19:...@thread.tacv2``) or, for chats, the chat's conversation id.
- thread: Teams channels are reply chains; a reply's ``thread_id`` is its root post's id.
- visibility: the channel's membershipType (standard -> public, private/shared -> private); chats
  are dm; a channel whose type is not known is taken as private, the narrower audience.
"""

from __future__ import annotations

import html
import mimetypes
import re
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote

from teamlore.domain import Channel, Visibility

PLATFORM = "teams"
_BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "blockquote", "pre"})


@dataclass(frozen=True, slots=True)
class Place:
    workspace: str
    channel: str
    channel_name: str
    visibility: Visibility

    def as_channel(self) -> Channel:
        return Channel(self.workspace, self.channel, self.channel_name, self.visibility, PLATFORM)

    def fields(self) -> dict[str, Any]:
        return {
            "platform": PLATFORM,
            "workspace": self.workspace,
            "channel": self.channel,
            "channel_name": self.channel_name,
            "channel_visibility": self.visibility.value,
        }


def visibility_of(membership_type: str | None, conversation_type: str | None = "channel") -> Visibility:
    if conversation_type in ("personal", "groupChat"):
        return Visibility.DM
    if (membership_type or "").lower() == "standard":
        return Visibility.PUBLIC
    return Visibility.PRIVATE  # private, shared, or not known


def thread_of(message_id: str, root_id: str | None) -> str | None:
    """A reply's thread is its root post; a root post (or a chat message) has none."""
    return root_id if root_id and root_id != message_id else None


def permalink(
    channel_id: str, message_id: str, root_id: str | None, tenant: str = "", group: str = ""
) -> str:
    """Teams' deep link to a channel message (the shape Graph's ``webUrl`` has)."""
    query = [f"tenantId={tenant}"] if tenant else []
    query += [f"groupId={group}"] if group else []
    query += [f"parentMessageId={root_id or message_id}", f"createdTime={message_id}"]
    return (
        f"https://teams.microsoft.com/l/message/{quote(channel_id, safe='')}/{message_id}?{'&'.join(query)}"
    )


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._in_at = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "at":
            self._in_at = True
            self.parts.append("@")
        elif tag in _BLOCKS:
            self.parts.append("\n")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.parts.append(alt)

    def handle_endtag(self, tag: str) -> None:
        if tag == "at":
            self._in_at = False
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


_BLANK_LINES = re.compile(r"\n\s*\n+")
_SPACES = re.compile(r"[ \t\u00a0]+")


def to_text(content: str, content_type: str = "html") -> str:
    """Message HTML as a reader sees it: tags dropped, mentions as @Name, entities decoded."""
    if content_type.lower() != "html" and "<" not in content:
        return html.unescape(content).strip()
    parser = _Text()
    parser.feed(content)
    parser.close()
    text = _SPACES.sub(" ", "".join(parser.parts))
    return _BLANK_LINES.sub("\n", "\n".join(line.strip() for line in text.split("\n"))).strip()


def attachments_of(items: Any) -> list[dict[str, Any]]:
    """Files shared in Teams are ``reference`` attachments (a SharePoint/OneDrive link)."""
    found = []
    for item in items or []:
        data = (
            item if isinstance(item, Mapping) else getattr(item, "model_dump", lambda **_: {})(by_alias=True)
        )
        kind = data.get("contentType") or data.get("content_type") or ""
        if kind.startswith("application/vnd.microsoft.card") or kind == "messageReference":
            continue  # cards and quoted replies are not files
        url = data.get("contentUrl") or data.get("content_url") or ""
        name = data.get("name") or url.rstrip("/").rpartition("/")[2]
        if name:
            # "reference" is Teams' word for a linked file, not a mime type: the name says the kind
            # (as the Discord and Mattermost exports, which carry no mime type either, read it).
            mime = (mimetypes.guess_type(name)[0] or "") if kind == "reference" else kind
            # A linked file's bytes come through Graph, which the link names (files/fetch.py).
            fetched = url if kind == "reference" and url.startswith("https://") else ""
            found.append({"name": name, "mime_type": mime, "size": None, "url": url, "download_url": fetched})
    return found
