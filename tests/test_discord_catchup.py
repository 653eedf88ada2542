"""Discord catch-up after downtime: a bot stopped while messages are posted, edited and deleted
reads the channel after its high-water mark (``after=``), and the threads started there, when it
is ready again, and ends with the store of a bot that never stopped (gateway dispatches through
discord.py's parsers, history over a local server speaking Discord's REST API)."""

from __future__ import annotations

from typing import Any

from teamlore.app import Teamlore
from teamlore.config import Settings

from . import discord_payloads as P
from .catchup_check import snapshot
from .local_http import local_server
from .test_discord import discord_rest, run_bot, settle

# The thread was opened two days before the rest: its starter lies outside the catch-up window, so
# the thread is found through its reply stored within the window.
STARTER, REPLY, OLD, GONE = P.snowflake(-2880), P.snowflake(2), P.snowflake(3), P.snowflake(4)
NEW, ANSWER, LATE = P.snowflake(10), P.snowflake(11), P.snowflake(5)


def afters_floor(lore: Teamlore) -> str:
    """The snowflake a catch-up of #general starts after: its mark minus the window (one day)."""
    from datetime import timedelta

    from discord.utils import time_snowflake

    from teamlore.connectors.watermarks import Watermarks

    mark = Watermarks(lore.stores.checkpoints).get("discord", P.GUILD, P.GENERAL)
    assert mark is not None
    return str(time_snowflake(mark.ts - timedelta(days=1), high=False))


def connector(tmp_path, name: str, embedder, clock) -> Teamlore:
    return Teamlore(Settings(data_dir=tmp_path / name, _env_file=None), embedder=embedder, clock=clock)


def test_a_discord_bot_stopped_catches_up_to_one_that_never_stopped(tmp_path, embedder, clock):
    always = connector(tmp_path, "always", embedder, clock)
    restarted = connector(tmp_path, "restarted", embedder, clock)
    thread = P.thread(STARTER, P.GENERAL, "billing")
    first = [
        P.message(STARTER, P.GENERAL, "Alice owns the billing migration."),
        P.message(REPLY, STARTER, "The billing migration ships in June."),
        P.message(OLD, P.GENERAL, "The launch date is 12 May."),
        P.message(GONE, P.GENERAL, "The office moves to Berlin."),
        P.message(LATE, STARTER, "The billing dashboard moves to Grafana."),  # deleted while down
    ]
    edited = P.message(OLD, P.GENERAL, "The launch date is 19 May.", edited=P.T0)
    new = P.message(NEW, P.GENERAL, "The design review is on Thursdays.")
    answer = P.message(ANSWER, STARTER, "Bob reviews the billing migration.")

    def live(messages: list[dict[str, Any]], edits=(), deletes=()):
        async def scenario(client, parsers):
            parsers["GUILD_CREATE"](P.guild_create(threads=[thread]))
            await settle(client)
            for payload in messages:
                parsers["MESSAGE_CREATE"](payload)
            await settle(client)
            for payload in edits:
                parsers["MESSAGE_UPDATE"](payload)
            for mid, where in deletes:
                parsers["MESSAGE_DELETE"](P.message_delete(mid, where))

        return scenario

    run_bot(always, live(first))
    run_bot(restarted, live(first))
    down = live([new, answer], edits=[edited], deletes=[(GONE, P.GENERAL), (LATE, STARTER)])
    run_bot(always, down)  # the other one is down
    assert snapshot(always, P.GUILD, [P.GENERAL]) != snapshot(restarted, P.GUILD, [P.GENERAL])  # control
    history = {
        P.GENERAL: [{**first[0], "thread": thread}, edited, new],
        STARTER: [first[1], answer],
    }
    assert int(STARTER) < int(afters_floor(always))  # the starter is older than the window
    reports: list[Any] = []
    with local_server(discord_rest(history, [], limit_once=False)) as server:

        async def ready_again(client, parsers):
            parsers["GUILD_CREATE"](P.guild_create(threads=[thread]))
            await settle(client)
            reports.extend(await client.catch_up())  # what on_ready runs once guilds are known

        run_bot(restarted, ready_again, api_url=server.url)
        afters = [r.query.get("after") for r in server.requests if r.path.endswith(f"/{P.GENERAL}/messages")]
    assert afters and afters[0] != "0"  # from the high-water mark, not from the channel's start
    assert len(reports) == 1 and reports[0].deleted == 2
    expected = snapshot(always, P.GUILD, [P.GENERAL], deleted=[GONE, LATE])
    assert snapshot(restarted, P.GUILD, [P.GENERAL], deleted=[GONE, LATE]) == expected
    assert expected["deleted"] == {(P.GENERAL, GONE): True, (P.GENERAL, LATE): True}
    assert expected["messages"][(P.GENERAL, ANSWER)][1] == STARTER
    always.close()
    restarted.close()
