"""What a catch-up test compares: the messages a store holds (text, thread, deleted or not) and
its current facts, for a run that stopped and one that never did."""

from __future__ import annotations

from typing import Any

from teamlore.app import Teamlore
from teamlore.domain import Scope


def snapshot(lore: Teamlore, workspace: str, channels: list[str], deleted: list[str] = ()) -> dict[str, Any]:
    messages = {}
    for channel in channels:
        for message in lore.stores.messages.live_messages(workspace, channel, "", 1000):
            messages[(channel, message.message_id)] = (message.text, message.thread_id)
    gone = {}
    for channel in channels:
        for message_id in deleted:
            found = lore.stores.messages.get_message(workspace, channel, message_id)
            if found is not None:
                gone[(channel, message_id)] = found.deleted_at is not None
    facts = sorted(
        (v.fact.channel, v.fact.statement, v.fact.status.value)
        for v in lore.reader.list(Scope(workspace, channels), k=200).hits
    )
    return {"messages": messages, "deleted": gone, "facts": facts}
