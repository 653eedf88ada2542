"""Pages: a title, a slug and ordered sections with stable keys, versioned.

The page stores keep these and the wiki writes them, so they sit below both (``teamlore.wiki.model``
adds what only the writer needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class PageKind(StrEnum):
    OVERVIEW = "overview"
    TOPIC = "topic"
    ENTITY = "entity"
    ROLE = "role"


@dataclass(frozen=True, slots=True)
class PageRef:
    """Which page, in which channel (its space). ``page_id`` is unique across the store."""

    workspace: str
    channel: str
    slug: str
    kind: PageKind
    title: str

    @property
    def page_id(self) -> str:
        return f"{self.workspace}/{self.channel}/{self.slug}"


@dataclass(frozen=True, slots=True)
class Route:
    """One (page, section) a fact belongs on."""

    page: PageRef
    section_key: str
    section_title: str
    order: int  # where the section sits on the page; keys never move


@dataclass(frozen=True, slots=True)
class Section:
    key: str
    title: str
    order: int
    body: str  # Markdown
    citations: tuple[str, ...]  # fact ids the body cites, in order


@dataclass(frozen=True, slots=True)
class PageVersion:
    page: PageRef
    version: int
    created_at: datetime
    sections: tuple[Section, ...]
    facts_seen: tuple[str, ...]
    flagged: str | None = None  # e.g. a writer fell back; shown to admins

    @property
    def markdown(self) -> str:
        parts = [f"# {self.page.title}\n"]
        parts += [f"\n## {s.title}\n\n{s.body}" for s in self.sections]
        return "".join(parts)
