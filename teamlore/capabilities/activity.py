"""Recent activity: what changed in the channels a reader may see, newest first, a page at a time.

The audit log says what happened (created, superseded, retracted, ...) and when Teamlore learned
it; ``explain.causes`` adds the statements (through ``FactReader``, so the gate decides what text
is shown), the messages behind them and when they were said. An event whose facts are all
withheld (erased, say) is listed without text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from teamlore.capabilities.explain import Cause, causes
from teamlore.capabilities.facts import FactReader, FactView
from teamlore.domain import Scope
from teamlore.errors import InvalidInput
from teamlore.stores.protocols import AuditEvent, AuditLog, MessageStore

MAX_EVENTS = 500


@dataclass(frozen=True, slots=True)
class Activity:
    """One entry of the activity feed: an audit event made readable (``explain.Cause``)."""

    cause: Cause

    @property
    def event(self) -> AuditEvent:
        return self.cause.event

    @property
    def facts(self) -> tuple[FactView, ...]:
        return self.cause.facts

    @property
    def said(self) -> datetime | None:
        return self.cause.said


@dataclass(frozen=True, slots=True)
class ActivityPage:
    """One page of activity, newest first. ``older``: pass as ``before`` for the next (older)
    page; ``newer``: pass as ``after`` for the previous (newer) one; None where there is none."""

    items: list[Activity]
    older: int | None
    newer: int | None


@dataclass(frozen=True, slots=True)
class ActivitySources:
    """What ``recent_activity`` reads: the audit log, the gated fact reader and the messages."""

    audit: AuditLog
    reader: FactReader
    messages: MessageStore


def recent_activity(
    sources: ActivitySources,
    scope: Scope,
    now: datetime,
    since: datetime | None = None,
    limit: int = 50,
    before: int | None = None,
    after: int | None = None,
) -> ActivityPage:
    """Events since ``since`` (default: a week before ``now``), ``limit`` at a time, paged by the
    audit log's sequence numbers (a cursor: new events never shift a page)."""
    if not 1 <= limit <= MAX_EVENTS:
        raise InvalidInput(f"limit must be between 1 and {MAX_EVENTS}, got {limit}")
    for name, cursor in (("before", before), ("after", after)):
        if cursor is not None and cursor < 0:
            raise InvalidInput(f"{name} must be a sequence number from an earlier page, got {cursor}")
    since = since or now - timedelta(days=7)
    events = sources.audit.recent(scope.workspace, scope.channels, since, limit + 1, before, after)
    going_newer = after is not None and before is None
    more = len(events) > limit
    events = (events[-limit:] if going_newer else events[:limit]) if more else events
    items = [Activity(c) for c in causes(sources.reader, sources.messages, scope, events)]
    if not events:
        return ActivityPage(items, None, None)
    older = events[-1].seq if more or going_newer else None
    newer = events[0].seq if (more and going_newer) or before is not None else None
    return ActivityPage(items, older, newer)
