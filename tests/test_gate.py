"""The one gate: every public read withholds retired facts by default, on every path."""

from __future__ import annotations

import numpy as np
import pytest
from weaviate.classes.query import Filter

from teamlore.capabilities.facts import FactReader, SearchMode
from teamlore.domain import FactStatus, ReadView, Scope
from teamlore.errors import BackendUnavailable, EmbedderUnavailable
from teamlore.stores.embedded import facts as embedded_facts
from teamlore.stores.embedded.vector_index import VectorIndex
from teamlore.stores.weaviate import filters as weaviate_filters

from .conftest import WS, event
from .helpers import only_fact, put

pytestmark = pytest.mark.every_fact_store

SCOPE = Scope(WS, ["C1"])
HISTORY = ReadView(include_history=True)
QUERY = "staging database"


@pytest.fixture
def retired(lore):
    """A live fact, a superseded one and a retracted one, all matching QUERY."""
    old = only_fact(
        lore, put(lore, event("The staging database is PostgreSQL 14.", ts="2026-01-05T10:00:00Z"))[0]
    )
    placed = put(lore, event("The staging database is PostgreSQL 16.", ts="2026-02-05T10:00:00Z"))[0]
    new = only_fact(lore, placed)
    assert placed.superseded == [old.fact_id]  # the pipeline's resolver retired the old value
    doomed = event("The staging database password rotates every 30 days.", ts="2026-02-06T10:00:00Z")
    gone = only_fact(lore, put(lore, doomed)[0])
    put(lore, event(kind="message.deleted", message_id=doomed.message_id, ts="2026-02-07T10:00:00Z"))
    assert lore.stores.facts.current_version(gone.fact_id).status is FactStatus.RETRACTED
    assert lore.stores.facts.current_version(old.fact_id).status is FactStatus.SUPERSEDED
    return {"live": new.fact_id, "superseded": old.fact_id, "retracted": gone.fact_id}


def test_the_public_read_api_is_exactly_the_gated_methods():
    # A new public read method must be added to the tests below before it can ship.
    public = {name for name in dir(FactReader) if not name.startswith("_")}
    assert public == {"search", "list", "get", "get_many", "citing", "history"}


def _ids(result):
    return {hit.key for hit in result.hits}


@pytest.mark.parametrize("mode", list(SearchMode))
def test_search_withholds_retired_facts_by_default_and_returns_them_with_history(lore, retired, mode):
    default = lore.reader.search(QUERY, SCOPE, mode=mode, k=10)
    assert retired["live"] in _ids(default)
    assert retired["superseded"] not in _ids(default)
    assert retired["retracted"] not in _ids(default)
    assert default.receipt.withheld.get("retracted") == 1

    with_history = lore.reader.search(QUERY, SCOPE, HISTORY, mode=mode, k=10)
    assert {retired["live"], retired["superseded"], retired["retracted"]} <= _ids(with_history)


def test_list_withholds_retired_facts_by_default_and_returns_them_with_history(lore, retired):
    assert _ids(lore.reader.list(SCOPE)) == {retired["live"]}
    assert _ids(lore.reader.list(SCOPE, HISTORY)) == set(retired.values())


def test_get_withholds_retired_facts_by_default_and_returns_them_with_history(lore, retired):
    assert lore.reader.get(retired["live"], SCOPE) is not None
    for name in ("superseded", "retracted"):
        assert lore.reader.get(retired[name], SCOPE) is None
        shown = lore.reader.get(retired[name], SCOPE, HISTORY)
        assert shown is not None and shown.fact.status.value == name


def test_get_many_withholds_retired_facts_by_default_and_returns_them_with_history(lore, retired):
    ids = list(retired.values())
    assert {v.fact.fact_id for v in lore.reader.get_many(ids, SCOPE)} == {retired["live"]}
    assert {v.fact.fact_id for v in lore.reader.get_many(ids, SCOPE, HISTORY)} == set(ids)
    assert lore.reader.get_many(ids, Scope(WS, ["C2"]), HISTORY) == []


