"""Paged, resumable, rate-limited history backfill, shared by every platform.

A platform supplies ``fetch_page(cursor) -> Page`` (its own API and cursor format) and raises
``RateLimited`` on a 429; this loop sleeps for Retry-After (and keeps at least
``min_interval_s`` between calls, for limits known in advance, such as Slack's one call a minute
for apps outside its Marketplace), delivers each page, then stores the cursor, so an interrupted
backfill resumes after the last delivered page. Delivery is idempotent, so a page delivered twice
after a crash changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from teamlore.domain import MessageEvent
from teamlore.stores.protocols import Checkpoint, CheckpointStore
from teamlore.timeutil import utc_now

START = ""  # the cursor of a backfill that has not begun


class RateLimited(Exception):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"rate limited; retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


@dataclass(frozen=True, slots=True)
class Page:
    events: Sequence[MessageEvent]
    next_cursor: str | None  # None: history is exhausted


@dataclass(frozen=True, slots=True)
class BackfillReport:
    pages: int
    fetched: int  # events delivered by this run
    total_fetched: int  # events delivered over every run of this channel's backfill
    rate_limited: int  # 429 answers waited out
    done: bool
    resumed_from: str


Progress = Callable[[int, int, float | None], None]  # (pages, events so far, seconds per page or None)


class Sink(Protocol):
    """Where a backfill's events go: an ``EventSink``, or a catch-up's wrapper of one."""

    def deliver(self, events: Sequence[MessageEvent]) -> object: ...


def run_backfill(
    platform: str,
    workspace: str,
    channel: str,
    fetch_page: Callable[[str], Page],
    sink: Sink,
    checkpoints: CheckpointStore,
    *,
    min_interval_s: float = 0.0,
    max_pages: int | None = None,
    restart: bool = False,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> BackfillReport:
    saved = None if restart else checkpoints.get(platform, workspace, channel)
    if saved is not None and saved.done:
        return BackfillReport(0, 0, saved.fetched, 0, True, saved.cursor)
    cursor = START if saved is None else saved.cursor
    resumed_from, total = cursor, 0 if saved is None else saved.fetched
    pages = fetched = limited = 0
    last_call: float | None = None
    while max_pages is None or pages < max_pages:
        if last_call is not None:
            wait = min_interval_s - (monotonic() - last_call)
            if wait > 0:
                sleep(wait)
        last_call = monotonic()
        try:
            page = fetch_page(cursor)
        except RateLimited as exc:
            limited += 1
            sleep(max(exc.retry_after_s, min_interval_s, 0.0))
            last_call = monotonic()
            continue
        sink.deliver(page.events)
        pages, fetched, total = pages + 1, fetched + len(page.events), total + len(page.events)
        done = page.next_cursor is None
        if page.next_cursor is not None:
            cursor = page.next_cursor
        checkpoints.put(platform, workspace, channel, Checkpoint(cursor, done, total), utc_now())
        if progress is not None:
            progress(pages, total, min_interval_s or None)
        if done:
            return BackfillReport(pages, fetched, total, limited, True, resumed_from)
    return BackfillReport(pages, fetched, total, limited, False, resumed_from)
