"""Discord history through discord.py's own ``history()`` and thread listings, a page per call of
the shared backfill loop.

discord.py's HTTP client keeps Discord's per-route rate-limit buckets and waits out a 429 itself,
so history shares the gateway client's limits instead of a second client racing them. The loop
runs in a worker thread; each page is a coroutine run on the client's event loop. The cursor is
the newest message id delivered so far (a snowflake), so a backfill walks forward from the
channel's first message and resumes after the last page it delivered.

Threads are channels of their own. A channel's threads are found three ways: the active threads
of its guild (``GET /guilds/{id}/threads/active``), its archived public threads (and private ones
where the bot may manage threads), and threads started from a message read on a page (their
starter's ``thread`` field). A forum channel has no messages of its own, only threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import discord

from teamlore.connectors.backfill import Page
from teamlore.connectors.discord import normalize
from teamlore.domain import Message, MessageEvent
from teamlore.errors import BackendUnavailable, InvalidInput

log = logging.getLogger(__name__)
PAGE_SIZE = 100  # Discord's maximum per call
CALL_TIMEOUT_S = 300.0  # discord.py waits out rate limits inside one call
T = TypeVar("T")


def on_loop(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the client's loop from a worker thread; Discord's refusals translated."""
    try:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(CALL_TIMEOUT_S)
    except discord.Forbidden as exc:
        raise BackendUnavailable(
            f"Discord refused ({exc.status}): the bot needs View Channel and Read Message History there"
        ) from exc
    except (discord.HTTPException, TimeoutError) as exc:
        raise BackendUnavailable(f"Discord history: {exc}") from exc


class DiscordHistory:
    """One channel's (or thread's) history, a page at a time."""

    def __init__(
        self,
        channel: Any,
        loop: asyncio.AbstractEventLoop,
        max_chars: int,
        page_size: int | None = None,
        after: str = "0",
    ) -> None:
        self._channel = channel
        self._loop = loop
        self._max_chars = max_chars
        self._page_size = page_size or PAGE_SIZE
        self._after = after  # where a history without a cursor starts (a catch-up: its start time)
        self.threads: dict[int, Any] = {}  # threads started from messages seen so far

    def __call__(self, cursor: str) -> Page:
        if not isinstance(self._channel, discord.abc.Messageable):
            return Page([], None)  # a forum: its posts are threads
        messages = on_loop(self._loop, self._page(int(cursor or self._after)))
        events = [e for e in map(self._event, messages) if e is not None]
        if len(messages) < self._page_size:
            return Page(events, None)
        return Page(events, str(messages[-1].id))

    async def _page(self, after: int) -> list[discord.Message]:
        found = self._channel.history(
            limit=self._page_size, after=discord.Object(id=after), oldest_first=True
        )
        return [m async for m in found]

    def _event(self, message: discord.Message) -> MessageEvent | None:
        thread = getattr(message, "thread", None)
        if thread is not None:
            self.threads[thread.id] = thread
        try:
            return normalize.created(message, self._max_chars)
        except (InvalidInput, KeyError, TypeError, ValueError) as exc:
            log.warning("discord history: skipped message %s: %s", message.id, exc)
            return None


async def threads_of(channel: Any, *, archived: bool = True) -> list[Any]:
    """The channel's threads: active ones, then (``archived``) public archived ones and private
    archived ones where the bot may manage threads."""
    guild = channel.guild
    found = {t.id: t for t in await guild.active_threads() if t.parent_id == channel.id}
    if archived and hasattr(channel, "archived_threads"):
        listings = [channel.archived_threads(limit=None)]
        if guild.me is not None and channel.permissions_for(guild.me).manage_threads:
            listings.append(channel.archived_threads(private=True, limit=None))
        for listing in listings:
            try:
                async for thread in listing:
                    found.setdefault(thread.id, thread)
            except discord.Forbidden as exc:
                log.warning("discord: archived threads of #%s not readable: %s", channel, exc)
    return list(found.values())


class DiscordCatchUpHistory:
    """A catch-up of one channel: its messages after ``after``, then its active threads and each
    thread started in what was read (threads are channels of their own), one ``fetch_page``."""

    lists_window = True  # history lists what exists: a message missing from it was deleted

    def __init__(
        self, make: Callable[[Any, str], DiscordHistory], channel: Any, after: str, threads: list[Any]
    ) -> None:
        self._make = make
        self._current = make(channel, after)
        self._pending: list[Any] = list(threads)
        self.threads_read: set[str] = set()

    def __call__(self, cursor: str) -> Page:
        page = self._current(cursor)
        if page.next_cursor is not None:
            return page
        self._pending.extend(self._current.threads.values())
        while self._pending and str(self._pending[0].id) in self.threads_read:
            self._pending.pop(0)
        if not self._pending:
            return page
        thread = self._pending.pop(0)
        self.threads_read.add(str(thread.id))
        self._current = self._make(thread, "0")  # a thread is read whole
        return Page(page.events, "0")

    def covers(self, message: Message) -> bool:
        top = message.thread_id is None or message.thread_id == message.message_id
        return top or message.thread_id in self.threads_read
