"""Keeping pages current: route changed facts, mark pages dirty, rewrite each due page once.

``note_changes`` runs inside the ingest transaction, so a fact and the dirty mark of its pages
land together. ``flush`` claims due pages under a lease, calls the writer once per page with only
the affected sections, and saves a new version: title, slug and untouched sections are copied
byte for byte. A maintainer that dies between claim and save loses nothing: the lease ends and
the page, with all its pending facts, is due again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from teamlore.capabilities.facts import FactReader, FactView
from teamlore.domain import FactStatus, ReadView, Scope
from teamlore.stores.protocols import DirtySet, FactBackend, PageStore
from teamlore.wiki.followups import updates
from teamlore.wiki.model import PageKind, PageRef, PageVersion, Section, SectionInput
from teamlore.wiki.routing import route
from teamlore.wiki.writer import PageWriter, TemplateWriter

log = logging.getLogger(__name__)
# What an entity or topic needs before it gets a page: facts naming it, said in this many messages
# (one long message naming a thing three times is not "mentioned often").
MIN_PAGE_FACTS = 3
MIN_PAGE_MESSAGES = 2


@dataclass
class FlushReport:
    pages_rewritten: int = 0
    writer_calls: int = 0
    lost_leases: int = 0


class WikiMaintainer:
    def __init__(
        self,
        facts: FactBackend,
        pages: PageStore,
        dirty: DirtySet,
        reader: FactReader,
        writer: PageWriter,
        clock: Callable[[], datetime],
        window: timedelta,
        lease: timedelta,
    ) -> None:
        self.facts, self.pages, self.dirty, self.reader = facts, pages, dirty, reader
        self.writer, self.clock, self.window, self.lease = writer, clock, window, lease

    def note_changes(self, fact_ids: Iterable[str]) -> None:
        """Route each changed fact and mark its pages dirty (call inside the ingest transaction)."""
        now = self.clock()
        by_facts: dict[frozenset[str], list[str]] = {}
        for page_id, ids in self._route(fact_ids).items():
            by_facts.setdefault(frozenset(ids), []).append(page_id)
        for fact_set, page_ids in sorted(by_facts.items(), key=lambda item: sorted(item[1])):
            self.dirty.mark(page_ids, fact_set, now, self.window)

    def _route(self, fact_ids: Iterable[str]) -> dict[str, set[str]]:
        by_page: dict[str, set[str]] = {}
        for fact_id in dict.fromkeys(fact_ids):
            fact = self.facts.current_version(fact_id)
            if fact is None:
                continue
            routes = route(fact)
            self.pages.record_routes(fact_id, routes)
            for r in routes:
                by_page.setdefault(r.page.page_id, set()).add(fact_id)
        return by_page

    def flush(self, limit: int = 100, everything: bool = False) -> FlushReport:
        """Rewrite every page that is due now, each once; ``everything`` skips the debounce wait
        (a batch import that has ended has nothing more to collapse)."""
        report = FlushReport()
        while True:
            due_by = self.clock() + (self.window if everything else timedelta(0))
            claims = self.dirty.claim_due(due_by, self.lease, limit)
            if not claims:
                return report
            for claim in claims:
                version = self.rewrite(claim.page_id, claim.fact_ids, report)
                if not self.dirty.complete(claim, self.clock(), self.window):
                    report.lost_leases += 1
                    log.warning("page %s: lease ran out before the save was confirmed", claim.page_id)
                elif version is not None:
                    report.pages_rewritten += 1

    def rebuild(self, scope: Scope) -> FlushReport:
        """Re-route every fact of the scope and rewrite every page in full (admin)."""
        for channel in sorted(scope.channels):
            self._route(self.facts.current_ids(scope.workspace, channel))
        report = FlushReport()
        for page, _ in self.pages.pages(scope.workspace, scope.channels):
            if self.rewrite(page.page_id, None, report) is not None:
                report.pages_rewritten += 1
        return report

    def rewrite(self, page_id: str, changed: Iterable[str] | None, report: FlushReport) -> PageVersion | None:
        """One writer call for the sections holding ``changed`` (all sections when None)."""
        page = self.pages.page(page_id)
        if page is None:
            return None
        current = self.pages.current(page_id)
        routed = self.pages.sections_of(page_id)
        # An entity or topic gets a page of its own only once it is mentioned often enough;
        # until then its facts live on the overview and role pages.
        routed_facts = {f for _, _, ids in routed.values() for f in ids}
        if (
            current is None
            and page.kind in (PageKind.ENTITY, PageKind.TOPIC)
            and not self._worth_a_page(page, routed_facts)
        ):
            return None
        if current is None or changed is None:
            affected = set(routed)
        else:
            affected = self.pages.sections_holding(page_id, changed) | (
                set(routed) - {s.key for s in current.sections}
            )
        if not affected:
            return None
        inputs = self._inputs(page, routed, affected)
        report.writer_calls += 1
        written = self.writer.write(page, inputs)
        bodies = written.sections
        kept = {s.key: s for s in current.sections} if current else {}
        sections = []
        for key, (title, order, _) in sorted(routed.items(), key=lambda item: (item[1][1], item[0])):
            if key in affected:
                body, cited = bodies[key]
                sections.append(Section(key, title, order, body, cited))
            elif key in kept:
                sections.append(kept[key])
        if current is not None and tuple(sections) == current.sections:
            return None  # nothing changed: no new version
        version = PageVersion(
            page=page,
            version=(current.version if current else 0) + 1,
            created_at=self.clock(),
            sections=tuple(sections),
            facts_seen=tuple(sorted(routed_facts)),
            flagged=written.flagged,
        )
        self.pages.save(version)
        return version

    def _worth_a_page(self, page: PageRef, fact_ids: set[str]) -> bool:
        if len(fact_ids) < MIN_PAGE_FACTS:
            return False
        # Messages that mentioned it, a replaced value's included; a retracted one (its message
        # deleted, or rejected) no longer counts.
        known = self.reader.get_many(
            sorted(fact_ids), Scope(page.workspace, [page.channel]), ReadView(include_history=True)
        )
        said = {m for v in known if v.fact.status is not FactStatus.RETRACTED for m in v.fact.evidence}
        return len(said) >= MIN_PAGE_MESSAGES

    def render_as_of(self, page_id: str, valid_at: datetime) -> PageVersion | None:
        """The page as it reads for the facts true at ``valid_at`` (what we know now); not saved.
        Version 0: it is a rendering, not a stored version. Always the template writer: a reader
        may try many dates, and each must not cost a model call."""
        page = self.pages.page(page_id)
        if page is None:
            return None
        routed = self.pages.sections_of(page_id)
        inputs = self._inputs(page, routed, set(routed), valid_at)
        bodies = TemplateWriter().write(page, inputs).sections
        sections = tuple(
            Section(key, title, order, *bodies[key])
            for key, (title, order, _) in sorted(routed.items(), key=lambda item: (item[1][1], item[0]))
        )
        facts = tuple(sorted({f for _, _, ids in routed.values() for f in ids}))
        return PageVersion(page, 0, valid_at, sections, facts)

    def _inputs(
        self,
        page: PageRef,
        routed: dict[str, tuple[str, int, list[str]]],
        affected: set[str],
        valid_at: datetime | None = None,
    ) -> list[SectionInput]:
        scope = Scope(page.workspace, [page.channel])
        wanted = sorted({f for key in affected for f in routed[key][2]})
        live = {v.fact.fact_id: v for v in self.reader.get_many(wanted, scope, ReadView(valid_at))}
        history = ReadView(include_history=True)
        retired = {
            v.fact.fact_id: v
            for v in self.reader.get_many(wanted, scope, history)
            if v.fact.fact_id not in live
            and v.fact.status is FactStatus.SUPERSEDED
            # As of a past moment, "previously" holds only what had ended by then.
            and (valid_at is None or v.fact.valid_to <= valid_at)
        }
        wanted_next = sorted({v.fact.superseded_by for v in retired.values() if v.fact.superseded_by})
        successors = {v.fact.fact_id: v for v in self.reader.get_many(wanted_next, scope, history)}
        followed = updates(self.reader, scope, live.values(), valid_at)
        inputs = []
        for key in sorted(affected, key=lambda k: (routed[k][1], k)):
            title, _, ids = routed[key]
            now, old = _pick(live, ids), _pick(retired, ids)
            after = {
                v.fact.fact_id: successors[v.fact.superseded_by]
                for v in old
                if v.fact.superseded_by in successors
            }
            news = {v.fact.fact_id: followed[v.fact.fact_id] for v in now if v.fact.fact_id in followed}
            inputs.append(SectionInput(key, title, tuple(now), tuple(old), after, news))
        return inputs


def _pick(views: dict[str, FactView], ids: list[str]) -> list[FactView]:
    return [views[i] for i in ids if i in views]
