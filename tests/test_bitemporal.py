"""Both time axes: what was true at a moment (--as-of) and what the store knew (--known-at)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from teamlore.capabilities.facts import SearchMode
from teamlore.domain import ReadView, Scope
from teamlore.stores.protocols import AuditEvent
from teamlore.timeutil import parse_time

from .conftest import WS, event
from .helpers import only_fact, put, supersede

pytestmark = pytest.mark.every_fact_store

SCOPE = Scope(WS, ["C1"])


def _texts(result):
    return [hit.fact.statement for hit in result.hits]


def _launch_slips(lore):
    march3 = only_fact(
        lore, put(lore, event("The Atlas launch is on March 3.", ts="2026-01-10T10:00:00Z"))[0]
    )
    slipped = put(lore, event("The Atlas launch is on March 17.", ts="2026-02-10T10:00:00Z"))[0]
    assert slipped.superseded == [march3.fact_id]
    return march3, only_fact(lore, slipped)


def test_as_of_before_a_change_returns_the_old_value_and_after_it_the_new(lore):
    _launch_slips(lore)
    for mode in SearchMode:
        before = lore.reader.search(
            "Atlas launch", SCOPE, ReadView(valid_at=parse_time("2026-01-20")), mode=mode
        )
        after = lore.reader.search(
            "Atlas launch", SCOPE, ReadView(valid_at=parse_time("2026-02-20")), mode=mode
        )
        assert _texts(before) == ["The Atlas launch is on March 3."], mode
        assert _texts(after) == ["The Atlas launch is on March 17."], mode
    # Before anything was said, nothing was true yet.
    assert lore.reader.search("Atlas launch", SCOPE, ReadView(valid_at=parse_time("2026-01-01"))).hits == ()


def test_known_at_before_a_later_import_returns_what_the_store_held_then(lore, clock):
    first_import = clock.now
    put(lore, event("The billing service is owned by Dana.", ts="2026-01-10T10:00:00Z"))
    clock.advance(days=3)
    between = clock.now
    clock.advance(days=3)
    put(lore, event("The billing service runbook lives in Notion.", ts="2026-01-12T10:00:00Z"))

    then = lore.reader.search("billing service", SCOPE, ReadView(known_at=between))
    now = lore.reader.search("billing service", SCOPE)
    assert _texts(then) == ["The billing service is owned by Dana."]
    assert set(_texts(now)) == {
        "The billing service is owned by Dana.",
        "The billing service runbook lives in Notion.",
    }
    assert then.receipt.withheld.get("not_known_yet") is None  # compiled into the raw query
    assert (
        lore.reader.search(
            "billing service", SCOPE, ReadView(known_at=first_import - timedelta(seconds=1))
        ).hits
        == ()
    )


def test_known_at_between_two_imports_shows_the_belief_of_that_moment(lore, clock):
    put(lore, event("The Atlas launch is on March 3.", ts="2026-01-10T10:00:00Z"))
    clock.advance(days=1)
    believed_march3 = clock.now
    clock.advance(days=1)
    put(lore, event("The Atlas launch is on March 17.", ts="2026-02-10T10:00:00Z"))

    then = lore.reader.search("Atlas launch", SCOPE, ReadView(known_at=believed_march3), k=5)
    assert _texts(then) == ["The Atlas launch is on March 3."]
    assert _texts(lore.reader.search("Atlas launch", SCOPE, k=5)) == ["The Atlas launch is on March 17."]
    # What the store believed then about a moment after the change: still March 3.
    then_about_later = ReadView(valid_at=parse_time("2026-02-20"), known_at=believed_march3)
    assert _texts(lore.reader.search("Atlas launch", SCOPE, then_about_later)) == [
        "The Atlas launch is on March 3."
    ]


def test_a_future_dated_end_is_honoured_only_once_its_time_has_come(lore, clock):
    old = only_fact(lore, put(lore, event("Daily standup is at 9:30.", ts="2026-03-01T09:00:00Z"))[0])
    # A change announced for a date still to come (the clock stands before it).
    starts = clock.now + timedelta(days=2)
    successor = replace(
        old,
        fact_id="f_standup_10",
        statement="Daily standup is at 10:00.",
        content_hash="h10",
        valid_from=starts,
        recorded_from=clock.now,
        supersedes=(old.fact_id,),
    )
    announced = AuditEvent("created", "test", "announced", clock.now, WS, "C1", ("f_standup_10",))
    lore.stores.facts.write_version(successor, None, announced)
    supersede(lore, old, successor)

    today = lore.reader.search("standup", SCOPE, k=5)
    assert _texts(today) == ["Daily standup is at 9:30."]
    clock.advance(days=3)
    assert _texts(lore.reader.search("standup", SCOPE, k=5)) == ["Daily standup is at 10:00."]
    # And the past stays as it was.
    just_before = ReadView(valid_at=starts - timedelta(hours=1))
    assert _texts(lore.reader.search("standup", SCOPE, just_before, k=5)) == ["Daily standup is at 9:30."]
