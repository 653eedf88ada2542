"""Placing a new statement among what the channel already holds, and undoing it on delete.

Calls the resolver on related facts of the same channel only (found by shared subject words, and
by meaning among the channel's recent facts when a ``Meaning`` is configured), then writes the outcome through
``mutations`` (versioned, audited): evidence added to a duplicate, older values superseded, a
contested pair flagged for review, or a plain new fact. Two things outrank the resolver: a
reviewer's own fact (an extracted statement never retires it: it waits for review instead), and
a reviewer's rejection (the same statement said again comes back provisional).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from teamlore.domain import CandidateFact, Fact, FactStatus, Message, content_hash
from teamlore.stores.protocols import FactBackend, Related, ReviewQueue, Tombstones
from teamlore.workers import mutations
from teamlore.workers.claim_parts import read
from teamlore.workers.meaning import Meaning
from teamlore.workers.resolver import Claim, Resolution, Resolver, candidate_terms

# How many related facts of the channel are judged against each new statement: found by shared
# subject words, and (with a Meaning) the closest by meaning among the channel's most recent
# current facts ("two more joined, so 9 now" shares no word with "the platform team is 7").
CANDIDATES = 12
NEAR_CANDIDATES = 4
NEAR_WINDOW = 256
REJECTED = "rejected"


@dataclasses.dataclass
class Curation:
    """What placement needs besides the facts: the resolver, the review queue, the tombstones."""

    resolver: Resolver
    review: ReviewQueue
    tombstones: Tombstones
    meaning: Meaning | None = None  # None: subjects compared by words alone


@dataclasses.dataclass
class Placement:
    """Where ``place`` put a statement: the fact it created or added evidence to, the facts it
    superseded or contested, and the review items it opened."""

    created: str | None = None
    evidence_added: str | None = None
    superseded: list[str] = dataclasses.field(default_factory=list)
    contested: list[str] = dataclasses.field(default_factory=list)
    for_review: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Verdicts:
    replaces: list[Fact] = dataclasses.field(default_factory=list)
    corrects: list[Fact] = dataclasses.field(default_factory=list)  # were never true
    disputes: list[Fact] = dataclasses.field(default_factory=list)
    outranked_by: list[Fact] = dataclasses.field(default_factory=list)  # a reviewer's facts
    replaced_by: Fact | None = None
    duplicate_of: Fact | None = None


def related_claims(
    facts: FactBackend, meaning: Meaning | None, claim: Claim, workspace: str, channel: str
) -> tuple[Claim, list[tuple[Related, Claim]]]:
    """The current facts of the channel a new statement is judged against, each as a claim, and
    the statement itself with its masked-subject vector (when there is a Meaning)."""
    found = facts.current_related(workspace, channel, candidate_terms(claim.text), CANDIDATES)
    if meaning is None:
        return claim, [(r, Claim(r.statement, r.valid_from, r.fact_type)) for r in found]
    seen = {r.fact_id for r in found}
    near = facts.current_near(workspace, channel, meaning.statement(claim.text), NEAR_CANDIDATES, NEAR_WINDOW)
    found += [r for r in near if r.fact_id not in seen]
    vectors = meaning.subjects([claim.text, *(r.statement for r in found)])
    claim = dataclasses.replace(claim, meaning=vectors[0])
    return claim, [
        (r, Claim(r.statement, r.valid_from, r.fact_type, v)) for r, v in zip(found, vectors[1:], strict=True)
    ]


def _judge_all(facts: FactBackend, curation: Curation, claim: Claim, message: Message) -> _Verdicts:
    verdicts = _Verdicts()
    resolver = curation.resolver
    claim, candidates = related_claims(facts, curation.meaning, claim, message.workspace, message.channel)
    for related, stored in candidates:
        older_first = related.valid_from <= claim.valid_from
        kind = (resolver.judge(stored, claim) if older_first else resolver.judge(claim, stored)).resolution
        if kind is Resolution.UNRELATED or (not older_first and kind is not Resolution.SUPERSEDES):
            # (A statement older than one we hold is never a correction of it.)
            continue
        fact = facts.current_version(related.fact_id)
        if fact is None:
            continue
        if not older_first:
            # Out of order: a statement older than a fact we hold may already be retired by it.
            verdicts.replaced_by = verdicts.replaced_by or fact
        elif kind is Resolution.DUPLICATE:
            verdicts.duplicate_of = fact
            return verdicts
        elif fact.origin == "manual":
            verdicts.outranked_by.append(fact)
        elif kind is Resolution.SUPERSEDES:
            verdicts.replaces.append(fact)
        elif kind is Resolution.CORRECTION:
            verdicts.corrects.append(fact)
        else:
            verdicts.disputes.append(fact)
    return verdicts


def place(
    facts: FactBackend,
    curation: Curation,
    candidate: CandidateFact,
    message: Message,
    now: datetime,
    embedding_key: str | None,
    actor: str = mutations.SYSTEM,
) -> Placement:
    """``actor`` is the system for extracted statements, a reviewer's name for a manual fact."""
    claim = Claim(candidate.statement, candidate.valid_from, candidate.fact_type.value)
    verdicts = _judge_all(facts, curation, claim, message)
    if verdicts.duplicate_of is not None:
        same = verdicts.duplicate_of
        if message.message_id not in same.evidence:
            mutations.add_evidence(facts, same, message.message_id, now)
        return Placement(evidence_added=same.fact_id)

    rejected = (
        curation.tombstones.reason(message.workspace, message.channel, content_hash(candidate.statement))
        == REJECTED
    )
    hedged = read(candidate.statement).uncertain
    status = _status(rejected, verdicts, hedged)
    candidate = _from_the_start_of(verdicts.corrects, candidate, status)
    retired = (*verdicts.replaces, *verdicts.corrects)
    new = mutations.create_or_revive(
        facts,
        candidate,
        message,
        now,
        embedding_key,
        status=status,
        supersedes=() if status is FactStatus.PROVISIONAL else tuple(f.fact_id for f in retired),
        actor=actor,
    )
    placement = Placement(created=new.fact_id)
    if status is FactStatus.PROVISIONAL:
        for manual in verdicts.outranked_by:
            placement.for_review.append(
                curation.review.open(
                    new.workspace,
                    new.channel,
                    "manual_conflict",
                    manual.fact_id,
                    new.fact_id,
                    "an extracted statement conflicts with a reviewer's fact",
                    now,
                )
            )
        if rejected:
            placement.for_review.append(
                curation.review.open(
                    new.workspace,
                    new.channel,
                    "rejected_returns",
                    new.fact_id,
                    new.fact_id,
                    "a statement a reviewer rejected was said again",
                    now,
                )
            )
        return placement
    for older in verdicts.replaces:
        mutations.supersede(facts, older, new, now, "a newer statement replaces it", actor)
        placement.superseded.append(older.fact_id)
    for older in verdicts.corrects:
        mutations.correct(facts, older, new, now, actor)
        placement.superseded.append(older.fact_id)
    _open_disputes(facts, curation, verdicts.disputes, new, now, hedged, placement)
    if verdicts.replaced_by is not None:
        mutations.supersede(facts, new, verdicts.replaced_by, now, "a later statement already replaced it")
    return placement


