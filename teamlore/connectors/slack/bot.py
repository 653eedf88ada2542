"""The Slack connector as a Bolt app: capture, channel renames, joins, and Q&A in the channel.

Bolt verifies every HTTP request's signature and timestamp (its RequestVerification middleware)
and answers url_verification; it drops the bot's own events (IgnoringSelfEvents). Listeners here
normalize and hand events to the ``EventSink``; a payload that cannot be used is logged and
skipped, never raised into Bolt, so one bad event never stops the listener.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from teamlore.app import Teamlore
from teamlore.connectors.answering import ChannelAnswerer, slack_link
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.slack.directory import VISIBILITY_BY_TYPE, SlackDirectory
from teamlore.connectors.slack.events import message_event, question_text
from teamlore.connectors.slack_export import SlackContext
from teamlore.domain import Channel, Visibility
from teamlore.errors import InvalidInput, TeamloreError

log = logging.getLogger(__name__)

COMMAND = "/teamlore"
OnJoin = Callable[[str, str], object]  # (workspace, channel): start that channel's backfill


class SlackBot:
    def __init__(
        self,
        lore: Teamlore,
        client: WebClient,
        *,
        sink: EventSink | None = None,
        answerer: ChannelAnswerer | None = None,
        on_join: OnJoin | None = None,
        process_before_response: bool = False,
    ) -> None:
        self.directory = SlackDirectory(client)
        self._lore = lore
        self._sink = sink or EventSink(lore)
        self._answerer = answerer or ChannelAnswerer(lore)
        self._on_join = on_join
        self.app = App(
            client=client,
            signing_secret=lore.settings.slack_signing_secret,
            process_before_response=process_before_response,
            logger=log,
            # Bolt acknowledges at once and runs listeners after; one worker keeps them in the
            # order Slack sent them, so an edit is never applied before the message it changes.
            listener_executor=ThreadPoolExecutor(max_workers=1, thread_name_prefix="teamlore-slack"),
        )
        self.app.event("message")(self._message)
        self.app.event("app_mention")(self._mention)
        self.app.event("member_joined_channel")(self._joined)
        self.app.event(re.compile(r"^(channel|group)_rename$"))(self._renamed)
        self.app.command(COMMAND)(self._command)
        self.app.event(re.compile(".*"))(self._other)  # subscribed but unused: acknowledged, logged
        self.app.error(self._error)

    def _context(self, workspace: str) -> SlackContext:
        identity = self.directory.identity()
        return SlackContext(
            workspace, self.directory.users, identity.archives_url, self._lore.settings.max_message_chars
        )

    def _message(self, body: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        with _skipping_bad(event):
            channel = self.directory.channel(_text(event, "channel"), event.get("channel_type"))
            found = message_event(event, channel, self._context(_team(body)))
            if found is not None and f"<@{self.directory.identity().bot_user_id}" in found.text:
                # A question to the bot (answered on app_mention) is not knowledge: kept out, it
                # would be cited as its own answer.
                return
            if found is not None:
                self._sink.deliver([found])

    def _mention(self, body: Mapping[str, Any], event: Mapping[str, Any], client: WebClient) -> None:
        with _skipping_bad(event):
            identity = self.directory.identity()
            channel = _text(event, "channel")
            reply = self._answerer.reply(
                _team(body),
                channel,
                _text(event, "user"),
                question_text(_text(event, "text"), identity.bot_user_id),
                author_is_bot=bool(event.get("bot_id")) or event.get("user") == identity.bot_user_id,
                link=slack_link,
            )
            if reply is not None:
                thread = event.get("thread_ts") or _text(event, "ts")
                client.chat_postMessage(
                    channel=channel, text=reply.text, thread_ts=thread, unfurl_links=False
                )

    def _command(self, ack: Ack, body: Mapping[str, Any], respond: Respond) -> None:
        ack()  # within Slack's 3 seconds; the answer follows through the response_url
        with _skipping_bad(body):
            reply = self._answerer.reply(
                _text(body, "team_id"),
                _text(body, "channel_id"),
                _text(body, "user_id"),
                str(body.get("text") or ""),
                author_is_bot=False,  # only people can type a slash command
                link=slack_link,
            )
            if reply is not None:
                respond(text=reply.text, response_type="in_channel", unfurl_links=False)

    def _joined(self, body: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        with _skipping_bad(event):
            if event.get("user") != self.directory.identity().bot_user_id:
                return
            channel = _text(event, "channel")
            self.directory.forget(channel)  # membership changed
            log.info("joined %s: backfilling its history", channel)
            if self._on_join is not None:
                self._on_join(_team(body), channel)

    def _renamed(self, body: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        with _skipping_bad(event):
            renamed = event.get("channel")
            if not isinstance(renamed, dict):
                raise InvalidInput("rename event without a channel object")
            channel_id, name = _text(renamed, "id"), _text(renamed, "name")
            default = Visibility.PRIVATE if event.get("type") == "group_rename" else Visibility.PUBLIC
            visibility = Visibility.PRIVATE if renamed.get("is_private") else default
            self.directory.renamed(channel_id, name, visibility)
            self._sink.update_channel(Channel(_team(body), channel_id, name, visibility, "slack"))
            log.info("channel %s renamed to #%s", channel_id, name)

    def _other(self, event: Mapping[str, Any]) -> None:
        log.info("Slack event %r is not used; skipped", event.get("type"))

    def _error(self, error: Exception, body: Mapping[str, Any]) -> None:
        log.error("Slack request %s failed: %s", body.get("event_id") or body.get("type"), error)


@contextmanager
def _skipping_bad(payload: Mapping[str, Any]) -> Iterator[None]:
    """Log and skip what cannot be used; never let it reach Bolt (and Slack's retries)."""
    what = f"{payload.get('type', 'payload')} {payload.get('ts') or ''}".strip()
    try:
        yield
    except (InvalidInput, KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("Slack %s skipped: %s", what, exc)
    except TeamloreError as exc:
        log.error("Slack %s not recorded: %s", what, exc)
    except Exception:  # the listener's edge: anything else is logged with its traceback
        log.exception("Slack %s failed", what)


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"no {key} in the payload")
    return value


def _team(body: Mapping[str, Any]) -> str:
    """The workspace an event belongs to (Events API: team_id; some payloads only team.id)."""
    team = body.get("team_id")
    if not team and isinstance(body.get("team"), dict):
        team = body["team"].get("id")
    if not isinstance(team, str) or not team:
        raise InvalidInput("no team_id in the payload")
    return team


__all__ = ["COMMAND", "SlackBot", "VISIBILITY_BY_TYPE"]
