"""The ingest pipeline: message events in, raw messages and facts stored. Pure of transport.

The embedded default calls ``ingest`` inline; Celery tasks (production) wrap the same function.
A batch is extracted and embedded together (embedding is the slow part and batches well), then
each event is applied in its own savepoint: a bad event undoes only its own writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from teamlore.domain import (
    CandidateFact,
    Channel,
    EventKind,
    Fact,
    FactStatus,
    Message,
    MessageEvent,
    content_hash,
    message_hash,
)
from teamlore.embedding import CachedEmbedder
from teamlore.errors import StoreUnreachable, TeamloreError
from teamlore.extraction import (
    Extraction,
    ExtractionRequest,
    ExtractionStatus,
    Extractor,
    extract_many,
)
from teamlore.stores.protocols import (
    EventLedger,
    FactBackend,
    MessageIndex,
    MessageStore,
    ReviewQueue,
    Tombstones,
)
from teamlore.workers import lifecycle, mutations
from teamlore.workers.meaning import Meaning
from teamlore.workers.passages import BatchPassages, refresh_following, searchable_text
from teamlore.workers.resolver import HeuristicResolver, Resolver

log = logging.getLogger(__name__)


class Outcome(StrEnum):
    """What ingesting one event did."""

    STORED = "stored"  # new message, facts extracted
    NOOP = "noop"  # new message, nothing worth a fact in it
    DUPLICATE = "duplicate"  # this very event (same idempotency key) was applied before
    UNCHANGED = "unchanged"  # seen before with the same text: idempotent re-delivery
    EDITED = "edited"
    DELETED = "deleted"
    ALREADY_DELETED = "already_deleted"  # the message was deleted: a re-import never resurrects it
    ORPHAN = "orphan"  # an edit for a message never seen
    FAILED = "failed"


@dataclass
class IngestResult:
    """One event's outcome and the ids of the facts it touched, by what happened to them."""

    event: MessageEvent
    outcome: Outcome
    created: list[str] = field(default_factory=list)
    evidence_added: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    contested: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    evidence_removed: list[str] = field(default_factory=list)
    error: str | None = None
    # The configured extractor failed for this message and the heuristic one stood in: why.
    extraction_fallback: str | None = None

    @property
    def changed(self) -> list[str]:
        """Every fact this event created or changed."""
        touched = (
            self.created,
            self.evidence_added,
            self.retracted,
            self.superseded,
            self.contested,
            self.revived,
            self.evidence_removed,
        )
        return list(dict.fromkeys(f for ids in touched for f in ids))


@dataclass
class PipelineDeps:
    """What the pipeline needs, passed explicitly (no globals)."""

    facts: FactBackend
    messages: MessageStore
    index: MessageIndex  # every message's text, searchable beside the facts
    # transaction(savepoint=True) inside a transaction undoes only its own writes on failure.
    transaction: Callable[..., AbstractContextManager[object]]
    extractor: Extractor
    embedder: CachedEmbedder
    clock: Callable[[], datetime]
    review: ReviewQueue
    tombstones: Tombstones
    # Told the ids of the facts a batch's events changed, once, inside the batch's transaction
    # (the wiki routes them and marks their pages dirty there, so facts and their dirty marks
    # land together); an event rolled back is not told of.
    notify: Callable[[list[str]], None] | None = None
    # None: the heuristic resolver, knowing the workspace's people from its message authors.
    resolver: Resolver | None = None
    # A model judge placed behind the workspace's heuristic resolver (its guard), when configured.
    judge: Callable[[HeuristicResolver], Resolver] | None = None
    # Idempotency keys of applied events; None: rely on the message store's own checks only.
    ledger: EventLedger | None = None
    # Subjects compared by meaning as well as words (``Meaning.for_embedder``); None: words alone.
    meaning: Meaning | None = None
    # Other processes may store messages too (workers on Redis): the people the workspace knows
    # are read from the store once per batch, not kept from this process's first look.
    shared: bool = False

    _resolvers: dict[str, tuple[HeuristicResolver, Resolver]] = field(default_factory=dict, repr=False)

    def resolver_for(self, workspace: str) -> Resolver:
        """The configured resolver, or a heuristic one that knows the workspace's people (kept
        while nobody new writes, so its parse cache lives across events), behind the judge."""
        if self.resolver is not None:
            return self.resolver
        cached = self._resolvers.get(workspace)
        if cached is None:
            rules = HeuristicResolver(self.messages.author_names(workspace))
            cached = self._resolvers[workspace] = (rules, self.judge(rules) if self.judge else rules)
        return cached[1]

    def refresh_people(self, workspace: str) -> None:
        """Forget the cached resolver when the store knows people it does not (another worker
        stored their first message): asked once per batch."""
        cached = self._resolvers.get(workspace)
        if cached is not None and not self.messages.author_names(workspace) <= cached[0].people:
            del self._resolvers[workspace]

    def note_author(self, workspace: str, name: str) -> None:
        cached = self._resolvers.get(workspace)
        if cached is not None and name and name.lower() not in cached[0].people:
            del self._resolvers[workspace]  # someone new: the next resolver knows them

    def curation(self, workspace: str) -> lifecycle.Curation:
        return lifecycle.Curation(self.resolver_for(workspace), self.review, self.tombstones, self.meaning)


