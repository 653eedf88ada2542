"""The Weaviate message index's own rules: the filters each query sends (pinned as the calls the
in-process double records, with the client's real Filter objects), its object ids, idempotent and
undoable writes, its schema, its copy from the SQLite file, and Weaviate failing under a search.
What it answers beside the SQLite index is tests/test_message_index_conformance.py and
tests/test_message_search.py (over the wire server)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pytest
from weaviate.classes.config import DataType, Tokenization
from weaviate.exceptions import WeaviateQueryError

from teamlore.app import Teamlore, load_messages_into_weaviate, weaviate_message_collection
from teamlore.capabilities.facts import SearchMode
from teamlore.config import Settings
from teamlore.domain import Message, ReadView, ResolvedView, Scope, content_hash
from teamlore.errors import BackendUnavailable, ConfigurationError
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.embedded.message_index import EmbeddedMessageIndex
from teamlore.stores.protocols import ConcurrentChange
from teamlore.stores.weaviate import connect, drop_collections, filters, schema
from teamlore.stores.weaviate.codec import message_uuid
from teamlore.stores.weaviate.facts import WeaviateFactBackend
from teamlore.stores.weaviate.importer import copy_versions
from teamlore.stores.weaviate.journal import UndoJournal
from teamlore.stores.weaviate.messages import WeaviateMessageIndex
from teamlore.timeutil import SENTINEL

from .conftest import event
from .helpers import KeepsNothing, billing_fact, put
from .test_weaviate_store import _Collections, _leaves, _scope_leaves, _time_leaves
from .weaviate_double import DoubleCollection

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
VIEW = ResolvedView(valid_at=NOW, known_at=NOW, include_history=False)
HISTORY = ResolvedView(valid_at=NOW, known_at=NOW, include_history=True)
SCOPE_A = Scope("T1", ["CA"])
SCOPE_B = Scope("T1", ["CB"])
VECTOR = np.ones(4, np.float32) / 2
CURRENT = ("recorded_to", "Equal", filters.OPEN_BOUND)
HAS_TEXT = ("has_text", "Equal", True)


@pytest.fixture
def stores(tmp_path):
    opened = EmbeddedStores(tmp_path / "t.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
def double():
    return DoubleCollection(properties=schema.MESSAGES.names)


@pytest.fixture
def index(double, stores):
    return WeaviateMessageIndex(double, stores.embeddings, UndoJournal(), max_results=500)


def message(message_id: str, text: str, channel: str = "CA", minutes: float = 0) -> Message:
    return Message(
        platform="slack",
        workspace="T1",
        channel=channel,
        message_id=message_id,
        thread_id=None,
        author_id="U1",
        author_name="rita",
        ts=NOW - timedelta(days=1, minutes=-minutes),
        text=text,
        permalink="",
        content_hash=content_hash(text),
    )


# ---- what every query sends ----

READS = {
    "_keyword": (lambda i, s, v: i._keyword("launch date", s, v, 10), ["bm25"]),
    "_semantic": (lambda i, s, v: i._semantic(VECTOR, s, v, 10), ["near_vector"]),
    "_hybrid": (lambda i, s, v: i._hybrid("launch date", VECTOR, s, v, 10), ["bm25", "near_vector"]),
}


@pytest.mark.parametrize("kind", sorted(READS))
@pytest.mark.parametrize("view", [VIEW, HISTORY], ids=["now", "history"])
def test_every_raw_read_sends_the_scope_the_time_predicate_and_has_text(index, double, kind, view):
    run, methods = READS[kind]
    sent = {}
    for scope in (SCOPE_A, SCOPE_B):
        double.calls.clear()
        run(index, scope, view)
        calls = [call for method in methods for call in double.calls_to(method)]
        assert len(calls) == len(methods)
        sent[scope] = [set(_leaves(call.kwargs["filters"])) for call in calls]
        for leaves in sent[scope]:
            assert leaves == _scope_leaves(scope) | _time_leaves(view) | {HAS_TEXT}, kind
    # Paired: the same query for two channels differs in the channel predicate, nothing else.
    for a, b in zip(sent[SCOPE_A], sent[SCOPE_B], strict=True):
        assert a ^ b == {("channel", "ContainsAny", ("CA",)), ("channel", "ContainsAny", ("CB",))}


def test_a_message_lifted_by_its_neighbour_is_read_through_the_scope_and_the_view(index, double, stores):
    """The spread reads places around the pool in the pool's channel only, and what it lifts comes
    back through the raw reads' own filter: not before it was posted (as of), and not from another
    channel. Controls: the same query a minute later, and in the neighbour's own channel."""
    index.put(message("m1", "The launch date is March 3."), "The launch date is March 3.", NOW, None)
    index.put(message("m2", "sounds good to me", minutes=1), "sounds good to me", NOW, None)
    index.put(message("m3", "sounds good to me", channel="CB", minutes=1), "sounds good to me", NOW, None)
    posted = message("m1", "").ts

    def found(scope, valid_at):
        double.calls.clear()
        view = ResolvedView(valid_at=valid_at, known_at=NOW, include_history=False)
        return [h.message.message_id for h in index._keyword("launch date", scope, view, 10)]

    assert found(SCOPE_A, posted + timedelta(seconds=30)) == ["m1"]  # m2 not posted yet
    lifted = [
        c
        for c in double.calls_to("fetch_objects")
        if ("message_id", "ContainsAny", ("m2",)) in _leaves(c.kwargs["filters"])
    ]
    assert lifted and all(
        _scope_leaves(SCOPE_A)
        | _time_leaves(ResolvedView(posted + timedelta(seconds=30), NOW, False))
        | {HAS_TEXT}
        <= set(_leaves(c.kwargs["filters"]))
        for c in lifted
    )
    around = [c for c in double.calls_to("fetch_objects") if c not in lifted]
    assert around and all(
        {("workspace", "Equal", "T1"), ("channel", "Equal", "CA")} <= set(_leaves(c.kwargs["filters"]))
        for c in around
    )
    assert found(SCOPE_A, posted + timedelta(minutes=2)) == ["m1", "m2"]  # control: a minute later
    assert found(Scope("T1", ["CA", "CB"]), posted + timedelta(minutes=2)) == [
        "m1",
        "m2",
    ]  # m3: no neighbour of m1