def _status(rejected: bool, verdicts: _Verdicts, hedged: bool) -> FactStatus:
    if rejected or verdicts.outranked_by:
        return FactStatus.PROVISIONAL
    # A hedge ("I think Dana owns billing again") is flagged and reviewed, never taken as settled.
    if verdicts.disputes or hedged:
        return FactStatus.CONTESTED
    return FactStatus.ACTIVE


def _open_disputes(
    facts: FactBackend,
    curation: Curation,
    disputes: list[Fact],
    new: Fact,
    now: datetime,
    hedged: bool,
    placement: Placement,
) -> None:
    """Flag what a newer statement may contradict, and ask a reviewer. A hedged statement leaves
    the settled facts it doubts as they are: only the hedge is flagged. (A hedge that doubts
    nothing is flagged too, but asks nobody: the queue is for conflicts.)"""
    for older in disputes:
        if not hedged:
            mutations.contest(facts, older, new, now)
            placement.contested.append(older.fact_id)
        placement.for_review.append(
            curation.review.open(
                new.workspace,
                new.channel,
                "contested",
                older.fact_id,
                new.fact_id,
                "a hedged statement doubts it" if hedged else "a newer statement may contradict it",
                now,
            )
        )


def _from_the_start_of(corrected: list[Fact], candidate: CandidateFact, status: FactStatus) -> CandidateFact:
    """A correction says what was true all along: the corrected value holds from the start of
    what it corrects, so "as of" a time before the correction shows it."""
    if not corrected or status is not FactStatus.ACTIVE:
        return candidate
    start = min(f.valid_from for f in corrected)
    return dataclasses.replace(candidate, valid_from=min(start, candidate.valid_from))


def reconsider_replaced(
    facts: FactBackend,
    resolver: Resolver,
    retracted: Fact,
    now: datetime,
    actor: str = mutations.SYSTEM,
    meaning: Meaning | None = None,
) -> list[str]:
    """After ``retracted`` lost its basis, bring back what it had superseded, unless another
    newer fact still supersedes it (then the successor pointer moves to that one)."""
    revived: list[str] = []
    for older_id in retracted.supersedes:
        older = facts.current_version(older_id)
        if older is None or older.superseded_by != retracted.fact_id:
            continue
        successor = _remaining_successor(facts, resolver, meaning, older)
        if successor is None:
            mutations.revive(facts, older, now, f"its successor {retracted.fact_id} was retracted", actor)
            revived.append(older_id)
        else:
            mutations.repoint(facts, older, successor, now)
    return revived


def _remaining_successor(
    facts: FactBackend, resolver: Resolver, meaning: Meaning | None, older: Fact
) -> Fact | None:
    claim = Claim(older.statement, older.valid_from, older.fact_type.value)
    claim, candidates = related_claims(facts, meaning, claim, older.workspace, older.channel)
    for related, newer in candidates:
        if related.fact_id == older.fact_id or related.valid_from < older.valid_from:
            continue
        if resolver.judge(claim, newer).resolution is Resolution.SUPERSEDES:
            return facts.current_version(related.fact_id)
    return None
