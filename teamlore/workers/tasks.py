"""Celery tasks: each a thin wrapper over a pipeline function, safe to run twice.

Each worker process builds its Teamlore (stores, MongoDB and Weaviate clients) after the prefork
pool has forked it (``worker_process_init``), never in the parent: gRPC and MongoDB clients do
not survive a fork. An ingest batch that cannot be taken goes to the dead-letter list after
``TEAMLORE_INGEST_MAX_DELIVERIES`` deliveries (``teamlore.workers.dead_letter``).
"""

from __future__ import annotations

import logging
import os
from functools import cache
from typing import TYPE_CHECKING, Any

from celery import shared_task
from celery.exceptions import Reject
from celery.signals import worker_process_init, worker_process_shutdown

from teamlore.app import Teamlore
from teamlore.capabilities.holding import admin_holding, erasure_channels, guarded, write_ahead
from teamlore.config import Settings
from teamlore.domain import MessageEvent, parse_event
from teamlore.errors import InvalidInput, StoreUnreachable
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.redis.channel_lock import ChannelLocks, ChannelsBusy
from teamlore.stores.redis.channel_order import ChannelOrder, Order, from_wire, to_wire
from teamlore.workers.dead_letter import DeadLetters, batch_key
from teamlore.workers.pipeline import Outcome, ingest, record_orphan
from teamlore.workers.shared_files import take_files

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)
RawEvent = dict[str, Any]  # a normalized event as JSON, as it travels on the queue
_configured: list[Settings] = []  # set by the `teamlore worker` command before the pool forks


def prepare_worker(settings: Settings) -> None:
    """In the worker's parent, before the pool forks: keep the settings every pool process builds
    from, and (embedded default) make the SQLite schema current once (then close it), so the
    processes do not race to create it; the server stack has no file. No client is left open to
    be inherited by a fork. A configuration no process may start on is refused here, once, not by
    every pool process at its first task."""
    settings.check_server_stack()
    _configured[:] = [settings]
    if not settings.mongo_url:
        EmbeddedStores(settings.db_path).close()


def _settings() -> Settings:
    return _configured[0] if _configured else Settings()


@cache
def _lore() -> Teamlore:
    return Teamlore(_settings())


@cache
def _dead_letters() -> DeadLetters:
    return DeadLetters.from_url(_settings().redis_url)


@cache
def _channel_locks() -> ChannelLocks:
    return ChannelLocks.from_url(_settings().redis_url, _settings().channel_lock_lease_s)


@cache
def _channel_order() -> ChannelOrder:
    # Longer than a lost worker can hold a batch back (the visibility timeout and the sweep), and
    # never under a minute: a batch re-queued behind a busy channel can take a while to come round.
    gap_s = max(60.0, 2 * _settings().celery_visibility_timeout_s)
    return ChannelOrder.from_url(_settings().redis_url, gap_s)


def _delivery_key(events: list[RawEvent], order: Order) -> str:
    """What counts a batch's deliveries: its events, and its numbers when it has them."""
    return batch_key(events) if not order else batch_key([events, to_wire(order)])


def busy_delay(visibility_timeout_s: float) -> float:
    """When events of a channel another worker holds are tried again: soon, and well under the
    visibility timeout (a longer countdown makes Redis deliver the task twice)."""
    return min(2.0, visibility_timeout_s / 4)


@worker_process_init.connect
def _open_after_fork(**_: object) -> None:
    try:
        _lore()
        _dead_letters()
        _channel_locks()
        _channel_order()
    except Exception:  # the first task tries again, and its failure is counted against the batch
        log.exception("worker process %d could not open its stores", os.getpid())
        return
    log.info("worker process %d opened its stores", os.getpid())


@worker_process_shutdown.connect
def _close_on_exit(**_: object) -> None:
    if _lore.cache_info().currsize:
        _lore().close()


