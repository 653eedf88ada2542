"""One page of a Mattermost channel's posts per call, for the shared ``run_backfill`` loop.

``GET /api/v4/channels/{id}/posts?before=POST&per_page=N`` walks back from the newest post; the
cursor is the oldest post id of the last page, so a resumed backfill asks for what came before
it. Replies are posts of the channel too, so threads need no calls of their own. The driver's
own retries are off for this client: a 429 reaches the shared loop, which waits Retry-After.

A catch-up (catchup.py) gives ``since``: one ``?since=MS`` call returns every post created,
edited or deleted after that time, replies included, deleted posts with their ``delete_at``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection
from typing import Any

import httpx
from mattermostautodriver import TypedDriver
from mattermostautodriver.exceptions import InvalidMattermostError, ResourceNotFound, TooManyRequests

from teamlore.connectors.backfill import START, Page, RateLimited
from teamlore.connectors.mattermost.file_infos import with_file_infos
from teamlore.connectors.mattermost.posts import MattermostChannel, PostContext, is_system, post_event
from teamlore.domain import EventKind, Message, MessageEvent
from teamlore.errors import BackendUnavailable, InvalidInput

log = logging.getLogger(__name__)


class MattermostHistory:
    lists_window = False  # since= returns the deleted posts themselves

    def __init__(
        self,
        driver: TypedDriver,
        channel: MattermostChannel,
        context: PostContext,
        *,
        page_size: int,
        author_name: Callable[[str], str],
        team_name: str,
        skip_authors: Collection[str] = (),
        bot_username: str = "",
        since_ms: int | None = None,
    ) -> None:
        self._driver = driver
        self._channel = channel
        self._context = context
        self._page_size = page_size
        self._author_name = author_name
        self._team_name = team_name
        self._skip = frozenset(a for a in skip_authors if a)
        self._since_ms = since_ms
        self._mention = (
            re.compile(rf"(?<![\w.-])@{re.escape(bot_username)}(?![\w-])", re.I) if bot_username else None
        )

    def covers(self, message: Message) -> bool:
        return False  # nothing is inferred from absence

    def __call__(self, cursor: str) -> Page:
        if self._since_ms is not None:
            found = self._get(since=self._since_ms)  # one call, not paged by the server
            given = found.get("posts")
            posts = given if isinstance(given, dict) else {}
            events = [e for e in map(self._event, posts.values()) if e is not None]
            return Page(sorted(events, key=lambda e: e.ts), None)
        found = self._get(page=0, per_page=self._page_size, before=None if cursor == START else cursor)
        order = [pid for pid in found.get("order", []) if isinstance(pid, str)]
        given = found.get("posts")
        posts = given if isinstance(given, dict) else {}
        events = [e for e in (self._event(posts.get(pid)) for pid in order) if e is not None]
        older = found.get("prev_post_id", None)
        more = bool(order) and (bool(older) if older is not None else len(order) >= self._page_size)
        return Page(sorted(events, key=lambda e: e.ts), order[-1] if more else None)

    def _get(self, **query: Any) -> dict[str, Any]:
        try:
            found = self._driver.posts.get_posts_for_channel(self._channel.id, **query)
        except TooManyRequests as exc:
            raise RateLimited(exc.retry_after if exc.retry_after is not None else 1.0) from exc
        except ResourceNotFound as exc:
            raise InvalidInput(f"Mattermost knows no channel {self._channel.id}") from exc
        except (httpx.HTTPError, InvalidMattermostError) as exc:
            raise BackendUnavailable(f"Mattermost channel posts {self._channel.id}: {exc}") from exc
        return found if isinstance(found, dict) else {}

    def _event(self, post: Any) -> MessageEvent | None:
        if not isinstance(post, dict) or is_system(post) or post.get("user_id") in self._skip:
            return None  # the bot's own answers are not knowledge
        if self._mention and self._mention.search(str(post.get("message") or "")):
            return None  # nor are the questions put to it
        try:
            author = str(post.get("user_id") or "")
            deleted = bool(post.get("delete_at"))
            return post_event(
                post if deleted else with_file_infos(post, self._driver),
                EventKind.DELETED if deleted else EventKind.CREATED,
                self._channel,
                self._author_name(author),
                self._team_name,
                self._context,
            )
        except InvalidInput as exc:
            log.warning("history of %s: post %s skipped: %s", self._channel.id, post.get("id"), exc)
            return None
