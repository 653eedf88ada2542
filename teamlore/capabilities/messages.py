"""Channels a reader may see and the source messages facts cite, always inside a scope."""

from __future__ import annotations

from collections.abc import Sequence

from teamlore.domain import Channel, Message, Scope
from teamlore.errors import InvalidInput, NotFound
from teamlore.stores.protocols import MessageStore


def channels_in(messages: MessageStore, scope: Scope) -> list[Channel]:
    """The scope's channels as the store knows them (name, visibility), by name."""
    return [c for c in messages.channels(scope.workspace) if c.channel in scope.channels]


def source_message(messages: MessageStore, scope: Scope, message_id: str) -> Message:
    """One message of the scope's single channel; deleted and erased ones come back without
    text (their ``deleted_at`` says so)."""
    if len(scope.channels) != 1:
        raise InvalidInput("a message belongs to one channel: give exactly one channel")
    channel = next(iter(scope.channels))
    found = messages.get_message(scope.workspace, channel, message_id)
    if found is None:
        raise NotFound(f"no message {message_id} in channel {channel}")
    return found


def messages_linked(
    messages: MessageStore, scope: Scope, channel: str, permalinks: Sequence[str]
) -> dict[str, str]:
    """Permalink -> message id for the permalinks of ``channel``'s messages (inside ``scope``)."""
    if not scope.allows(scope.workspace, channel):
        raise InvalidInput(f"channel {channel} is outside this scope")
    return messages.by_permalink(scope.workspace, channel, permalinks)


def thread_of(messages: MessageStore, scope: Scope, message: Message) -> list[Message]:
    """The thread a message belongs to (its opening message and replies, oldest first); empty
    when the message is in no thread with replies. ``message`` comes from ``source_message``."""
    if not scope.allows(message.workspace, message.channel):
        raise InvalidInput(f"message {message.message_id} is outside this scope")
    found = messages.thread(message.workspace, message.channel, message.thread_id or message.message_id)
    return found if len(found) > 1 else []
