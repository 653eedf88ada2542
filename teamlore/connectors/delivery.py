"""Where a connector hands its events: Redis when configured, the inline pipeline otherwise.

Connectors (live listeners, backfills, the push endpoint) call ``EventSink.deliver`` and never
decide the transport themselves. Inline, due pages are rewritten after each batch, as the beat
task would do in production. Every delivery moves its channels' high-water marks (watermarks.py), so
a connector started again knows where to catch up from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from teamlore.app import Teamlore
from teamlore.connectors.watermarks import Watermarks
from teamlore.domain import Channel, MessageEvent


@dataclass(frozen=True, slots=True)
class Delivered:
    ingested: int  # applied inline
    enqueued: int  # handed to Redis
    spooled: int  # written to the local spool while Redis is unreachable


class EventSink:
    def __init__(self, lore: Teamlore) -> None:
        self._lore = lore
        # Only production needs Celery loaded (the app loads it with its producer).
        self._producer = lore.producer() if lore.settings.redis_url else None
        self._marks = Watermarks(lore.stores.checkpoints)

    @property
    def queued(self) -> bool:
        return self._producer is not None

    def deliver(self, events: Sequence[MessageEvent]) -> Delivered:
        if not events:
            return Delivered(0, 0, 0)
        if self._producer is not None:
            sent = self._producer.enqueue(list(events))
            self._marks.advance(events)
            return Delivered(0, sent.sent + sent.replayed, sent.spooled)
        self._lore.ingest(list(events))
        self._lore.wiki.flush()
        self._marks.advance(events)
        return Delivered(len(events), 0, 0)

    def update_channel(self, channel: Channel) -> None:
        """A channel renamed (or its type changed) on the platform: no message says so, so the
        channel record is written directly; every worker reads the same store."""
        self._lore.stores.messages.put_channel(channel)
