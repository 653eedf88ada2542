"""Holding channels while writing them (issue 18): what an ingest batch and an admin job (re-index,
erasure) do around their writes when several workers share the stores.

A holder's commits check its channel locks' tokens (the fence), so a worker whose lease ran out
writes nothing; in the server stack it first undoes what earlier holders left uncommitted in
Weaviate (``stores.redis.undo_log``) and logs its own Weaviate writes' undos ahead. An admin job
takes every channel it needs, all or none (``ChannelLocks.holding_all``), so no batch of those
channels runs meanwhile; the queued tasks (``workers.tasks``) and the command line both use it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, cast

from teamlore.stores.redis.channel_lock import Channel, ChannelLocks, fence_key
from teamlore.stores.redis.undo_log import UndoLog

if TYPE_CHECKING:
    from teamlore.app import Teamlore
    from teamlore.stores.with_mongo import MongoStores

log = logging.getLogger(__name__)


@cache
def _undo_log(url: str) -> UndoLog:
    return UndoLog.from_url(url)


def write_ahead(lore: Teamlore) -> UndoLog | None:
    """The server stack's write-ahead undo log, given to its Weaviate stores once (None without
    MongoDB: no fence says which holder committed)."""
    remote = lore.stores.remote_facts
    if not lore.settings.mongo_url or remote is None:
        return None
    log = _undo_log(lore.settings.redis_url)
    remote.write_ahead(log)
    return log


@contextmanager
def guarded(
    lore: Teamlore, held: dict[Channel, int], undo_log: UndoLog | None, log_ahead: bool = True
) -> Iterator[None]:
    """The writes of a worker holding ``held``: each commit checks the tokens, so a lease that ran
    out meanwhile writes nothing (``LeaseLost``); in the server stack, what earlier holders left
    uncommitted in Weaviate is undone first, and (``log_ahead``) Weaviate's writes log their undos
    ahead, for the next holder should this process die."""
    fences = lore.stores.fenced({fence_key(channel): token for channel, token in held.items()})
    if undo_log is None:
        with fences:
            yield
        return
    _recover(lore, undo_log, held)
    with fences, undo_log.holding(held if log_ahead else {}):
        yield


def _recover(lore: Teamlore, undo_log: UndoLog, held: dict[Channel, int]) -> None:
    """Undo what holders before us left in Weaviate and never committed (they died between their
    writes and their commit: ``stores.redis.undo_log``), newest holder first, before we write."""
    stores = cast("MongoStores", lore.stores)
    remote = stores.remote_facts
    assert remote is not None
    for channel, token in held.items():
        committed = stores.committed_fence(fence_key(channel))
        for old, entries in sorted(undo_log.leftovers(channel, token).items(), reverse=True):
            if old > committed:
                for _what, step in reversed(entries):
                    remote.undo(step)
                log.warning("undid %d write(s) a dead worker left (token %d)", len(entries), old)
            undo_log.forget({channel: old})


@contextmanager
def admin_holding(lore: Teamlore, channels: list[Channel], log_ahead: bool = True) -> Iterator[None]:
    """With Redis (workers may be ingesting): an admin job's channels, every one of them, held as an
    ingest batch holds its own (so no batch of those channels runs meanwhile) and fenced the same
    way, waiting ``TEAMLORE_ADMIN_WAIT_S`` for them (``ChannelsBusy`` after that). Without Redis,
    nothing to hold. The queued tasks and the command line both call it."""
    if not lore.settings.redis_url:
        yield
        return
    locks = ChannelLocks.from_url(lore.settings.redis_url, lore.settings.channel_lock_lease_s)
    try:
        undo_log = write_ahead(lore)
        with (
            locks.holding_all(channels, lore.settings.admin_wait_s) as held,
            guarded(lore, held, undo_log, log_ahead),
        ):
            yield
    finally:
        locks.close()


def erasure_channels(lore: Teamlore, workspace: str) -> list[Channel]:
    """The channels an erasure holds: every one of the workspace (their words may be anywhere)."""
    return [(workspace, c.channel) for c in lore.stores.messages.channels(workspace)]
