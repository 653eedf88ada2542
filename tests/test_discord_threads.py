"""Discord threads are found by listing them, not only through a starter message: the guild's
active threads, a channel's archived threads, and forum posts (threads of a forum channel), all
read through discord.py's own rate-limited REST client against a local Discord API."""

from __future__ import annotations

from typing import Any

from teamlore.domain import Scope

from . import discord_payloads as P
from .local_http import local_server
from .test_discord import discord_rest, run_bot

FORUM = "240"


def forum_channel() -> dict[str, Any]:
    return {**P.text_channel(FORUM, "help"), "type": 15, "available_tags": [], "default_reaction_emoji": None,
            "default_sort_order": None, "default_forum_layout": 0, "flags": 0}  # fmt: skip


def archived(thread: dict[str, Any]) -> dict[str, Any]:
    return {**thread, "thread_metadata": {**thread["thread_metadata"], "archived": True}}


def test_active_archived_and_forum_threads_are_backfilled_without_a_starter_message(lore):
    lonely = P.snowflake(20)  # a thread whose starter message was deleted: listed, never pointed to
    old = P.snowflake(21)  # archived: not in the gateway's guild payload
    post = P.snowflake(22)  # a forum post is a thread of the forum channel
    history = {
        P.GENERAL: [P.message(P.snowflake(1), P.GENERAL, "The release train leaves every Tuesday.")],
        lonely: [P.message(P.snowflake(30), lonely, "The staging database is in Frankfurt.")],
        old: [P.message(P.snowflake(31), old, "The old cluster region was us-east-1.")],
        post: [P.message(P.snowflake(32), post, "The VPN certificate renews every March.")],
    }
    rest = discord_rest(
        history,
        [],
        limit_once=False,
        active=[P.thread(lonely, P.GENERAL, "staging"), P.thread(post, FORUM, "vpn help")],
        archived={P.GENERAL: [archived(P.thread(old, P.GENERAL, "old cluster"))]},
    )
    with local_server(rest) as server:

        async def scenario(client, parsers):
            guild = P.guild_create()
            parsers["GUILD_CREATE"]({**guild, "channels": [*guild["channels"], forum_channel()]})

        run_bot(lore, scenario, api_url=server.url, backfill_on_join=True)
        asked = [r.path for r in server.requests]
    assert any(p.endswith(f"/guilds/{P.GUILD}/threads/active") for p in asked)
    assert any(p.endswith(f"/channels/{P.GENERAL}/threads/archived/public") for p in asked)
    for thread, reply, channel in ((lonely, 30, P.GENERAL), (old, 31, P.GENERAL), (post, 32, FORUM)):
        stored = lore.stores.messages.get_message(P.GUILD, channel, P.snowflake(reply))
        assert stored is not None and stored.thread_id == thread, (thread, channel)
    assert not any(p.endswith(f"/channels/{FORUM}/messages") for p in asked)  # a forum has no messages
    facts = [v.fact.statement for v in lore.reader.list(Scope(P.GUILD, [P.GENERAL, FORUM]), k=20).hits]
    assert len(facts) == 4
