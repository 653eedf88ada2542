"""Mattermost catch-up after downtime: on every websocket ``hello`` (the first connection and each
reconnection; the websocket has no resume), every known channel is asked for the posts created,
edited or deleted since its high-water mark minus the window (``?since=``), see catchup.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from mattermostautodriver import TypedDriver

from teamlore.app import Teamlore
from teamlore.connectors.catchup import CatchUp, CatchUpReport, known_channels
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.mattermost.directory import MattermostDirectory
from teamlore.connectors.mattermost.history import MattermostHistory
from teamlore.connectors.mattermost.listener import workspace_of
from teamlore.connectors.mattermost.posts import PostContext
from teamlore.connectors.running import Say
from teamlore.errors import TeamloreError

log = logging.getLogger(__name__)


def catch_up_all(
    lore: Teamlore,
    driver: TypedDriver,
    *,
    say: Say,
    sink: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[CatchUpReport]:
    settings = lore.settings
    workspace = workspace_of(settings.mattermost_workspace, settings.mattermost_url)
    directory = MattermostDirectory(driver)
    reports = []
    for channel in known_channels(lore.stores.messages, workspace, "mattermost"):
        try:
            report = catch_up(lore, directory, channel, sink=sink or EventSink(lore), sleep=sleep)
        except TeamloreError as exc:
            log.error("Mattermost catch-up of %s failed: %s", channel, exc)
            continue
        if report is not None:
            reports.append(report)
            say(f"{channel}: caught up from {report.since:%Y-%m-%d %H:%M} UTC, {report.fetched} post(s)")
    return reports


def catch_up(
    lore: Teamlore,
    directory: MattermostDirectory,
    channel: str,
    *,
    sink: EventSink,
    sleep: Callable[[float], None] = time.sleep,
) -> CatchUpReport | None:
    settings = lore.settings
    workspace = workspace_of(settings.mattermost_workspace, settings.mattermost_url)
    found = directory.channel(channel)
    context = PostContext(workspace, settings.mattermost_url.rstrip("/"), settings.max_message_chars)

    def history_for(since: datetime) -> MattermostHistory:
        return MattermostHistory(
            directory.driver,
            found,
            context,
            page_size=settings.mattermost_history_page_size,
            author_name=lambda user_id: directory.person(user_id).name,
            team_name=directory.team_name(found.team_id),
            skip_authors=(str(directory.me.get("id", "")),),
            bot_username=str(directory.me.get("username", "")),
            since_ms=int(since.timestamp() * 1000),
        )

    runner = CatchUp(
        sink,
        lore.stores.checkpoints,
        lore.stores.messages,
        timedelta(seconds=settings.catchup_window_s),
        min_interval_s=settings.mattermost_history_interval_s,
        sleep=sleep,
    )
    return runner.run("mattermost", workspace, channel, history_for)
