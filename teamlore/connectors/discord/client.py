"""The Discord bot: live capture, channel renames, backfill on joining a guild, answers on mention.

Built on discord.py's gateway client. Edits and deletes come from the raw events
(``on_raw_message_edit``, ``on_raw_message_delete``), which fire for messages the client never
cached, such as those sent before it started. Every gateway parser is guarded: a payload
discord.py cannot parse is logged and skipped instead of ending the connection.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import discord

from teamlore.app import Teamlore
from teamlore.connectors.answering import ChannelAnswerer, markdown_link
from teamlore.connectors.backfill import BackfillReport, run_backfill
from teamlore.connectors.catchup import CatchUp, CatchUpReport, known_channels, recent_threads
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.discord import PLATFORM, normalize
from teamlore.connectors.discord.history import DiscordCatchUpHistory, DiscordHistory, threads_of
from teamlore.connectors.live import LockedSink, SerialWorker
from teamlore.domain import MessageEvent
from teamlore.errors import BackendUnavailable, InvalidInput, TeamloreError

log = logging.getLogger(__name__)
MAX_REPLY_CHARS = 2000  # Discord's limit for one message


def intents() -> discord.Intents:
    """Guilds (channels, threads, renames), guild and DM messages, and their content."""
    chosen = discord.Intents.none()
    chosen.guilds = True
    chosen.guild_messages = True
    chosen.dm_messages = True
    chosen.message_content = True  # privileged: switch it on in the Developer Portal too
    return chosen


class TeamloreDiscord(discord.Client):
    def __init__(
        self,
        lore: Teamlore,
        *,
        backfill_on_join: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(intents=intents(), **options)
        self.lore = lore
        self.sink = EventSink(lore)
        self.answerer = ChannelAnswerer(lore)
        self.worker = SerialWorker()
        self._backfill_on_join = backfill_on_join
        self._guard_parsers()

    # -- gateway events -------------------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        if self.user is not None and message.author.id == self.user.id:
            return  # never ingest or answer its own answers
        if self.user is not None and self.user in message.mentions:
            await self._answer(message)  # a question to the bot, not channel knowledge
            return
        await self._deliver(lambda: normalize.created(message, self._max_chars))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        message = payload.message
        if self.user is not None and message.author.id == self.user.id:
            return
        if self.user is not None and self.user in message.mentions:
            return  # an edited question: it was never stored
        await self._deliver(lambda: normalize.edited(message, self._max_chars))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._delete(payload.channel_id, payload.guild_id, [payload.message_id])

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self._delete(payload.channel_id, payload.guild_id, sorted(payload.message_ids))

    async def on_guild_channel_update(self, before: Any, after: Any) -> None:
        try:
            old, new = normalize.place_of(before), normalize.place_of(after)
        except InvalidInput as exc:
            log.warning("discord: channel update skipped: %s", exc)
            return
        if (old.channel_name, old.visibility) != (new.channel_name, new.visibility):
            log.info("discord: channel %s is now #%s (%s)", new.channel, new.channel_name, new.visibility)
            await self.worker.call(self.sink.update_channel, new.as_channel())

    async def on_ready(self) -> None:
        """The first connection, and every reconnection that could not resume its session."""
        await self.catch_up()

    async def on_resumed(self) -> None:
        await self.catch_up()  # Discord replays a resumed session; the overlap is harmless

    async def on_guild_join(self, guild: discord.Guild) -> None:
        if self._backfill_on_join:
            await self.backfill_guild(guild)

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("discord: handler %s failed; the listener goes on", event_method)

    # -- backfill -----------------------------------------------------------------------

    async def backfill_guild(self, guild: discord.Guild, restart: bool = False) -> list[BackfillReport]:
        """Every text and forum channel the bot may read, with their threads."""
        reports = []
        channels: list[discord.TextChannel | discord.ForumChannel] = [*guild.text_channels, *guild.forums]
        for channel in channels:
            allowed = channel.permissions_for(guild.me)
            if not (allowed.view_channel and allowed.read_message_history):
                continue  # private channels only where the bot has been let in
            reports.extend(await self.backfill_channel(channel, restart))
        return reports

    async def backfill_channel(self, channel: Any, restart: bool = False) -> list[BackfillReport]:
        """The channel, then every thread of it: active, archived, and started from its messages."""
        try:
            threads = await threads_of(channel)
        except discord.HTTPException as exc:
            raise BackendUnavailable(f"Discord: threads of #{channel}: {exc}") from exc
        return await asyncio.to_thread(self._backfill_blocking, [channel, *threads], restart)

    def _backfill_blocking(self, pending: list[Any], restart: bool) -> list[BackfillReport]:
        sink = LockedSink(self.sink, self.worker.lock)
        reports, done = [], set()
        while pending:
            target = pending.pop(0)
            if target.id in done:
                continue
            done.add(target.id)
            history = DiscordHistory(target, self.loop, self._max_chars)

            def progress(pages: int, total: int, _: float | None, t: Any = target) -> None:
                log.info("discord backfill #%s: %d page(s), %d message(s)", t, pages, total)

            report = run_backfill(
                PLATFORM,
                str(target.guild.id),
                str(target.id),
                history,
                sink,
                self.lore.stores.checkpoints,
                restart=restart,
                progress=progress,
            )
            log.info("discord backfill #%s: %s", target, report)
            reports.append(report)
            pending.extend(history.threads.values())
        return reports

    # -- catch-up after downtime ---------------------------------------------------------

    async def catch_up(self) -> list[CatchUpReport]:
        """Every channel the store knows in the bot's guilds, from its high-water mark on."""
        reports: list[CatchUpReport] = []
        if self.http.token is None:
            return reports  # not logged in: nothing can be read
        for guild in self.guilds:
            for channel_id in known_channels(self.lore.stores.messages, str(guild.id), PLATFORM):
                channel = guild.get_channel(int(channel_id)) if channel_id.isdigit() else None
                if channel is None:
                    continue  # deleted, or no longer visible to the bot
                try:
                    report = await self._catch_up_channel(channel)
                except (discord.HTTPException, TeamloreError) as exc:
                    log.error("discord: catch-up of #%s failed: %s", channel, exc)
                    continue
                if report is not None:
                    reports.append(report)
        return reports

    async def _catch_up_channel(self, channel: Any) -> CatchUpReport | None:
        """The channel, its active threads, and the threads with a stored reply in the window
        (archived since, perhaps, with replies posted while the bot was down)."""
        threads = {t.id: t for t in await threads_of(channel, archived=False)}
        since = self._catch_up_runner().since(PLATFORM, str(channel.guild.id), str(channel.id))
        if since is not None:
            for thread_id in recent_threads(
                self.lore.stores.messages, str(channel.guild.id), str(channel.id), since
            ):
                if thread_id.isdigit() and int(thread_id) not in threads:
                    found = await self._resolve_channel(int(thread_id), channel.guild.id)
                    if found is not None:
                        threads[found.id] = found
        return await asyncio.to_thread(self._catch_up_blocking, channel, list(threads.values()))

    def _catch_up_runner(self) -> CatchUp:
        return CatchUp(
            LockedSink(self.sink, self.worker.lock),
            self.lore.stores.checkpoints,
            self.lore.stores.messages,
            timedelta(seconds=self.lore.settings.catchup_window_s),
        )

    def _catch_up_blocking(self, channel: Any, threads: list[Any]) -> CatchUpReport | None:
        runner = self._catch_up_runner()

        def make(target: Any, start: str) -> DiscordHistory:
            return DiscordHistory(target, self.loop, self._max_chars, after=start)

        def history_for(since: datetime) -> DiscordCatchUpHistory:
            after = str(discord.utils.time_snowflake(since, high=False))
            return DiscordCatchUpHistory(make, channel, after, threads)

        return runner.run(PLATFORM, str(channel.guild.id), str(channel.id), history_for)

    # -- internals ----------------------------------------------------------------------

    @property
    def _max_chars(self) -> int:
        return self.lore.settings.max_message_chars

    async def _deliver(self, build: Callable[[], MessageEvent | None]) -> None:
        try:
            event = build()
        except InvalidInput as exc:
            log.warning("discord: message skipped: %s", exc)
            return
        if event is not None:
            await self._deliver_events([event])

    async def _deliver_events(self, events: Sequence[MessageEvent]) -> None:
        try:
            await self.worker.call(self.sink.deliver, events)
        except TeamloreError as exc:
            log.error("discord: delivery failed for %d event(s): %s", len(events), exc)

    async def _delete(self, channel_id: int, guild_id: int | None, message_ids: Sequence[int]) -> None:
        channel = await self._resolve_channel(channel_id, guild_id)
        if channel is None:
            log.warning("discord: delete in unknown channel %s skipped", channel_id)
            return
        try:
            place = normalize.place_of(channel)
            events = [
                normalize.deleted(place, mid, guild_id, channel_id, self._max_chars) for mid in message_ids
            ]
        except InvalidInput as exc:
            log.warning("discord: delete skipped: %s", exc)
            return
        await self._deliver_events(events)

    async def _resolve_channel(self, channel_id: int, guild_id: int | None) -> Any:
        guild = self.get_guild(guild_id) if guild_id is not None else None
        found: discord.abc.GuildChannel | discord.Thread | discord.abc.PrivateChannel | None = (
            guild.get_channel_or_thread(channel_id) if guild is not None else None
        )
        if found is None:
            found = self.get_channel(channel_id)
        if found is None:
            try:  # an archived thread is not cached: ask Discord where it lives
                found = await self.fetch_channel(channel_id)
            except (discord.HTTPException, discord.InvalidData) as exc:
                log.warning("discord: cannot fetch channel %s: %s", channel_id, exc)
        return found

    async def _answer(self, message: discord.Message) -> None:
        assert self.user is not None
        question = normalize.strip_mention(message.content, self.user.id)
        try:
            place = normalize.place_of(message.channel)
        except InvalidInput as exc:
            log.warning("discord: question skipped: %s", exc)
            return
        ask = functools.partial(
            self.answerer.reply,
            place.workspace,
            place.channel,
            str(message.author.id),
            question,
            author_is_bot=message.author.bot or message.webhook_id is not None,
            link=markdown_link,
        )
        try:
            reply = await self.worker.call(ask)
        except TeamloreError as exc:
            log.error("discord: answering failed: %s", exc)
            return
        if reply is None:
            return
        try:
            await message.reply(
                reply.text[:MAX_REPLY_CHARS],
                mention_author=False,
                # Answers quote chat text: never let them ping @everyone, roles or people.
                allowed_mentions=discord.AllowedMentions.none(),
                suppress_embeds=True,
            )
        except discord.HTTPException as exc:
            log.error("discord: could not post the answer in %s: %s", message.channel.id, exc)

    def _guard_parsers(self) -> None:
        parsers = self._connection.parsers
        for name, parse in list(parsers.items()):
            parsers[name] = _guarded(name, parse)


def _guarded(name: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(parse)
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception:  # a payload the library cannot read must not end the gateway session
            log.warning("discord: %s payload could not be parsed; skipped", name, exc_info=True)

    return guarded
