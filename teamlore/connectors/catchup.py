"""Catch-up after downtime: each channel's high-water mark, and a re-read from it to now.

Every delivery through ``EventSink`` moves the channel's mark (the newest message created that
was seen, live or by a backfill: its time and id), kept in the checkpoint store beside the
backfill checkpoints under ``PLATFORM+watermark``. On start and after every reconnect a connector
calls ``catch_up`` for each channel it has a mark for: history from ``mark - window`` to now is
read through the same rate-limited ``run_backfill`` loop and delivered. Idempotency makes the
overlap harmless: a message already stored with the same text is unchanged, one whose text
changed is applied as an edit, one never seen is created.

Deletes: Mattermost (``since=``) and Graph (delta) return deleted messages themselves. Slack and
Discord only list what exists, so a stored message of the window that the listing covered (a
top-level message, or a reply of a thread that was read) and did not return was deleted while the
connector was down. The window (``TEAMLORE_CATCHUP_WINDOW_S``) bounds both the re-read and that
reconciliation; a delete of an older message is not seen.

A catch-up that stops half-way (a crash, a lost connection) leaves its start time pending, and
the next one starts no later than that, so marks moved meanwhile by live messages leave no gap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from teamlore.connectors.backfill import Page, Sink, run_backfill
from teamlore.connectors.watermarks import Watermarks
from teamlore.domain import Channel, EventKind, Message, MessageEvent, message_hash, parse_event
from teamlore.errors import InvalidInput
from teamlore.stores.protocols import Checkpoint, CheckpointStore, MessageStore
from teamlore.timeutil import utc_now

log = logging.getLogger(__name__)

PENDING = "+catchup"  # a catch-up's start: done once it finished
PAGES = "+catchup-pages"  # the catch-up's own page cursor (always restarted)
_AFTER = timedelta(milliseconds=1)  # an edit found by a catch-up: just after the stored version


class CatchUpHistory(Protocol):
    """A platform's ``fetch_page`` for a catch-up, built for a start time."""

    lists_window: bool  # True: every message of the window is listed, so a missing one was deleted

    def __call__(self, cursor: str) -> Page: ...

    def covers(self, message: Message) -> bool:
        """Whether this read listed ``message``'s part of the channel (its thread, if a reply)."""
        ...


@dataclass(frozen=True, slots=True)
class CatchUpReport:
    since: datetime
    fetched: int
    deleted: int
    rate_limited: int
    done: bool


class _Reconciling:
    """Delivers what a catch-up read, noting every message id. A message stored with another text
    becomes an edit just after the version stored (the platform's listing does not say when it
    was edited), unless that version was written live after the catch-up began: a page read
    before a live edit must not undo it."""

    def __init__(self, sink: Sink, messages: MessageStore, started: datetime) -> None:
        self._sink = sink
        self._messages = messages
        self._started = started
        self.ids: set[str] = set()

    def deliver(self, events: Sequence[MessageEvent]) -> object:
        self.ids.update(e.message_id for e in events)
        return self._sink.deliver([r for r in map(self._reconciled, events) if r is not None])

    def _reconciled(self, event: MessageEvent) -> MessageEvent | None:
        if event.kind is not EventKind.CREATED:
            return event
        stored = self._messages.get_message(event.workspace, event.channel, event.message_id)
        if stored is None or stored.deleted_at is not None or stored.content_hash == message_hash(event.text):
            return event
        version = stored.edited_at or stored.ts
        if version >= self._started:
            return None
        return event.model_copy(update={"kind": EventKind.EDITED, "ts": version + _AFTER})


