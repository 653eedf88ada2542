"""Slack catch-up after downtime: on start (HTTP mode) and on every Socket Mode ``hello`` (each
connection and reconnection), every known channel is read from its high-water mark on through
``conversations.history`` with ``oldest``, and the threads recently active in full through
``conversations.replies``, at the backfill's rate (see catchup.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from teamlore.app import Teamlore
from teamlore.connectors.catchup import CatchUp, CatchUpReport, known_channels, recent_threads
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.running import Say
from teamlore.connectors.slack.directory import SlackDirectory
from teamlore.connectors.slack.history import SlackHistory
from teamlore.connectors.slack_export import SlackContext
from teamlore.errors import TeamloreError

log = logging.getLogger(__name__)


def catch_up_all(
    lore: Teamlore,
    directory: SlackDirectory,
    *,
    say: Say,
    sink: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[CatchUpReport]:
    """Every channel of the workspace the store has messages of; one failing channel is logged."""
    team = directory.identity().team_id
    reports = []
    for channel in known_channels(lore.stores.messages, team, "slack"):
        try:
            report = catch_up(lore, channel, directory=directory, sink=sink, sleep=sleep)
        except TeamloreError as exc:
            log.error("Slack catch-up of %s failed: %s", channel, exc)
            continue
        if report is not None:
            reports.append(report)
            say(f"{channel}: caught up from {report.since:%Y-%m-%d %H:%M} UTC, {report.fetched} message(s)")
    return reports


def catch_up(
    lore: Teamlore,
    channel: str,
    *,
    directory: SlackDirectory,
    sink: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> CatchUpReport | None:
    settings = lore.settings
    identity = directory.identity()
    directory.forget(channel)  # it may have been renamed while the connector was down
    info = directory.info(channel)
    assert info is not None  # required lookups raise instead
    context = SlackContext(
        identity.team_id, directory.users, identity.archives_url, settings.max_message_chars
    )
    messages = lore.stores.messages

    def history_for(since: datetime) -> SlackHistory:
        return SlackHistory(
            directory.client,
            info.channel,
            context,
            page_size=settings.slack_history_page_size,
            interval_s=settings.slack_history_interval_s,
            skip_authors=(identity.bot_user_id, identity.bot_id),
            bot_user_id=identity.bot_user_id,
            oldest=since.timestamp(),
            threads=recent_threads(messages, identity.team_id, channel, since),
        )

    runner = CatchUp(
        sink or EventSink(lore),
        lore.stores.checkpoints,
        messages,
        timedelta(seconds=settings.catchup_window_s),
        min_interval_s=settings.slack_history_interval_s,
        sleep=sleep,
    )
    return runner.run("slack", identity.team_id, channel, history_for)
