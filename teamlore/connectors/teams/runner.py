"""``teamlore connect teams``: host the agent's messaging endpoint, or backfill a channel from Graph.

The endpoint is the Agents SDK's aiohttp hosting: ``POST /api/messages`` behind its JWT middleware
(Bot Framework tokens checked against the app id), replies sent through the Bot Connector with an
MSAL token for the same app. A body the SDK cannot read as an activity is answered 400 and logged.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable

from aiohttp import web
from microsoft_agents.hosting.aiohttp import CloudAdapter, jwt_authorization_middleware
from microsoft_agents.hosting.core import AgentAuthConfiguration, TurnContext
from pydantic import ValidationError

from teamlore.app import Teamlore
from teamlore.connectors.backfill import BackfillReport, run_backfill
from teamlore.connectors.background import BackgroundBackfills
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.live import LockedSink, SerialWorker
from teamlore.connectors.running import Say, require
from teamlore.connectors.teams.agent import TeamloreTeamsAgent
from teamlore.connectors.teams.catchup import catch_up_all, remember_team
from teamlore.connectors.teams.graph import GraphChannelHistory, GraphClient, graph_http
from teamlore.connectors.teams.normalize import PLATFORM, Place, visibility_of
from teamlore.domain import Visibility
from teamlore.errors import InvalidInput
from teamlore.graph_token import TokenProvider, client_credentials_token

MESSAGES_PATH = "/api/messages"
log = logging.getLogger(__name__)


def auth_configuration(lore: Teamlore) -> AgentAuthConfiguration:
    """The app's identity; the SDK's JWT middleware accepts a token only if Microsoft signed it
    for this app id, and (``validate_issuer``) only from the Bot Framework or this tenant."""
    settings = lore.settings
    return AgentAuthConfiguration(
        validate_issuer=True,
        client_id=require(settings.teams_app_id, "TEAMLORE_TEAMS_APP_ID", "the Azure Bot's app id"),
        tenant_id=require(settings.teams_tenant_id, "TEAMLORE_TEAMS_TENANT_ID", "the Entra tenant id"),
        client_secret=require(
            settings.teams_app_password, "TEAMLORE_TEAMS_APP_PASSWORD", "its client secret"
        ),
    )


def web_app(
    agent: TeamloreTeamsAgent, adapter: CloudAdapter, auth: AgentAuthConfiguration
) -> web.Application:
    async def on_turn_error(context: TurnContext, error: Exception) -> None:
        # The SDK's default posts the exception text into the conversation; log it instead.
        log.error("teams: turn failed (%s): %s", context.activity.type, error, exc_info=error)

    adapter.on_turn_error = on_turn_error

    async def messages(request: web.Request) -> web.StreamResponse:
        try:
            return await adapter.process(request, agent) or web.Response(status=202)
        except ValidationError as exc:
            log.warning("teams: unreadable activity skipped: %s", exc.errors()[0].get("msg", exc))
            return web.json_response({"error": "not an activity"}, status=400)

    app = web.Application(middlewares=[jwt_authorization_middleware])
    with warnings.catch_warnings():
        # The SDK's JWT middleware looks its configuration up by this plain string key.
        warnings.simplefilter("ignore", web.NotAppKeyWarning)
        app["agent_configuration"] = auth
    app.router.add_post(MESSAGES_PATH, messages)
    return app


def listen(lore: Teamlore, say: Say) -> None:
    from microsoft_agents.authentication.msal import MsalConnectionManager

    auth = auth_configuration(lore)
    adapter = CloudAdapter(
        connection_manager=MsalConnectionManager(connections_configurations={"SERVICE_CONNECTION": auth})
    )
    worker = SerialWorker()
    sink = LockedSink(EventSink(lore), worker.lock)
    backfills = BackgroundBackfills(lambda team, _: backfill_team(lore, team, say=say, sink=sink))
    agent = TeamloreTeamsAgent(
        lore,
        known_visibility=_known_visibility(lore),
        worker=worker,
        on_join=lambda team: backfills.submit(team, "standard channels"),
    )
    settings = lore.settings
    catchups = BackgroundBackfills(
        lambda _t, _all: catch_up_all(lore, _graph_token(lore), say=say, sink=sink)
    )
    catchups.submit(settings.teams_tenant_id, "every channel")  # what was posted while the endpoint was down
    say(f"Teams: messaging endpoint at http://{settings.teams_host}:{settings.teams_port}{MESSAGES_PATH}")
    try:
        web.run_app(
            web_app(agent, adapter, auth), host=settings.teams_host, port=settings.teams_port, print=None
        )
    finally:
        backfills.close()
        catchups.close()


def backfill_team(lore: Teamlore, team: str, *, say: Say, sink: EventSink | None = None) -> None:
    """On joining a team: its standard channels. Private and shared channels are backfilled only
    on the admin command, naming them, since Graph's app permission reads them all."""
    with graph_http(lore.settings.teams_graph_url) as http:
        channels = GraphClient(http, _graph_token(lore)).channels(team)
    for info in channels:
        if visibility_of(info.get("membershipType")) is Visibility.PUBLIC and info.get("id"):
            backfill(lore, f"{team}/{info['id']}", say=say, sink=sink)


