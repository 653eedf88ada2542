"""Page writers: given the affected sections and their facts, return each section's Markdown.

The template writer is the embedded default: deterministic, readable, every statement cited with
a link to its source message, newest first, superseded values under "Previously" with the date
they ended. The model writer (``teamlore.llm.page_writer``)
falls back to it, section by section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from teamlore.capabilities.facts import FactView
from teamlore.domain import Source
from teamlore.timeutil import SENTINEL
from teamlore.wiki.model import PageKind, PageRef, SectionInput

# The overview shows only the newest facts of each kind; role, topic and entity pages show all.
OVERVIEW_ITEMS = 5
OVERDUE_HEADING = "Overdue (past the deadline, still open):"


@dataclass(frozen=True, slots=True)
class Written:
    """A writer's output: section key -> (Markdown body, fact ids cited), for exactly the
    sections asked; ``flagged`` says why some were not written as configured (saved on the
    version, shown to admins)."""

    sections: dict[str, tuple[str, tuple[str, ...]]]
    flagged: str | None = None


def _label(source: Source) -> str:
    """Who and when; for a passage of a shared file, which file and where ("report.pdf, p. 3")."""
    said = f"{source.author_name or 'source'}, {source.ts:%Y-%m-%d}"
    if not source.file_ref:
        return said
    return f"{said}, " + source.file_ref.replace("[", "(").replace("]", ")")


class PageWriter(Protocol):
    def write(self, page: PageRef, sections: Sequence[SectionInput]) -> Written: ...


def cite(view: FactView) -> str:
    links = [f"[{_label(s)}]({s.permalink})" for s in view.sources if s.permalink]
    if not links:
        origin = "added by a reviewer" if view.fact.origin == "manual" else "source removed"
        return f"({origin})"
    return "(" + "; ".join(links) + ")"


def _line(view: FactView, section: SectionInput) -> str:
    update = section.updates.get(view.fact.fact_id)
    later = "" if update is None else f" — update: {update.fact.statement} {cite(update)}"
    return f"- {view.fact.statement}{flags(view)} {cite(view)}{later}"


def flags(view: FactView) -> str:
    """What a reader must know beside the statement, e.g. ' — **contested**, due 2026-03-01'."""
    fact = view.fact
    marks = []
    if fact.contested:
        marks.append("**contested**")
    if view.past_due:
        marks.append(f"**past due** {fact.due_at:%Y-%m-%d}")
    elif fact.due_at is not None:
        marks.append(f"due {fact.due_at:%Y-%m-%d}")
    return f" — {', '.join(marks)}" if marks else ""


def _newest_first(views: Sequence[FactView]) -> list[FactView]:
    return sorted(views, key=lambda v: (v.fact.valid_from, v.fact.fact_id), reverse=True)


def shown_live(page: PageRef, section: SectionInput) -> list[FactView]:
    """The live facts a section shows, settled ones first (a contested claim never outranks the
    fact it disputes), each part newest first; the overview only the first few."""
    live = sorted(_newest_first(section.live), key=lambda v: v.fact.contested)
    return live[:OVERVIEW_ITEMS] if page.kind is PageKind.OVERVIEW else live


def history(page: PageRef, section: SectionInput) -> tuple[list[str], list[str]]:
    """The "Previously:" lines of a section (replaced values with their end date) and their ids."""
    previously = [v for v in _newest_first(section.previously) if v.fact.valid_to != SENTINEL]
    if not previously or page.kind is PageKind.OVERVIEW:
        return [], []
    lines = ["", "Previously:"]
    lines += [
        f"- ~~{v.fact.statement}~~ until {v.fact.valid_to:%Y-%m-%d} {cite(v)}{replaced_by(section, v)}"
        for v in previously
    ]
    return lines, [v.fact.fact_id for v in previously]


def replaced_by(section: SectionInput, view: FactView) -> str:
    """' — replaced by: <the newer statement> (<its source>)', when the section knows it."""
    newer = section.successors.get(view.fact.fact_id)
    return "" if newer is None else f" — replaced by: {newer.fact.statement} {cite(newer)}"


class TemplateWriter:
    def write(self, page: PageRef, sections: Sequence[SectionInput]) -> Written:
        return Written({section.key: self.section(page, section) for section in sections})

    def section(self, page: PageRef, section: SectionInput) -> tuple[str, tuple[str, ...]]:
        live = shown_live(page, section)
        # Past its deadline but still open (a deadline never retires a fact): listed apart.
        current, overdue = [v for v in live if not v.past_due], [v for v in live if v.past_due]
        lines = [_line(v, section) for v in current]
        if overdue:
            lines += ["", OVERDUE_HEADING] if current else [OVERDUE_HEADING]
            lines += [_line(v, section) for v in overdue]
        cited = [v.fact.fact_id for v in current + overdue]
        if not live:
            lines.append(
                "_Nothing here is current any more; see the history below._"
                if section.previously
                else "_Nothing current._"
            )
        old_lines, old_ids = history(page, section)
        return "\n".join(lines + old_lines) + "\n", tuple(cited + old_ids)
