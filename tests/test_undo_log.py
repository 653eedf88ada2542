"""The server stack's write-ahead undo log (issue 18): a worker that dies between its Weaviate
writes and its MongoDB commit runs no undo; the next holder of the channel applies the undos it
logged ahead, so the event's re-delivery is applied as if the first attempt never happened."""

from __future__ import annotations

import pytest

from teamlore.capabilities import holding
from teamlore.domain import Scope
from teamlore.errors import LeaseLost
from teamlore.stores.redis.channel_lock import fence_key, lock_key
from teamlore.stores.redis.undo_log import UndoLog
from teamlore.stores.weaviate import journal as weaviate_journal
from teamlore.workers.pipeline import Outcome

from .conftest import WS, event
from .helpers import put


@pytest.fixture(params=["nx"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


def _holds(broker, token: int) -> None:
    """The channel's lock holds ``token`` (as ``ChannelLocks.take`` leaves it)."""
    broker.set(lock_key((WS, "C1")), str(token))


def _dies_before_its_commit(lore, monkeypatch, log: UndoLog, token: int, said) -> None:
    """Apply ``said`` holding the channel under ``token`` and die just before the MongoDB commit:
    no undo runs in the process (as when it is killed)."""
    from teamlore.stores.mongo import journal as mongo_journal

    async def killed(db, ops, fences):
        raise SystemError("killed before the commit")

    log._r.set(lock_key((WS, "C1")), str(token))
    with monkeypatch.context() as patch:
        patch.setattr(mongo_journal, "_commit", killed)
        patch.setattr(weaviate_journal, "run_undos", lambda undos: None)  # a dead process runs none
        with (
            pytest.raises(SystemError),
            lore.stores.fenced({fence_key((WS, "C1")): token}),
            log.holding({(WS, "C1"): token}),
        ):
            put(lore, said)


def test_the_next_holder_undoes_what_a_dead_worker_left_and_the_redelivery_is_clean(
    make_lore, monkeypatch, broker
):
    lore, log = make_lore("dead"), UndoLog(broker)
    lore.stores.remote_facts.write_ahead(log)
    kept = event("The billing cron runs at 02:00 UTC.", message_id="m0")
    _holds(broker, 1)
    with lore.stores.fenced({fence_key((WS, "C1")): 1}), log.holding({(WS, "C1"): 1}):
        assert put(lore, kept)[0].outcome is Outcome.STORED  # committed under token 1
    said = event("The staging database is PostgreSQL 16.", message_id="m1")
    _dies_before_its_commit(lore, monkeypatch, log, 2, said)
    left = lore.stores.facts.current_citing(WS, "C1", said.message_id)
    assert left  # the dead attempt's fact is in Weaviate, its message and audit are not
    assert lore.stores.messages.get_message(WS, "C1", said.message_id) is None
    assert log.leftovers((WS, "C1"), 3)  # and its undos wait in Redis

    holding._recover(lore, log, {(WS, "C1"): 3})  # the next holder, before it writes
    assert lore.stores.facts.current_citing(WS, "C1", said.message_id) == []
    assert lore.stores.facts.current_citing(WS, "C1", kept.message_id)  # committed work stays
    assert log.leftovers((WS, "C1"), 4) == {}
    _holds(broker, 3)
    with lore.stores.fenced({fence_key((WS, "C1")): 3}), log.holding({(WS, "C1"): 3}):
        result = put(lore, said)[0]
    assert result.outcome is Outcome.STORED and len(result.created) == 1
    fact_id = result.created[0]
    assert [e.event for e in lore.reader.history(fact_id, Scope(WS, ["C1"])).audit] == ["created"]
    assert lore.reader.search("staging database", Scope(WS, ["C1"])).hits  # and its message


def test_without_the_undo_log_the_redelivery_meets_the_dead_attempts_fact(make_lore, monkeypatch, broker):
    """The control: the same death, no recovery: the re-delivery finds the leftover as a current
    fact and creates nothing, so the fact has no "created" event and the wiki never heard of it."""
    lore, log = make_lore("control"), UndoLog(broker)
    lore.stores.remote_facts.write_ahead(log)
    said = event("The staging database is PostgreSQL 16.", message_id="m1")
    _dies_before_its_commit(lore, monkeypatch, log, 2, said)
    with lore.stores.fenced({fence_key((WS, "C1")): 3}):
        result = put(lore, said)[0]
    assert list(result.created) == []
    (leftover,) = lore.stores.facts.current_citing(WS, "C1", said.message_id)
    assert list(lore.reader.history(leftover.fact_id, Scope(WS, ["C1"])).audit) == []


def test_a_holder_whose_token_committed_leaves_its_writes_alone(make_lore, broker):
    """Undos of a batch that committed (its process died after the commit, before it dropped its
    log) are dropped, not applied: the channel's fence in MongoDB has reached its token."""
    lore, log = make_lore("committed"), UndoLog(broker)
    lore.stores.remote_facts.write_ahead(log)
    said = event("The staging database is PostgreSQL 16.", message_id="m1")
    _holds(broker, 5)
    with lore.stores.fenced({fence_key((WS, "C1")): 5}):
        log._local.tokens = {(WS, "C1"): 5}  # logging as ``holding`` does, then never dropped
        try:
            assert put(lore, said)[0].outcome is Outcome.STORED
        finally:
            log._local.tokens = {}
    assert log.leftovers((WS, "C1"), 6)
    holding._recover(lore, log, {(WS, "C1"): 6})
    assert lore.stores.facts.current_citing(WS, "C1", said.message_id)  # kept
    assert log.leftovers((WS, "C1"), 7) == {}


def test_a_holder_whose_lock_passed_to_another_worker_writes_nothing_more_to_weaviate(make_lore, broker):
    """A worker paused past its lease wakes up after another worker took the channel: its next
    Weaviate write is refused before it is made (its undo could not be logged under its token),
    and the batch is tried again; the control holds the lock and writes."""
    lore, log = make_lore("paused"), UndoLog(broker)
    lore.stores.remote_facts.write_ahead(log)
    said = event("The staging database is PostgreSQL 16.", message_id="m1")
    _holds(broker, 8)  # the newer holder
    with (
        pytest.raises(LeaseLost),
        lore.stores.fenced({fence_key((WS, "C1")): 7}),
        log.holding({(WS, "C1"): 7}),
    ):
        put(lore, said)
    assert lore.stores.facts.current_citing(WS, "C1", said.message_id) == []
    assert log.leftovers((WS, "C1"), 9) == {}  # nothing logged under the stale token either
    with lore.stores.fenced({fence_key((WS, "C1")): 8}), log.holding({(WS, "C1"): 8}):
        assert put(lore, said)[0].outcome is Outcome.STORED  # the holder's own write goes
    assert lore.stores.facts.current_citing(WS, "C1", said.message_id)
