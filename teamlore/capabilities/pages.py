"""Reading the wiki inside a scope: which pages exist, and one page at a version or a moment.

A page belongs to one channel, so the scope decides which pages can be named at all: a slug is
looked up only in the scope's channels, and a page of another channel is "not found" here (the
caller's access check has already refused a channel outside the grant).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from teamlore.domain import Scope
from teamlore.errors import InvalidInput, NotFound
from teamlore.stores.protocols import PageStore
from teamlore.timeutil import iso
from teamlore.wiki.model import PageRef, PageVersion


@dataclass(frozen=True, slots=True)
class PageListing:
    page: PageRef
    version: int  # the current version


class PageReader:
    def __init__(self, pages: PageStore) -> None:
        self._pages = pages

    def list(self, scope: Scope) -> list[PageListing]:
        """Written pages of the scope's channels, channel by channel, overview first."""
        return [PageListing(p, v) for p, v in self._pages.pages(scope.workspace, scope.channels) if v]

    def get(
        self, slug: str, scope: Scope, version: int | None = None, as_of: datetime | None = None
    ) -> PageVersion:
        """The page named ``slug`` in the scope's channels: its current version, a numbered
        version, or the version that was current at ``as_of`` (transaction time: the page as
        Teamlore had written it then)."""
        slug = (slug or "").strip()
        if not slug:
            raise InvalidInput("a page needs a slug")
        if version is not None and as_of is not None:
            raise InvalidInput("give a version or an as-of time, not both")
        if version is not None and version < 1:
            raise InvalidInput(f"page versions start at 1, got {version}")
        found = [
            current
            for channel in sorted(scope.channels)
            if (current := self._pages.current(f"{scope.workspace}/{channel}/{slug}")) is not None
        ]
        if not found:
            raise NotFound(f"no page {slug} in channel(s) {', '.join(sorted(scope.channels))}")
        if len(found) > 1:
            channels = ", ".join(v.page.channel for v in found)
            raise InvalidInput(f"page {slug} exists in channels {channels}: name one channel")
        current = found[0]
        if version is not None:
            return self._numbered(current, version)
        if as_of is not None:
            return self._as_of(current, as_of)
        return current

    def _numbered(self, current: PageVersion, version: int) -> PageVersion:
        shown = self._pages.version(current.page.page_id, version) if version <= current.version else None
        if shown is None:
            raise NotFound(f"page {current.page.slug} has versions 1 to {current.version}, not {version}")
        return shown

    def _as_of(self, current: PageVersion, moment: datetime) -> PageVersion:
        shown: PageVersion | None = current
        while shown is not None and shown.created_at > moment:
            shown = (
                self._pages.version(current.page.page_id, shown.version - 1) if shown.version > 1 else None
            )
        if shown is None:
            raise NotFound(f"page {current.page.slug} was first written after {iso(moment)}")
        return shown
