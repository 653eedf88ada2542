"""FactBackend conformance: every implementation answers the raw queries and the write path alike.

Runs against each fact store in tests/conftest.py FACT_STORES (the embedded store; the Weaviate
backend through the real client over the double of tests/weaviate_double.py served on the client's
real REST and gRPC protocol, tests/weaviate_wire.py; a real Weaviate when
TEAMLORE_TEST_WEAVIATE_URL is set). Rows come from the backend directly, before the gate: these
tests pin what the store itself compiles (scope, time), not what the gate catches.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from teamlore.domain import Fact, FactStatus, ResolvedView, Scope
from teamlore.stores.protocols import AuditEvent, ConcurrentChange
from teamlore.timeutil import SENTINEL

from .helpers import billing_fact

pytestmark = pytest.mark.every_fact_store

WS = "T1"
T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(days=1)
C1 = Scope(WS, ["C1"])
C2 = Scope(WS, ["C2"])
BOTH = Scope(WS, ["C1", "C2"])


def _view(valid_at=LATER, known_at=LATER, history=False) -> ResolvedView:
    return ResolvedView(valid_at=valid_at, known_at=known_at, include_history=history)


def _fact(statement: str, fact_id: str, channel: str = "C1", **changes) -> Fact:
    return billing_fact(
        statement, fact_id, channel=channel, **{"valid_from": T0, "recorded_from": NOW, **changes}
    )


def _audit(fact: Fact, event: str = "created") -> AuditEvent:
    return AuditEvent(
        event, "test", "conformance", fact.recorded_from, fact.workspace, fact.channel, (fact.fact_id,)
    )


@pytest.fixture
def store(lore):
    return lore.stores.facts


@pytest.fixture
def write(lore, store):
    """Write a new fact with its statement's vector in the embedding cache (as the pipeline does)."""

    def put(fact: Fact, replaces: Fact | None = None, key: str | None = None) -> Fact:
        if replaces is None and key is None:
            key = lore.embedder.ensure_passages([fact.statement])[fact.statement]
        return store.write_version(fact, replaces, _audit(fact, "updated" if replaces else "created"), key)

    return put


def _ids(hits) -> list[str]:
    return [h.fact.fact_id for h in hits]


def test_the_store_under_test_is_the_one_named(lore, fact_store):
    kind = type(lore.stores.facts).__name__
    assert kind == ("EmbeddedFactBackend" if fact_store == "embedded" else "WeaviateFactBackend")


def test_a_write_round_trips_every_field(store, write):
    due = datetime(2026, 7, 1, tzinfo=UTC)
    fact = _fact("Billing moves to Stripe.", "f_a", thread_id="t1", due_at=due, supersedes=("f_z",))
    write(fact)
    assert store.current_version("f_a") == fact
    assert store.current_version("f_a").valid_to == SENTINEL  # the open bound reads back as the sentinel
    assert store.current_version("f_nope") is None


def test_replacing_closes_the_old_version_at_the_new_ones_recorded_from(store, write, lore):
    old = write(_fact("Billing runs on Postgres 14.", "f_a"))
    new = dataclasses.replace(old, version=2, recorded_from=LATER, status=FactStatus.CONTESTED)
    write(new, replaces=old)
    versions = store._versions("f_a", C1)
    assert [(v.version, v.recorded_to) for v in versions] == [(1, LATER), (2, SENTINEL)]
    assert store.current_version("f_a") == new
    assert [e.event for e in lore.stores.audit.events_for_fact("f_a")] == ["created", "updated"]


def test_replacing_a_version_that_is_no_longer_current_is_refused(store, write, lore):
    old = write(_fact("Billing runs on Postgres 14.", "f_a"))
    write(dataclasses.replace(old, version=2, recorded_from=LATER), replaces=old)
    stale = dataclasses.replace(old, version=2, recorded_from=LATER + timedelta(hours=1))
    with pytest.raises(ConcurrentChange):
        write(stale, replaces=old)
    assert store.current_version("f_a").recorded_from == LATER
    assert len(lore.stores.audit.events_for_fact("f_a")) == 2  # the refused write logged nothing