def orphan_delays(visibility_timeout_s: float) -> list[float]:
    """When an edit whose message is not stored yet is tried again. The message's create may be
    held back by a lost worker for the visibility timeout (plus the broker's restore sweep), so
    the waits add up to one and a half visibility timeouts; each wait stays under half of it,
    because a countdown longer than the visibility timeout makes Redis deliver the task twice."""
    cap = min(300.0, visibility_timeout_s / 2)
    delays: list[float] = []
    wait = min(5.0, cap)
    while sum(delays) < 1.5 * visibility_timeout_s:
        delays.append(wait)
        wait = min(wait * 2, cap)
    return delays


# A store that does not answer is no fault of the batch: retry it (a new message on the queue),
# forever, backing off to a minute, instead of counting it against the batch.
@shared_task(
    name="teamlore.ingest",
    autoretry_for=(StoreUnreachable,),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=False,
    max_retries=None,
)
def ingest_events(events: list[RawEvent], attempt: int = 0, order: object = None) -> dict[str, int]:
    """Ingest a batch of normalized events (idempotent: a re-delivery changes nothing). ``order``
    is the batch's number in each of its channels (``Producer``; ``stores.redis.channel_order``)."""
    numbers = from_wire(order)
    letters, key, limit = _dead_letters(), _delivery_key(events, numbers), _settings().ingest_max_deliveries
    delivery = 0
    try:
        delivery = letters.count_delivery(key)  # before any work: a worker that dies still counts
        busy: list[RawEvent] = []
        waiting: Order = {}
        if delivery > limit:
            counts = _give_up(events, attempt, delivery - 1, letters, numbers)
        else:
            counts, busy, waiting = _ingest(events, attempt, _lore(), letters, numbers)
    except StoreUnreachable:
        letters.forget(key)
        raise
    except Exception as exc:  # the time limit, or anything else this batch brings about
        log.warning(
            "ingest batch %s failed on delivery %d of %d (%s: %s); delivered again",
            key[:12],
            delivery,
            limit,
            type(exc).__name__,
            " ".join(str(exc).split())[:200],
        )
        raise Reject(exc, requeue=True) from exc
    letters.forget(key)
    if busy or waiting:  # untried: another worker holds their channel, or it is not their turn yet
        letters.carry(_delivery_key(busy, waiting), delivery - 1)  # they keep the failures so far
        later = busy_delay(_settings().celery_visibility_timeout_s)
        ingest_events.apply_async(args=[busy, attempt, to_wire(waiting)], countdown=later)
        log.info(
            "%d event(s) of channels another worker holds, or whose earlier batch is not applied yet:"
            " tried again in %gs",
            len(busy),
            later,
        )
    return counts


def _give_up(
    events: list[RawEvent], attempt: int, deliveries: int, letters: DeadLetters, order: Order
) -> dict[str, int]:
    """A batch that failed every delivery: its events go on one by one, so only the event at
    fault ends on the dead-letter list; a single event goes there now. Either way the batch gives
    up its place in its channels' order (the next batch need not wait for it)."""
    _channel_order().done(order)
    if len(events) > 1:
        for raw in events:
            ingest_events.apply_async(args=[[raw], attempt])
        log.warning("batch of %d failed %d deliveries: split into single events", len(events), deliveries)
        return {"split": len(events)}
    letter = letters.bury(events, f"failed {deliveries} deliveries", deliveries)
    log.warning("event put on the dead-letter list after %d deliveries: %s", deliveries, letter.describe())
    return {"dead_letter": 1}


def _parse(events: list[RawEvent], lore: Teamlore, letters: DeadLetters) -> list[MessageEvent]:
    """The valid events; each refused one goes to the dead-letter list with its reason."""
    parsed = []
    for raw in events:
        try:
            parsed.append(parse_event(raw, lore.settings.max_message_chars))
        except InvalidInput as exc:
            log.warning("event refused: %s", exc)
            letters.bury([raw], f"refused: {exc}", 1)
    return parsed