LOOKUPS = {
    "current": lambda i, ch: i.current("T1", ch, "m1"),
    "before": lambda i, ch: i.before("T1", ch, "m2", None, NOW),
    "after (a reply)": lambda i, ch: i.after("T1", ch, "m2", "m1", NOW),
}


@pytest.mark.parametrize("kind", sorted(LOOKUPS))
def test_every_conversation_lookup_sends_its_channel_the_current_predicate_and_has_text(index, double, kind):
    sent = {}
    for channel in ("CA", "CB"):
        double.calls.clear()
        LOOKUPS[kind](index, channel)
        [call] = double.calls
        sent[channel] = set(_leaves(call.kwargs["filters"]))
        assert {("workspace", "Equal", "T1"), ("channel", "Equal", channel), CURRENT, HAS_TEXT} <= sent[
            channel
        ]
    assert sent["CA"] ^ sent["CB"] == {("channel", "Equal", "CA"), ("channel", "Equal", "CB")}


def test_hybrid_blends_both_halves_and_no_query_asks_for_more_rows_than_the_server_allows(index, double):
    index._hybrid("launch date", VECTOR, SCOPE_A, VIEW, 20_000)
    assert [c.kwargs["limit"] for c in double.calls] == [500, 500]  # bm25, then near_vector
    assert [c.method for c in double.calls] == ["bm25", "near_vector"]


# ---- writes ----