def to_message(event: MessageEvent) -> Message:
    """The stored message an event describes."""
    return Message(
        platform=event.platform,
        workspace=event.workspace,
        channel=event.channel,
        message_id=event.message_id,
        thread_id=event.thread_id,
        author_id=event.author_id,
        author_name=event.author_name,
        ts=event.ts,
        text=event.text,
        permalink=event.permalink,
        content_hash=message_hash(event.text),
        shared_in=event.shared_in,
        file_ref=event.file_ref,
    )


def index_message(
    message: Message, passage: str | None, keys: dict[str, str], deps: PipelineDeps, at: datetime
) -> None:
    """Make the message's current text searchable (a new version if it changed), with the vector
    of ``passage``."""
    text = searchable_text(message)
    deps.index.put(message, text, at, keys.get(passage) if passage and text else None)


def ingest(events: Sequence[MessageEvent], deps: PipelineDeps) -> list[IngestResult]:
    """Apply a batch of events in order; one result per event."""
    extractions = _extract_batch(events, deps)
    extracted = [list(e.facts) for e in extractions]
    passages = _passages(events, deps)
    statements = [c.statement for candidates in extracted for c in candidates]
    subjects = deps.meaning.forms(statements) if deps.meaning is not None else []
    keys = deps.embedder.ensure_passages(statements + subjects + [p for p in passages if p])
    if deps.meaning is not None:
        deps.meaning.prepare(statements)
    results: list[IngestResult] = []
    changed: list[str] = []
    channels_seen: set[tuple[str, str]] = set()
    for workspace in sorted({e.workspace for e in events}) if deps.shared else ():
        deps.refresh_people(workspace)
    with deps.transaction():
        for event, candidates, extraction, passage in zip(
            events, extracted, extractions, passages, strict=True
        ):
            if (event.workspace, event.channel) not in channels_seen:
                channels_seen.add((event.workspace, event.channel))
                deps.messages.put_channel(
                    Channel(
                        event.workspace,
                        event.channel,
                        event.channel_name,
                        event.channel_visibility,
                        event.platform,
                    )
                )
            try:
                with deps.transaction(savepoint=True):
                    result = _apply_once(event, candidates, passage, keys, deps)
                    result.extraction_fallback = extraction.fallback
                results.append(result)
                changed += result.changed
            except StoreUnreachable:
                raise  # no event is at fault: the whole batch stays queued for a retry
            except TeamloreError as exc:
                log.warning("event %s/%s failed: %s", event.channel, event.message_id, exc)
                results.append(IngestResult(event, Outcome.FAILED, error=str(exc)))
        if deps.notify is not None and changed:
            # Once for the batch (its pages routed and marked once); should it fail, no event is
            # at fault: the whole batch is undone and raised, as for an unreachable store.
            deps.notify(changed)
    return results


def _passages(events: Sequence[MessageEvent], deps: PipelineDeps) -> list[str | None]:
    """The passage to embed for each event that will store a new text (None for the others): a
    text already stored, or a deleted message's, is never embedded again."""
    batch = BatchPassages(deps.index)
    passages: list[str | None] = []
    for event in events:
        existing = deps.messages.get_message(event.workspace, event.channel, event.message_id)
        new = bool(event.text.strip()) and _stores_new_text(event, existing)
        passages.append(batch.passage(to_message(event)) if new else None)
    return passages


