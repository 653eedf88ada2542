"""Erasing a person: their words gone from every store, index, cache and file.

Messages lose their text and author name; facts they alone support are retracted and the
statement text of every version, its keyword-index rows and its vector are deleted; facts
others also support only lose that evidence. A reply in a thread the person opened was read
with their question beside it ("yes (re: is the offsite still on?)", "dana owns the billing
service"): each such reply is read again without it, and a statement it no longer makes is
retracted and erased like theirs (what the reply still says alone is stored as new facts).
The files they shared go too: the passages read from them are their messages (erased as
above), and the bytes are deleted unless another person's message shares the same file.
Their tombstones, the ledger keys of their events (which hash their text) and the model
cache go; the audit log keeps its events (ids and keyed hashes, never text), plus one "erased"
event. Last (``Teamlore.erase_author``, after the pages) the SQLite file is scrubbed: keyword
indexes merged, free space and the write-ahead log emptied, so no deleted copy stays on disk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

from teamlore.domain import EventKind, Fact, FactStatus, Message, MessageEvent, content_hash
from teamlore.errors import InvalidInput
from teamlore.extraction import extract_many
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import AuditEvent
from teamlore.workers import lifecycle, mutations
from teamlore.workers.passages import refresh_following
from teamlore.workers.pipeline import IngestResult, Outcome, PipelineDeps, add_statement

ERASED = "erased on request"
QUESTION_ERASED = "erased on request: the question it answered"


@dataclasses.dataclass
class ErasureReport:
    workspace: str
    author_id: str
    messages: int = 0
    facts_erased: list[str] = dataclasses.field(default_factory=list)
    facts_kept_without_their_evidence: list[str] = dataclasses.field(default_factory=list)
    # Statements of others' thread replies read again without the erased question.
    answers_reread: int = 0
    facts_created: list[str] = dataclasses.field(default_factory=list)
    vectors: int = 0
    pages_rewritten: int = 0
    files: int = 0  # shared files of theirs forgotten (their passages are their messages, above)
    blobs: int = 0  # files' bytes deleted (those no other person's message shares)


@dataclasses.dataclass
class _Doomed:
    """Facts to erase, and the facts left standing on others' evidence."""

    actor: str
    erased: dict[str, Fact] = dataclasses.field(default_factory=dict)
    kept: set[str] = dataclasses.field(default_factory=set)

    def withdraw(self, deps: PipelineDeps, fact: Fact, message_id: str, now: datetime, reason: str) -> None:
        if fact.fact_id in self.erased:
            return
        if fact.status is FactStatus.RETRACTED and message_id not in fact.evidence:
            return
        new = mutations.drop_evidence(deps.facts, fact, message_id, now, reason)
        if new.status is FactStatus.RETRACTED:
            self.erased[fact.fact_id] = new
            lifecycle.reconsider_replaced(
                deps.facts, deps.resolver_for(fact.workspace), new, now, self.actor, deps.meaning
            )
        else:
            self.kept.add(fact.fact_id)