def test_keyword_semantic_hybrid_and_list_keep_to_the_scope(store, write, embedder):
    write(_fact("The Globex renewal price is 40 dollars per seat.", "f_priv", channel="C1"))
    write(_fact("The Globex renewal meeting is on Friday.", "f_pub", channel="C2"))
    vector = embedder.embed_query("Globex renewal price")
    raw = {
        "keyword": lambda s: store._keyword("Globex renewal price", s, _view(), 10),
        "semantic": lambda s: store._semantic(vector, s, _view(), 10),
        "hybrid": lambda s: store._hybrid("Globex renewal price", vector, s, _view(), 10),
        "list": lambda s: store._list(s, _view(), 10),
        "by_ids": lambda s: store._by_ids(["f_priv", "f_pub"], s, _view()),
    }
    for name, query in raw.items():
        assert set(_ids(query(C1))) == {"f_priv"}, name
        assert set(_ids(query(C2))) == {"f_pub"}, name  # the paired control: same query, other channel
        assert set(_ids(query(BOTH))) == {"f_priv", "f_pub"}, name
        assert _ids(query(Scope("T2", ["C1"]))) == [], name
    assert [v.fact_id for v in store._versions("f_priv", C1)] == ["f_priv"]
    assert store._versions("f_priv", C2) == []


def test_keyword_search_ranks_the_best_match_first_and_leaves_stopwords_out(store, write):
    write(_fact("The deploy freeze starts on Monday.", "f_freeze"))
    write(_fact("Lunch is at noon on Monday.", "f_lunch"))
    hits = store._keyword("when does the deploy freeze start", C1, _view(), 10)
    assert _ids(hits)[0] == "f_freeze"
    assert all(h.score > 0 for h in hits)
    # Only stopwords: they are searched after all (the embedded store's rule); no words: nothing.
    assert _ids(store._keyword("the of", C1, _view(), 10)) == ["f_freeze"]
    assert store._keyword("?! ...", C1, _view(), 10) == []


def test_semantic_scores_are_cosine(store, write, embedder):
    fact = write(_fact("The billing service runs on Kubernetes.", "f_k8s"))
    vector = embedder.embed_query("where does billing run")
    [hit] = store._semantic(vector, C1, _view(), 5)
    expected = float(embedder.embed_passages([fact.statement])[0] @ vector)
    assert hit.score == pytest.approx(expected, abs=1e-4)


def test_a_floor_drops_what_is_found_by_meaning_below_it_and_keeps_what_is_above(store, write, embedder):
    fact = write(_fact("The billing service runs on Kubernetes.", "f_k8s"))
    vector = embedder.embed_query("where does billing run")
    cosine = float(embedder.embed_passages([fact.statement])[0] @ vector)
    assert _ids(store._semantic(vector, C1, _view(), 5, cosine - 1e-3)) == ["f_k8s"]  # control
    assert store._semantic(vector, C1, _view(), 5, cosine + 1e-3) == []
    # Hybrid: a word the fact does not hold, so only the vector half could find it.
    assert _ids(store._hybrid("orchestration", vector, C1, _view(), 5, cosine - 1e-3)) == ["f_k8s"]
    assert store._hybrid("orchestration", vector, C1, _view(), 5, cosine + 1e-3) == []