@dataclass(frozen=True, slots=True)
class CatchUp:
    """Where a catch-up reads and writes; one per connector."""

    sink: Sink
    checkpoints: CheckpointStore
    messages: MessageStore
    window: timedelta
    min_interval_s: float = 0.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], datetime] = utc_now

    def since(self, platform: str, workspace: str, channel: str) -> datetime | None:
        """Where the channel's catch-up starts; None when nothing was ever seen there."""
        mark = Watermarks(self.checkpoints).get(platform, workspace, channel)
        pending = self.checkpoints.get(platform + PENDING, workspace, channel)
        starts = [mark.ts - self.window] if mark is not None else []
        if pending is not None and not pending.done:
            starts.append(datetime.fromisoformat(pending.cursor))
        return min(starts, default=None)

    def run(
        self, platform: str, workspace: str, channel: str, history_for: Callable[[datetime], CatchUpHistory]
    ) -> CatchUpReport | None:
        since = self.since(platform, workspace, channel)
        if since is None:
            return None
        started = self.clock()
        self.checkpoints.put(
            platform + PENDING, workspace, channel, Checkpoint(since.isoformat(), False, 0), started
        )
        history = history_for(since)
        seeing = _Reconciling(self.sink, self.messages, started)
        report = run_backfill(
            platform + PAGES,
            workspace,
            channel,
            history,
            seeing,
            self.checkpoints,
            min_interval_s=self.min_interval_s,
            restart=True,
            sleep=self.sleep,
        )
        deleted: list[MessageEvent] = []
        if report.done and history.lists_window:
            deleted = self._vanished(platform, workspace, channel, since, started, seeing.ids, history)
            self.sink.deliver(deleted)
        if report.done:
            self.checkpoints.put(
                platform + PENDING,
                workspace,
                channel,
                Checkpoint(since.isoformat(), True, report.fetched),
                self.clock(),
            )
        log.info(
            "%s catch-up of %s/%s from %s: %d message(s) read, %d deleted while down",
            platform,
            workspace,
            channel,
            since.isoformat(),
            report.fetched,
            len(deleted),
        )
        return CatchUpReport(since, report.fetched, len(deleted), report.rate_limited, report.done)

    def _vanished(
        self,
        platform: str,
        workspace: str,
        channel: str,
        since: datetime,
        until: datetime,
        seen: set[str],
        history: CatchUpHistory,
    ) -> list[MessageEvent]:
        known = next((c for c in self.messages.channels(workspace) if c.channel == channel), None)
        gone = [
            m
            for m in self.messages.live_between(workspace, channel, since, until)
            if m.platform == platform and m.message_id not in seen and history.covers(m)
        ]
        events = []
        for message in gone:
            try:
                events.append(deleted_event(message, known, until))
            except InvalidInput as exc:
                log.warning("catch-up: delete of %s skipped: %s", message.message_id, exc)
        return events


def deleted_event(message: Message, channel: Channel | None, at: datetime) -> MessageEvent:
    """The delete of a stored message, at ``at`` (when the catch-up found it gone)."""
    data: dict[str, object] = {
        "kind": EventKind.DELETED.value,
        "platform": message.platform,
        "workspace": message.workspace,
        "channel": message.channel,
        "message_id": message.message_id,
        "thread_id": message.thread_id,
        "author_id": message.author_id,
        "author_name": message.author_name,
        "ts": at,
        "permalink": message.permalink,
    }
    if channel is not None:
        data |= {"channel_name": channel.name, "channel_visibility": channel.visibility.value}
    return parse_event(data, 1)


def is_top_level(message: Message) -> bool:
    return message.thread_id is None or message.thread_id == message.message_id


def recent_threads(messages: MessageStore, workspace: str, channel: str, since: datetime) -> list[str]:
    """Threads with a stored reply since ``since``: a catch-up reads them whole, since a listing
    from ``since`` on does not show replies to older parents."""
    stored = messages.live_between(workspace, channel, since, datetime.max.replace(tzinfo=since.tzinfo))
    return sorted({m.thread_id for m in stored if m.thread_id and not is_top_level(m)})


def known_channels(messages: MessageStore, workspace: str, platform: str) -> list[str]:
    """The workspace's channels of ``platform`` the store knows (a catch-up skips those never seen)."""
    return sorted(c.channel for c in messages.channels(workspace) if c.platform == platform)
