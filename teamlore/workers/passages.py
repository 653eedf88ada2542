"""What the message index holds of a message: its searchable text, and the passage whose vector
stands for it in semantic search.

A passage says who said the message and what, after what was said just before it in its
conversation (``teamlore.domain.CONVERSATION_GAP``): chat messages are short and lean on what
surrounds them ("yes, the blue one", "look at this"), and a question naming a person should reach
what that person said. Measured on LoCoMo in docs/benchmarks.md.

Because a vector holds its neighbour's words, a message edited, deleted or erased gives the
message after it a new vector (``refresh_following``), so no vector keeps a text the store no
longer has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from teamlore.domain import CONVERSATION_GAP, Message, MessageVersion
from teamlore.embedding import CachedEmbedder
from teamlore.extraction import clean
from teamlore.stores.protocols import MessageIndex

# The message before is context: enough of it to say what the message answers, never so much
# that it outweighs the message itself.
CONTEXT_CHARS = 300


@dataclass(frozen=True, slots=True)
class Said:
    """A message as a passage quotes it: who said what, and when."""

    author: str
    text: str
    posted: datetime


def searchable_text(message: Message) -> str:
    """The message's text with the platform's markup decoded: what keyword search matches."""
    return clean(message.text)


def passage(said: Said, previous: Said | None) -> str:
    """The text embedded for a message: its author and text, after the start of the message before
    it in its conversation."""
    own = f"{said.author}: {said.text}" if said.author else said.text
    if previous is None or not previous.text:
        return own
    before = previous.text[:CONTEXT_CHARS]
    return f"{previous.author}: {before}\n{own}" if previous.author else f"{before}\n{own}"


class BatchPassages:
    """The passage of each message of a batch, in order: the message before one is an earlier
    message of the same batch when there is one, else what the index holds."""

    def __init__(self, index: MessageIndex) -> None:
        self._index = index
        self._latest: dict[tuple[str, str, str | None], Said] = {}
        self._by_id: dict[tuple[str, str, str], Said] = {}

    def passage(self, message: Message) -> str:
        said = Said(message.author_name, searchable_text(message), message.ts)
        text = passage(said, self._previous(message))
        reply = _is_reply(message)
        self._latest[(message.workspace, message.channel, message.thread_id if reply else None)] = said
        self._by_id[(message.workspace, message.channel, message.message_id)] = said
        return text

    def _previous(self, message: Message) -> Said | None:
        reply = _is_reply(message)
        stored = self._index.before(
            message.workspace, message.channel, message.message_id, message.thread_id, message.ts
        )
        candidate = None if stored is None else _said(stored)
        mine = self._latest.get((message.workspace, message.channel, message.thread_id if reply else None))
        if (
            mine is not None
            and mine.posted <= message.ts
            and (reply or message.ts - mine.posted <= CONVERSATION_GAP)
            and (candidate is None or mine.posted >= candidate.posted)
        ):
            return mine
        if candidate is None and reply:
            return self._by_id.get((message.workspace, message.channel, message.thread_id or ""))
        return candidate


def refresh_following(
    index: MessageIndex, embedder: CachedEmbedder, changed: Sequence[Message | MessageVersion]
) -> int:
    """The messages just after these (whose text changed or went) get passages with their new
    context; returns how many vectors were replaced."""
    followers = {
        (v.workspace, v.channel, v.message_id): v
        for m in changed
        for v in index.after(m.workspace, m.channel, m.message_id, m.thread_id, _posted(m))
    }
    texts = {}
    for key, version in followers.items():
        before = index.before(
            version.workspace, version.channel, version.message_id, version.thread_id, version.posted_at
        )
        texts[key] = passage(_said(version), None if before is None else _said(before))
    keys = embedder.ensure_passages(list(texts.values()))
    for (workspace, channel, message_id), text in texts.items():
        index.set_vector(workspace, channel, message_id, keys[text])
    return len(texts)


def _said(version: MessageVersion) -> Said:
    return Said(version.author_name, version.text, version.posted_at)


def _posted(message: Message | MessageVersion) -> datetime:
    return message.ts if isinstance(message, Message) else message.posted_at


def _is_reply(message: Message) -> bool:
    return message.thread_id is not None and message.thread_id != message.message_id
