"""One contract, every dirty-set implementation: the embedded SQLite one and the Redis one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import redis

from teamlore.stores.database import Database
from teamlore.stores.embedded.wiki import EmbeddedDirtySet
from teamlore.stores.redis.dirty_set import RedisDirtySet

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WINDOW = timedelta(seconds=30)
LEASE = timedelta(seconds=60)
REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["embedded", "redis"])
def dirty(request, tmp_path):
    if request.param == "embedded":
        yield EmbeddedDirtySet(Database(tmp_path / "d.sqlite3"))
        return
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    prefix = f"test:{uuid.uuid4().hex}:"
    yield RedisDirtySet(client, prefix)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def test_a_burst_collapses_into_one_claim_after_the_window(dirty):
    for second in range(0, 20, 2):
        dirty.mark(["p1"], [f"f{second}"], T0 + timedelta(seconds=second), WINDOW)
    assert dirty.claim_due(T0 + timedelta(seconds=29), LEASE) == []  # the first mark fixed the due time
    [claim] = dirty.claim_due(T0 + WINDOW, LEASE)
    assert claim.page_id == "p1" and len(claim.fact_ids) == 10
    assert dirty.complete(claim, T0 + WINDOW, WINDOW)
    assert dirty.pending() == []


def test_a_claimed_page_is_not_claimed_twice_until_its_lease_ends(dirty):
    dirty.mark(["p1"], ["f1"], T0, timedelta(0))
    [first] = dirty.claim_due(T0, LEASE)
    assert dirty.claim_due(T0 + timedelta(seconds=59), LEASE) == []
    [again] = dirty.claim_due(T0 + LEASE, LEASE)  # the holder died: the page is due again
    assert again.fact_ids == ("f1",) and again.token != first.token
    assert not dirty.complete(first, T0 + LEASE, WINDOW)  # the old holder's save is refused
    assert dirty.complete(again, T0 + LEASE, WINDOW)
    assert dirty.pending() == []


def test_facts_marked_during_a_claim_stay_pending_for_the_next_rewrite(dirty):
    dirty.mark(["p1"], ["f1"], T0, timedelta(0))
    [claim] = dirty.claim_due(T0, LEASE)
    dirty.mark(["p1"], ["f2"], T0 + timedelta(seconds=1), WINDOW)
    assert dirty.complete(claim, T0 + timedelta(seconds=2), WINDOW)
    [(page, due, count)] = dirty.pending()
    assert (page, count) == ("p1", 1) and due == T0 + timedelta(seconds=2) + WINDOW
    [later] = dirty.claim_due(due, LEASE)
    assert later.fact_ids == ("f2",)


def test_a_fact_marked_again_during_a_claim_is_not_dropped(dirty):
    dirty.mark(["p1"], ["f1"], T0, timedelta(0))
    [claim] = dirty.claim_due(T0, LEASE)
    dirty.mark(["p1"], ["f1"], T0 + timedelta(seconds=1), timedelta(0))  # changed again meanwhile
    dirty.complete(claim, T0 + timedelta(seconds=2), timedelta(0))
    [(page, _, count)] = dirty.pending()
    assert (page, count) == ("p1", 1)


def test_claims_are_limited_and_ordered_by_due_time(dirty):
    for i in range(5):
        dirty.mark([f"p{i}"], ["f"], T0 + timedelta(seconds=i), timedelta(0))
    claims = dirty.claim_due(T0 + timedelta(seconds=10), LEASE, limit=3)
    assert [c.page_id for c in claims] == ["p0", "p1", "p2"]
