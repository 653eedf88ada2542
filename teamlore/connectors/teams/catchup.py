"""Teams catch-up after downtime: the Bot Framework only pushes, so what was posted while the
endpoint was down is read on start from Microsoft Graph, per known channel: ``messages/delta``
filtered on lastModifiedDateTime from the channel's high-water mark minus the window (see
catchup.py). Graph addresses a channel through its team, which no message names; the agent and the
backfill record each channel's team (its group id) in the checkpoint store as they meet it, and
TEAMLORE_TEAMS_TEAM_ID stands in for a channel whose team was never recorded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from teamlore.app import Teamlore
from teamlore.connectors.catchup import CatchUp, CatchUpReport
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.running import Say
from teamlore.connectors.teams.graph import GraphChannelHistory, GraphClient, graph_http
from teamlore.connectors.teams.normalize import PLATFORM, Place, visibility_of
from teamlore.domain import Visibility
from teamlore.errors import TeamloreError
from teamlore.graph_token import TokenProvider
from teamlore.stores.protocols import Checkpoint, CheckpointStore
from teamlore.timeutil import utc_now

log = logging.getLogger(__name__)
TEAM = PLATFORM + "+team"  # checkpoint source: a channel's team (group id), in the cursor


def catch_up_all(
    lore: Teamlore,
    token: TokenProvider,
    *,
    say: Say,
    sink: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[CatchUpReport]:
    settings = lore.settings
    tenant = settings.teams_tenant_id.strip()
    reports = []
    with graph_http(settings.teams_graph_url) as http:
        graph = GraphClient(http, token)
        for channel in _channels(lore, tenant):
            team = team_of(lore.stores.checkpoints, tenant, channel) or settings.teams_team_id.strip()
            if not team:
                log.info("teams: the team of channel %s is not known; set TEAMLORE_TEAMS_TEAM_ID", channel)
                continue
            try:
                report = _catch_up(lore, graph, team, tenant, channel, sink or EventSink(lore), sleep)
            except TeamloreError as exc:
                log.error("teams: catch-up of %s failed: %s", channel, exc)
                continue
            if report is not None:
                reports.append(report)
                since = f"{report.since:%Y-%m-%d %H:%M} UTC"
                say(f"{channel}: caught up from {since}, {report.fetched} message(s)")
    return reports


def remember_team(checkpoints: CheckpointStore, tenant: str, channel: str, team: str) -> None:
    """Record the team (group id) a channel belongs to, for the catch-up's Graph calls."""
    if team and team_of(checkpoints, tenant, channel) != team:
        checkpoints.put(TEAM, tenant, channel, Checkpoint(team, True, 0), utc_now())


def team_of(checkpoints: CheckpointStore, tenant: str, channel: str) -> str | None:
    found = checkpoints.get(TEAM, tenant, channel)
    return found.cursor if found is not None else None


def _channels(lore: Teamlore, tenant: str) -> list[str]:
    """The tenant's known channels; chats (dm) have no Graph channel to read."""
    return sorted(
        c.channel
        for c in lore.stores.messages.channels(tenant)
        if c.platform == PLATFORM and c.visibility is not Visibility.DM
    )


def _catch_up(
    lore: Teamlore,
    graph: GraphClient,
    team: str,
    tenant: str,
    channel: str,
    sink: EventSink,
    sleep: Callable[[float], None],
) -> CatchUpReport | None:
    settings = lore.settings
    info = graph.channel(team, channel)
    place = Place(
        tenant, channel, str(info.get("displayName") or ""), visibility_of(info.get("membershipType"))
    )

    def history_for(since: datetime) -> GraphChannelHistory:
        return GraphChannelHistory(
            graph,
            team,
            place,
            settings.max_message_chars,
            skip_app_id=settings.teams_app_id,
            changed_since=since,
        )

    runner = CatchUp(
        sink,
        lore.stores.checkpoints,
        lore.stores.messages,
        timedelta(seconds=settings.catchup_window_s),
        sleep=sleep,
    )
    return runner.run(PLATFORM, tenant, channel, history_for)
