"""Teams catch-up after downtime: the Bot Framework only pushes, so what was posted while the
endpoint was down is read on start from Microsoft Graph, per known channel of the configured team
(TEAMLORE_TEAMS_TEAM_ID): ``messages/delta`` filtered on lastModifiedDateTime from the channel's
high-water mark minus the window (see catchup.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from teamlore.app import Teamlore
from teamlore.connectors.catchup import CatchUp, CatchUpReport, known_channels
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.running import Say
from teamlore.connectors.teams.graph import GraphChannelHistory, GraphClient, TokenProvider, graph_http
from teamlore.connectors.teams.normalize import PLATFORM, Place, visibility_of
from teamlore.errors import TeamloreError

log = logging.getLogger(__name__)


def catch_up_all(
    lore: Teamlore,
    token: TokenProvider,
    *,
    say: Say,
    sink: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[CatchUpReport]:
    settings = lore.settings
    team, tenant = settings.teams_team_id.strip(), settings.teams_tenant_id.strip()
    if not team or not tenant:
        log.info("teams: no TEAMLORE_TEAMS_TEAM_ID; no catch-up from Graph")
        return []
    reports = []
    with graph_http(settings.teams_graph_url) as http:
        graph = GraphClient(http, token)
        for channel in known_channels(lore.stores.messages, tenant, PLATFORM):
            if not channel.startswith("19:"):
                continue  # a chat, not a channel of the team
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