def _ingest(
    events: list[RawEvent], attempt: int, lore: Teamlore, letters: DeadLetters, order: Order
) -> tuple[dict[str, int], list[RawEvent], Order]:
    """Apply the events of the channels this worker can hold whose turn it is; the counts, and the
    events (untried) and numbers of the channels that must wait."""
    parsed = _parse(events, lore, letters)
    # One worker at a time per channel, each channel's batches in the order they were queued: the
    # channels another worker holds, or whose earlier batch is not applied yet, wait on the queue.
    channels = [(e.workspace, e.channel) for e in parsed] + list(order)
    undo_log = write_ahead(lore)
    with _channel_locks().holding(channels) as held:
        ready = set(_channel_order().ready(order, held))
        busy = [e.model_dump(mode="json") for e in parsed if (e.workspace, e.channel) not in ready]
        waiting = {channel: n for channel, n in order.items() if channel not in ready}
        mine = [e for e in parsed if (e.workspace, e.channel) in ready]
        with guarded(lore, held, undo_log):
            results = ingest(mine, lore.pipeline)
        take_files(mine, results, lore.files)  # after the batch committed; failures are recorded on the file
        _channel_order().done({channel: n for channel, n in order.items() if channel in ready})
    orphans = [r.event.model_dump(mode="json") for r in results if r.outcome is Outcome.ORPHAN]
    delays = orphan_delays(lore.settings.celery_visibility_timeout_s)
    if orphans and attempt < len(delays):
        # Held, not dropped: the message it edits may still be on its way.
        ingest_events.apply_async(args=[orphans, attempt + 1], countdown=delays[attempt])
    elif orphans:
        for result in results:
            if result.outcome is Outcome.ORPHAN:
                record_orphan(result.event, lore.pipeline)
        log.warning("%d edit(s) for messages never seen, recorded as orphans", len(orphans))
    counts: dict[str, int] = {"waiting": len(busy)} if busy else {}
    for r in results:
        counts[r.outcome.value] = counts.get(r.outcome.value, 0) + 1
    log.info("ingested %d event(s): %s", len(results), counts)
    return counts, busy, waiting


@shared_task(name="teamlore.flush_pages")
def flush_pages() -> int:
    """Rewrite the pages whose quiet window has passed (the beat schedule); returns how many."""
    report = _lore().wiki.flush()
    if report.pages_rewritten:
        log.info("rewrote %d page(s)", report.pages_rewritten)
    return report.pages_rewritten


# A job that waited too long for its channels is tried again a minute later, as often as it takes.
_ADMIN_RETRY: dict[str, Any] = {
    "autoretry_for": (ChannelsBusy, StoreUnreachable),
    "retry_backoff": 60,
    "retry_backoff_max": 300,
    "retry_jitter": False,
    "max_retries": None,
}


@shared_task(name="teamlore.erase_person", **_ADMIN_RETRY)
def erase_person(workspace: str, author_id: str, actor: str) -> int:
    """Erase what one person said (admin); returns how many of their messages were erased. Holds
    every channel of the workspace meanwhile: their words may be anywhere in it."""
    lore = _lore()
    # Its Weaviate writes log no undo: an undo would hold the erased words, and put them back
    # should this process die; a second run finishes what the first began instead.
    with admin_holding(lore, erasure_channels(lore, workspace), log_ahead=False):
        report = lore.erase_author(workspace, author_id, actor)
    return report.messages


@shared_task(name="teamlore.rewrite_page")
def rewrite_page(page_id: str) -> bool:
    """Rewrite one page in full now (admin)."""
    from teamlore.wiki.maintainer import FlushReport

    return _lore().wiki.rewrite(page_id, None, FlushReport()) is not None


@shared_task(name="teamlore.reindex_channel", **_ADMIN_RETRY)
def reindex(workspace: str, channel: str) -> int:
    """Re-extract a channel from its stored raw messages, holding the channel meanwhile."""
    from teamlore.capabilities.reindex import reindex_channel

    lore = _lore()
    with admin_holding(lore, [(workspace, channel)]):
        return reindex_channel(workspace, channel, lore.pipeline).messages