def erase_author(
    stores: EmbeddedStores, deps: PipelineDeps, workspace: str, author_id: str, actor: str
) -> ErasureReport:
    """Erase what one person said in a workspace (see the module); ``actor`` is who asked, for the
    audit log."""
    if not workspace or not author_id:
        raise InvalidInput("erase needs --workspace and --author")
    if not actor.strip():
        raise InvalidInput("erase needs the name of who asked for it (--by)")
    now = deps.clock()
    report = ErasureReport(workspace, author_id)
    messages = stores.messages.authored(workspace, author_id)
    doomed = _Doomed(actor)
    with stores.transaction():
        platforms: dict[tuple[str, str], str] = {}
        for channel, message_id in messages:
            found = stores.messages.get_message(workspace, channel, message_id)
            platforms[(channel, message_id)] = found.platform if found else ""
            for fact in deps.facts.current_citing(workspace, channel, message_id):
                doomed.withdraw(deps, fact, message_id, now, ERASED)
        replies = _replies(stores, workspace, author_id, messages)
        report.messages = len(messages)
        stores.messages.erase_author(workspace, author_id, now)
        erased = stores.message_index.erase_author(workspace, author_id)
        # The messages said just after theirs were embedded with their words as context.
        refresh_following(stores.message_index, deps.embedder, erased.messages)
        report.answers_reread = len(replies)
        report.facts_created = _reread_answers(deps, replies, doomed, now)
        _forget_traces(stores, workspace, doomed.erased.values(), platforms)
        report.files = len(stores.files.of_messages(workspace, messages))
        unshared = stores.files.forget(workspace, messages)
        report.vectors = erased.vectors + deps.facts.erase_text(sorted(doomed.erased))
        report.facts_erased = sorted(doomed.erased)
        report.facts_kept_without_their_evidence = sorted(doomed.kept - set(doomed.erased))
        stores.audit.append(
            AuditEvent(
                "erased",
                actor,
                "erasure of a person's messages",
                now,
                workspace,
                "*",
                tuple(report.facts_erased),
                (),
                {"author_id": author_id, "messages": len(messages), "answers_reread": len(replies)},
            )
        )
    report.blobs = stores.blobs.delete(unshared)  # once the records naming them are gone for good
    return report


def _replies(
    stores: EmbeddedStores, workspace: str, author_id: str, messages: list[tuple[str, str]]
) -> list[Message]:
    """Others' live replies in the threads the person opened (read with their question)."""
    return [
        reply
        for channel, message_id in messages
        for reply in stores.messages.replies(workspace, channel, message_id)
        if reply.author_id != author_id
    ]


def _reread_answers(deps: PipelineDeps, replies: list[Message], doomed: _Doomed, now: datetime) -> list[str]:
    """Extract each reply again beside its now blank opening message: a fact it no longer
    states (it quoted or was built from the question) loses the reply as evidence; what the
    reply says alone is added. Returns the facts created."""
    requests = [
        (reply, deps.messages.get_message(reply.workspace, reply.channel, reply.thread_id or ""))
        for reply in replies
    ]
    extractions = extract_many(deps.extractor, requests)
    statements = [c.statement for e in extractions for c in e.facts]
    keys = deps.embedder.ensure_passages(statements) if statements else {}
    created: list[str] = []
    for reply, extraction in zip(replies, extractions, strict=True):
        still_said = {content_hash(c.statement) for c in extraction.facts}
        for fact in deps.facts.current_citing(reply.workspace, reply.channel, reply.message_id):
            if fact.content_hash not in still_said and fact.status is not FactStatus.RETRACTED:
                doomed.withdraw(deps, fact, reply.message_id, now, QUESTION_ERASED)
        result = IngestResult(_reread(reply), Outcome.EDITED)
        for candidate in extraction.facts:
            add_statement(candidate, reply, keys, deps, now, result)
        created += result.created
    return created


def _reread(reply: Message) -> MessageEvent:
    """The reply as an edit event (the pipeline's record of what one re-read changed)."""
    return MessageEvent(
        kind=EventKind.EDITED,
        platform=reply.platform,
        workspace=reply.workspace,
        channel=reply.channel,
        message_id=reply.message_id,
        thread_id=reply.thread_id,
        author_id=reply.author_id,
        author_name=reply.author_name,
        ts=reply.ts,
        text=reply.text,
    )


def _forget_traces(
    stores: EmbeddedStores,
    workspace: str,
    facts: Iterable[Fact],
    platforms: dict[tuple[str, str], str],
) -> None:
    """What still hashes their text: tombstones of the erased statements, the ledger keys of
    their events (each holds a hash of the text it carried), and the model cache."""
    by_channel: dict[str, set[str]] = {}
    for fact in facts:
        by_channel.setdefault(fact.channel, set()).add(fact.content_hash)
    for channel, hashes in sorted(by_channel.items()):
        stores.tombstones.forget(workspace, channel, sorted(hashes))
    stores.ledger.forget(
        [
            "\x1f".join((platform, workspace, channel, message_id, ""))
            for (channel, message_id), platform in platforms.items()
        ]
    )
    stores.model_cache.clear()
