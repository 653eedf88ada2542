"""What live Slack events leave out, looked up once through the Web API and cached: the
workspace's own URL and the bot's ids (auth.test), channel names and types (conversations.info),
people's names (users.info). A lookup that fails leaves the field to its fallback (the id), never
the event unrecorded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from teamlore.connectors.slack_export import SlackChannel
from teamlore.domain import Visibility
from teamlore.errors import BackendUnavailable

log = logging.getLogger(__name__)

# Slack's words for a channel's type, in events ("channel_type") and in member_joined_channel.
VISIBILITY_BY_TYPE = {
    "channel": Visibility.PUBLIC,
    "C": Visibility.PUBLIC,
    "group": Visibility.PRIVATE,
    "G": Visibility.PRIVATE,
    "im": Visibility.DM,
    "mpim": Visibility.DM,
}


@dataclass(frozen=True, slots=True)
class Identity:
    team_id: str
    archives_url: str  # https://DOMAIN.slack.com/archives
    bot_user_id: str
    bot_id: str


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    channel: SlackChannel
    is_member: bool
    created: float | None  # seconds since the epoch; the backfill's estimate starts from it


def visibility_of(info: Mapping[str, Any]) -> Visibility:
    """A conversations.info "channel" object's visibility."""
    if info.get("is_im") or info.get("is_mpim"):
        return Visibility.DM
    return Visibility.PRIVATE if info.get("is_private") else Visibility.PUBLIC


class SlackUsers(Mapping[str, Mapping[str, Any]]):
    """User id -> users.info "user", fetched on first use; shaped like an export's users.json."""

    def __init__(self, client: WebClient) -> None:
        self._client = client
        self._known: dict[str, Mapping[str, Any]] = {}

    def __getitem__(self, user_id: str) -> Mapping[str, Any]:
        if user_id not in self._known:
            if not user_id:
                raise KeyError(user_id)
            try:
                self._known[user_id] = self._client.users_info(user=user_id)["user"]
            except (SlackClientError, KeyError, TypeError) as exc:
                log.warning("users.info %s failed (%s); the author is named by id", user_id, exc)
                self._known[user_id] = {}
        return self._known[user_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)


class SlackDirectory:
    def __init__(self, client: WebClient) -> None:
        self.client = client
        self.users = SlackUsers(client)
        self._identity: Identity | None = None
        self._channels: dict[str, ChannelInfo] = {}

    def identity(self) -> Identity:
        if self._identity is None:
            try:
                found = self.client.auth_test()
            except SlackClientError as exc:
                raise BackendUnavailable(
                    f"Slack auth.test failed: {exc}; check TEAMLORE_SLACK_BOT_TOKEN"
                ) from exc
            url = str(found.get("url") or "https://slack.com/").rstrip("/")
            self._identity = Identity(
                str(found.get("team_id", "")),
                f"{url}/archives",
                str(found.get("user_id", "")),
                str(found.get("bot_id", "")),
            )
        return self._identity

    def channel(self, channel_id: str, channel_type: str | None = None) -> SlackChannel:
        """The channel as events should name it; the event's own type wins over a cached one."""
        info = self.info(channel_id, required=False)
        known = info.channel if info else SlackChannel(channel_id, "", Visibility.PUBLIC)
        visibility = VISIBILITY_BY_TYPE.get(channel_type or "", known.visibility)
        return SlackChannel(channel_id, known.name, visibility)

    def info(self, channel_id: str, *, required: bool = True) -> ChannelInfo | None:
        if channel_id not in self._channels:
            try:
                found = self.client.conversations_info(channel=channel_id)["channel"]
            except SlackApiError as exc:
                if required:
                    raise BackendUnavailable(
                        f"conversations.info {channel_id}: {exc.response.get('error')}"
                    ) from exc
                log.warning("conversations.info %s failed (%s); its name stays as stored", channel_id, exc)
                return None
            except SlackClientError as exc:
                if required:
                    raise BackendUnavailable(f"conversations.info {channel_id}: {exc}") from exc
                log.warning("conversations.info %s failed (%s)", channel_id, exc)
                return None
            name = str(found.get("name") or (f"dm-{channel_id}" if found.get("is_im") else ""))
            created = found.get("created")
            self._channels[channel_id] = ChannelInfo(
                SlackChannel(channel_id, name, visibility_of(found)),
                bool(found.get("is_member")),
                float(created) if isinstance(created, int | float) else None,
            )
        return self._channels[channel_id]

    def renamed(self, channel_id: str, name: str, visibility: Visibility) -> SlackChannel:
        channel = SlackChannel(channel_id, name, visibility)
        old = self._channels.get(channel_id)
        self._channels[channel_id] = ChannelInfo(
            channel, old.is_member if old else True, old.created if old else None
        )
        return channel

    def forget(self, channel_id: str) -> None:
        self._channels.pop(channel_id, None)