def test_a_version_is_one_object_whose_id_is_a_uuid5_of_its_place(index, double):
    index.put(message("m1", "first text"), "first text", NOW, None)
    index.put(message("m1", "first text", channel="CB"), "first text", NOW, None)  # same id, other channel
    index.put(message("m1", "second text"), "second text", NOW + timedelta(hours=1), None)
    assert set(double.objects) == {
        message_uuid("T1", "CA", "m1", 1),
        message_uuid("T1", "CB", "m1", 1),
        message_uuid("T1", "CA", "m1", 2),
    }
    first = double.objects[message_uuid("T1", "CA", "m1", 1)].properties
    assert first["recorded_to"] == NOW + timedelta(hours=1)  # closed when the next was written
    assert double.objects[message_uuid("T1", "CB", "m1", 1)].properties["recorded_to"] == filters.OPEN_BOUND
    assert set(first) <= schema.MESSAGES.names  # never a field auto-schema would add


def test_a_write_cut_short_is_finished_by_its_redelivery_and_counts_as_written(index, double):
    index.put(message("m1", "old text"), "old text", NOW, None)
    index.put(message("m1", "new text"), "new text", NOW + timedelta(hours=1), None)
    v1 = message_uuid("T1", "CA", "m1", 1)
    double.objects[v1].properties["recorded_to"] = filters.OPEN_BOUND  # died before the close
    assert index.put(message("m1", "new text"), "new text", NOW + timedelta(hours=2), None) is False
    assert double.objects[v1].properties["recorded_to"] == NOW + timedelta(hours=1)
    assert index.current("T1", "CA", "m1").text == "new text"
    # The insert itself met again (its close lost with the lookup's answer): the same text is done.
    index.writes._insert(index.writes._open_versions("T1", "CA", "m1")[0], None)


def test_another_text_under_an_existing_version_id_is_a_concurrent_change(index, double):
    index.put(message("m1", "old text"), "old text", NOW, None)
    mine = index.writes._open_versions("T1", "CA", "m1")[0]
    with pytest.raises(ConcurrentChange, match="m1 v1 was written by someone else"):
        index.writes._insert(mine.__class__(**{**_fields(mine), "text": "someone else's text"}), None)


def _fields(version) -> dict:
    return {f: getattr(version, f) for f in version.__slots__}


def test_a_rolled_back_delete_gives_every_version_its_text_and_vector_back(index, double, stores):
    stores.embeddings.put_vectors("test", {"k1": VECTOR})
    index.put(message("m1", "the vault key rotates"), "the vault key rotates", NOW, "k1")
    journal = index.journal
    with pytest.raises(RuntimeError), journal.frame():
        index.withdraw("T1", "CA", "m1", NOW + timedelta(hours=1))
        stored = double.objects[message_uuid("T1", "CA", "m1", 1)]
        assert (stored.properties["text"], stored.vector) == ("", {})
        raise RuntimeError("the event fails after the delete")
    stored = double.objects[message_uuid("T1", "CA", "m1", 1)]
    assert (
        stored.properties["text"] == "the vault key rotates"
        and stored.properties["recorded_to"] == filters.OPEN_BOUND
    )
    assert stored.vector[schema.MESSAGE_VECTOR] == pytest.approx(VECTOR.tolist())
    # Control: committed, the delete stays.
    with journal.frame():
        index.withdraw("T1", "CA", "m1", NOW + timedelta(hours=1))
    assert double.objects[message_uuid("T1", "CA", "m1", 1)].properties["has_text"] is False


# ---- the schema ----


def test_a_missing_message_collection_is_created_with_every_property_declared():
    collections = _Collections()
    schema.check_schema(SimpleNamespace(collections=collections), "FactsMessages", schema.MESSAGES)
    [created] = collections.created
    props = {p.name: p for p in created["properties"]}
    assert set(props) == schema.MESSAGES.names and created["description"] == schema.MESSAGES.description
    for bound in ("valid_from", "valid_to", "recorded_from", "recorded_to"):
        assert props[bound].dataType is DataType.DATE and props[bound].indexRangeFilters
    for searched in ("terms", "speaker"):  # stemmed words, as the file's index holds them
        assert props[searched].indexSearchable and props[searched].tokenization is Tokenization.WORD
    assert not props["text"].indexSearchable  # shown, not searched: its terms are
    assert props["has_text"].dataType is DataType.BOOL and props["has_text"].indexFilterable
    assert not props["author_name"].indexSearchable  # the speaker is searched while there is text
    assert created["vector_config"].name == schema.MESSAGE_VECTOR


