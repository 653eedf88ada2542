"""The Mattermost connector: websocket events in, normalized events out, answers to mentions.

``posted``, ``post_edited`` and ``post_deleted`` carry the post as a JSON string in
``data.post``; ``channel_updated`` carries the channel the same way (renames); ``user_added``
for the bot itself starts a backfill; ``hello`` (every connection and reconnection) a catch-up.
Frames are handled one at a time, in order, on a worker thread (the store and the REST calls
block), and a frame that cannot be used is logged and skipped: nothing a frame holds can stop
the listener.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from mattermostautodriver import TypedDriver
from mattermostautodriver.websocket import Websocket

from teamlore.app import Teamlore
from teamlore.connectors.answering import ChannelAnswerer, markdown_link
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.mattermost.directory import MattermostDirectory, channel_from
from teamlore.connectors.mattermost.file_infos import with_file_infos
from teamlore.connectors.mattermost.posts import (
    VISIBILITY_BY_TYPE,
    MattermostChannel,
    PostContext,
    decode_object,
    is_system,
    post_event,
)
from teamlore.domain import Channel, EventKind
from teamlore.errors import InvalidInput, TeamloreError

log = logging.getLogger(__name__)

KINDS = {"posted": EventKind.CREATED, "post_edited": EventKind.EDITED, "post_deleted": EventKind.DELETED}
OnJoin = Callable[[str, str], object]


def workspace_of(settings_workspace: str, server_url: str) -> str:
    """The configured workspace, else the server's host (one server, one workspace)."""
    return settings_workspace.strip() or urlsplit(server_url).hostname or "mattermost"


