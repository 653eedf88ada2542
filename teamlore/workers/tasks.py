"""Celery tasks: each a thin wrapper over a pipeline function, safe to run twice.

A worker process builds its Teamlore once, from the environment, on first use.
"""

from __future__ import annotations

import logging
from functools import cache

from celery import shared_task

from teamlore.app import Teamlore
from teamlore.config import Settings
from teamlore.domain import parse_event
from teamlore.errors import InvalidInput
from teamlore.workers.pipeline import Outcome, ingest, record_orphan

log = logging.getLogger(__name__)
# An edit that arrives before its message is held this many times, ORPHAN_WAIT_S apart, then
# recorded as an orphan.
ORPHAN_RETRIES = 12
ORPHAN_WAIT_S = 5


@cache
def _lore() -> Teamlore:
    return Teamlore(Settings())


@shared_task(name="teamlore.ingest")
def ingest_events(events: list[dict], attempt: int = 0) -> dict[str, int]:
    """Ingest a batch of normalized events (idempotent: a re-delivery changes nothing)."""
    lore = _lore()
    parsed = []
    for raw in events:
        try:
            parsed.append(parse_event(raw, lore.settings.max_message_chars))
        except InvalidInput as exc:
            log.warning("event refused: %s", exc)
    results = ingest(parsed, lore.pipeline)
    orphans = [r.event.model_dump(mode="json") for r in results if r.outcome is Outcome.ORPHAN]
    if orphans and attempt < ORPHAN_RETRIES:
        # Held, not dropped: the message it edits may still be on its way.
        ingest_events.apply_async(args=[orphans, attempt + 1], countdown=ORPHAN_WAIT_S)
    elif orphans:
        for result in results:
            if result.outcome is Outcome.ORPHAN:
                record_orphan(result.event, lore.pipeline)
        log.warning("%d edit(s) for messages never seen, recorded as orphans", len(orphans))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome.value] = counts.get(r.outcome.value, 0) + 1
    log.info("ingested %d event(s): %s", len(results), counts)
    return counts


@shared_task(name="teamlore.flush_pages")
def flush_pages() -> int:
    report = _lore().wiki.flush()
    if report.pages_rewritten:
        log.info("rewrote %d page(s)", report.pages_rewritten)
    return report.pages_rewritten


@shared_task(name="teamlore.erase_person")
def erase_person(workspace: str, author_id: str, actor: str) -> int:
    lore = _lore()
    report = lore.erase_author(workspace, author_id, actor)
    return report.messages


@shared_task(name="teamlore.rewrite_page")
def rewrite_page(page_id: str) -> bool:
    """Rewrite one page in full now (admin)."""
    from teamlore.wiki.maintainer import FlushReport

    return _lore().wiki.rewrite(page_id, None, FlushReport()) is not None


@shared_task(name="teamlore.reindex_channel")
def reindex(workspace: str, channel: str) -> int:
    """Re-extract a channel from its stored raw messages."""
    from teamlore.workers.reindex import reindex_channel

    return reindex_channel(workspace, channel, _lore().pipeline).messages
