"""Plain-data renderings of read results, shared by the CLI's --json, the HTTP API and MCP."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from teamlore.capabilities.activity import Activity
from teamlore.capabilities.answers import Answer
from teamlore.capabilities.erasure import ErasureReport
from teamlore.capabilities.facts import FactHistory, FactView, Receipt, SearchResult
from teamlore.capabilities.hits import Hit, MessageView
from teamlore.capabilities.pages import AsOf, PageDiff, PageListing, VersionEntry
from teamlore.domain import Channel, Fact, MediaReference, Message, Source
from teamlore.stores.protocols import AuditEvent, ReviewItem, TokenRecord
from teamlore.timeutil import SENTINEL, iso
from teamlore.wiki.model import PageVersion


def _bound(moment: datetime) -> str | None:
    return None if moment == SENTINEL else iso(moment)


def source_json(source: Source) -> dict[str, Any]:
    return {
        "message_id": source.message_id,
        "author_id": source.author_id,
        "author": source.author_name,
        "ts": iso(source.ts),
        "permalink": source.permalink,
        "deleted": source.deleted_at is not None,
        # A passage of a shared file: which file and where ("report.pdf, p. 3"), and the message
        # that shared it (``permalink`` is that message's link).
        "file": source.file_ref or None,
        "shared_in": source.shared_in,
    }


def fact_json(fact: Fact) -> dict[str, Any]:
    return {
        "fact_id": fact.fact_id,
        "version": fact.version,
        "text": fact.statement,
        "workspace": fact.workspace,
        "channel": fact.channel,
        "thread_id": fact.thread_id,
        "type": fact.fact_type.value,
        "status": fact.status.value,
        "contested": fact.contested,
        "entities": list(fact.entities),
        "topic": fact.topic,
        "importance": fact.importance,
        "confidence": fact.confidence,
        "origin": fact.origin,
        "valid_from": iso(fact.valid_from),
        "valid_to": _bound(fact.valid_to),
        "recorded_from": iso(fact.recorded_from),
        "recorded_to": _bound(fact.recorded_to),
        "supersedes": list(fact.supersedes),
        "superseded_by": fact.superseded_by,
        "evidence": list(fact.evidence),
        "due_at": None if fact.due_at is None else iso(fact.due_at),
    }


def fact_view_json(view: FactView) -> dict[str, Any]:
    return {
        "kind": view.kind,
        **fact_json(view.fact),
        "past_due": view.past_due,
        "newer_elsewhere": None if view.newer_elsewhere is None else _elsewhere(view.newer_elsewhere),
        "answer": _answer(view.answer),
        "replaced": [_replaced(m) for m in view.replaced],
        "score": round(view.score, 6),
        "sources": [source_json(s) for s in view.sources],
    }


def _replaced(said: MessageView) -> dict[str, Any]:
    """A message that said a value the fact replaced: what it said, who, when, and its link."""
    return {
        "message_id": said.message.message_id,
        "text": said.text,
        "author": said.message.author_name,
        "posted_at": iso(said.since),
        "sources": [source_json(said.source)],
    }


def _answer(hit: Hit | None) -> dict[str, Any] | None:
    """The answer a question result is shown with: what it is, its key and text."""
    return None if hit is None else {"kind": hit.kind, "key": hit.key, "text": hit.text}


def _elsewhere(fact: Fact) -> dict[str, Any]:
    return {
        "fact_id": fact.fact_id,
        "channel": fact.channel,
        "text": fact.statement,
        "since": iso(fact.valid_from),
    }


def message_view_json(view: MessageView) -> dict[str, Any]:
    """A message no fact covers, shaped like a fact where the two agree (text, channel, sources)."""
    message = view.message
    return {
        "kind": view.kind,
        "message_id": message.message_id,
        "text": message.text,
        "workspace": message.workspace,
        "channel": message.channel,
        "thread_id": message.thread_id,
        "author_id": message.author_id,
        "author": message.author_name,
        "posted_at": iso(message.posted_at),
        "version": message.version,
        "recorded_from": iso(message.recorded_from),
        "recorded_to": _bound(message.recorded_to),
        "answer": _answer(view.answer),
        "score": round(view.score, 6),
        "sources": [source_json(view.source)],
    }


def hit_json(hit: Hit) -> dict[str, Any]:
    return message_view_json(hit) if isinstance(hit, MessageView) else fact_view_json(hit)


def receipt_json(receipt: Receipt) -> dict[str, Any]:
    return {
        "mode_requested": receipt.mode_requested,
        "mode_used": receipt.mode_used,
        "fallback_taken": receipt.fallback_taken,
        "fallback_reason": receipt.fallback_reason,
        "k": receipt.k,
        "returned": receipt.returned,
        "examined": receipt.examined,
        "withheld": receipt.withheld,
        "fewer_than_k": receipt.fewer_than_k,
        "valid_at": iso(receipt.valid_at),
        "known_at": iso(receipt.known_at),
        "include_history": receipt.include_history,
        "kinds": receipt.kinds,
    }


def search_json(result: SearchResult) -> dict[str, Any]:
    return {"results": [hit_json(h) for h in result.hits], "receipt": receipt_json(result.receipt)}


def audit_json(event: AuditEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "at": iso(event.at),
        "event": event.event,
        "actor": event.actor,
        "reason": event.reason,
        "fact_ids": list(event.fact_ids),
        "content_hashes": list(event.content_hashes),
        "details": event.details,
    }


def history_json(history: FactHistory) -> dict[str, Any]:
    return {
        "versions": [fact_view_json(v) for v in history.versions],
        "audit": [audit_json(e) for e in history.audit],
    }


def review_item_json(item: ReviewItem) -> dict[str, object]:
    return {
        "id": item.id,
        "workspace": item.workspace,
        "channel": item.channel,
        "kind": item.kind,
        "older_fact": item.older_fact,
        "newer_fact": item.newer_fact,
        "reason": item.reason,
        "status": item.status,
        "opened_at": iso(item.opened_at),
        "closed_at": None if item.closed_at is None else iso(item.closed_at),
        "reviewer": item.reviewer,
        "decision": item.decision,
    }


def page_json(version: PageVersion) -> dict[str, object]:
    return {
        "page_id": version.page.page_id,
        "slug": version.page.slug,
        "title": version.page.title,
        "kind": version.page.kind.value,
        "channel": version.page.channel,
        "version": version.version,
        "created_at": iso(version.created_at),
        "flagged": version.flagged,
        "sections": [
            {"key": s.key, "title": s.title, "body": s.body, "citations": list(s.citations)}
            for s in version.sections
        ],
        "facts_seen": list(version.facts_seen),
        "markdown": version.markdown,
    }


def answer_json(answer: Answer) -> dict[str, object]:
    return {
        "question": answer.question,
        "answer": answer.text,
        "known": answer.known,
        "composer": answer.composer,
        "note": answer.note,
        "citations": [{"n": n, **hit_json(v)} for n, v in enumerate(answer.citations, start=1)],
        "receipt": receipt_json(answer.receipt),
    }


def activity_json(activity: Activity) -> dict[str, object]:
    cause = activity.cause
    other = cause.other
    return {
        **audit_json(activity.event),
        "channel": activity.event.channel,
        "said_at": None if cause.said is None else iso(cause.said),
        "message": None if cause.message is None else source_json(cause.message),
        "other_fact": None
        if other is None
        else {"fact_id": other.fact.fact_id, "text": other.fact.statement},
        "person": cause.person,
        "facts": [
            {"fact_id": v.fact.fact_id, "text": v.fact.statement, "status": v.fact.status.value}
            for v in activity.facts
        ],
    }


def media_json(ref: MediaReference) -> dict[str, object]:
    return {
        "name": ref.name,
        "kind": ref.kind.value,
        "mime_type": ref.mime_type,
        "size": ref.size,
        "url": ref.url,
        "channel": ref.channel,
        "message_id": ref.message_id,
        "thread_id": ref.thread_id,
        "author_name": ref.author_name,
        "ts": iso(ref.ts),
        "permalink": ref.permalink,
        "status": ref.status or None,  # what reading the file came to (None: never tried)
        "detail": ref.detail or None,
    }


def page_listing_json(entry: PageListing) -> dict[str, object]:
    page = entry.page
    return {
        "page_id": page.page_id,
        "slug": page.slug,
        "title": page.title,
        "kind": page.kind.value,
        "channel": page.channel,
        "version": entry.version,
    }


def page_versions_json(versions: list[VersionEntry]) -> list[dict[str, object]]:
    return [{"version": v.version, "created_at": iso(v.created_at)} for v in versions]


def diff_json(diff: PageDiff) -> dict[str, object]:
    return {
        "page_id": diff.page.page_id,
        "from_version": diff.older,
        "to_version": diff.newer,
        "lines": [{"kind": line.kind, "text": line.text} for line in diff.lines],
        "unified": diff.unified,
    }


def as_of_json(as_of: AsOf) -> dict[str, object]:
    rendered = page_json(as_of.rendered)
    rendered["version"] = None  # a rendering from the facts of that moment, not a stored version
    return {**rendered, "as_of": iso(as_of.rendered.created_at), "stored_version_then": as_of.stored_version}


def message_json(message: Message) -> dict[str, object]:
    return {
        "workspace": message.workspace,
        "channel": message.channel,
        "message_id": message.message_id,
        "thread_id": message.thread_id,
        "author_id": message.author_id,
        "author": message.author_name,
        "ts": iso(message.ts),
        "text": message.text,
        "permalink": message.permalink,
        "edited_at": None if message.edited_at is None else iso(message.edited_at),
        "deleted": message.deleted_at is not None,
    }


def channel_json(channel: Channel) -> dict[str, object]:
    return {
        "channel": channel.channel,
        "name": channel.name,
        "visibility": channel.visibility.value,
        "platform": channel.platform,
    }


def token_json(record: TokenRecord) -> dict[str, object]:
    return {
        "token_id": record.token_id,
        "name": record.name,
        "role": record.role,
        "workspace": record.workspace,
        "channels": list(record.channels) or "all",
        "created_at": iso(record.created_at),
        "revoked_at": None if record.revoked_at is None else iso(record.revoked_at),
    }


def erasure_json(report: ErasureReport) -> dict[str, object]:
    return {
        "workspace": report.workspace,
        "author_id": report.author_id,
        "messages": report.messages,
        "facts_erased": report.facts_erased,
        "facts_kept_without_their_evidence": report.facts_kept_without_their_evidence,
        "answers_reread": report.answers_reread,
        "facts_created": report.facts_created,
        "vectors_deleted": report.vectors,
        "pages_rewritten": report.pages_rewritten,
        "files_forgotten": report.files,
        "file_blobs_deleted": report.blobs,
    }
