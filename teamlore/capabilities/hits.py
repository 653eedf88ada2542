"""What a read returns: a fact as a reader sees it, or a message no fact covers. Both say what
they are (``kind``), what they say (``text``) and which messages they cite (``sources``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from teamlore.domain import Fact, FactStatus, FactType, MessageVersion, Source


@dataclass(frozen=True, slots=True)
class FactView:
    """A fact as a reader sees it: the version, its sources, and its score for this query."""

    fact: Fact
    sources: tuple[Source, ...]
    score: float = 0.0
    past_due: bool = False  # its deadline has passed at the moment read; it stays until evidence
    retired: bool = False  # shown only because history was asked for: not true at the moment read
    # A read across channels found a newer fact in another channel that replaces this one
    # (``across_channels``): shown first, and this one flagged with it.
    newer_elsewhere: Fact | None = None
    # A question: the answer to it found by the same read, ranked just above it (``answers_first``).
    answer: Hit | None = None
    # Messages the same read found that said a value this fact replaced: shown with it, marked
    # as replaced, never as current (``message_reading``).
    replaced: tuple[MessageView, ...] = ()

    @property
    def kind(self) -> str:
        return "retired_fact" if self.retired else "fact"

    @property
    def key(self) -> str:
        return self.fact.fact_id

    @property
    def text(self) -> str:
        return self.fact.statement

    @property
    def channel(self) -> str:
        return self.fact.channel

    @property
    def since(self) -> datetime:
        return self.fact.valid_from

    @property
    def is_question(self) -> bool:
        return self.fact.fact_type is FactType.QUESTION

    def status_at(self, moment: datetime | None) -> FactStatus:
        """The status as it stood at ``moment`` (valid time; None: now). A value replaced later
        was the current one while it was true: read as of then, it is active, not superseded."""
        fact = self.fact
        if (
            moment is not None
            and fact.status is FactStatus.SUPERSEDED
            and fact.valid_from <= moment < fact.valid_to
        ):
            return FactStatus.ACTIVE
        return fact.status


@dataclass(frozen=True, slots=True)
class MessageView:
    """A message that no fact visible at the moment read covers: what was said, cited as itself."""

    message: MessageVersion
    source: Source
    score: float = 0.0
    answer: Hit | None = None  # as ``FactView.answer``

    kind = "message"

    @property
    def key(self) -> str:
        return message_key(self.message.channel, self.message.message_id)

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def channel(self) -> str:
        return self.message.channel

    @property
    def since(self) -> datetime:
        return self.message.posted_at

    @property
    def sources(self) -> tuple[Source, ...]:
        return (self.source,)

    @property
    def is_question(self) -> bool:
        """It asks something: a sentence ends with a question mark (not one inside a link)."""
        return _ASKS.search(self.message.text) is not None


Hit = FactView | MessageView
_ASKS = re.compile(r"[?？](?:\s|$)")


def message_key(channel: str, message_id: str) -> str:
    """A message hit's id, distinct from every fact id (which never holds a slash)."""
    return f"message/{channel}/{message_id}"
