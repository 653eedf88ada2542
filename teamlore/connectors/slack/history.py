"""One page of a Slack channel's history per call, for the shared ``run_backfill`` loop.

Every call is exactly one Web API request (conversations.history, or conversations.replies for a
thread found on an earlier page), so the loop's ``min_interval_s`` is Slack's per-method limit:
one call a minute and 15 messages a call for apps outside the Marketplace. The cursor stored in
the checkpoint holds Slack's cursor and the threads still to read, so a resumed backfill picks up
exactly where it stopped. A catch-up (catchup.py) gives ``oldest`` and the threads recently
active in the store: history from that time on, and those threads in full.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from teamlore.connectors.backfill import START, Page, RateLimited
from teamlore.connectors.slack.events import message_event
from teamlore.connectors.slack_export import SlackChannel, SlackContext, slack_time
from teamlore.domain import Message, MessageEvent
from teamlore.errors import BackendUnavailable, InvalidInput
from teamlore.retry_after import retry_after

log = logging.getLogger(__name__)


@dataclass
class _State:
    history: str | None = ""  # Slack's cursor for the next history page; None once history is read
    threads: list[str] = field(default_factory=list)  # thread parents (ts) whose replies are due
    replies: str = ""  # Slack's cursor inside threads[0]

    @classmethod
    def load(cls, cursor: str) -> _State:
        if cursor == START:
            return cls()
        data = json.loads(cursor)
        return cls(data["history"], list(data["threads"]), data["replies"])

    def dump(self) -> str | None:
        if self.history is None and not self.threads:
            return None
        return json.dumps({"history": self.history, "threads": self.threads, "replies": self.replies})


@dataclass(frozen=True, slots=True)
class Estimate:
    calls: int
    seconds: float


class SlackHistory:
    """``fetch_page`` for one channel; also estimates what is left from what it has seen."""

    lists_window = True  # history lists every message that exists: a missing one was deleted

    def __init__(
        self,
        client: WebClient,
        channel: SlackChannel,
        context: SlackContext,
        *,
        page_size: int,
        interval_s: float,
        created: float | None = None,
        skip_authors: Collection[str] = (),
        bot_user_id: str = "",
        monotonic: Callable[[], float] = time.monotonic,
        oldest: float | None = None,
        threads: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._channel = channel
        self._context = context
        self._page_size = page_size
        self._interval_s = interval_s
        self._created = created
        self._skip = frozenset(a for a in skip_authors if a)
        self._mention = f"<@{bot_user_id}" if bot_user_id else None
        self._monotonic = monotonic
        self._state = _State()
        self._oldest_asked = oldest
        self._first_threads = list(dict.fromkeys(threads))
        self.threads_read: set[str] = set()
        self._history_calls = self._threads_found = 0
        self._call_seconds: list[float] = []
        self._newest: float | None = None
        self._oldest: float | None = None

    def __call__(self, cursor: str) -> Page:
        state = self._state = (
            _State.load(cursor) if cursor != START else _State(threads=list(self._first_threads))
        )
        events = self._replies(state) if state.threads else self._history(state)
        self._state = state
        return Page(sorted(events, key=lambda e: e.ts), state.dump())

    def _history(self, state: _State) -> list[MessageEvent]:
        found = self._call(
            "conversations_history",
            channel=self._channel.id,
            limit=self._page_size,
            cursor=state.history or None,
            oldest=None if self._oldest_asked is None else f"{self._oldest_asked:.6f}",
        )
        self._history_calls += 1
        messages = [m for m in found.get("messages", []) if isinstance(m, dict)]
        for message in messages:
            parent = message.get("thread_ts") == message.get("ts")
            if message.get("reply_count") and parent and message["ts"] not in state.threads:
                state.threads.append(message["ts"])
                self._threads_found += 1
            self._saw(message.get("ts"))
        state.history = _next_cursor(found)
        return self._events(messages)

    def _replies(self, state: _State) -> list[MessageEvent]:
        parent = state.threads[0]
        if parent in self.threads_read and not state.replies:
            state.threads.pop(0)  # listed twice (from the store, then in history): read once
            return []
        found = self._call(
            "conversations_replies",
            channel=self._channel.id,
            ts=parent,
            limit=self._page_size,
            cursor=state.replies or None,
            gone_if="thread_not_found",
        )
        self.threads_read.add(parent)
        replies = [m for m in found.get("messages", []) if isinstance(m, dict) and m.get("ts") != parent]
        following = _next_cursor(found)
        if following is None:
            state.threads.pop(0)
        state.replies = following or ""
        return self._events(replies)

    def _events(self, messages: list[dict[str, Any]]) -> list[MessageEvent]:
        events = []
        for message in messages:
            if message.get("user") in self._skip or message.get("bot_id") in self._skip:
                continue  # the bot's own answers are not knowledge
            if self._mention and self._mention in str(message.get("text") or ""):
                continue  # nor are the questions put to it
            try:
                found = message_event(message, self._channel, self._context)
            except InvalidInput as exc:
                log.warning("history of %s: message %s skipped: %s", self._channel.id, message.get("ts"), exc)
                continue
            if found is not None:
                events.append(found)
        return events

    def covers(self, message: Message) -> bool:
        """A top-level message is listed by history; a reply, if its thread was read."""
        top = message.thread_id is None or message.thread_id == message.message_id
        return top or message.thread_id in self.threads_read

    def _call(self, method: str, gone_if: str = "", **args: Any) -> Mapping[str, Any]:
        started = self._monotonic()
        try:
            response = getattr(self._client, method)(**args)
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                asked = retry_after(exc.response.headers or {})
                raise RateLimited(asked if asked is not None else max(self._interval_s, 1.0)) from exc
            error = exc.response.get("error")
            if gone_if and error == gone_if:
                return {"messages": [], "has_more": False}  # e.g. a thread deleted with its parent
            if error == "channel_not_found":
                raise InvalidInput(
                    f"Slack knows no channel {self._channel.id} (or the bot cannot see it)"
                ) from exc
            raise BackendUnavailable(f"Slack {method.replace('_', '.')} failed: {error}") from exc
        except SlackClientError as exc:
            raise BackendUnavailable(f"Slack {method.replace('_', '.')} failed: {exc}") from exc
        self._call_seconds.append(self._monotonic() - started)
        return response.data if isinstance(response.data, dict) else {}

    def _saw(self, ts: Any) -> None:
        try:
            moment = slack_time(ts).timestamp()
        except InvalidInput:
            return
        self._newest = moment if self._newest is None else max(self._newest, moment)
        self._oldest = moment if self._oldest is None else min(self._oldest, moment)

    def estimate(self) -> Estimate | None:
        """Calls and seconds left: history pages at the rate the channel's past has been covered so
        far (back to its creation), and its threads at the rate they have turned up. None until a
        page has shown how dense the history is."""
        state = self._state
        calls_left = float(len(state.threads))
        if state.history is not None:
            newest, oldest = self._newest, self._oldest  # set together, by the first page
            if newest is None or oldest is None or not self._history_calls or self._created is None:
                return None
            span = newest - oldest
            if span <= 0:
                return None
            pages_left = self._history_calls * max(oldest - self._created, 0.0) / span
            calls_left += pages_left * (1 + self._threads_found / self._history_calls)
        per_call = max(self._interval_s, sum(self._call_seconds) / max(len(self._call_seconds), 1))
        calls = round(calls_left)
        return Estimate(calls, calls * per_call)


def _next_cursor(found: Mapping[str, Any]) -> str | None:
    metadata = found.get("response_metadata")
    cursor = metadata.get("next_cursor") if isinstance(metadata, dict) else None
    return cursor if cursor and found.get("has_more", True) else None