def test_a_fact_collection_under_the_message_collections_name_is_refused_with_the_fix():
    facts = SimpleNamespace(
        description=schema.DESCRIPTION,
        properties=[
            SimpleNamespace(name=p.name, data_type=p.data_type, tokenization=p.tokenization,
                            index_filterable=p.filterable, index_searchable=p.searchable,
                            index_range_filters=p.rangeable)
            for p in schema.PROPERTIES
        ],
        vector_config={schema.VECTOR: object()},
        multi_tenancy_config=SimpleNamespace(enabled=False),
    )  # fmt: skip
    with pytest.raises(ConfigurationError) as refused:
        schema.check_schema(
            SimpleNamespace(collections=_Collections(facts)), "FactsMessages", schema.MESSAGES
        )
    message_ = str(refused.value)
    assert "FactsMessages (message versions)" in message_ and "property text is missing" in message_
    assert "teamlore weaviate load-messages" in message_
    assert schema.schema_differences(facts) == []  # control: as a fact collection it is fine


# ---- the copy from the SQLite file ----


def test_load_messages_copies_every_version_so_the_copy_answers_as_the_original(make_lore, clock):
    lore = make_lore(extractor=KeepsNothing())
    put(lore, event("The Atlas launch is on March 3.", message_id="m1"))
    clock.advance(hours=1)
    put(lore, event("The Atlas launch is on March 17.", message_id="m1", kind="message.edited"))
    put(lore, event("Billing runs on Postgres 16.", message_id="m2", channel="C2"))
    put(lore, event("The vault key rotates.", message_id="m3"))
    clock.advance(hours=1)
    put(lore, event(kind="message.deleted", message_id="m3"))
    source = lore.stores.message_index
    assert isinstance(source, EmbeddedMessageIndex)
    double = DoubleCollection(properties=schema.MESSAGES.names)
    target = WeaviateMessageIndex(double, lore.stores.embeddings, UndoJournal())
    report = copy_versions(source, target, lore.stores.embeddings, batch_size=2)
    assert report.copied == 4 and report.failed == []  # m1 in two versions, m2, m3 (blank)
    again = copy_versions(source, target, lore.stores.embeddings, batch_size=2)
    assert again.copied == 4 and len(double.objects) == 4  # a re-run overwrites, never duplicates
    known_before_edit = ReadView(known_at=clock() - timedelta(hours=2)).resolved(clock())
    for scope in (Scope("T1", ["C1"]), Scope("T1", ["C2"])):
        for view in (
            ReadView().resolved(clock()),
            known_before_edit,
            ReadView(include_history=True).resolved(clock()),
        ):
            for words in ("Atlas launch", "Billing Postgres", "vault key"):
                assert {h.message for h in target._keyword(words, scope, view, 10)} == {
                    h.message for h in source._keyword(words, scope, view, 10)
                }, (scope, view, words)
    vector = lore.embedder.embed_query("Atlas launch")
    semantic = target._semantic(vector, Scope("T1", ["C1"]), ReadView().resolved(clock()), 10)
    assert [h.message.text for h in semantic] == ["The Atlas launch is on March 17."]  # m3 kept no vector
    assert double.objects[message_uuid("T1", "C1", "m3", 1)].vector == {}


# ---- failures through the gate ----


