"""Why something changed: each audit event read with what it points at.

The audit log holds ids, never text (erasure must be able to remove text everywhere). A reader
wants the words: which statement replaced a fact, which message stated or withdrew it, which
reviewer decided. ``causes`` turns events into ``Cause`` values with the statements (through
``FactReader``, so the gate decides what is shown) and the source messages (inside the scope).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from teamlore.capabilities.facts import FactReader, FactView
from teamlore.capabilities.pages import PageReader
from teamlore.domain import ReadView, Scope, Source
from teamlore.stores.protocols import AuditEvent, MessageStore

HISTORY = ReadView(include_history=True)
SYSTEM = "system"  # the actor of what the pipeline did by itself (workers/mutations.SYSTEM)


@dataclass(frozen=True, slots=True)
class Cause:
    """One audit event, readable: the fact it is about, the statement that replaced (or may
    contradict) it, the message behind it, and the person who acted (None: the pipeline)."""

    event: AuditEvent
    facts: tuple[FactView, ...]
    other: FactView | None
    message: Source | None
    person: str | None

    @property
    def said(self) -> datetime | None:
        """When it was said in the chat, as opposed to ``event.at``, when Teamlore learned it:
        the message's time, else the replacing statement's, else the fact's own start."""
        if self.message is not None:
            return self.message.ts
        if self.other is not None:
            return self.other.fact.valid_from
        if self.event.event == "created" and self.facts:
            return self.facts[0].fact.valid_from
        return None

    @property
    def other_role(self) -> str:
        """What ``other`` is to the fact: what replaced it, what corrected it, or what may
        contradict it (a contested pair)."""
        return {"superseded": "replaced by", "retracted": "corrected by"}.get(
            self.event.event, "may contradict"
        )

    @property
    def verb(self) -> str:
        return {
            "created": "stated",
            "evidence_added": "said again",
            "evidence_removed": "lost a source",
            "superseded": "replaced",
            "contested": "contested",
            "retracted": "retracted",
            "revived": "brought back",
            "reviewed": "reviewed",
            "erased": "erased",
        }.get(self.event.event, self.event.event.replace("_", " "))


def other_fact_id(event: AuditEvent) -> str | None:
    """The fact an event points at besides its own: a successor, or a possible contradiction."""
    found = event.details.get("successor") or event.details.get("other")
    return str(found) if found else None


def causes(
    reader: FactReader, messages: MessageStore, scope: Scope, events: Sequence[AuditEvent]
) -> list[Cause]:
    """The events of ``scope`` with their statements and messages, in the order given."""
    events = [e for e in events if scope.allows(e.workspace, e.channel)]
    wanted = {f for e in events for f in e.fact_ids} | {o for e in events if (o := other_fact_id(e))}
    shown = {v.fact.fact_id: v for v in reader.get_many(sorted(wanted), scope, HISTORY)}
    sources = _sources(messages, scope, events)
    return [
        Cause(
            event=e,
            facts=tuple(shown[f] for f in e.fact_ids if f in shown),
            other=shown.get(other_fact_id(e) or ""),
            message=sources.get((e.channel, str(e.details.get("message_id") or ""))),
            person=None if e.actor == SYSTEM else e.actor,
        )
        for e in events
    ]


def _sources(
    messages: MessageStore, scope: Scope, events: Iterable[AuditEvent]
) -> dict[tuple[str, str], Source]:
    by_channel: dict[str, set[str]] = {}
    for e in events:
        if e.details.get("message_id"):
            by_channel.setdefault(e.channel, set()).add(str(e.details["message_id"]))
    return {
        (channel, message_id): source
        for channel, ids in by_channel.items()
        for message_id, source in messages.sources(scope.workspace, channel, sorted(ids)).items()
    }


# A page's history shows at most this many versions' reasons (the newest); older ones say none.
REASONED_VERSIONS = 30


def page_reasons(
    reader: FactReader, messages: MessageStore, pages: PageReader, scope: Scope, slug: str
) -> dict[int, list[Cause]]:
    """Why each version of a page was written: the audit events of its facts after the version
    before it was written and up to its own writing (version -> causes, oldest first)."""
    entries = sorted(pages.versions(slug, scope)[:REASONED_VERSIONS], key=lambda e: e.version)
    shown = [pages.get(slug, scope, e.version) for e in entries]
    fact_ids = sorted({f for v in shown for f in v.facts_seen})
    events = sorted(
        {e.seq: e for f in fact_ids for e in reader.history(f, scope).audit}.values(),
        key=lambda e: e.seq or 0,
    )
    explained = causes(reader, messages, scope, events)
    reasons: dict[int, list[Cause]] = {}
    previous = None
    for version in shown:
        seen = set(version.facts_seen)
        reasons[version.version] = [
            c
            for c in explained
            if (previous is None or c.event.at > previous)
            and c.event.at <= version.created_at
            and seen.intersection(c.event.fact_ids)
        ]
        previous = version.created_at
    return reasons