def _stores_new_text(event: MessageEvent, existing: Message | None) -> bool:
    """Whether applying ``event`` stores a text the message does not have: the one rule
    ``_apply`` and the batch's embedding both follow."""
    if event.kind is EventKind.DELETED or (existing is not None and existing.deleted_at is not None):
        return False
    if existing is None:
        return event.kind is not EventKind.EDITED  # an edit of a message never seen is an orphan
    if existing.content_hash == message_hash(event.text):
        return False
    # An older text than the one stored (a re-delivered create or edit): never go back.
    return existing.edited_at is None or event.ts > existing.edited_at


def _extract_batch(events: Sequence[MessageEvent], deps: PipelineDeps) -> list[Extraction]:
    batch: dict[tuple[str, str, str], Message] = {}
    requests: list[ExtractionRequest] = []
    skipped: list[bool] = []
    for event in events:
        # Nothing to extract from a delete, or from a re-delivery (refused again in its savepoint).
        skip = event.kind is EventKind.DELETED or (
            deps.ledger is not None and deps.ledger.seen(event.idempotency_key)
        )
        skipped.append(skip)
        if skip:
            continue
        message = to_message(event)
        batch[(event.workspace, event.channel, event.message_id)] = message
        parent = None
        if event.thread_id and event.thread_id != event.message_id:
            key = (event.workspace, event.channel, event.thread_id)
            parent = batch.get(key) or deps.messages.get_message(*key)
        requests.append((message, parent))
    extracted = iter(extract_many(deps.extractor, requests))
    nothing = Extraction(ExtractionStatus.NOOP, ())
    return [nothing if skip else next(extracted) for skip in skipped]


# Not recorded as applied: an orphan may still meet its message, a failure was undone.
_NOT_APPLIED = frozenset({Outcome.ORPHAN, Outcome.FAILED, Outcome.DUPLICATE})


def _apply_once(
    event: MessageEvent,
    candidates: list[CandidateFact],
    passage: str | None,
    keys: dict[str, str],
    deps: PipelineDeps,
) -> IngestResult:
    """Apply an event unless its idempotency key says it was applied already; the key is written
    in the event's own savepoint, so the effects and the key land (or roll back) together."""
    if deps.ledger is not None and deps.ledger.seen(event.idempotency_key):
        return IngestResult(event, Outcome.DUPLICATE)
    result = _apply(event, candidates, passage, keys, deps)
    if deps.ledger is not None and result.outcome not in _NOT_APPLIED:
        deps.ledger.record(event.idempotency_key, result.outcome.value, deps.clock())
    return result


def record_orphan(event: MessageEvent, deps: PipelineDeps) -> None:
    """An edit whose message never arrived within the wait: kept on record, not applied."""
    if deps.ledger is not None:
        deps.ledger.record(event.idempotency_key, Outcome.ORPHAN.value, deps.clock())


def _apply(
    event: MessageEvent,
    candidates: list[CandidateFact],
    passage: str | None,
    keys: dict[str, str],
    deps: PipelineDeps,
) -> IngestResult:
    existing = deps.messages.get_message(event.workspace, event.channel, event.message_id)
    if existing is not None and existing.deleted_at is not None:
        return IngestResult(event, Outcome.ALREADY_DELETED)
    if event.kind is EventKind.DELETED:
        return _delete(event, existing, deps)
    if existing is None and event.kind is EventKind.EDITED:
        return IngestResult(event, Outcome.ORPHAN, error="edit for a message never seen")
    if not _stores_new_text(event, existing):
        if existing is not None and existing.content_hash == message_hash(event.text):
            _record_attachments(event, deps)  # a file added or removed without a change of text
        return IngestResult(event, Outcome.UNCHANGED)
    now = deps.clock()
    message = to_message(event)
    if existing is not None:
        # An edit event, or a re-import of an export in which the message was edited since.
        message = _as_edit(existing, message, event)
    deps.messages.put_message(message, recorded_at=now)
    index_message(message, passage, keys, deps, now)
    if existing is not None:
        refresh_following(deps.index, deps.embedder, [message])  # their context changed
    _record_attachments(event, deps)
    deps.note_author(message.workspace, message.author_name)
    result = IngestResult(event, Outcome.EDITED if existing else Outcome.STORED)
    if existing is not None:
        drop_unsupported(message, candidates, deps, now, result)
    for candidate in candidates:
        add_statement(candidate, message, keys, deps, now, result)
    if existing is None and not candidates:
        result.outcome = Outcome.NOOP
    return result


