"""What Mattermost events leave out, looked up once through the REST API and cached: the bot
itself, channels (name, type, team), teams' names (for permalinks), people's names and whether
they are bots. A failed lookup leaves the field to its fallback (the id)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import httpx
from mattermostautodriver import TypedDriver
from mattermostautodriver.exceptions import InvalidMattermostError, NotEnoughPermissions, ResourceNotFound

from teamlore.connectors.mattermost.posts import VISIBILITY_BY_TYPE, MattermostChannel
from teamlore.domain import Visibility
from teamlore.errors import BackendUnavailable, InvalidInput

log = logging.getLogger(__name__)
_FAILED = (httpx.HTTPError, InvalidMattermostError)  # the driver's errors derive from httpx's


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    is_bot: bool


def channel_from(found: dict[str, Any]) -> MattermostChannel:
    """A REST channel object (also the websocket's ``data.channel``)."""
    channel_id = found.get("id")
    if not isinstance(channel_id, str) or not channel_id:
        raise InvalidInput("channel has no id")
    visibility = VISIBILITY_BY_TYPE.get(str(found.get("type")), Visibility.PUBLIC)
    name = str(found.get("name") or "")
    if visibility is Visibility.DM:
        name = f"dm-{channel_id}"  # a direct channel's name is its members' ids
    total = found.get("total_msg_count")
    total = total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None
    return MattermostChannel(channel_id, name, visibility, str(found.get("team_id") or ""), total)


class MattermostDirectory:
    def __init__(self, driver: TypedDriver) -> None:
        self.driver = driver
        self._me: dict[str, Any] | None = None
        self._channels: dict[str, MattermostChannel] = {}
        self._teams: dict[str, str] = {}
        self._people: dict[str, Person] = {}

    @property
    def me(self) -> dict[str, Any]:
        if self._me is None:
            try:
                self._me = self.driver.users.get_user("me")
            except _FAILED as exc:
                raise BackendUnavailable(
                    f"Mattermost users/me failed: {exc}; check TEAMLORE_MATTERMOST_URL and _TOKEN"
                ) from exc
        return self._me

    def channel(self, channel_id: str) -> MattermostChannel:
        if channel_id not in self._channels:
            try:
                self._channels[channel_id] = channel_from(self.driver.channels.get_channel(channel_id))
            except ResourceNotFound as exc:
                raise InvalidInput(
                    f"Mattermost knows no channel {channel_id} (or the bot cannot see it)"
                ) from exc
            except _FAILED as exc:
                raise BackendUnavailable(f"Mattermost channel {channel_id}: {exc}") from exc
        return self._channels[channel_id]

    def remember(self, channel: MattermostChannel) -> None:
        self._channels[channel.id] = channel

    def is_member(self, channel_id: str) -> bool:
        try:
            self.driver.channels.get_channel_member(channel_id, self.me["id"])
        except (ResourceNotFound, NotEnoughPermissions):
            return False
        except _FAILED as exc:
            raise BackendUnavailable(f"Mattermost channel membership {channel_id}: {exc}") from exc
        return True

    def team_name(self, team_id: str) -> str:
        if not team_id:
            return ""
        if team_id not in self._teams:
            try:
                self._teams[team_id] = str(self.driver.teams.get_team(team_id).get("name") or "")
            except _FAILED as exc:
                log.warning("team %s lookup failed (%s); permalinks go through _redirect", team_id, exc)
                return ""
        return self._teams[team_id]

    def person(self, user_id: str) -> Person:
        if not user_id:
            return Person("", False)
        if user_id not in self._people:
            try:
                found = self.driver.users.get_user(user_id)
            except _FAILED as exc:
                log.warning("user %s lookup failed (%s); the author is named by id", user_id, exc)
                return Person(user_id, False)
            self._people[user_id] = Person(str(found.get("username") or user_id), bool(found.get("is_bot")))
        return self._people[user_id]
