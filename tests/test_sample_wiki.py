"""The bundled sample, read as staff read its wiki: every page walked. No page or section is named
after a weekday, a month or a common word; every entity page rests on at least two messages; and no
page cites a message the sample's labels call chatter (tests/data/sample_chatter.json, labelled by
training/extraction/GUIDELINES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teamlore.capabilities.importing import import_items
from teamlore.connectors.events_file import read_events_file
from teamlore.domain import ReadView, Scope
from teamlore.extraction.entities import _NOT_NAMES
from teamlore.wiki.model import PageKind

from .conftest import SAMPLE

WORKSPACE = "T0ACME"
CHATTER = json.loads((Path(__file__).parent / "data" / "sample_chatter.json").read_text())["chatter"]
WEEKDAYS_AND_MONTHS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december".split()
)


@pytest.fixture(scope="module")
def sample(tmp_path_factory, embedder):
    from teamlore.app import Teamlore
    from teamlore.config import Settings

    lore = Teamlore(Settings(data_dir=tmp_path_factory.mktemp("sample"), _env_file=None), embedder=embedder)
    import_items(read_events_file(SAMPLE, 40_000), lore.pipeline)
    lore.wiki.flush(everything=True)
    channels = [c.channel for c in lore.stores.messages.channels(WORKSPACE)]
    pages = [
        lore.stores.pages.current(p.page_id) for p, v in lore.stores.pages.pages(WORKSPACE, channels) if v
    ]
    yield lore, pages
    lore.close()


def _named_after_nothing(name: str) -> bool:
    word = name.casefold().strip()
    return word.rstrip("s") in WEEKDAYS_AND_MONTHS or word in _NOT_NAMES


def test_no_page_or_section_is_named_after_a_weekday_a_month_or_a_common_word(sample):
    _, pages = sample
    assert pages
    # Entity and topic pages are named after what they are about; role pages' sections too (the
    # other sections have fixed titles: "Decisions", "Status", ...).
    named_pages = [p for p in pages if p.page.kind in (PageKind.ENTITY, PageKind.TOPIC)]
    role_pages = [p for p in pages if p.page.kind is PageKind.ROLE]
    assert named_pages and role_pages
    named = [(p.page.page_id, p.page.title) for p in named_pages if _named_after_nothing(p.page.title)]
    named += [
        (p.page.page_id, s.title) for p in role_pages for s in p.sections if _named_after_nothing(s.title)
    ]
    assert named == []


def test_every_entity_page_rests_on_at_least_two_source_messages(sample):
    lore, pages = sample
    entity_pages = [p for p in pages if p.page.kind is PageKind.ENTITY]
    assert entity_pages
    for page in entity_pages:
        scope = Scope(WORKSPACE, [page.page.channel])
        facts = lore.reader.get_many(list(page.facts_seen), scope, ReadView(include_history=True))
        sources = {m for view in facts for m in view.fact.evidence}
        assert len(sources) >= 2, page.page.page_id


def test_no_page_cites_a_message_that_is_chatter(sample):
    lore, pages = sample
    chatter = {(c["channel"], c["message_id"]) for c in CHATTER}
    names = {c.channel: c.name for c in lore.stores.messages.channels(WORKSPACE)}
    cited: set[tuple[str, str, str]] = set()
    every_cited: set[str] = set()
    for page in pages:
        scope = Scope(WORKSPACE, [page.page.channel])
        ids = sorted({f for s in page.sections for f in s.citations})
        for view in lore.reader.get_many(ids, scope, ReadView(include_history=True)):
            for message_id in view.fact.evidence:
                every_cited.add(message_id)
                if (names[page.page.channel], message_id) in chatter:
                    cited.add((page.page.page_id, message_id, view.fact.statement))
    texts = {c["message_id"]: c["text"] for c in CHATTER}
    assert sorted(texts[message_id] for _, message_id, _ in cited) == []
    assert len(chatter) == 174
    # The control: the walk does read citations, e.g. the #eng message "Dana owns the billing
    # service." (sent between chatter) is on a page.
    assert "1767864366.209052" in every_cited


def test_the_product_page_shows_one_current_launch_date(sample):
    """(Issue 15.) The launch slipped from March 3 to March 17, then was pushed to March 24: only
    March 24 is current on #product's Atlas 2.0 page; the earlier dates are under "Previously"."""
    _, pages = sample
    product = [p for p in pages if p.page.channel == "C02PRODUCT"]
    [atlas] = [p for p in product if p.page.page_id.endswith("entity-atlas-2-0")]
    [dates] = [s for s in atlas.sections if s.title == "Dates and schedule"]
    current, _, previously = dates.body.partition("Previously")
    assert "March 24" in current
    assert "March 3" not in current and "March 17" not in current
    assert "March 3" in previously and "March 17" in previously
