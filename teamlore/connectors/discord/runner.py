"""``teamlore connect discord``: run the gateway bot, or backfill one channel over REST and exit."""

from __future__ import annotations

import asyncio

import discord

from teamlore.app import Teamlore
from teamlore.connectors.backfill import BackfillReport
from teamlore.connectors.discord.client import TeamloreDiscord
from teamlore.connectors.running import Say, require
from teamlore.errors import BackendUnavailable, InvalidInput


def _token(lore: Teamlore) -> str:
    return require(lore.settings.discord_token, "TEAMLORE_DISCORD_TOKEN", "the bot token")


def _use_api(lore: Teamlore) -> None:
    # discord.py's REST calls (login, history, threads, replies) go to the configured API.
    discord.http.Route.BASE = lore.settings.discord_api_url.rstrip("/")


def listen(lore: Teamlore, say: Say) -> None:
    token = _token(lore)
    _use_api(lore)
    client = TeamloreDiscord(lore, backfill_on_join=lore.settings.discord_backfill_on_join)
    say("Discord: connecting to the gateway (message content intent required)")
    try:
        client.run(token, log_handler=None)  # handles reconnects; returns on Ctrl-C
    except discord.PrivilegedIntentsRequired as exc:
        raise BackendUnavailable(
            "Discord refused the message content intent: switch on 'Message Content Intent' on the "
            "bot's page in the Developer Portal"
        ) from exc
    except discord.LoginFailure as exc:
        raise BackendUnavailable("Discord rejected TEAMLORE_DISCORD_TOKEN") from exc


def backfill(lore: Teamlore, channel: str, *, say: Say, restart: bool = False) -> BackfillReport:
    """One guild text channel (and the threads started in it), without joining the gateway."""
    if not channel.isdigit():
        raise InvalidInput(f"a Discord channel id is a number (a snowflake), not {channel!r}")
    token = _token(lore)
    reports = asyncio.run(_backfill(lore, token, int(channel), restart))
    for report in reports[1:]:
        say(f"thread: {report.fetched} message(s), done={report.done}")
    return reports[0]


async def _backfill(lore: Teamlore, token: str, channel_id: int, restart: bool) -> list[BackfillReport]:
    _use_api(lore)
    client = TeamloreDiscord(lore, backfill_on_join=False)
    async with client:
        try:
            await client.login(token)
            data = await client.http.get_channel(channel_id)
            guild_id = data.get("guild_id")  # a snowflake, in a server's channels only
            if not isinstance(guild_id, str | int):
                raise InvalidInput(f"channel {channel_id} is not in a server; DMs are captured live only")
            guild = await client.fetch_guild(int(guild_id))  # roles: visibility needs @everyone
        except discord.LoginFailure as exc:
            raise BackendUnavailable("Discord rejected TEAMLORE_DISCORD_TOKEN") from exc
        except discord.HTTPException as exc:
            raise BackendUnavailable(f"Discord: cannot read channel {channel_id}: {exc}") from exc
        # discord.py's own factory for a channel payload (what fetch_channel uses internally).
        factory, _ = discord.channel._guild_channel_factory(data["type"])
        if factory is None:
            raise InvalidInput(f"channel {channel_id} is not a text channel")
        target = factory(guild=guild, state=client._connection, data=data)
        guild._add_channel(target)
        reports = await client.backfill_channel(target, restart)
        await client.worker.close()
        return reports
