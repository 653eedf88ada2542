"""Microsoft Graph channel messages (chatMessage resources): history pages and their events.

``GET /teams/{team}/channels/{channel}/messages?$expand=replies`` pages through ``@odata.nextLink``;
that link is the backfill cursor, so a backfill resumes at the page after the last one delivered.
A post's replies past the 1,000 Graph inlines follow its ``replies@odata.nextLink``.
A 429 becomes ``RateLimited`` with Graph's Retry-After. The bearer token is only ever sent to the
configured Graph host: a next link pointing elsewhere is refused. A catch-up (catchup.py) reads
``messages/delta?$filter=lastModifiedDateTime gt SINCE`` instead: every root post changed since
then (a new reply changes its root), with its replies, deleted ones carrying ``deletedDateTime``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from teamlore.connectors.backfill import Page, RateLimited
from teamlore.connectors.teams.normalize import Place, attachments_of, permalink, thread_of, to_text
from teamlore.domain import EventKind, Message, MessageEvent, parse_event
from teamlore.errors import BackendUnavailable, InvalidInput
from teamlore.graph_token import TokenProvider
from teamlore.retry_after import retry_after

log = logging.getLogger(__name__)
PAGE_SIZE = 50  # Graph's maximum $top for channel messages


def graph_event(
    message: Mapping[str, Any], place: Place, max_chars: int, skip_app_id: str = ""
) -> MessageEvent | None:
    """One chatMessage as an event: deleted ones as ``message.deleted``; None for system events
    and for the bot's own posts."""
    if message.get("messageType", "message") != "message":
        return None
    sender = message.get("from") or {}
    user = sender.get("user") or {}
    app = sender.get("application") or {}
    if skip_app_id and app.get("id") == skip_app_id:
        return None
    mid = str(message.get("id") or "")
    root = message.get("replyToId")
    deleted_at = message.get("deletedDateTime")
    body = message.get("body") or {}
    text = (
        "" if deleted_at else to_text(str(body.get("content") or ""), str(body.get("contentType") or "html"))
    )
    return parse_event(
        {
            "kind": (EventKind.DELETED if deleted_at else EventKind.CREATED).value,
            **place.fields(),
            "message_id": mid,
            "thread_id": thread_of(mid, str(root) if root else None),
            "author_id": str(user.get("id") or app.get("id") or ""),
            "author_name": str(user.get("displayName") or app.get("displayName") or "")[:200],
            "ts": deleted_at or message.get("createdDateTime"),
            "text": text,
            "permalink": message.get("webUrl") or permalink(place.channel, mid, str(root) if root else None),
            "attachments": attachments_of(message.get("attachments")),
        },
        max_chars,
    )


def tenant_of(message: Mapping[str, Any]) -> str:
    """The tenant a Graph message names: its sender's, else the ``tenantId`` of its web URL."""
    user = (message.get("from") or {}).get("user") or {}
    if user.get("tenantId"):
        return str(user["tenantId"])
    query = parse_qs(urlsplit(str(message.get("webUrl") or "")).query)
    return (query.get("tenantId") or [""])[0]


class GraphClient:
    """The few Graph calls Teamlore makes, with a bearer token and error translation."""

    def __init__(self, http: httpx.Client, token: TokenProvider) -> None:
        self._http = http
        self._token = token

    def get(self, url: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if url.startswith("http") and not url.startswith(str(self._http.base_url).rstrip("/") + "/"):
            raise BackendUnavailable(f"Graph returned a link outside the configured Graph host: {url}")
        try:
            response = self._http.get(
                url, params=params, headers={"Authorization": f"Bearer {self._token()}"}
            )
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"Microsoft Graph: {exc}") from exc
        if response.status_code == 429:
            asked = retry_after(response.headers)
            raise RateLimited(1.0 if asked is None else asked)
        if response.status_code in (401, 403):
            raise BackendUnavailable(
                f"Microsoft Graph refused {urlsplit(url).path} ({response.status_code}): install the Teams "
                "app in the team (its consent grants ChannelMessage.Read.Group and "
                "ChannelSettings.Read.Group for that team)"
            )
        if response.is_error:
            raise BackendUnavailable(f"Microsoft Graph {urlsplit(url).path}: HTTP {response.status_code}")
        body = response.json()
        if not isinstance(body, dict):
            raise BackendUnavailable(f"Microsoft Graph {urlsplit(url).path}: expected a JSON object")
        return body

    def channel(self, team_id: str, channel_id: str) -> dict[str, Any]:
        return self.get(f"/teams/{quote(team_id, safe='')}/channels/{quote(channel_id, safe='')}")

    def channels(self, team_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/teams/{quote(team_id, safe='')}/channels").get("value") or [])


class GraphChannelHistory:
    """One channel's messages and their replies, a page at a time."""

    lists_window = False  # a delta read returns deleted messages themselves

    def __init__(
        self,
        graph: GraphClient,
        team_id: str,
        place: Place,
        max_chars: int,
        skip_app_id: str = "",
        page_size: int | None = None,
        changed_since: datetime | None = None,
    ) -> None:
        self._graph = graph
        messages = f"/teams/{quote(team_id, safe='')}/channels/{quote(place.channel, safe='')}/messages"
        self._first = f"{messages}?$top={page_size or PAGE_SIZE}&$expand=replies"
        if changed_since is not None:
            since = changed_since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._first = f"{messages}/delta?$filter=lastModifiedDateTime gt {since}&$expand=replies"
        self._place = place
        self._max_chars = max_chars
        self._skip = skip_app_id

    def covers(self, message: Message) -> bool:
        return False  # nothing is inferred from absence

    def __call__(self, cursor: str) -> Page:
        body = self._graph.get(cursor or self._first)
        events: list[MessageEvent] = []
        for message in body.get("value") or []:
            if not isinstance(message, dict):
                continue
            for item in [message, *self._replies(message)]:
                try:
                    event = graph_event(item, self._place, self._max_chars, self._skip)
                except InvalidInput as exc:
                    log.warning("teams history: skipped message %s: %s", item.get("id"), exc)
                    continue
                if event is not None:
                    events.append(event)
        events.sort(key=lambda e: e.ts)
        return Page(events, body.get("@odata.nextLink") or None)

    def _replies(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``$expand=replies`` inlines at most 1,000 replies; the rest follow its next link."""
        replies = [r for r in message.get("replies") or [] if isinstance(r, dict)]
        link = message.get("replies@odata.nextLink")
        while isinstance(link, str) and link:
            body = self._graph.get(link)  # a 429 here retries the whole page: delivery is idempotent
            replies += [r for r in body.get("value") or [] if isinstance(r, dict)]
            link = body.get("@odata.nextLink")
        return replies


def graph_http(base_url: str, timeout_s: float = 30.0) -> httpx.Client:
    return httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s)