def backfill(
    lore: Teamlore,
    channel: str,
    *,
    say: Say,
    restart: bool = False,
    token: TokenProvider | None = None,
    sink: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> BackfillReport:
    """``TEAM_ID/CHANNEL_ID`` (or a channel id of TEAMLORE_TEAMS_TEAM_ID) from Graph."""
    settings = lore.settings
    team, _, channel_id = channel.rpartition("/")
    team = team or require(settings.teams_team_id, "TEAMLORE_TEAMS_TEAM_ID", "or give TEAM_ID/CHANNEL_ID")
    if not channel_id.startswith("19:"):
        raise InvalidInput(f"a Teams channel id looks like 19:...@thread.tacv2, not {channel_id!r}")
    tenant = require(settings.teams_tenant_id, "TEAMLORE_TEAMS_TENANT_ID", "the Entra tenant id")
    with graph_http(settings.teams_graph_url) as http:
        graph = GraphClient(http, token or _graph_token(lore))
        info = graph.channel(team, channel_id)
        place = Place(
            tenant, channel_id, str(info.get("displayName") or ""), visibility_of(info.get("membershipType"))
        )
        say(f"backfilling {place.channel_name or channel_id} ({place.visibility.value}) from Microsoft Graph")
        history = GraphChannelHistory(
            graph, team, place, settings.max_message_chars, skip_app_id=settings.teams_app_id
        )
        sink = sink or EventSink(lore)
        sink.update_channel(place.as_channel())  # known before the first message says so
        remember_team(lore.stores.checkpoints, tenant, channel_id, team)  # the catch-up reads through it
        return run_backfill(
            PLATFORM,
            tenant,
            channel_id,
            history,
            sink,
            lore.stores.checkpoints,
            restart=restart,
            sleep=sleep,
            progress=lambda pages, total, _: say(f"{pages} page(s), {total} message(s)"),
        )


def _graph_token(lore: Teamlore) -> TokenProvider:
    settings = lore.settings
    return client_credentials_token(
        require(settings.teams_tenant_id, "TEAMLORE_TEAMS_TENANT_ID", "the Entra tenant id"),
        require(settings.teams_app_id, "TEAMLORE_TEAMS_APP_ID", "the app id"),
        require(settings.teams_app_password, "TEAMLORE_TEAMS_APP_PASSWORD", "its client secret"),
    )


def _known_visibility(lore: Teamlore) -> Callable[[str, str], Visibility | None]:
    def known(tenant: str, channel_id: str) -> Visibility | None:
        for channel in lore.stores.messages.channels(tenant):
            if channel.channel == channel_id:
                return channel.visibility
        return None

    return known
