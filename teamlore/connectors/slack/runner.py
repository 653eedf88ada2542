"""``teamlore connect slack``: listen (HTTP Events API or Socket Mode) or backfill a channel."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_sdk import WebClient

from teamlore.app import Teamlore
from teamlore.connectors.backfill import BackfillReport, run_backfill
from teamlore.connectors.background import BackgroundBackfills
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.running import AsgiServer, Say, duration, require, say_backfill_end
from teamlore.connectors.slack.bot import SlackBot
from teamlore.connectors.slack.catchup import catch_up_all
from teamlore.connectors.slack.directory import SlackDirectory
from teamlore.connectors.slack.history import SlackHistory
from teamlore.connectors.slack_export import SlackContext
from teamlore.domain import Visibility
from teamlore.errors import InvalidInput

if TYPE_CHECKING:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

EVENTS_PATH = "/slack/events"
log = logging.getLogger(__name__)


def events_app(app: App, path: str = EVENTS_PATH) -> Callable[..., Any]:
    """Bolt's ASGI adapter, with each request dispatched off the event loop (Bolt's App is
    synchronous) and a body Bolt cannot parse answered 400 instead of a traceback."""
    from slack_bolt.adapter.asgi import SlackRequestHandler
    from slack_bolt.request import BoltRequest
    from slack_bolt.response import BoltResponse

    class Handler(SlackRequestHandler):
        async def dispatch(self, request: Any) -> BoltResponse:
            body = await request.get_raw_body()
            try:
                bolt = BoltRequest(body=body, query=request.query_string, headers=request.get_headers())
            except ValueError as exc:  # JSON or form Bolt could not read; nothing was dispatched
                log.warning("Slack request skipped: unreadable body (%s)", exc)
                return BoltResponse(
                    status=400, body="unreadable request body", headers={"content-type": "text/plain"}
                )
            return await asyncio.to_thread(self.app.dispatch, bolt)

    return Handler(app, path)


def socket_mode(app: App, app_token: str) -> SocketModeHandler:
    """Bolt's Socket Mode handler: events over a websocket Slack opens, no public URL needed."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    return SocketModeHandler(app, require(app_token, "TEAMLORE_SLACK_APP_TOKEN", "Socket Mode, xapp-..."))


def client_for(lore: Teamlore) -> WebClient:
    token = require(lore.settings.slack_bot_token, "TEAMLORE_SLACK_BOT_TOKEN", "the bot token, xoxb-...")
    return WebClient(token=token, base_url=lore.settings.slack_api_url)


def catch_up_on_hello(handler: Any, catch_up: Callable[[], object]) -> None:
    """Socket Mode: Slack says ``hello`` on every connection, the first and each reconnection;
    each one starts a catch-up of what was posted while the socket was down."""

    def on_message(_client: Any, message: dict[str, Any], _raw: str | None) -> None:
        if message.get("type") == "hello":
            catch_up()

    handler.client.message_listeners.append(on_message)


def listen(lore: Teamlore, say: Say) -> None:
    settings = lore.settings
    client = client_for(lore)
    directory = SlackDirectory(client)
    backfills = BackgroundBackfills(
        lambda _ws, channel: backfill(lore, channel, say=say, directory=directory)
    )
    catchups = BackgroundBackfills(lambda _ws, _all: catch_up_all(lore, SlackDirectory(client), say=say))
    bot = SlackBot(lore, client, on_join=backfills.submit)
    team = bot.directory.identity().team_id
    if settings.slack_mode == "socket":
        say(f"Slack workspace {team}: listening through Socket Mode")
        handler = socket_mode(bot.app, settings.slack_app_token)
        catch_up_on_hello(handler, lambda: catchups.submit(team, "every channel"))
        try:
            handler.start()
        finally:
            backfills.close()
            catchups.close()
        return
    catchups.submit(team, "every channel")  # what was posted while the endpoint was down
    require(settings.slack_signing_secret, "TEAMLORE_SLACK_SIGNING_SECRET", "verifies Slack's requests")
    server = AsgiServer(events_app(bot.app), settings.slack_host, settings.slack_port)
    say(f"Slack workspace {team}: events at http://{settings.slack_host}:{settings.slack_port}{EVENTS_PATH}")
    try:
        server.serve_forever()
    finally:
        backfills.close()
        catchups.close()


def backfill(
    lore: Teamlore,
    channel: str,
    *,
    say: Say,
    restart: bool = False,
    directory: SlackDirectory | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> BackfillReport:
    """Read a channel's history at the rate Slack allows, saying how long it should take."""
    settings = lore.settings
    directory = directory or SlackDirectory(client_for(lore))
    identity = directory.identity()
    info = directory.info(channel)
    assert info is not None  # required lookups raise instead
    name = info.channel.name or channel
    if not info.is_member:
        if info.channel.visibility is not Visibility.PUBLIC:
            raise InvalidInput(
                f"#{name} is private and the bot is not a member: invite it (/invite @Teamlore) first"
            )
        directory.client.conversations_join(channel=channel)
    interval, size = settings.slack_history_interval_s, settings.slack_history_page_size
    context = SlackContext(
        identity.team_id, directory.users, identity.archives_url, settings.max_message_chars
    )
    history = SlackHistory(
        directory.client,
        info.channel,
        context,
        page_size=size,
        interval_s=interval,
        created=info.created,
        skip_authors=(identity.bot_user_id, identity.bot_id),
        bot_user_id=identity.bot_user_id,
    )
    say(
        f"backfilling #{name} ({channel}): one history call every {interval:g} s, {size} messages a call "
        "(TEAMLORE_SLACK_HISTORY_INTERVAL_S, TEAMLORE_SLACK_HISTORY_PAGE_SIZE)"
    )

    def progress(pages: int, total: int, _per_page: float | None) -> None:
        left = history.estimate()
        estimate = (
            f"about {duration(left.seconds)} left ({left.calls} more calls; estimated from the history "
            "read so far)"
            if left is not None
            else "how long it takes is estimated once a page shows how busy the channel was"
        )
        say(f"#{name}: {pages} call(s), {total} message(s) so far; {estimate}")

    report = run_backfill(
        "slack",
        identity.team_id,
        channel,
        history,
        EventSink(lore),
        lore.stores.checkpoints,
        min_interval_s=interval,
        restart=restart,
        progress=progress,
        sleep=sleep,
    )
    say_backfill_end(say, name, report, "message")
    return report
