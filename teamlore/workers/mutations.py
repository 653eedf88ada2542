"""Fact mutations: each writes one new version and its audit event, in one transaction.

These are the only functions that change facts; the pipeline and (later) the resolver, review
and admin commands call them, so every change is versioned and logged the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import datetime
from typing import Any

from teamlore.domain import CandidateFact, Fact, FactStatus, Message, content_hash
from teamlore.stores.protocols import AuditEvent, FactBackend
from teamlore.timeutil import SENTINEL, iso

SYSTEM = "system"


def fact_id_for(workspace: str, channel: str, statement_hash: str, message_id: str) -> str:
    """Deterministic, so re-running an ingest writes the same ids (at-least-once delivery)."""
    seed = f"{workspace}\x1f{channel}\x1f{statement_hash}\x1f{message_id}"
    return "f_" + hashlib.sha256(seed.encode()).hexdigest()[:20]


def audit_event(
    event: str, fact: Fact, at: datetime, reason: str, actor: str = SYSTEM, **details: object
) -> AuditEvent:
    """An audit event about ``fact``, by ``actor``; ``details`` are stored as given."""
    return AuditEvent(
        event=event,
        actor=actor,
        reason=reason,
        at=at,
        workspace=fact.workspace,
        channel=fact.channel,
        fact_ids=(fact.fact_id,),
        content_hashes=(fact.content_hash,),
        details={"state": version_state(fact), **details},
    )


def version_state(fact: Fact) -> dict[str, object]:
    """What a version is, without its text: the audit log can replay a fact's versions from it."""
    return {
        "version": fact.version,
        "status": fact.status.value,
        "valid_from": iso(fact.valid_from),
        "valid_to": iso(fact.valid_to),
        "evidence": list(fact.evidence),
        "supersedes": list(fact.supersedes),
        "superseded_by": fact.superseded_by,
        "content_hash": fact.content_hash,
        "origin": fact.origin,
    }


def create_or_revive(
    facts: FactBackend,
    candidate: CandidateFact,
    message: Message,
    now: datetime,
    embedding_key: str | None,
    status: FactStatus = FactStatus.ACTIVE,
    supersedes: tuple[str, ...] = (),
    actor: str = SYSTEM,
) -> Fact:
    """A new fact; or, when this message stated it before (an edit undone), its next version.

    ``actor`` other than the system makes a reviewer's fact: origin "manual", no source message.
    """
    manual = actor != SYSTEM
    evidence = () if manual else (message.message_id,)
    statement_hash = content_hash(candidate.statement)
    fact_id = fact_id_for(message.workspace, message.channel, statement_hash, message.message_id)
    earlier = facts.current_version(fact_id)
    if earlier is not None:
        new = next_version(earlier, now, status=status, evidence=evidence, supersedes=supersedes)
        return facts.write_version(
            new,
            earlier,
            audit_event(
                "revived", new, now, "its source states it again", actor, message_id=message.message_id
            ),
        )
    fact = Fact(
        fact_id=fact_id,
        version=1,
        workspace=message.workspace,
        channel=message.channel,
        thread_id=message.thread_id,
        statement=candidate.statement,
        content_hash=statement_hash,
        fact_type=candidate.fact_type,
        entities=candidate.entities,
        topic=candidate.topic,
        importance=candidate.importance,
        confidence=candidate.confidence,
        status=status,
        evidence=evidence,
        origin="manual" if manual else "extracted",
        valid_from=candidate.valid_from,
        recorded_from=now,
        supersedes=supersedes,
        due_at=candidate.due_at,
    )
    return facts.write_version(
        fact,
        None,
        audit_event(
            "created",
            fact,
            now,
            "added by a reviewer" if manual else "extracted from a message",
            actor,
            message_id=message.message_id,
        ),
        embedding_key=embedding_key,
    )


def next_version(current: Fact, now: datetime, **changes: Any) -> Fact:
    """``current`` as its next version, recorded from ``now``, with ``changes`` applied."""
    return dataclasses.replace(current, version=current.version + 1, recorded_from=now, **changes)


def add_evidence(facts: FactBackend, current: Fact, message_id: str, now: datetime) -> Fact:
    """Write the next version of ``current``, citing ``message_id`` too."""
    new = next_version(current, now, evidence=(*current.evidence, message_id))
    return facts.write_version(
        new,
        current,
        audit_event("evidence_added", new, now, "the same statement again", message_id=message_id),
    )


def drop_evidence(facts: FactBackend, current: Fact, message_id: str, now: datetime, reason: str) -> Fact:
    """Remove one source; a fact left with none is retracted (it no longer has a basis)."""
    remaining = tuple(m for m in current.evidence if m != message_id)
    if remaining:
        new = next_version(current, now, evidence=remaining)
        return facts.write_version(
            new, current, audit_event("evidence_removed", new, now, reason, message_id=message_id)
        )
    # Retracted for want of a basis, not by what replaced it: retracting that one later must not
    # bring this one back (its message is gone).
    new = next_version(current, now, status=FactStatus.RETRACTED, superseded_by=None)
    return facts.write_version(
        new, current, audit_event("retracted", new, now, reason, message_id=message_id)
    )


def supersede(
    facts: FactBackend, older: Fact, newer: Fact, now: datetime, reason: str, actor: str = SYSTEM
) -> Fact:
    """Close ``older`` at ``newer.valid_from``: it was true until then, and is not after."""
    new = next_version(
        older, now, status=FactStatus.SUPERSEDED, valid_to=newer.valid_from, superseded_by=newer.fact_id
    )
    return facts.write_version(
        new, older, audit_event("superseded", new, now, reason, actor, successor=newer.fact_id)
    )


def correct(facts: FactBackend, older: Fact, newer: Fact, now: datetime, actor: str = SYSTEM) -> Fact:
    """``older`` was never true ("scratch that, it's B"): retracted from its start in valid time,
    pointing at the correction. What the store held before stays readable with ``known_at``."""
    new = next_version(
        older, now, status=FactStatus.RETRACTED, valid_to=older.valid_from, superseded_by=newer.fact_id
    )
    return facts.write_version(
        new,
        older,
        audit_event(
            "retracted", new, now, "a correction says it was never true", actor, successor=newer.fact_id
        ),
    )


def contest(facts: FactBackend, older: Fact, newer: Fact, now: datetime) -> Fact:
    """Flag a possible contradiction: both stay readable, marked contested, for a reviewer."""
    new = next_version(older, now, status=FactStatus.CONTESTED)
    return facts.write_version(
        new,
        older,
        audit_event("contested", new, now, "a newer statement may contradict it", other=newer.fact_id),
    )


def revive(facts: FactBackend, older: Fact, now: datetime, reason: str, actor: str = SYSTEM) -> Fact:
    """Bring back a fact whose successor lost its basis: open-ended and active again."""
    new = next_version(older, now, status=FactStatus.ACTIVE, valid_to=SENTINEL, superseded_by=None)
    return facts.write_version(new, older, audit_event("revived", new, now, reason, actor))


def repoint(facts: FactBackend, older: Fact, successor: Fact, now: datetime) -> Fact:
    """Keep ``older`` superseded, by the successor that remains."""
    new = next_version(older, now, valid_to=successor.valid_from, superseded_by=successor.fact_id)
    return facts.write_version(
        new, older, audit_event("superseded", new, now, "its successor changed", successor=successor.fact_id)
    )