def test_the_time_predicate_is_compiled_into_every_read(store, write, embedder):
    old = write(_fact("The Atlas launch is on March 3.", "f_old", valid_from=T0))
    march17 = T0 + timedelta(days=30)
    new = write(_fact("The Atlas launch is on March 17.", "f_new", valid_from=march17, recorded_from=LATER))
    closed = dataclasses.replace(
        old,
        version=2,
        recorded_from=LATER,
        status=FactStatus.SUPERSEDED,
        valid_to=march17,
        superseded_by="f_new",
    )
    write(closed, replaces=old)
    vector = embedder.embed_query("Atlas launch")
    later = LATER + timedelta(hours=1)
    cases = {
        # valid before the change, as known later: the superseded version, valid then
        "before": (_view(valid_at=T0 + timedelta(days=1), known_at=later), {"f_old"}),
        # valid after the change: only the new fact
        "after": (_view(valid_at=march17 + timedelta(days=1), known_at=later), {"f_new"}),
        # known before the new fact was recorded: the old belief, still open-ended
        "believed": (_view(valid_at=march17 + timedelta(days=1), known_at=NOW), {"f_old"}),
        # before anything was recorded
        "nothing": (_view(known_at=NOW - timedelta(seconds=1)), set()),
        # history: every fact's version held at known_at, whatever its valid time
        "history": (_view(valid_at=T0 - timedelta(days=1), known_at=later, history=True), {"f_old", "f_new"}),
    }
    for name, (view, expected) in cases.items():
        for kind, rows in {
            "keyword": store._keyword("Atlas launch", C1, view, 10),
            "semantic": store._semantic(vector, C1, view, 10),
            "hybrid": store._hybrid("Atlas launch", vector, C1, view, 10),
            "list": store._list(C1, view, 10),
            "by_ids": store._by_ids(["f_old", "f_new"], C1, view),
        }.items():
            assert set(_ids(rows)) == expected, (name, kind)
    believed = store._by_ids(["f_old"], C1, cases["believed"][0])
    assert [h.fact.version for h in believed] == [1]
    assert new.recorded_to == SENTINEL


def _chain(write, channels: tuple[str, ...]) -> None:
    """f_0 superseded by f_1 by f_2 ..., each link recorded a day after the one before."""
    facts = [
        write(
            _fact(
                f"The Atlas launch is on March {3 + i}.",
                f"f_{i}",
                channel=ch,
                recorded_from=NOW + timedelta(days=i),
            )
        )
        for i, ch in enumerate(channels)
    ]
    for old, new in zip(facts, facts[1:], strict=False):
        closed = dataclasses.replace(
            old,
            version=2,
            recorded_from=new.recorded_from,
            status=FactStatus.SUPERSEDED,
            superseded_by=new.fact_id,
        )
        write(closed, replaces=old)


def test_following_reads_the_superseded_by_chain_link_by_link_within_scope_and_time(store, write):
    _chain(write, ("C1", "C1", "C1", "C2", "C1"))
    end = NOW + timedelta(days=10)
    history = _view(known_at=end, history=True)

    def following(scope, view=history, steps=8):
        found = store._following(["f_0"], scope, view, steps)
        return {h.fact.fact_id: h.fact.version for h in found}

    # Every link followed from the version read: the closed ones (version 2) and the current end.
    assert following(BOTH) == {"f_0": 2, "f_1": 2, "f_2": 2, "f_3": 2, "f_4": 1}
    # No further than ``steps`` links.
    assert following(BOTH, steps=1) == {"f_0": 2, "f_1": 2}
    assert following(BOTH, steps=0) == {"f_0": 2}
    # A link into a channel out of scope is not read, nor anything behind it (control: BOTH above).
    assert following(C1) == {"f_0": 2, "f_1": 2, "f_2": 2}
    # Known before the second link was recorded: f_1 was then current and superseded by nothing.
    assert following(BOTH, _view(known_at=NOW + timedelta(days=1, hours=1), history=True)) == {
        "f_0": 2,
        "f_1": 1,
    }
    assert store._following([], BOTH, history, 8) == []


def test_list_is_newest_valid_from_first(store, write):
    for i in range(3):
        write(_fact(f"Status report {i} is out.", f"f_{i}", valid_from=T0 + timedelta(days=i)))
    assert _ids(store._list(C1, _view(), 10)) == ["f_2", "f_1", "f_0"]
    assert _ids(store._list(C1, _view(), 2)) == ["f_2", "f_1"]


