"""Placing a new statement among what the channel already holds, and undoing it on delete.

Calls the resolver on related facts of the same channel only, then writes the outcome through
``mutations`` (versioned, audited): evidence added to a duplicate, older values superseded, a
contested pair flagged for review, or a plain new fact.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from teamlore.domain import CandidateFact, Fact, FactStatus, Message
from teamlore.stores.protocols import FactBackend
from teamlore.workers import mutations
from teamlore.workers.resolver import Claim, Resolution, Resolver

# How many related facts of the channel are judged against each new statement.
CANDIDATES = 20


@dataclasses.dataclass
class Placement:
    created: str | None = None
    evidence_added: str | None = None
    superseded: list[str] = dataclasses.field(default_factory=list)
    contested: list[str] = dataclasses.field(default_factory=list)


def place(
    facts: FactBackend,
    resolver: Resolver,
    candidate: CandidateFact,
    message: Message,
    now: datetime,
    embedding_key: str | None,
) -> Placement:
    related = [
        f for f in facts.current_related(message.workspace, message.channel, candidate.statement, CANDIDATES)
    ]
    newer_claim = Claim(candidate.statement, candidate.valid_from)
    replaces: list[Fact] = []
    disputes: list[Fact] = []
    replaced_by: Fact | None = None
    for fact in related:
        if fact.valid_from <= candidate.valid_from:
            verdict = resolver.judge(Claim(fact.statement, fact.valid_from), newer_claim)
            if verdict.resolution is Resolution.DUPLICATE:
                if message.message_id not in fact.evidence:
                    mutations.add_evidence(facts, fact, message.message_id, now)
                return Placement(evidence_added=fact.fact_id)
            if verdict.resolution is Resolution.SUPERSEDES:
                replaces.append(fact)
            elif verdict.resolution is Resolution.CONTESTED:
                disputes.append(fact)
        else:
            # Out of order: a statement older than a fact we already hold may be retired by it.
            verdict = resolver.judge(newer_claim, Claim(fact.statement, fact.valid_from))
            if verdict.resolution is Resolution.SUPERSEDES and replaced_by is None:
                replaced_by = fact
    status = FactStatus.CONTESTED if disputes else FactStatus.ACTIVE
    new = mutations.create_or_revive(
        facts,
        candidate,
        message,
        now,
        embedding_key,
        status=status,
        supersedes=tuple(f.fact_id for f in replaces),
    )
    placement = Placement(created=new.fact_id)
    for older in replaces:
        mutations.supersede(facts, older, new, now, "a newer statement replaces it")
        placement.superseded.append(older.fact_id)
    for older in disputes:
        mutations.contest(facts, older, new, now)
        placement.contested.append(older.fact_id)
    if replaced_by is not None:
        mutations.supersede(facts, new, replaced_by, now, "a later statement already replaced it")
    return placement


def reconsider_replaced(facts: FactBackend, resolver: Resolver, retracted: Fact, now: datetime) -> list[str]:
    """After ``retracted`` lost its basis, bring back what it had superseded, unless another
    newer fact still supersedes it (then the successor pointer moves to that one)."""
    revived: list[str] = []
    for older_id in retracted.supersedes:
        older = facts.current_version(older_id)
        if older is None or older.superseded_by != retracted.fact_id:
            continue
        successor = _remaining_successor(facts, resolver, older)
        if successor is None:
            mutations.revive(facts, older, now, f"its successor {retracted.fact_id} was retracted")
            revived.append(older_id)
        else:
            mutations.repoint(facts, older, successor, now)
    return revived


def _remaining_successor(facts: FactBackend, resolver: Resolver, older: Fact) -> Fact | None:
    claim = Claim(older.statement, older.valid_from)
    for fact in facts.current_related(older.workspace, older.channel, older.statement, CANDIDATES):
        if fact.fact_id == older.fact_id or fact.valid_from < older.valid_from:
            continue
        if resolver.judge(claim, Claim(fact.statement, fact.valid_from)).resolution is (
            Resolution.SUPERSEDES
        ):
            return fact
    return None
