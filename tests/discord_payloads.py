"""Discord gateway and REST payloads shaped as Discord documents them (API v10), for the tests.

One guild: #general (everyone can view), #leadership (@everyone denied View Channel, the bot let
in), #hidden (@everyone denied, the bot not let in), a thread started from a #general message.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from discord.utils import time_snowflake

GUILD = "100"
GENERAL, LEADERSHIP, HIDDEN = "200", "201", "202"
BOT_ID, ALICE_ID, BOB_ID, OTHER_BOT_ID = "900", "901", "902", "903"
VIEW, SEND, HISTORY = 1 << 10, 1 << 11, 1 << 16
EVERYONE_PERMS = str(VIEW | SEND | HISTORY)
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def snowflake(minutes: float) -> str:
    """A message id carrying its creation time, T0 + minutes (as Discord's ids do)."""
    return str(time_snowflake(T0 + timedelta(minutes=minutes), high=False) + 1)


def user(uid: str, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": uid,
        "username": name,
        "discriminator": "0",
        "global_name": name.title(),
        "avatar": None,
        "bot": bot,
    }


BOT = user(BOT_ID, "teamlore", bot=True)
ALICE = user(ALICE_ID, "alice")
BOB = user(BOB_ID, "bob")
OTHER_BOT = user(OTHER_BOT_ID, "deploybot", bot=True)


def ready() -> dict[str, Any]:
    return {
        "v": 10,
        "user": BOT,
        "guilds": [],
        "session_id": "session-1",
        "resume_gateway_url": "wss://gateway.invalid",
        "application": {"id": BOT_ID, "flags": 0},
    }


def text_channel(cid: str, name: str, overwrites: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": cid,
        "type": 0,
        "guild_id": GUILD,
        "name": name,
        "position": int(cid) - 200,
        "permission_overwrites": overwrites or [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
    }


def deny_everyone() -> dict[str, Any]:
    return {"id": GUILD, "type": 0, "allow": "0", "deny": str(VIEW)}


def allow_bot() -> dict[str, Any]:
    return {"id": BOT_ID, "type": 1, "allow": str(VIEW | SEND | HISTORY), "deny": "0"}


def thread(tid: str, parent: str, name: str, *, private: bool = False) -> dict[str, Any]:
    return {
        "id": tid,
        "type": 12 if private else 11,
        "guild_id": GUILD,
        "parent_id": parent,
        "owner_id": ALICE_ID,
        "name": name,
        "last_message_id": None,
        "message_count": 1,
        "member_count": 2,
        "rate_limit_per_user": 0,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": T0.isoformat(),
            "locked": False,
        },
    }


def guild_create(*, threads: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "id": GUILD,
        "name": "Acme",
        "icon": None,
        "owner_id": ALICE_ID,
        "region": "eu",
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "roles": [
            {
                "id": GUILD,
                "name": "@everyone",
                "permissions": EVERYONE_PERMS,
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
        ],
        "emojis": [],
        "features": [],
        "mfa_level": 0,
        "system_channel_id": None,
        "large": False,
        "member_count": 3,
        "members": [
            {"user": BOT, "roles": [], "joined_at": T0.isoformat(), "deaf": False, "mute": False, "flags": 0}
        ],
        "channels": [
            text_channel(GENERAL, "general"),
            text_channel(LEADERSHIP, "leadership", [deny_everyone(), allow_bot()]),
            text_channel(HIDDEN, "hidden", [deny_everyone()]),
        ],
        "threads": threads or [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "premium_tier": 0,
        "preferred_locale": "en-US",
    }


def message(
    mid: str,
    channel: str,
    content: str,
    *,
    author: dict[str, Any] = ALICE,
    minutes: float | None = None,
    mentions: list[dict[str, Any]] | None = None,
    attachments: list[dict[str, Any]] | None = None,
    edited: datetime | None = None,
    kind: int = 0,
    guild: str | None = GUILD,
    thread_started: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from discord.utils import snowflake_time

    data: dict[str, Any] = {
        "id": mid,
        "channel_id": channel,
        "author": author,
        "content": content,
        "timestamp": snowflake_time(int(mid)).isoformat() if minutes is None else
        (T0 + timedelta(minutes=minutes)).isoformat(),
        "edited_timestamp": edited.isoformat() if edited else None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": kind,
        "flags": 0,
    }  # fmt: skip
    if guild is not None:
        data["guild_id"] = guild
        data["member"] = {"roles": [], "joined_at": T0.isoformat(), "deaf": False, "mute": False, "flags": 0}
    if thread_started is not None:
        data["thread"] = thread_started
    return data


def attachment(name: str, content_type: str, size: int) -> dict[str, Any]:
    return {
        "id": "7001",
        "filename": name,
        "size": size,
        "url": f"https://cdn.discordapp.com/attachments/{GENERAL}/7001/{name}",
        "proxy_url": f"https://media.discordapp.net/attachments/{GENERAL}/7001/{name}",
        "content_type": content_type,
    }


def message_delete(mid: str, channel: str) -> dict[str, Any]:
    return {"id": mid, "channel_id": channel, "guild_id": GUILD}


def channel_update(cid: str, name: str, overwrites: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return text_channel(cid, name, overwrites)