def _with_message_double(collection: DoubleCollection):
    """A fact store factory that also puts the message index on ``collection``, as the server
    stack's wiring does (``app.open_weaviate``)."""

    def factory(settings, stores):
        facts = WeaviateFactBackend(DoubleCollection(), stores.audit, stores.embeddings)
        stores.use_message_index(WeaviateMessageIndex(collection, stores.embeddings, facts.journal))
        return facts

    return factory


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.SEMANTIC])
def test_the_message_index_failing_mid_search_falls_back_to_keyword_with_a_receipt(make_lore, mode):
    collection = DoubleCollection(properties=schema.MESSAGES.names)
    lore = make_lore(fact_store=_with_message_double(collection), extractor=KeepsNothing())
    put(lore, event("The staging database is PostgreSQL 16.", message_id="m1"))
    assert collection.objects  # the message went to the Weaviate index, not the file
    assert lore.stores.db.conn.execute("SELECT count(*) FROM message_versions").fetchone()[0] == 0
    collection.fail["hybrid"] = WeaviateQueryError("shard unavailable", "GRPC")
    collection.fail["near_vector"] = WeaviateQueryError("shard unavailable", "GRPC")
    result = lore.reader.search("staging database", Scope("T1", ["C1"]), mode=mode)
    assert [h.text for h in result.hits] == ["The staging database is PostgreSQL 16."]
    assert result.receipt.fallback_taken and result.receipt.mode_used == "keyword"
    assert "shard unavailable" in result.receipt.fallback_reason


def test_the_message_index_failing_on_the_keyword_path_is_an_error_not_an_empty_result(make_lore):
    collection = DoubleCollection(properties=schema.MESSAGES.names)
    lore = make_lore(fact_store=_with_message_double(collection), extractor=KeepsNothing())
    put(lore, event("The staging database is PostgreSQL 16.", message_id="m1"))
    collection.fail["bm25"] = WeaviateQueryError("shard unavailable", "GRPC")
    with pytest.raises(BackendUnavailable, match="message index: keyword search failed"):
        lore.reader.search("staging database", Scope("T1", ["C1"]), mode=SearchMode.KEYWORD)


def test_open_versions_read_back_with_the_sentinel(index, double):
    index.put(message("m1", "some text"), "some text", NOW, None)
    assert index.current("T1", "CA", "m1").recorded_to == SENTINEL


def test_a_server_stack_finds_the_messages_its_file_indexed_once_they_are_loaded(
    tmp_path, embedder, clock, weaviate_wire
):
    """The upgrade: a store whose message index was in the file opens with Weaviate, where the
    index starts empty; ``load_messages_into_weaviate`` (``teamlore weaviate load-messages``)
    copies it over. Without Weaviate there is nothing to load into."""
    data = tmp_path / "lore"
    embedded = Teamlore(
        Settings(data_dir=data, _env_file=None), embedder=embedder, clock=clock, extractor=KeepsNothing()
    )
    try:
        put(embedded, event("Our status page is hosted by Statuspage.", message_id="m1"))
        with pytest.raises(ConfigurationError, match="TEAMLORE_WEAVIATE_URL"):
            load_messages_into_weaviate(embedded)
    finally:
        embedded.close()
    settings = Settings(
        data_dir=data,
        weaviate_url=weaviate_wire.url,
        weaviate_grpc_port=weaviate_wire.grpc_port,
        weaviate_collection=f"TeamloreTest{uuid.uuid4().hex[:12]}",
        _env_file=None,
    )
    served = Teamlore(settings, embedder=embedder, clock=clock, extractor=KeepsNothing())
    try:
        assert isinstance(served.stores.message_index, WeaviateMessageIndex)
        query = ("where is the status page hosted", Scope("T1", ["C1"]))
        assert served.reader.search(*query).hits == ()  # the reason for the command
        report = load_messages_into_weaviate(served)
        assert (report.copied, report.failed) == (1, [])
        for mode in SearchMode:
            assert [h.text for h in served.reader.search(*query, mode=mode).hits] == [
                "Our status page is hosted by Statuspage."
            ]
    finally:
        served.close()
        drop_collections(settings)


