"""Discord history over REST: ``GET /channels/{id}/messages?after=`` pages for the shared backfill loop.

The cursor is the newest message id delivered so far (a snowflake), so a backfill walks forward
from the channel's first message and resumes after the last page it delivered. Payloads become
``discord.Message`` objects through discord.py's own constructor (the one its ``history()`` uses),
so history and live capture share one normalizer. A 429 becomes ``RateLimited`` with Discord's
Retry-After; the shared loop waits it out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import discord
import httpx

from teamlore.connectors.backfill import Page, RateLimited
from teamlore.connectors.discord import normalize
from teamlore.domain import Message, MessageEvent
from teamlore.errors import BackendUnavailable, InvalidInput
from teamlore.retry_after import retry_after

log = logging.getLogger(__name__)
PAGE_SIZE = 100  # Discord's maximum per call


class DiscordHistory:
    """One channel's (or thread's) history, a page at a time."""

    def __init__(
        self,
        http: httpx.Client,
        channel: Any,
        state: Any,
        max_chars: int,
        page_size: int | None = None,
        after: str = "0",
    ) -> None:
        self._http = http
        self._after = after  # where a history without a cursor starts (a catch-up: its start time)
        self._channel = channel
        self._state = state  # discord.py's ConnectionState: builds Message and Thread objects
        self._max_chars = max_chars
        self._page_size = page_size or PAGE_SIZE
        self.threads: dict[int, Any] = {}  # threads started from messages seen so far

    def __call__(self, cursor: str) -> Page:
        payloads = self._get(cursor or self._after)
        payloads.sort(key=lambda p: int(p["id"]))
        events = [e for e in map(self._event, payloads) if e is not None]
        if len(payloads) < self._page_size:
            return Page(events, None)
        return Page(events, str(payloads[-1]["id"]))

    def _get(self, after: str) -> list[dict[str, Any]]:
        url = f"/channels/{self._channel.id}/messages"
        try:
            response = self._http.get(url, params={"after": after, "limit": self._page_size})
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Discord history of {self._channel.id}: {exc}") from exc
        if response.status_code == 429:
            raise RateLimited(_retry_after(response))
        if response.status_code in (401, 403):
            raise BackendUnavailable(
                f"Discord refused the history of channel {self._channel.id} ({response.status_code}): "
                "the bot needs View Channel and Read Message History there"
            )
        if response.is_error:
            raise BackendUnavailable(f"Discord history of {self._channel.id}: HTTP {response.status_code}")
        body = response.json()
        if not isinstance(body, list):
            raise BackendUnavailable(f"Discord history of {self._channel.id}: expected a list of messages")
        return [p for p in body if isinstance(p, dict) and str(p.get("id", "")).isdigit()]

    def _event(self, payload: dict[str, Any]) -> MessageEvent | None:
        try:
            message = self._state.create_message(channel=self._channel, data=payload)
            self._note_thread(payload)
            return normalize.created(message, self._max_chars)
        except (InvalidInput, KeyError, TypeError, ValueError) as exc:
            log.warning("discord history: skipped message %s: %s", payload.get("id"), exc)
            return None

    def _note_thread(self, payload: dict[str, Any]) -> None:
        data = payload.get("thread")
        guild = getattr(self._channel, "guild", None)
        if isinstance(data, dict) and guild is not None:
            thread = discord.Thread(guild=guild, state=self._state, data=data)
            self.threads[thread.id] = thread


class DiscordCatchUpHistory:
    """A catch-up of one channel: its messages after ``after``, then each thread started in them
    (threads are channels of their own), one ``fetch_page`` for the shared loop."""

    lists_window = True  # history lists what exists: a message missing from it was deleted

    def __init__(self, make: Callable[[Any, str], DiscordHistory], channel: Any, after: str) -> None:
        self._make = make
        self._after = after
        self._current = make(channel, after)
        self._pending: list[Any] = []
        self.threads_read: set[str] = set()

    def __call__(self, cursor: str) -> Page:
        page = self._current(cursor)
        if page.next_cursor is not None:
            return page
        self._pending.extend(t for t in self._current.threads.values() if str(t.id) not in self.threads_read)
        if not self._pending:
            return page
        thread = self._pending.pop(0)
        self.threads_read.add(str(thread.id))
        self._current = self._make(thread, "0")  # a thread is read whole
        return Page(page.events, "0")

    def covers(self, message: Message) -> bool:
        top = message.thread_id is None or message.thread_id == message.message_id
        return top or message.thread_id in self.threads_read


def _retry_after(response: httpx.Response) -> float:
    """Discord sends Retry-After (seconds) and ``retry_after`` in the body; take the larger."""
    values = [retry_after(response.headers)]
    try:
        body = response.json()
        values.append(body.get("retry_after") if isinstance(body, dict) else None)
    except ValueError:
        pass
    seconds = [float(v) for v in values if _is_number(v)]
    return max(seconds, default=1.0)


def _is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def api_client(base_url: str, token: str, timeout_s: float = 30.0) -> httpx.Client:
    return httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={"Authorization": f"Bot {token}", "User-Agent": "DiscordBot (teamlore, 0.1)"},
        timeout=timeout_s,
    )