def test_write_path_lookups_see_only_current_versions_of_one_channel(store, write):
    a = write(_fact("Billing runs on Postgres 14.", "f_a", evidence=("m1",)))
    write(_fact("Billing runs on Postgres 14.", "f_c2", channel="C2", evidence=("m1",)))
    b = write(_fact("The billing team owns invoices.", "f_b", evidence=("m1", "m2")))
    retracted = dataclasses.replace(
        b, version=2, recorded_from=LATER, status=FactStatus.RETRACTED, evidence=("m2",)
    )
    write(retracted, replaces=b)

    assert store.current_by_hash(WS, "C1", a.content_hash) == a
    assert store.current_by_hash(WS, "C1", b.content_hash) is None  # retracted is not a match
    assert store.current_by_hash(WS, "C3", a.content_hash) is None
    assert [f.fact_id for f in store.current_citing(WS, "C1", "m1")] == [
        "f_a"
    ]  # b's current version dropped m1
    assert [f.version for f in store.current_citing(WS, "C1", "m2")] == [2]
    assert store.current_ids(WS, "C1") == ["f_a", "f_b"]
    assert store.current_ids(WS, "C2") == ["f_c2"]
    related = store.current_related(WS, "C1", "which database does billing use", 10)
    assert [r.fact_id for r in related] == ["f_a"]  # retracted f_b and the other channel's fact left out
    assert related[0].statement == a.statement and related[0].valid_from == a.valid_from


def test_a_version_without_a_vector_is_left_out_of_vector_search_only(store, lore, embedder):
    fact = _fact("The billing service runs on Kubernetes.", "f_novec")
    store.write_version(fact, None, _audit(fact), embedding_key="not-in-the-cache")
    vector = embedder.embed_query("billing service Kubernetes")
    assert store._semantic(vector, C1, _view(), 5) == []
    assert _ids(store._keyword("billing Kubernetes", C1, _view(), 5)) == ["f_novec"]
    assert _ids(store._hybrid("billing Kubernetes", vector, C1, _view(), 5)) == ["f_novec"]


def test_a_replacement_keeps_the_vector_of_the_version_it_replaces(store, write, embedder):
    old = write(_fact("The billing service runs on Kubernetes.", "f_a"))
    write(dataclasses.replace(old, version=2, recorded_from=LATER, evidence=("m1", "m2")), replaces=old)
    [hit] = store._semantic(embedder.embed_query("billing on Kubernetes"), C1, _view(known_at=LATER), 5)
    assert hit.fact.version == 2


def test_erase_text_blanks_every_version_and_drops_its_vector(store, write, embedder, lore):
    old = write(_fact("Dana's salary is 90k.", "f_secret"))
    write(dataclasses.replace(old, version=2, recorded_from=LATER, status=FactStatus.RETRACTED), replaces=old)
    keep = write(_fact("The billing team owns invoices.", "f_keep"))
    key = lore.embedder.key(old.statement)
    assert store.erase_text(["f_secret"]) >= 1
    assert all(v.statement == "" and v.entities == () for v in store._versions("f_secret", C1))
    assert store._keyword("salary", C1, _view(history=True), 5) == []
    vector = embedder.embed_query("Dana's salary")
    assert "f_secret" not in _ids(store._semantic(vector, C1, _view(known_at=NOW, history=True), 5))
    assert lore.stores.embeddings.get_vectors([key]) == {}
    assert store.current_version("f_keep") == keep


def test_the_facts_nearest_a_statement_are_current_ones_of_its_channel_closest_first(store, write, lore):
    db = write(_fact("Billing runs on Postgres 14.", "f_db"))
    write(_fact("The billing team owns invoices.", "f_team"))
    write(_fact("Billing runs on Postgres 14.", "f_c2", channel="C2"))
    old = write(_fact("Billing runs on MySQL 8.", "f_old"))
    write(dataclasses.replace(old, version=2, recorded_from=LATER, status=FactStatus.RETRACTED), replaces=old)
    vector = lore.embedder.vectors(["the billing database is Postgres 16"])[0]
    near = store.current_near(WS, "C1", vector, 5, 100)
    # The retracted fact and the other channel's fact are left out; the closest comes first.
    assert [r.fact_id for r in near] == ["f_db", "f_team"]
    assert near[0].statement == db.statement and near[0].valid_from == db.valid_from
    assert [r.fact_id for r in store.current_near(WS, "C1", vector, 1, 100)] == ["f_db"]
    assert store.current_near(WS, "C3", vector, 5, 100) == []
