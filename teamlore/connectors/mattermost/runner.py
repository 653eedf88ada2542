"""``teamlore connect mattermost``: listen on the websocket, or backfill a channel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
from mattermostautodriver import TypedDriver
from mattermostautodriver.exceptions import InvalidMattermostError

from teamlore.app import Teamlore
from teamlore.connectors.backfill import BackfillReport, run_backfill
from teamlore.connectors.background import BackgroundBackfills
from teamlore.connectors.catchup import CatchUpReport
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.mattermost.catchup import catch_up_all
from teamlore.connectors.mattermost.directory import MattermostDirectory
from teamlore.connectors.mattermost.history import MattermostHistory
from teamlore.connectors.mattermost.listener import MattermostListener, workspace_of
from teamlore.connectors.mattermost.posts import PostContext
from teamlore.connectors.running import Say, require, say_backfill_end
from teamlore.domain import Visibility
from teamlore.errors import BackendUnavailable, ConfigurationError, InvalidInput


def driver_options(url: str, token: str, **extra: Any) -> dict[str, Any]:
    """The driver's options from one server URL (it wants scheme, host and port apart)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"TEAMLORE_MATTERMOST_URL {url!r} is not like https://chat.example.com")
    if parts.path.strip("/"):
        raise ConfigurationError("TEAMLORE_MATTERMOST_URL: a server under a sub-path is not supported")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"url": parts.hostname, "scheme": parts.scheme, "port": port, "token": token, **extra}


def driver_for(lore: Teamlore, **extra: Any) -> TypedDriver:
    settings = lore.settings
    url = require(settings.mattermost_url, "TEAMLORE_MATTERMOST_URL", "the server, https://...")
    token = require(settings.mattermost_token, "TEAMLORE_MATTERMOST_TOKEN", "the bot account's token")
    driver = TypedDriver(driver_options(url, token, **extra))
    try:
        driver.login()
    except (httpx.HTTPError, InvalidMattermostError) as exc:
        driver.close()
        raise BackendUnavailable(f"Mattermost at {url} refused the bot's token or is down: {exc}") from exc
    return driver


def listen(lore: Teamlore, say: Say) -> None:
    settings = lore.settings
    driver = driver_for(lore, keepalive=True)  # reconnect when the server drops the socket
    workspace = workspace_of(settings.mattermost_workspace, settings.mattermost_url)
    backfills = BackgroundBackfills(lambda _ws, channel: backfill(lore, channel, say=say))
    catchups = BackgroundBackfills(lambda _ws, _all: catch_up(lore, say=say))
    listener = MattermostListener(
        lore,
        driver,
        settings.mattermost_url,
        workspace,
        on_join=backfills.submit,
        on_connect=lambda: catchups.submit(workspace, "every channel"),
    )
    say(
        f"Mattermost {settings.mattermost_url} as @{listener.directory.me.get('username')}: "
        f"workspace {workspace}"
    )
    try:
        asyncio.run(listener.run())
    finally:
        backfills.close()
        catchups.close()
        driver.close()


def catch_up(lore: Teamlore, *, say: Say, sleep: Callable[[float], None] = time.sleep) -> list[CatchUpReport]:
    """Every known channel, from its high-water mark (a driver of its own: 429s reach the loop)."""
    driver = driver_for(lore, max_retries=0)
    try:
        return catch_up_all(lore, driver, say=say, sleep=sleep)
    finally:
        driver.close()


def backfill(
    lore: Teamlore,
    channel: str,
    *,
    say: Say,
    restart: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> BackfillReport:
    driver = driver_for(lore, max_retries=0)  # 429s go to the shared loop, which honours Retry-After
    try:
        return _backfill(lore, driver, channel, say=say, restart=restart, sleep=sleep)
    finally:
        driver.close()


def _backfill(
    lore: Teamlore,
    driver: TypedDriver,
    channel: str,
    *,
    say: Say,
    restart: bool,
    sleep: Callable[[float], None],
) -> BackfillReport:
    settings = lore.settings
    directory = MattermostDirectory(driver)
    found = directory.channel(channel)
    if found.visibility is not Visibility.PUBLIC and not directory.is_member(channel):
        raise InvalidInput(
            f"#{found.name} is private and the bot is not a member: add it to the channel first"
        )
    workspace = workspace_of(settings.mattermost_workspace, settings.mattermost_url)
    context = PostContext(workspace, settings.mattermost_url.rstrip("/"), settings.max_message_chars)
    history = MattermostHistory(
        driver,
        found,
        context,
        page_size=settings.mattermost_history_page_size,
        author_name=lambda user_id: directory.person(user_id).name,
        team_name=directory.team_name(found.team_id),
        skip_authors=(str(directory.me.get("id", "")),),
        bot_username=str(directory.me.get("username", "")),
    )
    interval = settings.mattermost_history_interval_s
    say(f"backfilling #{found.name} ({channel}): {settings.mattermost_history_page_size} posts a call")

    def progress(pages: int, total: int, _per_page: float | None) -> None:
        left = "" if found.total_posts is None else f" of about {found.total_posts} (the server's count)"
        say(f"#{found.name}: {pages} call(s), {total} post(s) so far{left}")

    report = run_backfill(
        "mattermost",
        workspace,
        channel,
        history,
        EventSink(lore),
        lore.stores.checkpoints,
        min_interval_s=interval,
        restart=restart,
        progress=progress,
        sleep=sleep,
    )
    say_backfill_end(say, found.name, report, "post")
    return report
