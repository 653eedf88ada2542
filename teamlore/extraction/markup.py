"""Platform markup decoded to plain words, before anything else looks at the text.

Slack (``<@U1|dana>``, ``<#C1|eng>``, ``<https://x|label>``, ``<!here>``, ``&amp;``, ``:emoji:``),
Discord (``<@123>``, ``<@!123>``, ``<#123>``, ``<:name:123>``, ``||spoiler||``, ``**bold**``),
Teams (``<at>Dana Lee</at>``, light HTML) and Mattermost (``~town-square``, Markdown) all become
the same plain text: mentions as ``@name``, channels as ``#name``, links as ``label (url)``,
emphasis and tags dropped, entities unescaped. A mention by user id becomes the person's name
when the workspace's people are known (``names``: user id -> display name).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from datetime import UTC, datetime

_SLACK_USER = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]+))?>")
_SLACK_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|>\s]+)(?:\|([^>]+))?>")
_SLACK_SPECIAL = re.compile(r"<!(here|channel|everyone)[^>]*>|<!subteam\^[A-Z0-9]+(?:\|@?([^>]+))?>")
_DISCORD_USER = re.compile(r"<@!?(\d{5,25})>")
_DISCORD_CHANNEL = re.compile(r"<#(\d{5,25})>")
_DISCORD_ROLE = re.compile(r"<@&(\d{5,25})>")
_DISCORD_EMOJI = re.compile(r"<a?:(\w+):\d+>")
_DISCORD_TIME = re.compile(r"<t:(\d{1,12})(?::[tTdDfFR])?>")
_TEAMS_AT = re.compile(r"<at[^>]*>(.*?)</at>", re.I | re.S)
_BREAK = re.compile(r"<\s*(?:br|/p|/div|/li)\s*/?>", re.I)
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>")
_MATTERMOST_CHANNEL = re.compile(r"(?<![\w~])~([a-z0-9][a-z0-9_-]+)")
_SHORTCODE = re.compile(r"(?<![\w:]):[a-z0-9_+\-]+:(?![\w:])")
_SPOILER = re.compile(r"\|\|(.+?)\|\|", re.S)
# Emphasis markers around words: **bold**, __underline__, *bold*, _italic_, ~strike~, ~~strike~~.
_EMPHASIS = re.compile(r"(?<![\w*_~])(\*\*|__|\*|_|~~|~)(?=\S)(.+?)(?<=\S)\1(?![\w*_~])", re.S)
_SPACES = re.compile(r"[ \t\u00a0]+")


def clean(text: str, names: Mapping[str, str] | None = None) -> str:
    """Plain words for ``text``: mentions, channels, links, emoji codes, tags and emphasis
    decoded; lines kept (a line break may end a sentence)."""
    people = names or {}

    def person(user_id: str, label: str | None = None) -> str:
        return "@" + (label or people.get(user_id) or user_id)

    text = _TEAMS_AT.sub(lambda m: "@" + _TAG.sub("", m.group(1)).strip(), text)
    text = _SLACK_USER.sub(lambda m: person(m.group(1), m.group(2)), text)
    text = _SLACK_CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SLACK_LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    text = _SLACK_SPECIAL.sub(lambda m: "@" + (m.group(1) or m.group(2) or "team"), text)
    text = _DISCORD_USER.sub(lambda m: person(m.group(1)), text)
    text = _DISCORD_ROLE.sub("@role", text)
    text = _DISCORD_CHANNEL.sub(lambda m: "#" + m.group(1), text)
    text = _DISCORD_EMOJI.sub("", text)
    text = _DISCORD_TIME.sub(lambda m: _moment(m.group(1)), text)
    text = _BREAK.sub("\n", text)
    text = _TAG.sub("", text)
    # Unescaped only now, so an escaped "&lt;b&gt;" in a message stays the text "<b>".
    text = html.unescape(text)
    text = _MATTERMOST_CHANNEL.sub(lambda m: "#" + m.group(1), text)
    text = _SHORTCODE.sub("", text)
    text = _SPOILER.sub(r"\1", text)
    text = _EMPHASIS.sub(lambda m: m.group(2) if not _looks_like_code(m.group(2)) else m.group(0), text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _moment(seconds: str) -> str:
    try:
        return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return ""


def _looks_like_code(inner: str) -> bool:
    """``snake_case_names`` and ``a*b*c`` are not emphasis."""
    return "\n" in inner or inner.count(" ") == 0 and any(c in inner for c in "=()/")