def test_citing_withholds_retired_facts_by_default_and_returns_them_with_history(lore, retired):
    old = lore.stores.facts.current_version(retired["superseded"])
    [message_id] = old.evidence
    assert lore.reader.citing(message_id, SCOPE) == []
    [shown] = lore.reader.citing(message_id, SCOPE, HISTORY)
    assert shown.fact.fact_id == retired["superseded"] and shown.fact.status is FactStatus.SUPERSEDED
    assert lore.reader.citing(message_id, Scope(WS, ["C2"]), HISTORY) == []
    [live_source] = lore.stores.facts.current_version(retired["live"]).evidence
    assert [v.fact.fact_id for v in lore.reader.citing(live_source, SCOPE)] == [retired["live"]]


def test_history_returns_every_version_inside_the_scope_and_nothing_outside(lore, retired):
    history = lore.reader.history(retired["superseded"], SCOPE)
    assert [v.fact.status for v in history.versions] == [FactStatus.ACTIVE, FactStatus.SUPERSEDED]
    assert [e.event for e in history.audit] == ["created", "superseded"]
    assert lore.reader.history(retired["superseded"], Scope(WS, ["C2"])).versions == ()


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.SEMANTIC])
def test_fallback_after_the_primary_path_raises_still_withholds_retired_facts(
    lore, retired, monkeypatch, mode
):
    def broken(*args, **kwargs):
        raise BackendUnavailable("vector index is on fire")

    monkeypatch.setattr(lore.stores.facts, "_hybrid", broken)
    monkeypatch.setattr(lore.stores.facts, "_semantic", broken)
    result = lore.reader.search(QUERY, SCOPE, mode=mode, k=10)
    assert result.receipt.fallback_taken
    assert result.receipt.mode_used == "keyword"
    assert "vector index is on fire" in result.receipt.fallback_reason
    assert retired["live"] in _ids(result)
    assert retired["superseded"] not in _ids(result)
    assert retired["retracted"] not in _ids(result)
    # Control: the fallback path does return retired facts when history is asked for.
    with_history = lore.reader.search(QUERY, SCOPE, HISTORY, mode=mode, k=10)
    assert set(retired.values()) <= _ids(with_history)


def test_an_embedder_outage_falls_back_to_keyword_through_the_gate(lore, retired, monkeypatch):
    def down(text):
        raise EmbedderUnavailable("embeddings endpoint unreachable")

    monkeypatch.setattr(lore.embedder, "embed_query", down)
    result = lore.reader.search(QUERY, SCOPE, k=10)
    assert result.receipt.fallback_taken and result.receipt.mode_used == "keyword"
    assert _ids(result) & set(retired.values()) == {retired["live"]}


def _raising(error: Exception):
    """A raw query that fails with ``error``."""

    def fail(*args, **kwargs):
        raise error

    return fail


def test_a_bug_in_the_hybrid_path_is_an_error_not_a_quiet_fallback(lore, retired, monkeypatch):
    monkeypatch.setattr(lore.stores.facts, "_hybrid", _raising(TypeError("a programming error")))
    with pytest.raises(TypeError, match="a programming error"):
        lore.reader.search(QUERY, SCOPE, mode=SearchMode.HYBRID)
    # The control: the same place failing as a backend fails falls back to keyword.
    monkeypatch.setattr(lore.stores.facts, "_hybrid", _raising(BackendUnavailable("down")))
    assert lore.reader.search(QUERY, SCOPE, mode=SearchMode.HYBRID).receipt.fallback_taken


def test_keyword_failure_is_an_error_not_an_empty_result(lore, retired, monkeypatch):
    monkeypatch.setattr(lore.stores.facts, "_keyword", _raising(BackendUnavailable("disk gone")))
    with pytest.raises(BackendUnavailable, match="disk gone"):
        lore.reader.search(QUERY, SCOPE, mode=SearchMode.KEYWORD)


