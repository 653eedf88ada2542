"""discord.py objects (built by its own gateway and REST parsing) -> ``MessageEvent``.

Teamlore's channel is the guild text channel; a thread's messages belong to its parent channel
with ``thread_id`` set to the thread. Discord gives a thread started from a message that
message's id, so the starter is the thread's parent message, as the pipeline expects. DMs live in
the pseudo-workspace ``@me`` (Discord's own URL segment for them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import discord

from teamlore.connectors.discord import DM_WORKSPACE, PLATFORM
from teamlore.domain import Channel, EventKind, MessageEvent, Visibility, parse_event
from teamlore.errors import InvalidInput
from teamlore.timeutil import utc_now

# What a person wrote (a reply is a message too); joins, pins, boosts and the like are not.
CONVERSATION = frozenset({discord.MessageType.default, discord.MessageType.reply})
_THREADS = (discord.ChannelType.public_thread, discord.ChannelType.private_thread,
            discord.ChannelType.news_thread)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Place:
    """Where a message lives, in Teamlore's terms."""

    workspace: str
    channel: str
    channel_name: str
    visibility: Visibility
    thread_id: str | None

    def as_channel(self) -> Channel:
        return Channel(self.workspace, self.channel, self.channel_name, self.visibility, PLATFORM)


def visibility_of(channel: Any) -> Visibility:
    """DMs are dm; a private thread, or a channel @everyone cannot view, is private."""
    if isinstance(channel, discord.DMChannel | discord.GroupChannel):
        return Visibility.DM
    if getattr(channel, "type", None) is discord.ChannelType.private_thread:
        return Visibility.PRIVATE
    target = channel.parent if getattr(channel, "type", None) in _THREADS else channel
    if target is None:  # a thread whose parent is not cached: assume the narrower audience
        return Visibility.PRIVATE
    everyone = target.guild.default_role
    return Visibility.PUBLIC if target.permissions_for(everyone).view_channel else Visibility.PRIVATE


def place_of(channel: Any) -> Place:
    """Raise ``InvalidInput`` for a channel Teamlore cannot place (unknown, uncached)."""
    if isinstance(channel, discord.DMChannel | discord.GroupChannel):
        name = getattr(channel, "name", None) or _dm_name(channel)
        return Place(DM_WORKSPACE, str(channel.id), name, Visibility.DM, None)
    guild = getattr(channel, "guild", None)
    if guild is None or isinstance(channel, discord.PartialMessageable):
        raise InvalidInput(f"channel {getattr(channel, 'id', '?')} is not known to the client")
    if channel.type in _THREADS:
        parent = channel.parent
        return Place(
            str(guild.id),
            str(channel.parent_id),
            parent.name if parent is not None else "",
            visibility_of(channel),
            str(channel.id),
        )
    return Place(str(guild.id), str(channel.id), channel.name, visibility_of(channel), None)


def created(message: discord.Message, max_chars: int) -> MessageEvent | None:
    """A person's message as ``message.created``; None for system messages."""
    if message.type not in CONVERSATION:
        return None
    return _event(EventKind.CREATED, message, message.created_at, max_chars)


def edited(message: discord.Message, max_chars: int) -> MessageEvent | None:
    if message.type not in CONVERSATION:
        return None
    return _event(EventKind.EDITED, message, message.edited_at or utc_now(), max_chars)


def deleted(
    place: Place, message_id: int, guild_id: int | None, channel_id: int, max_chars: int
) -> MessageEvent:
    guild = str(guild_id) if guild_id is not None else "@me"
    return parse_event(
        {
            "kind": EventKind.DELETED.value,
            **_place_fields(place),
            "message_id": str(message_id),
            "ts": utc_now(),
            "permalink": f"https://discord.com/channels/{guild}/{channel_id}/{message_id}",
        },
        max_chars,
    )


def attachments_of(message: discord.Message) -> list[dict[str, Any]]:
    # The CDN link is also where the bytes are fetched (no token: Discord signs its links).
    return [
        {
            "name": a.filename,
            "mime_type": a.content_type or "",
            "size": a.size,
            "url": a.url,
            "download_url": a.url,
        }
        for a in message.attachments
    ]


_MENTION = re.compile(r"<@!?(\d+)>")


def strip_mention(content: str, bot_id: int) -> str:
    """The question without the bot's own mention (``<@id>`` or the legacy ``<@!id>``)."""
    return " ".join(_MENTION.sub(lambda m: "" if int(m.group(1)) == bot_id else m.group(0), content).split())


def _event(kind: EventKind, message: discord.Message, ts: datetime, max_chars: int) -> MessageEvent:
    place = place_of(message.channel)
    author = message.author
    return parse_event(
        {
            "kind": kind.value,
            **_place_fields(place),
            "message_id": str(message.id),
            "author_id": str(author.id),
            "author_name": author.display_name,
            "ts": ts,
            # Mentions shown as names (@alice, #general), as a reader sees them.
            "text": message.clean_content,
            "permalink": message.jump_url,
            # Kept where the event model carries attachments, ignored where it does not.
            "attachments": attachments_of(message),
        },
        max_chars,
    )


def _place_fields(place: Place) -> dict[str, Any]:
    return {
        "platform": PLATFORM,
        "workspace": place.workspace,
        "channel": place.channel,
        "channel_name": place.channel_name,
        "channel_visibility": place.visibility.value,
        "thread_id": place.thread_id,
    }


def _dm_name(channel: Any) -> str:
    recipient = getattr(channel, "recipient", None)
    return f"dm with {recipient.name}" if recipient is not None else "direct message"
