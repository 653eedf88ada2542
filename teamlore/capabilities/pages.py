"""Reading the wiki inside a scope: which pages exist, one page at a version or a moment, its
versions, a diff between two, and the page as it reads for what was true at a date.

A page belongs to one channel, so the scope decides which pages can be named at all: a slug is
looked up only in the scope's channels, and a page of another channel is "not found" here (the
caller's access check has already refused a channel outside the grant). Surfaces (CLI, HTTP API,
web wiki, MCP) call this, never the page store.
"""

from __future__ import annotations

import builtins
import difflib
from dataclasses import dataclass
from datetime import datetime

from teamlore.domain import Scope
from teamlore.errors import InvalidInput, NotFound
from teamlore.stores.protocols import PageStore
from teamlore.timeutil import iso
from teamlore.wiki.maintainer import WikiMaintainer
from teamlore.wiki.model import PageRef, PageVersion

# Lines of unchanged context around each change in a diff.
DIFF_CONTEXT = 2


@dataclass(frozen=True, slots=True)
class PageListing:
    page: PageRef
    version: int  # the current version


@dataclass(frozen=True, slots=True)
class VersionEntry:
    version: int
    created_at: datetime


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # hunk | added | removed | same
    text: str


@dataclass(frozen=True, slots=True)
class PageDiff:
    page: PageRef
    older: int
    newer: int
    lines: tuple[DiffLine, ...]

    @property
    def unified(self) -> str:
        marks = {"hunk": "", "added": "+", "removed": "-", "same": " "}
        return "\n".join(marks[line.kind] + line.text for line in self.lines)


@dataclass(frozen=True, slots=True)
class AsOf:
    """A page rendered from the facts true at a moment, and the stored version current then."""

    rendered: PageVersion  # version 0: a rendering, not a stored version
    stored_version: int | None  # None: the wiki had not written this page yet at that moment


class PageReader:
    """The wiki's pages for a scope: listings, versions, diffs, and a page as of a moment."""

    def __init__(self, pages: PageStore, maintainer: WikiMaintainer | None = None) -> None:
        self._pages = pages
        self._maintainer = maintainer

    def list(self, scope: Scope) -> list[PageListing]:
        """Written pages of the scope's channels, channel by channel, overview first."""
        return [PageListing(p, v) for p, v in self._pages.pages(scope.workspace, scope.channels) if v]

    def get(
        self, slug: str, scope: Scope, version: int | None = None, as_of: datetime | None = None
    ) -> PageVersion:
        """The page named ``slug`` in the scope's channels: its current version, a numbered
        version, or the version that was current at ``as_of`` (transaction time: the page as
        Teamlore had written it then)."""
        if version is not None and as_of is not None:
            raise InvalidInput("give a version or an as-of time, not both")
        if version is not None and version < 1:
            raise InvalidInput(f"page versions start at 1, got {version}")
        current = self._current(slug, scope)
        if version is not None:
            return self._numbered(current, version)
        if as_of is not None:
            return self._as_of(current, as_of)
        return current

    def versions(self, slug: str, scope: Scope) -> builtins.list[VersionEntry]:
        """Every stored version, newest first."""
        current = self._current(slug, scope)
        found = [VersionEntry(current.version, current.created_at)]
        for number in range(current.version - 1, 0, -1):
            older = self._pages.version(current.page.page_id, number)
            if older is not None:  # erasure restarts numbering; gaps are possible
                found.append(VersionEntry(older.version, older.created_at))
        return found

    def diff(self, slug: str, scope: Scope, older: int, newer: int) -> PageDiff:
        """A line diff of the two versions' Markdown, the older first whatever the order given."""
        if older == newer:
            raise InvalidInput("a diff needs two different versions")
        a = self.get(slug, scope, min(older, newer))
        b = self.get(slug, scope, max(older, newer))
        lines: list[DiffLine] = []
        raw = difflib.unified_diff(
            a.markdown.splitlines(), b.markdown.splitlines(), lineterm="", n=DIFF_CONTEXT
        )
        for line in list(raw)[2:]:  # the first two lines are the ---/+++ file headers
            if line.startswith("@@"):
                lines.append(DiffLine("hunk", line))
            else:
                kind = {"+": "added", "-": "removed"}.get(line[:1], "same")
                lines.append(DiffLine(kind, line[1:]))
        return PageDiff(a.page, a.version, b.version, tuple(lines))

    def render_as_of(self, slug: str, scope: Scope, moment: datetime) -> AsOf:
        """The page as it reads for what was true at ``moment`` (valid time): every section
        rendered from the facts valid then, as known now; and which stored version the wiki
        showed at that time."""
        if self._maintainer is None:
            raise InvalidInput("this page reader has no wiki writer to render a past date")
        current = self._current(slug, scope)
        rendered = self._maintainer.render_as_of(current.page.page_id, moment)
        if rendered is None:
            raise NotFound(f"no page {slug} in this channel")
        stored = next((v.version for v in self.versions(slug, scope) if v.created_at <= moment), None)
        return AsOf(rendered, stored)

    def _current(self, slug: str, scope: Scope) -> PageVersion:
        slug = (slug or "").strip()
        if not slug or "/" in slug:
            raise InvalidInput(f"not a page slug: {slug!r}")
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
        return found[0]

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
