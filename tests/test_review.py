"""Reviewers: the review queue, manual facts that outrank extraction, rejections that stick."""

from __future__ import annotations

import pytest

from teamlore.capabilities.review import Retract
from teamlore.domain import FactStatus, ReadView, Scope
from teamlore.errors import InvalidInput

from .conftest import WS, event
from .helpers import only_fact, put

SCOPE = Scope(WS, ["C1"])


def _status(lore, fact_id):
    return lore.stores.facts.current_version(fact_id).status


@pytest.fixture
def dispute(lore):
    older = only_fact(lore, put(lore, event("Dana owns the billing service.", author_name="dana"))[0])
    placed = put(
        lore, event("I think Omar owns the billing service.", ts="2026-02-10T10:00:00Z", author_name="omar")
    )[0]
    newer = only_fact(lore, placed)
    [item] = lore.review.items(SCOPE)
    assert (item.kind, item.older_fact, item.newer_fact) == ("contested", older.fact_id, newer.fact_id)
    return item, older, newer


def test_accepting_a_contested_pair_applies_the_supersession_in_the_reviewers_name(lore, dispute):
    item, older, newer = dispute
    closed = lore.review.accept(item.id, "rita")
    assert (closed.status, closed.reviewer) == ("accepted", "rita")
    assert _status(lore, older.fact_id) is FactStatus.SUPERSEDED
    assert _status(lore, newer.fact_id) is FactStatus.ACTIVE
    assert lore.review.items(SCOPE) == []
    audit = lore.reader.history(older.fact_id, SCOPE).audit
    assert [(e.event, e.actor) for e in audit][-2:] == [("superseded", "rita"), ("reviewed", "rita")]


def test_rejecting_keeps_both_and_clears_the_flags(lore, dispute):
    item, older, newer = dispute
    lore.review.reject(item.id, "rita")
    assert _status(lore, older.fact_id) is FactStatus.ACTIVE
    assert _status(lore, newer.fact_id) is FactStatus.ACTIVE


def test_a_rejected_statement_said_again_comes_back_provisional(lore, dispute):
    item, older, newer = dispute
    lore.review.reject(item.id, "rita", Retract.NEWER)
    assert _status(lore, newer.fact_id) is FactStatus.RETRACTED
    assert _status(lore, older.fact_id) is FactStatus.ACTIVE
    again = put(
        lore, event("I think Omar owns the billing service.", ts="2026-03-01T10:00:00Z", author_name="bob")
    )[0]
    returned = only_fact(lore, again)
    assert returned.status is FactStatus.PROVISIONAL
    hidden = [h.fact.fact_id for h in lore.reader.search("billing service", SCOPE).hits]
    assert returned.fact_id not in hidden and older.fact_id in hidden
    # Control: with history on, the provisional fact is there.
    assert returned.fact_id in [
        h.fact.fact_id
        for h in lore.reader.search("billing service", SCOPE, ReadView(include_history=True)).hits
    ]
    assert [i.kind for i in lore.review.items(SCOPE)] == ["rejected_returns"]


def test_a_closed_item_cannot_be_decided_twice(lore, dispute):
    item, _, _ = dispute
    lore.review.accept(item.id, "rita")
    with pytest.raises(InvalidInput, match="already accepted"):
        lore.review.reject(item.id, "rita")
    with pytest.raises(InvalidInput, match="reviewer"):
        lore.review.accept(item.id, " ")


def test_a_manual_fact_outranks_extraction(lore):
    manual = lore.review.add_fact(SCOPE, "The API rate limit is 300 requests per minute.", "rita")
    assert (manual.origin, manual.status, manual.evidence) == ("manual", FactStatus.ACTIVE, ())
    placed = put(
        lore, event("The API rate limit is now 100 requests per minute.", ts="2026-07-01T10:00:00Z")
    )[0]
    extracted = only_fact(lore, placed)
    assert extracted.status is FactStatus.PROVISIONAL and placed.superseded == []
    assert _status(lore, manual.fact_id) is FactStatus.ACTIVE
    assert [i.kind for i in lore.review.items(SCOPE)] == ["manual_conflict"]
    assert [h.fact.fact_id for h in lore.reader.search("API rate limit", SCOPE).hits] == [manual.fact_id]


def test_a_manual_correction_supersedes_the_extracted_fact(lore, clock):
    wrong = only_fact(lore, put(lore, event("The office lease ends in December."))[0])
    fixed = lore.review.correct_fact(wrong.fact_id, SCOPE, "The office lease ends in November.", "rita")
    assert _status(lore, wrong.fact_id) is FactStatus.SUPERSEDED
    assert [h.fact.statement for h in lore.reader.search("office lease", SCOPE).hits] == [fixed.statement]
    audit = lore.reader.history(wrong.fact_id, SCOPE).audit
    assert audit[-1].event == "superseded" and audit[-1].actor == "rita"
