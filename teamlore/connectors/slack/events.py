"""Live Slack message events -> ``MessageEvent``, through the export reader's own translation.

A new message (thread replies and file shares included) is ``message.created``; the
``message_changed`` subtype is ``message.edited`` at the edit's time, or ``message.deleted`` when
Slack turns a thread's deleted parent into a tombstone; ``message_deleted`` is
``message.deleted``. Subtypes that announce something about a channel are not messages anyone
wrote and are skipped, as in an export.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from teamlore.connectors.slack_export import (
    SKIPPED_SUBTYPES,
    SlackChannel,
    SlackContext,
    slack_event_data,
    slack_time,
)
from teamlore.domain import EventKind, MessageEvent, parse_event
from teamlore.errors import InvalidInput

# Subtypes that carry no text of their own (a reply count changed, a thread was marked, ...).
_NOT_MESSAGES = SKIPPED_SUBTYPES | {"message_replied", "thread_broadcast_deleted", "assistant_app_thread"}


def message_event(
    event: Mapping[str, Any], channel: SlackChannel, context: SlackContext
) -> MessageEvent | None:
    """The normalized event, None for a subtype that is not a message; ``InvalidInput`` if broken."""
    subtype = event.get("subtype")
    if subtype in _NOT_MESSAGES:
        return None
    if subtype == "message_changed":
        data = _changed(event, channel, context)
    elif subtype == "message_deleted":
        previous = event.get("previous_message")
        message = {**(previous if isinstance(previous, dict) else {}), "ts": event.get("deleted_ts")}
        data = slack_event_data(message, channel, context, EventKind.DELETED, at=slack_time(event.get("ts")))
    else:
        data = slack_event_data(dict(event), channel, context)
    return parse_event(data, context.max_chars)


def _changed(event: Mapping[str, Any], channel: SlackChannel, context: SlackContext) -> dict[str, Any]:
    message = event.get("message")
    if not isinstance(message, dict):
        raise InvalidInput("message_changed without a message object")
    edited = message.get("edited")
    # No "edited": Slack changed the message itself (a link unfurled, a reply counted); the
    # event's own ts is the moment, and an unchanged text makes it a no-op downstream.
    at = slack_time(edited.get("ts") if isinstance(edited, dict) and edited.get("ts") else event.get("ts"))
    kind = EventKind.DELETED if message.get("subtype") == "tombstone" else EventKind.EDITED
    return slack_event_data(message, channel, context, kind, at=at)


def question_text(text: str, bot_user_id: str) -> str:
    """A mention's text without the bot's mention (``<@U123>`` or ``<@U123|name>``)."""
    return " ".join(re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text).split())
