"""What the page writer gets for a section; the page types themselves are ``teamlore.page_model``'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from teamlore.capabilities.facts import FactView
from teamlore.page_model import PageKind, PageRef, PageVersion, Route, Section

__all__ = ["PageKind", "PageRef", "PageVersion", "Route", "Section", "SectionInput"]


@dataclass(frozen=True, slots=True)
class SectionInput:
    """What the writer gets for one affected section: only live and retired facts for it."""

    key: str
    title: str
    live: tuple[FactView, ...]
    previously: tuple[FactView, ...]  # superseded facts, each with its end date
    # What replaced each of ``previously`` (fact id -> its successor), so "Previously" can say.
    successors: Mapping[str, FactView] = field(default_factory=dict)
    # A later status statement about an action item (fact id -> it): linked, never closing it.
    updates: Mapping[str, FactView] = field(default_factory=dict)
