"""What reviewers do: settle review items, and add or correct facts by hand.

Every change goes through ``workers.mutations`` with the reviewer as the actor, so the audit log
names who decided. A reviewer's fact (origin "manual") outranks extraction: the pipeline never
lets an extracted statement retire it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum

from teamlore.domain import CandidateFact, Fact, FactStatus, FactType, Message, Scope, content_hash
from teamlore.embedding import CachedEmbedder
from teamlore.errors import InvalidInput, NotFound
from teamlore.extraction import entities_of, topic_of
from teamlore.stores.protocols import AuditEvent, AuditLog, FactBackend, ReviewItem, ReviewQueue, Tombstones
from teamlore.workers import lifecycle, mutations
from teamlore.workers.meaning import Meaning
from teamlore.workers.resolver import Resolver


class Retract(StrEnum):
    """Which statement of a rejected review item to retract, if either."""

    NONE = "none"
    NEWER = "newer"
    OLDER = "older"


@dataclasses.dataclass
class ReviewDesk:
    """Settles review items and adds or corrects facts by hand, in the reviewer's name."""

    facts: FactBackend
    review: ReviewQueue
    tombstones: Tombstones
    audit: AuditLog
    embedder: CachedEmbedder
    resolver_for: Callable[[str], Resolver]
    clock: Callable[[], datetime]
    # Told the ids of facts a decision changed (the wiki marks their pages dirty).
    notify: Callable[[list[str]], None] | None = None
    # Subjects compared by meaning as the pipeline compares them; None: words alone.
    meaning: Meaning | None = None

    def items(self, scope: Scope, status: str = "open") -> list[ReviewItem]:
        return self.review.items(scope, status)

    def accept(self, item_id: int, reviewer: str, scope: Scope | None = None) -> ReviewItem:
        """Apply what the item proposes: the newer fact replaces the older (or, for a rejected
        statement said again, the newer one stands). With a scope, an item outside it is not
        found (the API and wiki pass the caller's; the CLI is the operator's own)."""
        item, older, newer = self._open_item(item_id, reviewer, scope)
        now = self.clock()
        if newer.status is not FactStatus.ACTIVE:
            newer = self._set_status(newer, FactStatus.ACTIVE, reviewer, now)
        if item.kind != "rejected_returns" and older.fact_id != newer.fact_id:
            mutations.supersede(self.facts, older, newer, now, "a reviewer accepted the change", reviewer)
        return self._close(item, reviewer, "accept", now)

    def reject(
        self, item_id: int, reviewer: str, retract: Retract = Retract.NONE, scope: Scope | None = None
    ) -> ReviewItem:
        """Keep both as they were (contested flags cleared), or retract one of the two."""
        item, older, newer = self._open_item(item_id, reviewer, scope)
        now = self.clock()
        keep_newer = retract is not Retract.NEWER and item.kind == "contested"
        pairs = ((older, retract is Retract.OLDER), (newer, not keep_newer))
        for fact, retire in pairs if older is not newer else pairs[1:]:
            if retire or (fact is newer and retract is Retract.NEWER):
                self._retract(fact, reviewer, now)
            elif fact.status in (FactStatus.CONTESTED, FactStatus.PROVISIONAL) and not (
                fact is newer and item.kind != "contested"
            ):
                self._set_status(fact, FactStatus.ACTIVE, reviewer, now)
        return self._close(item, reviewer, f"reject:{retract.value}", now)

    def add_fact(
        self,
        scope: Scope,
        statement: str,
        reviewer: str,
        valid_from: datetime | None = None,
        fact_type: FactType = FactType.STATEMENT,
    ) -> Fact:
        """A fact a reviewer states by hand; it goes through resolution like any other."""
        channel = _one_channel(scope)
        statement = _check_statement(statement)
        now = self.clock()
        moment = valid_from or now
        key = self.embedder.ensure_passages([statement])[statement]
        entities = entities_of(statement)
        candidate = CandidateFact(
            statement, fact_type, entities, topic_of(entities, statement), 1.0, 1.0, moment
        )
        source = Message(
            "manual",
            scope.workspace,
            channel,
            f"manual:{content_hash(statement)}:{int(now.timestamp())}",
            None,
            reviewer,
            reviewer,
            moment,
            statement,
            "",
            content_hash(statement),
        )
        curation = lifecycle.Curation(
            self.resolver_for(scope.workspace), self.review, self.tombstones, self.meaning
        )
        placed = lifecycle.place(self.facts, curation, candidate, source, now, key, actor=reviewer)
        fact = self.facts.current_version(placed.created or placed.evidence_added or "")
        assert fact is not None
        self._changed(fact.fact_id, *placed.superseded, *placed.contested)
        return fact

    def correct_fact(self, fact_id: str, scope: Scope, statement: str, reviewer: str) -> Fact:
        """Replace a fact with a reviewer's wording; the old one is superseded from now on."""
        old = self.facts.current_version(fact_id)
        if old is None or not scope.allows(old.workspace, old.channel):
            raise NotFound(f"no fact {fact_id} in this scope")
        now = self.clock()
        new = self.add_fact(Scope(old.workspace, [old.channel]), statement, reviewer, now, old.fact_type)
        current = self.facts.current_version(fact_id)
        if current is not None and current.status is not FactStatus.SUPERSEDED:
            mutations.supersede(self.facts, current, new, now, "corrected by a reviewer", reviewer)
            self._changed(fact_id)
        return new

    # ---- helpers ----

    def _open_item(self, item_id: int, reviewer: str, scope: Scope | None) -> tuple[ReviewItem, Fact, Fact]:
        if not reviewer.strip():
            raise InvalidInput("a review needs the reviewer's name (--by)")
        item = self.review.get(item_id)
        if item is None or (scope is not None and not scope.allows(item.workspace, item.channel)):
            raise NotFound(f"no review item {item_id}")
        if item.status != "open":
            raise InvalidInput(f"review item {item_id} is already {item.status}")
        older = self.facts.current_version(item.older_fact)
        # An item about one fact (a hedge, a rejected statement said again) names it twice.
        newer = older if item.newer_fact == item.older_fact else self.facts.current_version(item.newer_fact)
        if older is None or newer is None:
            raise NotFound(f"review item {item_id} names a fact that no longer exists")
        return item, older, newer

    def _changed(self, *fact_ids: str) -> None:
        if self.notify is not None:
            self.notify(list(fact_ids))

    def _close(self, item: ReviewItem, reviewer: str, decision: str, now: datetime) -> ReviewItem:
        self.review.close(item.id, reviewer, decision, now)
        self._changed(item.older_fact, item.newer_fact)
        hashes = tuple(
            f.content_hash for f in map(self.facts.current_version, (item.older_fact, item.newer_fact)) if f
        )
        self.audit.append(
            AuditEvent(
                "reviewed",
                reviewer,
                f"review item {item.id} ({item.kind}): {decision}",
                now,
                item.workspace,
                item.channel,
                tuple(dict.fromkeys((item.older_fact, item.newer_fact))),
                hashes,
                {"item": item.id, "decision": decision},
            )
        )
        closed = self.review.get(item.id)
        assert closed is not None
        return closed

    def _set_status(self, fact: Fact, status: FactStatus, reviewer: str, now: datetime) -> Fact:
        new = mutations.next_version(fact, now, status=status)
        return self.facts.write_version(
            new, fact, mutations.audit_event("reviewed", new, now, f"set {status}", reviewer)
        )

    def _retract(self, fact: Fact, reviewer: str, now: datetime) -> None:
        new = mutations.next_version(fact, now, status=FactStatus.RETRACTED)
        self.facts.write_version(
            new, fact, mutations.audit_event("retracted", new, now, "rejected by a reviewer", reviewer)
        )
        self.tombstones.add(fact.workspace, fact.channel, fact.content_hash, lifecycle.REJECTED, now)
        lifecycle.reconsider_replaced(
            self.facts, self.resolver_for(fact.workspace), new, now, reviewer, self.meaning
        )


def _one_channel(scope: Scope) -> str:
    if len(scope.channels) != 1:
        raise InvalidInput("a fact belongs to exactly one channel: give one --channel")
    return next(iter(scope.channels))


def _check_statement(statement: str) -> str:
    statement = " ".join(statement.split())
    if not statement:
        raise InvalidInput("the statement is empty")
    if len(statement) > 1000:
        raise InvalidInput("a statement is at most 1,000 characters")
    return statement
