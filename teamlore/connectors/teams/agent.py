"""The Teams agent (Microsoft 365 Agents SDK): live capture, renames, answers when mentioned.

Activities handled: ``message`` (a post or reply; one that mentions the bot is a question),
``messageUpdate`` with channelData ``eventType`` ``editMessage``, ``messageDelete`` with
``softDeleteMessage``, and ``conversationUpdate`` with ``channelRenamed``. Anything else is logged
and skipped. The bot never answers a bot, itself included. In a 1:1 (personal) chat nobody
mentions the bot: every message there is a question, answered from the tenant's standard
channels, and nothing said there is stored.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from microsoft_agents.activity import Activity, TurnContextProtocol
from microsoft_agents.hosting.core import ActivityHandler, MessageFactory

from teamlore.app import Teamlore
from teamlore.connectors.answering import ChannelAnswerer, markdown_link
from teamlore.connectors.delivery import EventSink
from teamlore.connectors.live import SerialWorker
from teamlore.connectors.teams.catchup import remember_team
from teamlore.connectors.teams.normalize import (
    Place,
    attachments_of,
    permalink,
    thread_of,
    to_text,
    visibility_of,
)
from teamlore.domain import EventKind, MessageEvent, Visibility, parse_event
from teamlore.errors import InvalidInput, TeamloreError

log = logging.getLogger(__name__)
# (tenant, channel id) -> the visibility known from elsewhere (a Graph backfill recorded the
# channel's membershipType), for channels whose activities do not carry it.
KnownVisibility = Callable[[str, str], Visibility | None]
OnJoin = Callable[[str], object]  # told a team's group id when the bot is added to the team
Turn = TurnContextProtocol[Activity]  # what the SDK hands each handler (a TurnContext)


class TeamloreTeamsAgent(ActivityHandler):
    def __init__(
        self,
        lore: Teamlore,
        *,
        known_visibility: KnownVisibility | None = None,
        worker: SerialWorker | None = None,
        on_join: OnJoin | None = None,
    ) -> None:
        self.lore = lore
        self.sink = EventSink(lore)
        self.answerer = ChannelAnswerer(lore)
        self.worker = worker or SerialWorker()
        self._known = known_visibility or (lambda tenant, channel_id: None)
        self._on_join = on_join
        self._teams_seen: set[tuple[str, str]] = set()

    async def on_turn(self, turn_context: Turn) -> None:
        try:
            await super().on_turn(turn_context)
        except (InvalidInput, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("teams: %s activity skipped: %s", turn_context.activity.type, exc)

    async def on_message_activity(self, turn_context: Turn) -> None:
        activity = turn_context.activity
        if _from_a_bot(activity):
            return
        if _personal(activity):
            await self._answer(turn_context, personal=True)
            return
        if activity.is_recipient_mentioned():
            await self._answer(turn_context)  # a question to the bot, not channel knowledge
            return
        await self._deliver(self._event(EventKind.CREATED, activity), _team_of(activity))

    async def on_message_update_activity(self, turn_context: Turn) -> None:
        activity = turn_context.activity
        if _personal(activity):
            return  # questions to the bot: never stored, so nothing to edit
        if _event_type(activity) != "editMessage" or _from_a_bot(activity):
            log.info("teams: messageUpdate %s ignored", _event_type(activity) or "(no eventType)")
            return
        if activity.is_recipient_mentioned():
            return  # an edited question: it was never stored
        await self._deliver(self._event(EventKind.EDITED, activity))

    async def on_message_delete_activity(self, turn_context: Turn) -> None:
        activity = turn_context.activity
        if _personal(activity):
            return
        if _event_type(activity) != "softDeleteMessage":
            log.info("teams: messageDelete %s ignored", _event_type(activity) or "(no eventType)")
            return
        await self._deliver(self._event(EventKind.DELETED, activity))

    async def on_conversation_update_activity(self, turn_context: Turn) -> None:
        activity = turn_context.activity
        if _event_type(activity) == "channelRenamed":
            place = self._place(activity)
            log.info("teams: channel %s is now %s", place.channel, place.channel_name)
            await self.worker.call(self.sink.update_channel, place.as_channel())
            return
        await super().on_conversation_update_activity(turn_context)

    async def on_members_added_activity(self, members_added: list[Any], turn_context: Turn) -> None:
        activity = turn_context.activity
        bot = activity.recipient.id if activity.recipient is not None else None
        team = str((_channel_data(activity).get("team") or {}).get("aadGroupId") or "")
        if self._on_join is not None and team and any(m.id == bot for m in members_added):
            log.info("teams: added to team %s; backfill queued", team)
            self._on_join(team)

    async def on_unrecognized_activity_type(self, turn_context: Turn) -> None:
        log.info("teams: activity type %r skipped", turn_context.activity.type)

    # -- internals ----------------------------------------------------------------------

    def _place(self, activity: Activity) -> Place:
        data = _channel_data(activity)
        tenant = str(
            (data.get("tenant") or {}).get("id") or getattr(activity.conversation, "tenant_id", "") or ""
        )
        if not tenant:
            raise InvalidInput("activity names no tenant (channelData.tenant.id)")
        conversation_type = getattr(activity.conversation, "conversation_type", None) or "channel"
        channel = data.get("channel") or {}
        if conversation_type != "channel" or not channel.get("id"):
            chat_id = str(activity.conversation.id).split(";")[0]
            return Place(tenant, chat_id, str(activity.conversation.name or ""), Visibility.DM)
        channel_id = str(channel["id"])
        membership = channel.get("membershipType") or channel.get("type")
        visibility = visibility_of(membership) if membership else self._known(tenant, channel_id)
        return Place(tenant, channel_id, str(channel.get("name") or ""), visibility or visibility_of(None))

    def _event(self, kind: EventKind, activity: Activity) -> MessageEvent:
        place = self._place(activity)
        mid = str(activity.id or "")
        root = _root_id(activity)
        data = _channel_data(activity)
        group = str((data.get("team") or {}).get("aadGroupId") or "")
        sender = activity.from_property
        fields: dict[str, Any] = {
            "kind": kind.value,
            **place.fields(),
            "message_id": mid,
            "thread_id": thread_of(mid, root),
            "author_id": str(getattr(sender, "aad_object_id", None) or getattr(sender, "id", "") or ""),
            "author_name": str(getattr(sender, "name", "") or "")[:200],
            "ts": activity.timestamp,
            "permalink": permalink(place.channel, mid, root, place.workspace, group)
            if place.visibility is not Visibility.DM
            else "",
        }
        if kind is not EventKind.DELETED:
            fields["text"] = to_text(activity.text or "", str(activity.text_format or "html"))
            fields["attachments"] = attachments_of(activity.attachments)
        return parse_event(fields, self.lore.settings.max_message_chars)

    async def _deliver(self, event: MessageEvent, team: str = "") -> None:
        try:
            if team and (event.workspace, event.channel) not in self._teams_seen:
                # Graph reads a channel through its team: the catch-up on the next start needs it.
                await self.worker.call(
                    remember_team, self.lore.stores.checkpoints, event.workspace, event.channel, team
                )
                self._teams_seen.add((event.workspace, event.channel))
            await self.worker.call(self.sink.deliver, [event])
        except TeamloreError as exc:
            log.error("teams: delivery of %s failed: %s", event.message_id, exc)

    async def _answer(self, turn_context: Turn, personal: bool = False) -> None:
        activity = turn_context.activity
        place = self._place(activity)
        channels = self._standard_channels(place.workspace) if personal else None
        if channels == []:
            await turn_context.send_activity(MessageFactory.text("I know no standard channel here yet."))
            return
        question = to_text(activity.remove_recipient_mention() or activity.text or "")
        ask = functools.partial(
            self.answerer.reply,
            place.workspace,
            place.channel,
            str(getattr(activity.from_property, "aad_object_id", None) or activity.from_property.id),
            question,
            author_is_bot=False,  # bots were turned away before; the rate limit still applies
            link=markdown_link,
            channels=channels,
        )
        try:
            reply = await self.worker.call(ask)
        except TeamloreError as exc:
            log.error("teams: answering failed: %s", exc)
            return
        if reply is not None:
            answer = MessageFactory.text(reply.text)
            answer.text_format = "markdown"
            await turn_context.send_activity(answer)

    def _standard_channels(self, tenant: str) -> list[str]:
        """What a 1:1 chat may be answered from: the tenant's standard channels the store knows
        (public to their team; private and shared channels, and other chats, never)."""
        known = self.lore.stores.messages.channels(tenant)
        return [c.channel for c in known if c.platform == "teams" and c.visibility is Visibility.PUBLIC]


def _team_of(activity: Activity) -> str:
    """The team's group id of a channel activity ("" for chats)."""
    return str((_channel_data(activity).get("team") or {}).get("aadGroupId") or "")


def _personal(activity: Activity) -> bool:
    return getattr(activity.conversation, "conversation_type", None) == "personal"


def _from_a_bot(activity: Activity) -> bool:
    sender, recipient = activity.from_property, activity.recipient
    if sender is None:
        return True
    if recipient is not None and sender.id == recipient.id:
        return True
    return str(getattr(sender, "role", "") or "").lower() in ("bot", "agent", "skill")


def _channel_data(activity: Activity) -> Mapping[str, Any]:
    data = activity.channel_data
    if data is None:
        return {}
    if isinstance(data, Mapping):
        return data
    if hasattr(data, "model_dump"):
        dumped: Mapping[str, Any] = data.model_dump(by_alias=True, exclude_none=True)
        return dumped
    raise InvalidInput(f"channelData of type {type(data).__name__}")


def _event_type(activity: Activity) -> str:
    return str(_channel_data(activity).get("eventType") or "")


def _root_id(activity: Activity) -> str | None:
    """A channel reply's conversation id ends with ``;messageid=<root post id>``."""
    _, _, root = str(activity.conversation.id).partition(";messageid=")
    return root or activity.reply_to_id or None
