"""Page writers: given the affected sections and their facts, return each section's Markdown.

The template writer is the embedded default: deterministic, readable, every statement cited with
a link to its source message, newest first, superseded values under "Previously" with the date
they ended. An LLM writer can replace it behind ``PageWriter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from teamlore.capabilities.facts import FactView
from teamlore.timeutil import SENTINEL
from teamlore.wiki.model import PageKind, PageRef, SectionInput

# The overview shows only the newest facts of each kind; role, topic and entity pages show all.
OVERVIEW_ITEMS = 5


class PageWriter(Protocol):
    def write(
        self, page: PageRef, sections: Sequence[SectionInput]
    ) -> dict[str, tuple[str, tuple[str, ...]]]:
        """section key -> (Markdown body, fact ids cited)."""
        ...


def _cite(view: FactView) -> str:
    links = [
        f"[{s.author_name or 'source'}, {s.ts:%Y-%m-%d}]({s.permalink})" for s in view.sources if s.permalink
    ]
    if not links:
        origin = "added by a reviewer" if view.fact.origin == "manual" else "source removed"
        return f"({origin})"
    return "(" + "; ".join(links) + ")"


def _line(view: FactView) -> str:
    fact = view.fact
    flags = []
    if fact.contested:
        flags.append("**contested**")
    if view.past_due:
        flags.append(f"**past due** {fact.due_at:%Y-%m-%d}")
    elif fact.due_at is not None:
        flags.append(f"due {fact.due_at:%Y-%m-%d}")
    suffix = f" — {', '.join(flags)}" if flags else ""
    return f"- {fact.statement}{suffix} {_cite(view)}"


def _newest_first(views: Sequence[FactView]) -> list[FactView]:
    return sorted(views, key=lambda v: (v.fact.valid_from, v.fact.fact_id), reverse=True)


class TemplateWriter:
    def write(
        self, page: PageRef, sections: Sequence[SectionInput]
    ) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {section.key: self._section(page, section) for section in sections}

    def _section(self, page: PageRef, section: SectionInput) -> tuple[str, tuple[str, ...]]:
        live = _newest_first(section.live)
        if page.kind is PageKind.OVERVIEW:
            live = live[:OVERVIEW_ITEMS]
        lines = [_line(v) for v in live]
        cited = [v.fact.fact_id for v in live]
        if not live:
            lines.append(
                "_Nothing here is current any more; see the history below._"
                if section.previously
                else "_Nothing current._"
            )
        previously = [v for v in _newest_first(section.previously) if v.fact.valid_to != SENTINEL]
        if previously and page.kind is not PageKind.OVERVIEW:
            lines += ["", "Previously:"]
            for view in previously:
                lines.append(f"- ~~{view.fact.statement}~~ until {view.fact.valid_to:%Y-%m-%d} {_cite(view)}")
                cited.append(view.fact.fact_id)
        return "\n".join(lines) + "\n", tuple(cited)
