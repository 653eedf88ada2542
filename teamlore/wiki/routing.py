"""Routing: a pure function from a fact to the (page, section) pairs it belongs on. No model.

Every fact lands on its channel's overview, on its role page (decisions, action items, FAQ,
glossary) when its type has one, on its topic page, and on the page of each entity it names.
The same fact always routes the same way, whatever order facts arrive in, so re-importing a
history gives the same pages.
"""

from __future__ import annotations

import re
import unicodedata

from teamlore.domain import Fact, FactType
from teamlore.wiki.model import PageKind, PageRef, Route

# Entities per fact that get a page route; the first ones the extractor found are the subject.
MAX_ENTITY_ROUTES = 3

# Section of a topic, entity or overview page for each fact type: (key, title, order).
_GROUPS: dict[FactType, tuple[str, str, int]] = {
    FactType.DECISION: ("decisions", "Decisions", 10),
    FactType.SCHEDULE: ("dates", "Dates and schedule", 20),
    FactType.STATUS: ("status", "Status", 30),
    FactType.OWNERSHIP: ("owners", "Who owns what", 40),
    FactType.METRIC: ("numbers", "Numbers", 50),
    FactType.ACTION_ITEM: ("actions", "Action items", 60),
    FactType.DEFINITION: ("definitions", "Definitions", 70),
    FactType.QUESTION: ("questions", "Questions and answers", 80),
    FactType.ANSWER: ("questions", "Questions and answers", 80),
    FactType.ANNOUNCEMENT: ("announcements", "Announcements", 90),
    FactType.STATEMENT: ("notes", "Notes", 100),
}
_ROLE_PAGES: dict[FactType, tuple[str, str]] = {
    FactType.DECISION: ("decisions", "Decisions"),
    FactType.ACTION_ITEM: ("action-items", "Action items"),
    FactType.QUESTION: ("faq", "FAQ"),
    FactType.ANSWER: ("faq", "FAQ"),
    FactType.DEFINITION: ("glossary", "Glossary"),
}


def slugify(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", folded).strip("-")[:60] or "x"


def group_of(fact: Fact) -> tuple[str, str, int]:
    return _GROUPS[fact.fact_type]


def route(fact: Fact) -> frozenset[Route]:
    ws, ch = fact.workspace, fact.channel
    key, title, order = group_of(fact)
    routes = {Route(PageRef(ws, ch, "overview", PageKind.OVERVIEW, "Overview"), key, title, order)}
    if fact.fact_type in _ROLE_PAGES:
        slug, page_title = _ROLE_PAGES[fact.fact_type]
        topic = fact.topic or "general"
        section_title = topic[:1].upper() + topic[1:]
        routes.add(Route(PageRef(ws, ch, slug, PageKind.ROLE, page_title), slugify(topic), section_title, 0))
    if not fact.entities and fact.topic:
        # Facts naming no entity cluster by their topic word; the others gather on entity pages
        # (their topic is their first entity, so a topic page would repeat the entity page).
        page = PageRef(ws, ch, f"topic-{slugify(fact.topic)}", PageKind.TOPIC, fact.topic.capitalize())
        routes.add(Route(page, key, title, order))
    for entity in fact.entities[:MAX_ENTITY_ROUTES]:
        name = entity.lstrip("@#")
        if len(name) < 2 or name.startswith("http"):
            continue
        page = PageRef(ws, ch, f"entity-{slugify(name)}", PageKind.ENTITY, name)
        routes.add(Route(page, key, title, order))
    return frozenset(routes)
