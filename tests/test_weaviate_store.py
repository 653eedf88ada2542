"""The Weaviate fact store's own rules: the filters it compiles, its schema, its time bounds, its
write path under failure, its batch import. No Weaviate server runs here: the compiled filters are
pinned as pure values and as the calls recorded on tests/weaviate_double.py (the client's real
Filter objects); the real server is exercised only when TEAMLORE_TEST_WEAVIATE_URL is set
(tests/test_fact_backend_conformance.py and the suites marked every_fact_store)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pytest
from weaviate.classes.config import DataType, Tokenization
from weaviate.collections.classes.filters import _FilterAnd, _FilterValue
from weaviate.exceptions import WeaviateQueryError

from teamlore.capabilities.facts import SearchMode
from teamlore.config import Settings
from teamlore.domain import Fact, FactStatus, FactType, ReadView, ResolvedView, Scope
from teamlore.errors import BackendUnavailable, ConfigurationError, InvalidInput
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import AuditEvent
from teamlore.stores.weaviate import connect, filters, schema
from teamlore.stores.weaviate.codec import version_uuid
from teamlore.stores.weaviate.facts import WeaviateFactBackend
from teamlore.timeutil import SENTINEL

from .conftest import event
from .helpers import put
from .weaviate_double import DoubleCollection, go_unix_nano

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
VIEW = ResolvedView(valid_at=NOW, known_at=NOW, include_history=False)
HISTORY = ResolvedView(valid_at=NOW, known_at=NOW, include_history=True)
SCOPE_A = Scope("T1", ["CA"])
SCOPE_B = Scope("T1", ["CB"])
VECTOR = np.ones(4, np.float32) / 2


def _leaves(node) -> list[tuple[str, str, object]]:
    """A compiled filter flattened to (property, operator, value); only ANDs may join them."""
    if isinstance(node, _FilterValue):
        value = tuple(sorted(node.value)) if isinstance(node.value, list) else node.value
        return [(node.target, node.operator.value, value)]
    assert isinstance(node, _FilterAnd), f"{type(node).__name__} would weaken the predicate"
    return [leaf for child in node.filters for leaf in _leaves(child)]


def _scope_leaves(scope: Scope) -> set:
    return {
        ("workspace", "Equal", scope.workspace),
        ("channel", "ContainsAny", tuple(sorted(scope.channels))),
    }


def _time_leaves(view: ResolvedView) -> set:
    leaves = {
        ("recorded_from", "LessThanEqual", view.known_at),
        ("recorded_to", "GreaterThan", view.known_at),
    }
    if not view.include_history:
        leaves |= {("valid_from", "LessThanEqual", view.valid_at), ("valid_to", "GreaterThan", view.valid_at)}
    return leaves


CURRENT = ("recorded_to", "Equal", filters.OPEN_BOUND)


# ---- the pure compiler ----


def test_compile_filters_holds_the_scope_and_all_four_time_bounds():
    assert set(_leaves(filters.compile_filters(SCOPE_A, VIEW))) == _scope_leaves(SCOPE_A) | _time_leaves(VIEW)


def test_compile_filters_with_history_keeps_the_transaction_time_bounds_only():
    leaves = set(_leaves(filters.compile_filters(SCOPE_A, HISTORY)))
    assert leaves == _scope_leaves(SCOPE_A) | _time_leaves(HISTORY)
    assert not {name for name, _, _ in leaves} & {"valid_from", "valid_to"}


def test_compile_filters_for_a_version_listing_is_the_scope_alone():
    assert set(_leaves(filters.compile_filters(SCOPE_A, None))) == _scope_leaves(SCOPE_A)


def test_compile_filters_differs_between_two_channels_only_in_the_channel():
    a = set(_leaves(filters.compile_filters(SCOPE_A, VIEW)))
    b = set(_leaves(filters.compile_filters(SCOPE_B, VIEW)))
    assert a ^ b == {("channel", "ContainsAny", ("CA",)), ("channel", "ContainsAny", ("CB",))}
    several = set(_leaves(filters.compile_filters(Scope("T1", ["CB", "CA"]), VIEW)))
    assert ("channel", "ContainsAny", ("CA", "CB")) in several


# ---- every query kind, as recorded on the collection ----


@pytest.fixture
def stores(tmp_path):
    opened = EmbeddedStores(tmp_path / "t.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
def double():
    return DoubleCollection()


@pytest.fixture
def backend(double, stores):
    return WeaviateFactBackend(double, stores.audit, stores.embeddings, hybrid_alpha=0.3, max_results=500)


READS = {
    "_keyword": (lambda b, s, v: b._keyword("launch date", s, v, 10), "bm25"),
    "_semantic": (lambda b, s, v: b._semantic(VECTOR, s, v, 10), "near_vector"),
    "_hybrid": (lambda b, s, v: b._hybrid("launch date", VECTOR, s, v, 10), "hybrid"),
    "_list": (lambda b, s, v: b._list(s, v, 10), "fetch_objects"),
    "_by_ids": (lambda b, s, v: b._by_ids(["f_1", "f_2"], s, v), "fetch_objects"),
}


@pytest.mark.parametrize("kind", sorted(READS))
@pytest.mark.parametrize("view", [VIEW, HISTORY], ids=["now", "history"])
def test_every_raw_read_sends_the_scope_and_the_time_predicate(backend, double, kind, view):
    run, method = READS[kind]
    sent = {}
    for scope in (SCOPE_A, SCOPE_B):
        double.calls.clear()
        run(backend, scope, view)
        [call] = double.calls_to(method)
        sent[scope] = set(_leaves(call.kwargs["filters"]))
        assert _scope_leaves(scope) | _time_leaves(view) <= sent[scope], kind
    # Paired: the same query for two channels differs in the channel predicate, nothing else.
    assert sent[SCOPE_A] ^ sent[SCOPE_B] == {
        ("channel", "ContainsAny", ("CA",)),
        ("channel", "ContainsAny", ("CB",)),
    }


def test_by_ids_adds_the_ids_and_versions_lists_are_scoped(backend, double):
    backend._by_ids(["f_1", "f_2"], SCOPE_A, VIEW)
    assert ("fact_id", "ContainsAny", ("f_1", "f_2")) in _leaves(
        double.calls_to("fetch_objects")[0].kwargs["filters"]
    )
    double.calls.clear()
    backend._versions("f_1", SCOPE_A)
    leaves = set(_leaves(double.calls_to("fetch_objects")[0].kwargs["filters"]))
    assert leaves == _scope_leaves(SCOPE_A) | {("fact_id", "Equal", "f_1")}


LOOKUPS = {
    "current_by_hash": lambda b, ch: b.current_by_hash("T1", ch, "h1"),
    "current_citing": lambda b, ch: b.current_citing("T1", ch, "m1"),
    "current_ids": lambda b, ch: b.current_ids("T1", ch),
    "current_related": lambda b, ch: b.current_related("T1", ch, "launch date", 5),
    "current_near": lambda b, ch: b.current_near("T1", ch, VECTOR, 4, 256),
}


@pytest.mark.parametrize("kind", sorted(LOOKUPS))
def test_every_write_path_lookup_sends_its_channel_and_the_current_predicate(backend, double, kind):
    sent = {}
    for channel in ("CA", "CB"):
        double.calls.clear()
        LOOKUPS[kind](backend, channel)
        [call] = double.calls
        sent[channel] = set(_leaves(call.kwargs["filters"]))
        assert {("workspace", "Equal", "T1"), ("channel", "Equal", channel), CURRENT} <= sent[channel]
    assert sent["CA"] ^ sent["CB"] == {("channel", "Equal", "CA"), ("channel", "Equal", "CB")}


def test_current_version_asks_for_the_current_version_of_that_fact(backend, double):
    backend.current_version("f_1")
    [call] = double.calls
    assert set(_leaves(call.kwargs["filters"])) == {("fact_id", "Equal", "f_1"), CURRENT}


def test_hybrid_is_weaviates_rank_fusion_with_the_configured_alpha(backend, double):
    backend._hybrid("launch date", VECTOR, SCOPE_A, VIEW, 10)
    [call] = double.calls_to("hybrid")
    assert call.kwargs["alpha"] == 0.3 and call.kwargs["fusion_type"].value == "FUSION_TYPE_RANKED"
    assert call.kwargs["query"] == "launch date"


def test_no_query_asks_for_more_rows_than_the_server_allows(backend, double):
    backend._list(SCOPE_A, VIEW, 20_000)
    backend._keyword("launch", SCOPE_A, VIEW, 20_000)
    assert [c.kwargs["limit"] for c in double.calls] == [500, 500]


# ---- time bounds ----


def test_the_far_future_sentinel_would_wrap_in_weaviates_date_index():
    # Why OPEN_BOUND exists: Weaviate orders dates by Go's UnixNano(), an int64.
    assert go_unix_nano(SENTINEL) < go_unix_nano(NOW)  # 9999-12-31 wraps below today
    assert go_unix_nano(NOW) < go_unix_nano(filters.OPEN_BOUND)  # 2262-01-01 does not


def test_open_bounds_are_stored_as_the_orderable_bound_and_read_back_as_the_sentinel():
    assert filters.to_stored(SENTINEL) == filters.OPEN_BOUND
    assert filters.from_stored(filters.OPEN_BOUND) == SENTINEL
    assert filters.to_stored(NOW) == NOW and filters.from_stored(NOW) == NOW


def test_a_query_moment_past_the_bound_is_clamped_so_open_facts_still_match():
    far = datetime(5000, 1, 1, tzinfo=UTC)
    clamped = filters.query_moment(far)
    assert clamped < filters.OPEN_BOUND and clamped > NOW
    leaves = _leaves(filters.time_filter(ResolvedView(far, far, False)))
    assert all(value == clamped for _, _, value in leaves)


def test_a_fact_time_weaviate_cannot_order_is_refused_with_the_range():
    with pytest.raises(InvalidInput, match="1678-01-01T00:00:00Z to 2262-01-01T00:00:00Z"):
        filters.to_stored(datetime(2300, 1, 1, tzinfo=UTC))


def test_an_open_fact_is_found_far_in_the_future_and_a_closed_one_is_not(make_lore, clock):
    lore = make_lore(fact_store=_double_factory())
    put(lore, event("The Atlas launch is on March 3.", ts="2026-01-10T10:00:00Z"))
    put(lore, event("The Atlas launch is on March 17.", ts="2026-02-10T10:00:00Z"))
    far = ReadView(valid_at=datetime(4000, 1, 1, tzinfo=UTC))
    hits = lore.reader.search("Atlas launch", Scope("T1", ["C1"]), far, mode=SearchMode.KEYWORD)
    assert [h.fact.statement for h in hits.hits] == ["The Atlas launch is on March 17."]


# ---- the write path ----


def _fact(fact_id: str = "f_1", version: int = 1, **changes) -> Fact:
    fact = Fact(
        fact_id=fact_id,
        version=version,
        workspace="T1",
        channel="CA",
        thread_id=None,
        statement="The launch is on March 3.",
        content_hash="h1",
        fact_type=FactType.SCHEDULE,
        entities=("launch",),
        topic="launch",
        importance=0.5,
        confidence=0.9,
        status=FactStatus.ACTIVE,
        evidence=("m1",),
        valid_from=NOW - timedelta(days=3),
        recorded_from=NOW,
    )
    return dataclasses.replace(fact, **changes)


def _audit(fact: Fact) -> AuditEvent:
    return AuditEvent("created", "test", "test", fact.recorded_from, "T1", "CA", (fact.fact_id,))


def test_a_write_inserts_the_version_with_its_cached_vector_and_logs_it(backend, double, stores):
    stores.embeddings.put_vectors("m", {"k1": VECTOR})
    backend.write_version(_fact(), None, _audit(_fact()), embedding_key="k1")
    [insert] = double.calls_to("insert")
    assert insert.kwargs["uuid"] == version_uuid("f_1", 1)
    assert insert.kwargs["vector"] == {schema.VECTOR: pytest.approx(VECTOR.tolist())}
    assert insert.kwargs["properties"]["recorded_to"] == filters.OPEN_BOUND
    assert set(insert.kwargs["properties"]) <= schema.PROPERTY_NAMES  # never a field auto-schema would add
    assert [e.event for e in stores.audit.events_for_fact("f_1")] == ["created"]


def test_a_failed_close_removes_the_inserted_version_and_logs_nothing(backend, double, stores):
    old = backend.write_version(_fact(), None, _audit(_fact()))
    double.fail["update"] = WeaviateQueryError("connection reset", "HTTP")
    new = _fact(version=2, recorded_from=NOW + timedelta(hours=1), status=FactStatus.CONTESTED)
    with pytest.raises(BackendUnavailable, match="connection reset"):
        backend.write_version(new, old, _audit(new))
    assert set(double.objects) == {version_uuid("f_1", 1)}
    assert backend.current_version("f_1") == old
    assert len(stores.audit.events_for_fact("f_1")) == 1


def test_a_failed_audit_append_undoes_the_weaviate_writes(backend, double, stores, monkeypatch):
    old = backend.write_version(_fact(), None, _audit(_fact()))

    def broken(event):
        raise BackendUnavailable("disk full")

    monkeypatch.setattr(stores.audit, "append", broken)
    new = _fact(version=2, recorded_from=NOW + timedelta(hours=1))
    with pytest.raises(BackendUnavailable, match="disk full"):
        backend.write_version(new, old, _audit(new))
    assert backend.current_version("f_1") == old
    assert len(double.objects) == 1


def test_a_rolled_back_transaction_undoes_its_weaviate_writes_and_a_committed_one_keeps_them(
    backend, double, stores
):
    stores.use_facts(backend)
    kept = _fact("f_kept")
    with stores.transaction():
        backend.write_version(kept, None, _audit(kept))
        with pytest.raises(RuntimeError), stores.transaction(savepoint=True):
            doomed = _fact("f_doomed")
            backend.write_version(doomed, None, _audit(doomed))
            closed = _fact("f_kept", version=2, recorded_from=NOW + timedelta(hours=1))
            backend.write_version(closed, kept, _audit(closed))
            raise RuntimeError("the event failed")
    assert backend.current_version("f_doomed") is None
    assert backend.current_version("f_kept") == kept  # the close inside the savepoint was undone too
    assert stores.audit.events_for_fact("f_doomed") == []  # SQLite rolled its side back as well
    assert [e.event for e in stores.audit.events_for_fact("f_kept")] == ["created"]
    with pytest.raises(RuntimeError), stores.transaction():
        backend.write_version(_fact("f_outer"), None, _audit(_fact("f_outer")))
        raise RuntimeError("the batch failed")
    assert backend.current_version("f_outer") is None


def test_a_second_writer_replacing_the_same_version_is_refused(backend, double):
    from teamlore.stores.protocols import ConcurrentChange

    old = backend.write_version(_fact(), None, _audit(_fact()))
    mine = _fact(version=2, recorded_from=NOW + timedelta(hours=1))
    # The other writer got there between our read and our insert: v2 exists, v1 is still open.
    double._insert(properties={"fact_id": "f_1"}, uuid=version_uuid("f_1", 2))
    with pytest.raises(ConcurrentChange, match="written by someone else"):
        backend.write_version(mine, old, _audit(mine))


def test_batch_import_reports_each_refused_object(backend, double):
    good, bad = _fact("f_good"), _fact("f_bad")
    real = double._insert_many

    def refuse_one(objects):
        result = real(objects)
        result.errors[1] = SimpleNamespace(message="vector lengths don't match", object_=objects[1])
        return result

    double.data.insert_many = refuse_one
    failed = backend.import_versions([(good, "k", VECTOR), (bad, None, None)])
    assert failed == ["f_bad v1: vector lengths don't match"]


def test_load_facts_copies_every_version_so_the_copy_answers_as_the_original(lore, embedder):
    from teamlore.stores.weaviate.importer import copy_versions

    put(lore, event("The Atlas launch is on March 3.", ts="2026-01-10T10:00:00Z"))
    put(lore, event("The Atlas launch is on March 17.", ts="2026-02-10T10:00:00Z"))
    put(lore, event("Billing runs on Postgres 16.", channel="C2"))
    source = lore.stores.facts
    target = WeaviateFactBackend(DoubleCollection(), lore.stores.audit, lore.stores.embeddings)
    report = copy_versions(source, target, lore.stores.embeddings, batch_size=2)
    assert report.copied == 4 and report.failed == []  # three facts, one of them in two versions
    again = copy_versions(source, target, lore.stores.embeddings, batch_size=2)
    assert again.copied == 4 and len(target._c.objects) == 4  # a re-run overwrites, never duplicates
    vector = embedder.embed_query("Atlas launch")
    for scope in (Scope("T1", ["C1"]), Scope("T1", ["C2"])):
        for view in (ResolvedView(NOW, NOW, False), ResolvedView(NOW, NOW, True)):
            assert target._list(scope, view, 10) == source._list(scope, view, 10)
            assert {h.fact for h in target._semantic(vector, scope, view, 10)} == {
                h.fact for h in source._semantic(vector, scope, view, 10)
            }


# ---- failures through the gate ----


def _double_factory(collection: DoubleCollection | None = None):
    def factory(settings, stores):
        return WeaviateFactBackend(collection or DoubleCollection(), stores.audit, stores.embeddings)

    return factory


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.SEMANTIC])
def test_weaviate_failing_mid_search_falls_back_to_keyword_with_a_receipt_saying_so(make_lore, mode):
    collection = DoubleCollection()
    lore = make_lore(fact_store=_double_factory(collection))
    put(lore, event("The staging database is PostgreSQL 16."))
    collection.fail["hybrid"] = WeaviateQueryError("shard unavailable", "GRPC")
    collection.fail["near_vector"] = WeaviateQueryError("shard unavailable", "GRPC")
    result = lore.reader.search("staging database", Scope("T1", ["C1"]), mode=mode)
    assert [h.fact.statement for h in result.hits] == ["The staging database is PostgreSQL 16."]
    assert result.receipt.fallback_taken and result.receipt.mode_used == "keyword"
    assert "BackendUnavailable" in result.receipt.fallback_reason
    assert "shard unavailable" in result.receipt.fallback_reason


def test_weaviate_failing_on_the_keyword_path_is_an_error_not_an_empty_result(make_lore):
    collection = DoubleCollection()
    lore = make_lore(fact_store=_double_factory(collection))
    put(lore, event("The staging database is PostgreSQL 16."))
    collection.fail["bm25"] = WeaviateQueryError("shard unavailable", "GRPC")
    with pytest.raises(BackendUnavailable, match="keyword search failed"):
        lore.reader.search("staging database", Scope("T1", ["C1"]), mode=SearchMode.KEYWORD)


def test_an_unreachable_weaviate_is_a_clear_error_at_start(tmp_path):
    settings = Settings(
        data_dir=tmp_path, weaviate_url="http://127.0.0.1:9", weaviate_connect_timeout_s=2, _env_file=None
    )
    with pytest.raises(
        BackendUnavailable, match="cannot reach Weaviate at http://127.0.0.1:9.*TEAMLORE_WEAVIATE_URL"
    ):
        connect(settings)


def test_a_weaviate_url_that_is_not_http_is_a_configuration_error(tmp_path):
    settings = Settings(data_dir=tmp_path, weaviate_url="localhost:8080", _env_file=None)
    with pytest.raises(ConfigurationError, match="not an http"):
        connect(settings)


# ---- the schema ----


class _Collections:
    """Records what check_schema asks of client.collections."""

    def __init__(self, config=None) -> None:
        self.config = config
        self.created: list[dict] = []

    def exists(self, name):
        return self.config is not None

    def create(self, name, **kwargs):
        self.created.append({"name": name, **kwargs})

    def get(self, name):
        return SimpleNamespace(config=SimpleNamespace(get=lambda: self.config))


def _created_config():
    """The configuration Weaviate reports for a collection made by create_collection."""
    props = [
        SimpleNamespace(
            name=p.name,
            data_type=p.data_type,
            tokenization=p.tokenization,
            index_filterable=p.filterable,
            index_searchable=p.searchable,
            index_range_filters=p.rangeable,
        )
        for p in schema.PROPERTIES
    ]
    return SimpleNamespace(
        description=schema.DESCRIPTION,
        properties=props,
        vector_config={schema.VECTOR: object()},
        multi_tenancy_config=SimpleNamespace(enabled=False),
    )


def test_a_missing_collection_is_created_with_every_property_declared():
    collections = _Collections()
    schema.check_schema(SimpleNamespace(collections=collections), "Facts")
    [created] = collections.created
    props = {p.name: p for p in created["properties"]}
    assert set(props) == schema.PROPERTY_NAMES
    for bound in ("valid_from", "valid_to", "recorded_from", "recorded_to"):
        assert props[bound].dataType is DataType.DATE and props[bound].indexRangeFilters
    assert props["statement"].indexSearchable and props["statement"].tokenization is Tokenization.WORD
    assert props["entities"].indexSearchable
    assert props["channel"].tokenization is Tokenization.FIELD and not props["channel"].indexSearchable
    assert created["vector_config"].vectorizer.vectorizer.value == "none"
    assert created["multi_tenancy_config"].enabled is False


def test_a_collection_with_the_expected_schema_is_accepted():
    assert schema.schema_differences(_created_config()) == []
    schema.check_schema(SimpleNamespace(collections=_Collections(_created_config())), "Facts")


def test_a_collection_with_another_schema_is_refused_with_the_differences_and_the_fix():
    config = _created_config()
    config.description = "Teamlore fact versions (bitemporal). teamlore-schema=0"
    config.properties.append(SimpleNamespace(name="mood", data_type=DataType.TEXT, tokenization=None,
                                             index_filterable=True, index_searchable=True,
                                             index_range_filters=False))  # fmt: skip
    recorded_to = next(p for p in config.properties if p.name == "recorded_to")
    recorded_to.index_range_filters = False
    with pytest.raises(ConfigurationError) as refused:
        schema.check_schema(SimpleNamespace(collections=_Collections(config)), "Facts")
    message = str(refused.value)
    assert "schema version 0, this Teamlore expects 1" in message
    assert "property recorded_to is date [filterable], expected date [filterable,range]" in message
    assert "unexpected properties mood" in message
    assert "TEAMLORE_WEAVIATE_COLLECTION" in message and "teamlore weaviate load-facts" in message


def test_a_collection_not_made_by_teamlore_is_refused():
    config = _created_config()
    config.description = "someone else's"
    assert schema.schema_differences(config) == [
        "it was not created by Teamlore (no teamlore-schema mark in its description)"
    ]