def _forget_scope_and_time_filters(monkeypatch, fact_store):
    """Simulate a backend bug: every raw query drops its scope and time predicates."""
    # The message index lives in the SQLite file in every configuration: its raw queries forget too.
    if fact_store == "embedded":
        monkeypatch.setattr(
            embedded_facts, "scope_time_sql", lambda scope, view, alias="v", by_id=False: ("1=1", [])
        )
    monkeypatch.setattr(
        VectorIndex,
        "_scope_parts",
        lambda self, scope, view: [(c, self._members[c], self._member_rows[c]) for c in self._members],
    )
    monkeypatch.setattr(VectorIndex, "_channel_codes", lambda self, scope: sorted(self._members))
    monkeypatch.setattr(
        VectorIndex, "_inside", lambda self, positions, scope, view: np.ones(len(positions), bool)
    )
    if fact_store != "embedded":
        match_all = Filter.by_property("version").greater_than(0)
        monkeypatch.setattr(weaviate_filters, "compile_filters", lambda scope, view: match_all)


def test_the_gate_holds_even_when_a_raw_query_forgets_its_filters(lore, retired, monkeypatch, fact_store):
    put(lore, event("The staging database for team two is MySQL 8.", channel="C2"))
    honest = {mode: _ids(lore.reader.search(QUERY, SCOPE, mode=mode, k=10)) for mode in SearchMode}
    honest_list = _ids(lore.reader.list(SCOPE))

    _forget_scope_and_time_filters(monkeypatch, fact_store)

    for mode in SearchMode:
        leaky = lore.reader.search(QUERY, SCOPE, mode=mode, k=10)
        assert _ids(leaky) == honest[mode]
        assert leaky.receipt.withheld.get("out_of_scope", 0) >= 1
    assert _ids(lore.reader.list(SCOPE)) == honest_list


def test_a_retired_fact_never_costs_a_live_fact_its_slot(lore):
    # Thirty retracted facts that match the query better than the five live ones.
    doomed = [event(f"Kafka migration step {i} for the kafka cluster is done.") for i in range(30)]
    put(lore, *doomed)
    put(
        lore,
        *[event(kind="message.deleted", message_id=e.message_id, ts="2026-01-06T10:00:00Z") for e in doomed],
    )
    live = [event(f"Batch {i} of the kafka rollout finished on host {i}.") for i in range(5)]
    put(lore, *live)
    for mode in SearchMode:
        result = lore.reader.search("kafka migration cluster done", SCOPE, mode=mode, k=5)
        assert len(result.hits) == 5, mode
        assert all(h.fact.status is FactStatus.ACTIVE for h in result.hits)
        assert not result.receipt.fewer_than_k
        assert result.receipt.withheld.get("retracted", 0) >= 1


def test_fewer_than_k_is_flagged(lore, retired):
    result = lore.reader.search(QUERY, SCOPE, mode=SearchMode.KEYWORD, k=5)
    assert result.receipt.fewer_than_k and result.receipt.returned == len(result.hits) < 5


def test_semantic_scores_are_exact_cosine(lore, embedder):
    put(lore, event("The billing service runs on Kubernetes."))
    query = embedder.embed_query("where does billing run")
    view = ReadView().resolved()
    raw = lore.stores.facts._semantic(query, SCOPE, view, 1)
    expected = float(embedder.embed_passages([raw[0].fact.statement])[0] @ query)
    assert raw[0].score == pytest.approx(expected, abs=1e-5)
    # The public search ranks facts and messages together: its scores are the fused ones, best first.
    result = lore.reader.search("where does billing run", SCOPE, mode=SearchMode.SEMANTIC, k=5)
    assert result.hits[0].key == raw[0].fact.fact_id
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True) and all(np.isfinite(scores))