def test_a_cached_vector_goes_only_when_no_fact_and_no_message_version_uses_it(double, stores):
    """As the file asks both of its tables (``_still_used``): erasing a fact keeps a vector a
    message still holds, deleting a message keeps one a fact still holds; alone, each goes."""
    facts = WeaviateFactBackend(DoubleCollection(), stores.audit, stores.embeddings)
    index = WeaviateMessageIndex(double, stores.embeddings, facts.journal, key_in_use=facts.uses_key)
    facts.key_in_use = index.uses_key
    stores.embeddings.put_vectors("test", {k: VECTOR for k in ("shared", "fact_only", "message_only")})
    made = {"valid_from": NOW, "recorded_from": NOW}
    facts.import_versions(
        [
            (billing_fact("Billing runs on Postgres.", "f_1", **made), "shared", VECTOR),
            (billing_fact("Billing runs on MySQL.", "f_2", **made), "fact_only", VECTOR),
            (billing_fact("Billing runs nightly.", "f_3", **made), "shared", VECTOR),
        ]
    )
    index.put(message("m1", "Billing runs on Postgres."), "Billing runs on Postgres.", NOW, "shared")
    index.put(message("m2", "Billing runs on Oracle."), "Billing runs on Oracle.", NOW, "message_only")
    facts.erase_text(["f_1", "f_2", "f_3"])
    held = stores.embeddings.get_vectors(["shared", "fact_only", "message_only"])
    assert set(held) == {"shared", "message_only"}  # a message holds "shared"; nothing held "fact_only"
    facts.import_versions([(billing_fact("Billing runs weekly.", "f_4", **made), "shared", VECTOR)])
    index.withdraw("T1", "CA", "m1", NOW + timedelta(hours=1))
    index.withdraw("T1", "CA", "m2", NOW + timedelta(hours=1))
    assert set(stores.embeddings.get_vectors(["shared", "message_only"])) == {"shared"}  # f_4 holds it


def test_doctor_checks_the_message_collection_beside_the_fact_collection(tmp_path, weaviate_wire):
    from teamlore.doctor import check_weaviate

    settings = Settings(
        data_dir=tmp_path,
        weaviate_url=weaviate_wire.url,
        weaviate_grpc_port=weaviate_wire.grpc_port,
        weaviate_collection=f"TeamloreTest{uuid.uuid4().hex[:12]}",
        _env_file=None,
    )
    messages = weaviate_message_collection(settings)
    client = connect(settings)
    try:
        assert check_weaviate(settings).ok  # neither exists yet: both made on first use
        schema.create_collection(client, settings.weaviate_collection, schema.FACTS)
        assert check_weaviate(settings).ok  # control: the fact collection is right
        schema.create_collection(client, messages, schema.FACTS)  # a fact schema under the messages' name
        check = check_weaviate(settings)
        assert not check.ok and f"collection {messages} has another schema" in check.detail
        assert "property text is missing" in check.detail and "teamlore reindex" in check.fix
    finally:
        client.collections.delete(settings.weaviate_collection)
        client.collections.delete(messages)
        client.close()


@pytest.mark.parametrize("how", ["deleted", "erased"])
def test_no_property_of_any_version_keeps_a_word_of_a_deleted_or_erased_message(index, double, stores, how):
    """Searches cannot show it (``has_text`` is false): this pins that the words are gone from the
    objects themselves, stemmed terms and speaker included. Control: the other author's message."""
    stores.embeddings.put_vectors("test", {"k1": VECTOR, "k2": VECTOR})
    said = message("m1", "The vault master key rotates quarterly.")
    said = dataclasses.replace(said, author_id="U9", author_name="Zedekiah")
    index.put(said, said.text, NOW, "k1")
    index.put(said, "The vault master key rotates monthly.", NOW + timedelta(hours=1), "k1")
    index.put(message("m2", "Noted, thanks."), "Noted, thanks.", NOW, "k2")
    if how == "deleted":
        index.withdraw("T1", "CA", "m1", NOW + timedelta(hours=2))
    else:
        index.erase_author("T1", "U9")
    words = ("vault", "master", "rotat", "quarter", "month") + (("zedekiah",) if how == "erased" else ())
    for obj in double.objects.values():
        values = " ".join(str(v) for v in obj.properties.values()).lower()
        if obj.properties["message_id"] == "m1":
            assert not [w for w in words if w in values], obj.properties
            assert obj.vector == {}
        else:
            assert "noted" in values and obj.vector  # the control keeps its words and vector