def _record_attachments(event: MessageEvent, deps: PipelineDeps) -> None:
    if event.attachments:
        deps.messages.put_attachments(event.workspace, event.channel, event.message_id, event.attachments)


def _as_edit(existing: Message, message: Message, event: MessageEvent) -> Message:
    from dataclasses import replace

    edited_at = event.ts if event.kind is EventKind.EDITED else None
    return replace(
        existing,
        text=message.text,
        content_hash=message.content_hash,
        edited_at=edited_at or existing.edited_at or existing.ts,
    )


def add_statement(
    candidate: CandidateFact,
    message: Message,
    keys: dict[str, str],
    deps: PipelineDeps,
    now: datetime,
    result: IngestResult,
) -> None:
    """Store one extracted statement: as more evidence for the same current statement, else placed
    by ``lifecycle.place``; ``result`` notes what changed."""
    same = deps.facts.current_by_hash(message.workspace, message.channel, content_hash(candidate.statement))
    if same is not None:
        if message.message_id not in same.evidence:
            mutations.add_evidence(deps.facts, same, message.message_id, now)
            result.evidence_added.append(same.fact_id)
        return
    placed = lifecycle.place(
        deps.facts, deps.curation(message.workspace), candidate, message, now, keys[candidate.statement]
    )
    if placed.created:
        result.created.append(placed.created)
    if placed.evidence_added:
        result.evidence_added.append(placed.evidence_added)
    result.superseded += placed.superseded
    result.contested += placed.contested


def drop_unsupported(
    message: Message, candidates: list[CandidateFact], deps: PipelineDeps, now: datetime, result: IngestResult
) -> None:
    """After an edit, facts the new text no longer states lose this message as evidence."""
    still_said = {content_hash(c.statement) for c in candidates}
    for fact in deps.facts.current_citing(message.workspace, message.channel, message.message_id):
        if fact.content_hash in still_said:
            continue
        _withdraw(fact, message, "source edited: the new text no longer states it", deps, now, result)


def _delete(event: MessageEvent, existing: Message | None, deps: PipelineDeps) -> IngestResult:
    now = deps.clock()
    if existing is None:
        # Delete before create (out-of-order delivery): remember the id as deleted, so the late
        # create cannot bring the message back.
        stub = to_message(event)
        deps.messages.put_message(stub, recorded_at=now)
    result = IngestResult(event, Outcome.DELETED)
    # The passages of the files it shared (``teamlore.files``) go with it, the same way.
    passages = deps.messages.passages_of(event.workspace, event.channel, event.message_id)
    gone = [existing or to_message(event)] + [
        m for pid in passages if (m := deps.messages.get_message(event.workspace, event.channel, pid))
    ]
    for message in gone:
        _withdraw_message(message, deps, now, result)
    return result


def _withdraw_message(message: Message, deps: PipelineDeps, now: datetime, result: IngestResult) -> None:
    """A deleted message: blanked, out of the index, and no longer evidence for any fact."""
    ws, channel, mid = message.workspace, message.channel, message.message_id
    # Stored on the transaction-time axis: the gate compares it with known_at.
    deps.messages.mark_deleted(ws, channel, mid, now)
    deps.index.withdraw(ws, channel, mid, now)
    refresh_following(deps.index, deps.embedder, [message])
    for fact in deps.facts.current_citing(ws, channel, mid):
        if fact.status is not FactStatus.RETRACTED:
            _withdraw(fact, message, "source deleted", deps, now, result)


def _withdraw(
    fact: Fact, message: Message, reason: str, deps: PipelineDeps, now: datetime, result: IngestResult
) -> None:
    """A source no longer supports ``fact``; with no source left it is retracted, and what it
    had superseded is reconsidered."""
    new = mutations.drop_evidence(deps.facts, fact, message.message_id, now, reason)
    if new.status is not FactStatus.RETRACTED:
        result.evidence_removed.append(fact.fact_id)
    else:
        result.retracted.append(fact.fact_id)
        deps.tombstones.add(fact.workspace, fact.channel, fact.content_hash, reason, now)
        result.revived += lifecycle.reconsider_replaced(
            deps.facts, deps.resolver_for(fact.workspace), new, now, meaning=deps.meaning
        )