class MattermostListener:
    def __init__(
        self,
        lore: Teamlore,
        driver: TypedDriver,
        server_url: str,
        workspace: str,
        *,
        sink: EventSink | None = None,
        answerer: ChannelAnswerer | None = None,
        on_join: OnJoin | None = None,
        on_connect: Callable[[], object] | None = None,
    ) -> None:
        self.directory = MattermostDirectory(driver)
        self.context = PostContext(workspace, server_url.rstrip("/"), lore.settings.max_message_chars)
        self.handled = 0  # frames taken off the socket, used or skipped
        self._driver = driver
        self._sink = sink or EventSink(lore)
        self._answerer = answerer or ChannelAnswerer(lore)
        self._on_join = on_join
        self._on_connect = on_connect

    async def run(self, websocket_cls: type[Websocket] = Websocket) -> None:
        """Connect, authenticate with the bot's token and handle frames until cancelled."""
        loop = asyncio.get_running_loop()
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="teamlore-mattermost")

        async def on_frame(raw: str) -> None:
            await loop.run_in_executor(worker, self.handle, raw)

        try:
            await websocket_cls(self._driver.options, self._driver.client.token).connect(on_frame)
        finally:
            worker.shutdown(wait=True)

    def handle(self, raw: str) -> None:
        """One websocket frame; never raises."""
        self.handled += 1
        with _skipping_bad(raw):
            frame = json.loads(raw)
            if not isinstance(frame, dict):
                raise InvalidInput("a frame must be a JSON object")
            event = frame.get("event")
            if event is None:  # a reply to our own request (the authentication challenge)
                if frame.get("status") != "OK":
                    log.error("Mattermost refused a websocket request: %s", frame.get("error"))
                return
            given_data, given_broadcast = frame.get("data"), frame.get("broadcast")
            data = given_data if isinstance(given_data, dict) else {}
            broadcast = given_broadcast if isinstance(given_broadcast, dict) else {}
            if event in KINDS:
                self._post(KINDS[event], data)
            elif event == "channel_updated":
                self._channel_updated(data)
            elif event == "user_added":
                self._user_added(data, broadcast)
            elif event == "hello":
                log.info("Mattermost websocket connected (server %s)", data.get("server_version"))
                if self._on_connect is not None:
                    self._on_connect()  # what was posted while the socket was down
            else:
                log.debug("Mattermost event %r is not used; skipped", event)

    def _post(self, kind: EventKind, data: Mapping[str, Any]) -> None:
        post = decode_object(data.get("post"))
        if is_system(post):
            return
        author = str(post.get("user_id") or "")
        if author == self.directory.me.get("id"):
            return  # the bot's own answers are not knowledge
        channel = self._channel(post, data)
        mention = self._mention()
        if kind is not EventKind.DELETED and mention.search(str(post.get("message") or "")):
            # A question to the bot is not knowledge: kept out, it would be cited as its own answer.
            if kind is EventKind.CREATED:
                self._answer(post, channel, mention)
            return
        name = str(data.get("sender_name") or "").removeprefix("@") or self.directory.person(author).name
        team = self.directory.team_name(channel.team_id or str(data.get("team_id") or ""))
        if kind is not EventKind.DELETED:
            post = with_file_infos(post, self._driver)
        self._sink.deliver([post_event(post, kind, channel, name, team, self.context)])

    def _channel(self, post: Mapping[str, Any], data: Mapping[str, Any]) -> MattermostChannel:
        channel_id = post.get("channel_id")
        if not isinstance(channel_id, str) or not channel_id:
            raise InvalidInput("post has no channel_id")
        kind = data.get("channel_type")
        if kind in VISIBILITY_BY_TYPE and isinstance(data.get("channel_name"), str):
            # "posted" names the channel and its type; no lookup needed (edits and deletes don't).
            found = {
                "id": channel_id,
                "type": kind,
                "name": data["channel_name"],
                "team_id": data.get("team_id"),
            }
            self.directory.remember(channel_from(found))
        return self.directory.channel(channel_id)

    def _mention(self) -> re.Pattern[str]:
        username = str(self.directory.me.get("username") or "")
        if not username:
            return re.compile(r"(?!)")  # no name, no mention
        return re.compile(rf"(?<![\w.-])@{re.escape(username)}(?![\w-])", re.IGNORECASE)

    def _answer(self, post: Mapping[str, Any], channel: MattermostChannel, mention: re.Pattern[str]) -> None:
        me = self.directory.me
        given_props = post.get("props")
        props = given_props if isinstance(given_props, dict) else {}
        author = str(post.get("user_id") or "")
        is_bot = (
            author == me.get("id")
            or str(props.get("from_bot")).lower() == "true"
            or str(props.get("from_webhook")).lower() == "true"
            or self.directory.person(author).is_bot
        )
        question = " ".join(mention.sub(" ", str(post.get("message") or "")).split())
        reply = self._answerer.reply(
            self.context.workspace, channel.id, author, question, author_is_bot=is_bot, link=markdown_link
        )
        if reply is not None:
            root = post.get("root_id") or post.get("id")
            self._driver.posts.create_post(channel_id=channel.id, message=reply.text, root_id=root)

    def _channel_updated(self, data: Mapping[str, Any]) -> None:
        channel = channel_from(decode_object(data.get("channel"), "channel"))
        self.directory.remember(channel)
        self._sink.update_channel(
            Channel(self.context.workspace, channel.id, channel.name, channel.visibility, "mattermost")
        )
        log.info("Mattermost channel %s is now #%s", channel.id, channel.name)

    def _user_added(self, data: Mapping[str, Any], broadcast: Mapping[str, Any]) -> None:
        channel = broadcast.get("channel_id")
        if data.get("user_id") != self.directory.me.get("id") or not isinstance(channel, str) or not channel:
            return
        log.info("added to %s: backfilling its history", channel)
        if self._on_join is not None:
            self._on_join(self.context.workspace, channel)


@contextmanager
def _skipping_bad(raw: str) -> Iterator[None]:
    try:
        yield
    except (InvalidInput, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("Mattermost frame skipped (%s): %.120s", exc, raw)
    except TeamloreError as exc:
        log.error("Mattermost frame not recorded: %s", exc)
    except Exception:  # the listener's edge: anything else is logged with its traceback
        log.exception("Mattermost frame failed: %.120s", raw)
