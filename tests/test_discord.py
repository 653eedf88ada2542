"""Discord: gateway dispatches parsed by discord.py's own ConnectionState, history and replies over
a local HTTP server speaking Discord's REST API (pagination by snowflake, 429 with Retry-After)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
import pytest

from teamlore.connectors.discord.client import TeamloreDiscord
from teamlore.domain import Scope, Visibility

from . import discord_payloads as P
from .local_http import Request, Response, local_server

Scenario = Callable[[TeamloreDiscord, dict[str, Callable[[Any], None]]], Awaitable[None]]


def run_bot(lore, scenario: Scenario, *, api_url: str | None = None, backfill_on_join: bool = False) -> None:
    """Connect a bot to a guild by feeding READY and GUILD_CREATE to its parsers, then play the
    scenario; every queued ingest has finished when this returns."""

    async def main() -> None:
        client = TeamloreDiscord(lore, backfill_on_join=backfill_on_join, guild_ready_timeout=0.01)
        async with client:
            if api_url:  # discord.py's own REST client (history, threads) talks to the local server
                await client.http.static_login("test-token")
            parsers = client._connection.parsers  # what the gateway calls for each dispatch
            parsers["READY"](P.ready())
            await asyncio.wait_for(client.wait_until_ready(), 5)
            await scenario(client, parsers)
            await settle(client)
            await client.worker.close()

    base = discord.http.Route.BASE
    if api_url:
        discord.http.Route.BASE = f"{api_url}/api/v10"
    try:
        asyncio.run(main())
    finally:
        discord.http.Route.BASE = base


async def settle(client: TeamloreDiscord) -> None:
    """Let dispatched handlers run, then wait for the worker to finish their jobs."""
    for _ in range(3):
        current = asyncio.current_task()
        handlers = [t for t in asyncio.all_tasks() if t is not current and t.get_name().startswith("discord")]
        await asyncio.gather(*handlers, return_exceptions=True)
        await client.worker.drain()


def statements(lore, channel: str, **view: Any) -> list[str]:
    return sorted(v.fact.statement for v in lore.reader.list(Scope(P.GUILD, [channel]), k=50, **view).hits)


def test_messages_edits_and_deletes_from_the_gateway_reach_the_fact_store(lore):
    first, second = P.snowflake(1), P.snowflake(2)

    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        await settle(client)
        parsers["MESSAGE_CREATE"](P.message(first, P.GENERAL, "We decided the launch date is 12 May."))
        parsers["MESSAGE_CREATE"](P.message(second, P.GENERAL, "The staging database is in Frankfurt."))
        await settle(client)
        assert len(statements(lore, P.GENERAL)) == 2
        # The edit and the delete arrive as a fresh client would see them: nothing cached.
        client._connection._messages.clear()
        parsers["MESSAGE_UPDATE"](
            P.message(first, P.GENERAL, "We decided the launch date is 19 May.", edited=P.T0)
        )
        parsers["MESSAGE_DELETE"](P.message_delete(second, P.GENERAL))

    run_bot(lore, scenario)
    now = statements(lore, P.GENERAL)
    assert len(now) == 1 and "19 May" in now[0]
    message = lore.stores.messages.get_message(P.GUILD, P.GENERAL, first)
    assert message.permalink == f"https://discord.com/channels/{P.GUILD}/{P.GENERAL}/{first}"
    assert message.author_name == "Alice" and message.edited_at is not None
    assert lore.stores.messages.get_message(P.GUILD, P.GENERAL, second).deleted_at is not None


def test_thread_messages_belong_to_the_parent_channel_with_the_thread_id(lore):
    starter = P.snowflake(1)

    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_CREATE"](P.message(starter, P.GENERAL, "Which region for the new cluster?"))
        parsers["THREAD_CREATE"]({**P.thread(starter, P.GENERAL, "cluster region"), "newly_created": True})
        parsers["MESSAGE_CREATE"](P.message(P.snowflake(2), starter, "The new cluster region is eu-west-1."))

    run_bot(lore, scenario)
    reply = lore.stores.messages.get_message(P.GUILD, P.GENERAL, P.snowflake(2))
    assert reply is not None and reply.thread_id == starter
    assert reply.permalink.endswith(f"/{P.GUILD}/{starter}/{P.snowflake(2)}")  # the thread's own URL
    assert any("eu-west-1" in s for s in statements(lore, P.GENERAL))


def test_visibility_comes_from_the_everyone_role_and_renames_update_the_channel(lore):
    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_CREATE"](
            P.message(P.snowflake(1), P.GENERAL, "The on-call rotation starts on Monday.")
        )
        parsers["MESSAGE_CREATE"](
            P.message(P.snowflake(2), P.LEADERSHIP, "The Globex renewal price is 40 dollars.")
        )
        await settle(client)
        parsers["CHANNEL_UPDATE"](P.channel_update(P.GENERAL, "announcements"))
        parsers["CHANNEL_UPDATE"](  # control: the same name and overwrites change nothing
            P.channel_update(P.LEADERSHIP, "leadership", [P.deny_everyone(), P.allow_bot()])
        )

    run_bot(lore, scenario)
    channels = {c.channel: c for c in lore.stores.messages.channels(P.GUILD)}
    assert channels[P.GENERAL].visibility is Visibility.PUBLIC and channels[P.GENERAL].name == "announcements"
    assert (
        channels[P.LEADERSHIP].visibility is Visibility.PRIVATE
        and channels[P.LEADERSHIP].name == "leadership"
    )


def test_a_channel_closed_to_everyone_becomes_private(lore):
    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_CREATE"](
            P.message(P.snowflake(1), P.GENERAL, "The on-call rotation starts on Monday.")
        )
        await settle(client)
        parsers["CHANNEL_UPDATE"](P.channel_update(P.GENERAL, "general", [P.deny_everyone()]))

    run_bot(lore, scenario)
    (general,) = [c for c in lore.stores.messages.channels(P.GUILD) if c.channel == P.GENERAL]
    assert general.visibility is Visibility.PRIVATE


def test_direct_messages_are_dm_and_attachments_are_recorded(lore):
    dm_channel = "555"

    async def scenario(client, parsers):
        parsers["MESSAGE_CREATE"](
            P.message(P.snowflake(1), dm_channel, "The contract draft is attached.", guild=None,
                      attachments=[P.attachment("contract.pdf", "application/pdf", 48213)])
        )  # fmt: skip

    run_bot(lore, scenario)
    (dm,) = lore.stores.messages.channels("@me")
    assert dm.visibility is Visibility.DM and dm.platform == "discord"
    message = lore.stores.messages.get_message("@me", dm_channel, P.snowflake(1))
    assert message.permalink == f"https://discord.com/channels/@me/{dm_channel}/{P.snowflake(1)}"
    (found,) = lore.search_media_references(Scope("@me", [dm_channel]), "contract", kind="pdf")
    assert (found.name, found.mime_type, found.size) == ("contract.pdf", "application/pdf", 48213)
    assert found.url.endswith("/contract.pdf") and found.message_id == P.snowflake(1)
    assert lore.search_media_references(Scope("@me", ["other"]), "contract") == []  # control: scope


def test_malformed_and_unknown_payloads_are_logged_and_skipped(lore, caplog):
    async def scenario(client, parsers):
        parsers["GUILD_CREATE"](P.guild_create())
        parsers["MESSAGE_CREATE"]({"id": "1", "content": "no channel, no author"})
        parsers["MESSAGE_UPDATE"]({"id": "x", "channel_id": "not-a-number"})
        parsers["MESSAGE_DELETE"]({})
        # A message in a channel the client does not know: discord.py makes a partial channel.
        parsers["MESSAGE_CREATE"](P.message(P.snowflake(1), "999", "A message from nowhere."))
        # The listener is still alive: the next good message goes through.
        parsers["MESSAGE_CREATE"](
            P.message(P.snowflake(2), P.GENERAL, "The release train leaves every Tuesday.")
        )

    with caplog.at_level(logging.WARNING, logger="teamlore.connectors.discord"):
        run_bot(lore, scenario)
    skipped = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) >= 4
    assert any("Tuesday" in s for s in statements(lore, P.GENERAL))
    assert lore.stores.messages.get_message(P.GUILD, "999", P.snowflake(1)) is None


def discord_rest(
    history: dict[str, list[dict[str, Any]]],
    posted: list[dict[str, Any]],
    *,
    limit_once: bool = True,
    active: list[dict[str, Any]] = (),
    archived: dict[str, list[dict[str, Any]]] | None = None,
):
    """``discord_rest_api`` with the thread listings: the guild's active threads and each channel's
    archived public threads."""
    messages = discord_rest_api(history, posted, limit_once=limit_once)

    def handle(request: Request) -> Response:
        if request.path.endswith("/threads/active"):
            return Response(body={"threads": list(active), "members": []})
        if request.path.endswith("/threads/archived/public"):
            channel = request.path.split("/")[-4]
            return Response(
                body={"threads": (archived or {}).get(channel, []), "members": [], "has_more": False}
            )
        return messages(request)

    return handle


def discord_rest_api(
    history: dict[str, list[dict[str, Any]]], posted: list[dict[str, Any]], *, limit_once=True
):
    """Discord's REST API as the bot uses it: /users/@me, channel history (``after`` and
    ``limit``, newest first, as Discord returns it), posting a message; one 429 on the first
    history call."""
    state = {"limited": not limit_once}

    def handle(request: Request) -> Response:
        if request.path.endswith("/users/@me"):
            return Response(body=P.BOT)
        if request.path.endswith("/oauth2/applications/@me"):  # login reads the application
            return Response(body={"id": P.BOT_ID, "name": "Teamlore", "description": "", "icon": None,
                                  "bot_public": False, "bot_require_code_grant": False, "owner": P.ALICE,
                                  "verify_key": "00", "flags": 0})  # fmt: skip
        parts = request.path.rstrip("/").split("/")
        if request.method == "GET" and parts[-1] == "messages":
            if not state["limited"]:
                state["limited"] = True
                limited = {"message": "You are being rate limited.", "retry_after": 0.05, "global": False}
                return Response(429, limited, {"Retry-After": "0.05", "Via": "1.1 google"})
            after, limit = int(request.query.get("after", "0")), int(request.query.get("limit", "50"))
            newer = sorted(
                (m for m in history.get(parts[-2], []) if int(m["id"]) > after), key=lambda m: int(m["id"])
            )
            return Response(body=list(reversed(newer[:limit])))
        if request.method == "POST" and parts[-1] == "messages":
            posted.append({"channel": parts[-2], **request.body})
            sent = P.message(P.snowflake(500), parts[-2], request.body["content"], author=P.BOT)
            return Response(body=sent)
        return Response(404, {"message": "Unknown", "code": 0})

    return handle


def test_joining_a_guild_backfills_readable_channels_and_threads_through_rate_limits(lore, monkeypatch):
    monkeypatch.setattr("teamlore.connectors.discord.history.PAGE_SIZE", 2)
    starter = P.snowflake(1)
    thread = P.thread(starter, P.GENERAL, "cluster region")
    history = {
        P.GENERAL: [
            P.message(starter, P.GENERAL, "Which region for the new cluster?", thread_started=thread),
            P.message(P.snowflake(2), P.GENERAL, "The release train leaves every Tuesday."),
            P.message(P.snowflake(3), P.GENERAL, "Maria owns the billing migration."),
            P.message(P.snowflake(4), P.GENERAL, "Bob joined", kind=7),  # a join notice, not knowledge
        ],
        starter: [P.message(P.snowflake(5), starter, "The new cluster region is eu-west-1.")],
        P.LEADERSHIP: [P.message(P.snowflake(6), P.LEADERSHIP, "The Globex renewal price is 40 dollars.")],
        P.HIDDEN: [P.message(P.snowflake(7), P.HIDDEN, "The hidden launch is in June.")],
    }
    posted: list[dict[str, Any]] = []
    with local_server(discord_rest(history, posted)) as server:

        async def scenario(client, parsers):
            parsers["GUILD_CREATE"](P.guild_create())  # after READY: the bot has joined a guild

        run_bot(lore, scenario, api_url=server.url, backfill_on_join=True)
        asked = [r for r in server.requests if r.method == "GET"]
    assert all(r.headers["authorization"] == "Bot test-token" for r in asked)
    assert not any(r.path.endswith(f"/{P.HIDDEN}/messages") for r in asked)  # the bot is not let in there
    general = statements(lore, P.GENERAL)
    # Three statements: the question that opened the thread is no fact, its answer is.
    assert len(general) == 3 and any("eu-west-1" in s for s in general)
    assert statements(lore, P.LEADERSHIP) == ["The Globex renewal price is 40 dollars."]
    thread_reply = lore.stores.messages.get_message(P.GUILD, P.GENERAL, P.snowflake(5))
    assert thread_reply.thread_id == starter
    saved = lore.stores.checkpoints.get("discord", P.GUILD, P.GENERAL)
    assert saved.done and saved.fetched == 3  # three messages a person wrote; the join notice skipped
    general_calls = [r.query["after"] for r in asked if r.path.endswith(f"/{P.GENERAL}/messages")]
    assert general_calls[:2] == ["0", "0"]  # the 429, then the same page again
    assert general_calls[2] == P.snowflake(2)  # the next page starts after the newest delivered


def test_the_bot_answers_a_mention_from_the_asking_channel_only_and_never_bots(lore, monkeypatch):
    posted: list[dict[str, Any]] = []
    history: dict[str, list[dict[str, Any]]] = {}
    with local_server(discord_rest(history, posted, limit_once=False)) as server:
        monkeypatch.setattr(discord.http.Route, "BASE", f"{server.url}/api/v10")
        mention = f"<@{P.BOT_ID}> what is the Globex renewal price?"

        async def scenario(client, parsers):
            await client.http.static_login("test-token")
            parsers["GUILD_CREATE"](P.guild_create())
            parsers["MESSAGE_CREATE"](
                P.message(P.snowflake(1), P.LEADERSHIP, "The Globex renewal price is 40 dollars.")
            )
            parsers["MESSAGE_CREATE"](
                P.message(P.snowflake(6), P.GENERAL, "The Globex account manager is Dana.")
            )
            await settle(client)
            for n, channel in ((2, P.GENERAL), (3, P.LEADERSHIP)):  # asked outside, then inside
                parsers["MESSAGE_CREATE"](P.message(P.snowflake(n), channel, mention, mentions=[P.BOT]))
                await settle(client)
            parsers["MESSAGE_CREATE"](
                P.message(P.snowflake(4), P.LEADERSHIP, mention, author=P.OTHER_BOT, mentions=[P.BOT])
            )
            parsers["MESSAGE_CREATE"](P.message(P.snowflake(5), P.LEADERSHIP, "Reply from me.", author=P.BOT))
            await settle(client)
            await client.http.close()

        run_bot(lore, scenario)
    assert [p["channel"] for p in posted] == [P.GENERAL, P.LEADERSHIP]  # no reply to the other bot
    outside, inside = posted
    private = f"https://discord.com/channels/{P.GUILD}/{P.LEADERSHIP}/{P.snowflake(1)}"
    public = f"https://discord.com/channels/{P.GUILD}/{P.GENERAL}/{P.snowflake(6)}"
    assert "40 dollars" not in outside["content"] and private not in outside["content"]
    assert "40 dollars" in inside["content"]
    assert f"]({private})" in inside["content"]  # the citation links the source message
    assert public not in inside["content"]  # and cites nothing from another channel
    assert inside["allowed_mentions"]["parse"] == []  # an answer never pings anyone
    assert str(inside["message_reference"]["message_id"]) == P.snowflake(3)
    # Questions and the bot's own messages are not stored as channel knowledge.
    assert lore.stores.messages.get_message(P.GUILD, P.LEADERSHIP, P.snowflake(3)) is None
    assert lore.stores.messages.get_message(P.GUILD, P.LEADERSHIP, P.snowflake(5)) is None


@pytest.fixture(autouse=True)
def _quiet_discord_voice_warnings(caplog):
    caplog.set_level(logging.ERROR, logger="discord.client")
