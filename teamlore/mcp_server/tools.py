"""What an MCP client may do: six read-only tools and the wiki pages as resources.

Every call resolves the caller's token to a grant and the channels asked for to a Scope through
``Access`` (the same rule as the HTTP API), then calls a capability and renders it with
``views``. Nothing here writes: the tools are declared read-only and call only read paths.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from mcp_types import Resource, ToolAnnotations
from pydantic import Field

from teamlore.app import Teamlore
from teamlore.capabilities import views
from teamlore.capabilities.access import Access
from teamlore.capabilities.facts import SearchMode
from teamlore.domain import ReadView, Scope
from teamlore.errors import InvalidInput, NotFound
from teamlore.mcp_server.refusals import resource_refusals, tool_refusals
from teamlore.timeutil import parse_time
from teamlore.wiki.model import PageRef

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
PAGE_URI = "teamlore://pages/{workspace}/{channel}/{slug}{?version}"

Channels = Annotated[
    list[str] | None,
    Field(description="Channel ids to read, e.g. ['C01ENG']. Default: every channel the token may read."),
]
AsOf = Annotated[
    str | None,
    Field(
        description="ISO 8601 time (2026-03-01 or 2026-03-01T12:00:00Z): what was true then. Default: now."
    ),
]


class Caller:
    """The grant and scope of the request being served. ``token`` returns the current request's
    token: the one from the environment over stdio, the bearer token over HTTP."""

    def __init__(self, access: Access, token: Callable[[], str | None]) -> None:
        self._access = access
        self._token = token

    def scope(self, channels: list[str] | None, workspace: str | None = None) -> Scope:
        # Authenticated on every call, so a revoked token stops working at once.
        return self._access.scope(self._access.authenticate(self._token()), workspace, channels)


class ReadTools:
    def __init__(self, lore: Teamlore, caller: Caller) -> None:
        self._lore = lore
        self._caller = caller

    def tools(self) -> list[Callable[..., dict[str, Any]]]:
        return [
            self.search_facts,
            self.ask,
            self.list_pages,
            self.get_page,
            self.get_fact_history,
            self.recent_activity,
        ]

    def search_facts(
        self,
        query: Annotated[str, Field(description="What to look for, in words.")],
        channels: Channels = None,
        as_of: AsOf = None,
        known_at: Annotated[
            str | None, Field(description="ISO 8601 time: what Teamlore had recorded by then. Default: now.")
        ] = None,
        include_history: Annotated[
            bool, Field(description="Also return retired facts (superseded, retracted).")
        ] = False,
        mode: SearchMode = SearchMode.HYBRID,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many results.")] = 10,
    ) -> dict[str, Any]:
        """Search the team's facts and what was said. Each result has a ``kind``: ``fact`` (one
        statement with its status, valid interval and source messages), ``message`` (a message
        no fact covers, cited as itself) or, with history, ``retired_fact``. Sources carry author,
        time and permalink; the receipt says how the search ran."""
        with tool_refusals():
            scope = self._caller.scope(channels)
            view = ReadView(_time(as_of, "as_of"), _time(known_at, "known_at"), include_history)
            return views.search_json(self._lore.reader.search(query, scope, view, mode, limit))

    def ask(
        self,
        question: Annotated[str, Field(description="A question, in words.")],
        channels: Channels = None,
        as_of: AsOf = None,
        limit: Annotated[int, Field(ge=1, le=20, description="At most this many facts cited.")] = 5,
    ) -> dict[str, Any]:
        """Answer a question from the facts, citing each one with its source messages and
        dates; says plainly when nothing is known."""
        with tool_refusals():
            scope = self._caller.scope(channels)
            return views.answer_json(self._lore.ask(question, scope, ReadView(_time(as_of, "as_of")), limit))

    def list_pages(self, channels: Channels = None) -> dict[str, Any]:
        """The wiki pages of the channels, with the URI to read each as a resource."""
        with tool_refusals():
            listed = self._lore.pages.list(self._caller.scope(channels))
            return {"pages": [{**_page_summary(p.page), "version": p.version} for p in listed]}

    def get_page(
        self,
        slug: Annotated[str, Field(description="The page's slug, as list_pages gives it.")],
        channels: Channels = None,
        version: Annotated[int | None, Field(ge=1, description="An older version. Default: current.")] = None,
        as_of: Annotated[
            str | None, Field(description="ISO 8601 time: the version that was current then.")
        ] = None,
    ) -> dict[str, Any]:
        """One wiki page with its sections and the fact ids each section cites. A slug that
        exists in several of the channels needs one channel named."""
        with tool_refusals():
            shown = self._lore.pages.get(slug, self._caller.scope(channels), version, _time(as_of, "as_of"))
            return {**views.page_json(shown), "uri": _page_uri(shown.page)}

    def get_fact_history(
        self,
        fact_id: Annotated[str, Field(description="A fact id from search_facts, ask or a page.")],
        channels: Channels = None,
    ) -> dict[str, Any]:
        """Every version of a fact on both time axes (valid and recorded) and its audit events:
        when it was created, superseded, contested, retracted, reviewed."""
        with tool_refusals():
            scope = self._caller.scope(channels)
            history = self._lore.reader.history(fact_id, scope)
            if not history.versions:
                raise NotFound(f"no fact {fact_id} in channel(s) {', '.join(sorted(scope.channels))}")
            return views.history_json(history)

    def recent_activity(
        self,
        channels: Channels = None,
        since: Annotated[
            str | None, Field(description="ISO 8601 time to start from. Default: a week ago.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many events.")] = 50,
    ) -> dict[str, Any]:
        """What changed recently in the channels, newest first: facts created, superseded,
        contested, retracted, reviewed."""
        with tool_refusals():
            scope = self._caller.scope(channels)
            found = self._lore.recent_activity(scope, _time(since, "since"), limit)
            return {"events": [views.activity_json(a) for a in found]}

    # ---- the wiki pages as resources ----

    def read_page(self, workspace: str, channel: str, slug: str, version: int | None = None) -> str:
        """A wiki page as Markdown (an older version with ?version=N)."""
        uri = _page_uri_of(workspace, channel, slug)
        with resource_refusals(uri):
            scope = self._caller.scope([channel], workspace)
            return self._lore.pages.get(slug, scope, version).markdown

    def page_resources(self) -> list[Resource]:
        """Every page the caller may read, as a concrete resource for resources/list."""
        with resource_refusals("teamlore://pages"):
            listed = self._lore.pages.list(self._caller.scope(None))
        return [
            Resource(
                uri=_page_uri(p.page),
                name=p.page.page_id,
                title=p.page.title,
                description=f"{p.page.kind.value} page of channel {p.page.channel}, version {p.version}",
                mime_type="text/markdown",
            )
            for p in listed
        ]


def _time(value: str | None, name: str) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise InvalidInput(f"{name}: {exc}") from None


def _page_uri_of(workspace: str, channel: str, slug: str) -> str:
    return f"teamlore://pages/{workspace}/{channel}/{slug}"


def _page_uri(page: PageRef) -> str:
    return _page_uri_of(page.workspace, page.channel, page.slug)


def _page_summary(page: PageRef) -> dict[str, Any]:
    return {
        "page_id": page.page_id,
        "slug": page.slug,
        "title": page.title,
        "kind": page.kind.value,
        "channel": page.channel,
        "uri": _page_uri(page),
    }
