"""Recent activity: what changed in the channels a reader may see, newest first.

The audit log says what happened (created, superseded, retracted, ...); the statements come
through ``FactReader.get_many`` with history included, so the gate decides what text is shown.
An event whose facts are all withheld (erased, say) is listed without text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from teamlore.capabilities.facts import FactReader, FactView
from teamlore.domain import ReadView, Scope
from teamlore.errors import InvalidInput
from teamlore.stores.protocols import AuditEvent, AuditLog

MAX_EVENTS = 500


@dataclass(frozen=True, slots=True)
class Activity:
    event: AuditEvent
    facts: tuple[FactView, ...]


def recent_activity(
    audit: AuditLog,
    reader: FactReader,
    scope: Scope,
    now: datetime,
    since: datetime | None = None,
    limit: int = 50,
) -> list[Activity]:
    if not 1 <= limit <= MAX_EVENTS:
        raise InvalidInput(f"limit must be between 1 and {MAX_EVENTS}, got {limit}")
    since = since or now - timedelta(days=7)
    events = audit.recent(scope.workspace, scope.channels, since, limit)
    wanted = [fact_id for event in events for fact_id in event.fact_ids]
    shown = {v.fact.fact_id: v for v in reader.get_many(wanted, scope, ReadView(include_history=True))}
    return [
        Activity(event, tuple(shown[f] for f in event.fact_ids if f in shown))
        for event in events
        if scope.allows(event.workspace, event.channel)
    ]
