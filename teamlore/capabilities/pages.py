"""Reading the wiki: pages of the channels a reader may see, any version, diffs, "as of" a date.

A page belongs to one channel, so every call that names a page takes a scope of exactly that
channel; a page of another channel is "not found", whatever exists elsewhere. Surfaces (CLI,
HTTP API, web wiki, MCP) call this, never the page store.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime

from teamlore.domain import Scope
from teamlore.errors import InvalidInput, NotFound
from teamlore.stores.protocols import PageStore
from teamlore.wiki.maintainer import WikiMaintainer
from teamlore.wiki.model import PageRef, PageVersion

# Lines of unchanged context around each change in a diff.
DIFF_CONTEXT = 2


@dataclass(frozen=True, slots=True)
class PageEntry:
    page: PageRef
    version: int


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
    """A page rendered from the facts true at ``moment``, and the stored version current then."""

    rendered: PageVersion
    stored_version: int | None  # None: the wiki had not written this page yet at that moment


class PageReader:
    def __init__(self, pages: PageStore, maintainer: WikiMaintainer) -> None:
        self._pages = pages
        self._maintainer = maintainer

    def list(self, scope: Scope) -> list[PageEntry]:
        """Pages of the scope's channels that have been written, overview first."""
        return [PageEntry(p, v) for p, v in self._pages.pages(scope.workspace, scope.channels) if v]

    def get(self, scope: Scope, slug: str, version: int | None = None) -> PageVersion:
        page_id = _page_id(scope, slug)
        if version is not None and version < 1:
            raise InvalidInput(f"a page version is a number from 1, got {version}")
        shown = self._pages.version(page_id, version) if version else self._pages.current(page_id)
        if shown is None:
            raise NotFound(
                f"no page {slug}" + (f" version {version}" if version else "") + " in this channel"
            )
        return shown

    def versions(self, scope: Scope, slug: str) -> list[VersionEntry]:
        """Every stored version, newest first."""
        current = self.get(scope, slug)
        found = [VersionEntry(current.version, current.created_at)]
        for number in range(current.version - 1, 0, -1):
            older = self._pages.version(current.page.page_id, number)
            if older is not None:  # erasure restarts numbering; gaps are possible
                found.append(VersionEntry(older.version, older.created_at))
        return found

    def diff(self, scope: Scope, slug: str, older: int, newer: int) -> PageDiff:
        if older == newer:
            raise InvalidInput("a diff needs two different versions")
        a, b = self.get(scope, slug, min(older, newer)), self.get(scope, slug, max(older, newer))
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

    def as_of(self, scope: Scope, slug: str, moment: datetime) -> AsOf:
        """The page as it reads for what was true at ``moment``: its sections rendered from the
        facts valid then (known now), and which stored version the wiki showed at that time."""
        page_id = _page_id(scope, slug)
        rendered = self._maintainer.render_as_of(page_id, moment)
        if rendered is None:
            raise NotFound(f"no page {slug} in this channel")
        stored = next((v.version for v in self.versions(scope, slug) if v.created_at <= moment), None)
        return AsOf(rendered, stored)


def _page_id(scope: Scope, slug: str) -> str:
    if len(scope.channels) != 1:
        raise InvalidInput("a page belongs to one channel: give exactly one channel")
    if not slug or "/" in slug:
        raise InvalidInput(f"not a page slug: {slug!r}")
    return f"{scope.workspace}/{next(iter(scope.channels))}/{slug}"
