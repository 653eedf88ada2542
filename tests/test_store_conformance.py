"""One conformance suite per store Protocol, run on every implementation available: the
embedded SQLite stores, the MongoDB stores on nx-27017, and a real MongoDB when
TEAMLORE_TEST_MONGO_URL is set. Each test pins behaviour the pipeline, the gate or the wiki
relies on; none looks at how a store keeps its data."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from teamlore.domain import Attachment, AttachmentKind, Channel, Message, Scope, Visibility
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import AuditEvent, StalePage
from teamlore.wiki.model import PageKind, PageRef, PageVersion, Route, Section

from .conftest import STORE_KINDS
from .mongo_server import drop_database, fresh_database

T0 = datetime(2026, 1, 5, 10, 0, 0, 123456, tzinfo=UTC)  # microseconds: stores keep them exactly


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def stores(tmp_path: Path, mongo_url: str | None) -> Iterator[EmbeddedStores]:
    if mongo_url is None:
        bundle = EmbeddedStores(tmp_path / "s.sqlite3")
        yield bundle
        bundle.close()
        return
    from teamlore.stores.with_mongo import MongoStores

    database = fresh_database()
    bundle = MongoStores(tmp_path / "s.sqlite3", mongo_url, database, timeout_s=5)
    yield bundle
    bundle.close()
    drop_database(mongo_url, database)


def msg(message_id: str, text: str = "hello", **changes: object) -> Message:
    fields: dict[str, object] = {
        "platform": "slack",
        "workspace": "T1",
        "channel": "C1",
        "message_id": message_id,
        "thread_id": None,
        "author_id": "U1",
        "author_name": "Alice",
        "ts": T0,
        "text": text,
        "permalink": f"https://x/{message_id}",
        "content_hash": f"h-{text}",
    }
    fields.update(changes)
    return Message(**fields)  # type: ignore[arg-type]


# ---- MessageStore ----


def test_a_stored_message_reads_back_field_for_field(stores):
    stored = msg("1.1", thread_id="1.0", edited_at=T0 + timedelta(microseconds=7))
    stores.messages.put_message(stored, recorded_at=T0)
    assert stores.messages.get_message("T1", "C1", "1.1") == stored
    assert stores.messages.get_message("T1", "C2", "1.1") is None  # control: another channel
    assert stores.messages.get_message("T2", "C1", "1.1") is None


def test_storing_a_message_again_changes_only_its_text_hash_edit_time_and_thread(stores):
    stores.messages.put_message(msg("1.1", "first"), recorded_at=T0)
    again = msg(
        "1.1",
        "second",
        author_name="Mallory",
        author_id="U9",
        ts=T0 + timedelta(days=1),
        permalink="https://elsewhere",
        thread_id="1.0",
        edited_at=T0 + timedelta(hours=1),
    )
    stores.messages.put_message(again, recorded_at=T0 + timedelta(days=1))
    stores.messages.put_message(again, recorded_at=T0 + timedelta(days=2))  # idempotent
    got = stores.messages.get_message("T1", "C1", "1.1")
    assert (got.text, got.content_hash, got.thread_id, got.edited_at) == (
        "second",
        "h-second",
        "1.0",
        T0 + timedelta(hours=1),
    )
    assert (got.author_name, got.author_id, got.ts, got.permalink) == ("Alice", "U1", T0, "https://x/1.1")


def test_a_deleted_message_loses_its_text_and_keeps_its_first_deletion_time(stores):
    stores.messages.put_message(msg("1.1"), recorded_at=T0)
    stores.messages.mark_deleted("T1", "C1", "1.1", T0 + timedelta(hours=1))
    stores.messages.mark_deleted("T1", "C1", "1.1", T0 + timedelta(hours=2))
    got = stores.messages.get_message("T1", "C1", "1.1")
    assert (got.text, got.deleted_at) == ("", T0 + timedelta(hours=1))
    stores.messages.mark_deleted("T1", "C1", "never-stored", T0)
    assert stores.messages.get_message("T1", "C1", "never-stored") is None


def test_sources_name_only_the_asked_messages_of_that_channel_with_their_deletion(stores):
    for mid in ("1.1", "1.2", "1.3"):
        stores.messages.put_message(msg(mid), recorded_at=T0)
    stores.messages.put_message(msg("1.1", channel="C2"), recorded_at=T0)
    stores.messages.mark_deleted("T1", "C1", "1.2", T0 + timedelta(minutes=5))
    found = stores.messages.sources("T1", "C1", ["1.1", "1.2", "9.9"])
    assert sorted(found) == ["1.1", "1.2"]
    assert found["1.1"].deleted_at is None and found["1.2"].deleted_at == T0 + timedelta(minutes=5)
    assert (found["1.1"].author_name, found["1.1"].ts, found["1.1"].permalink) == (
        "Alice",
        T0,
        "https://x/1.1",
    )
    assert stores.messages.sources("T1", "C1", []) == {}
    assert sorted(stores.messages.sources("T1", "C2", ["1.1", "1.2"])) == ["1.1"]


def test_live_messages_page_through_a_channel_in_id_order_without_deleted_ones(stores):
    for mid in ("3", "1", "5", "2", "4"):
        stores.messages.put_message(msg(mid, f"text {mid}"), recorded_at=T0)
    stores.messages.put_message(msg("0", channel="C2"), recorded_at=T0)
    stores.messages.mark_deleted("T1", "C1", "4", T0)
    first = stores.messages.live_messages("T1", "C1", "", 2)
    rest = stores.messages.live_messages("T1", "C1", first[-1].message_id, 10)
    assert [m.message_id for m in first] == ["1", "2"]
    assert [m.message_id for m in rest] == ["3", "5"]
    assert rest[0].text == "text 3"
    assert stores.messages.live_messages("T1", "C1", "5", 10) == []


def test_live_between_returns_a_channels_live_messages_of_a_time_range_in_time_order(stores):
    for n, mid in enumerate(("9", "1", "5", "2")):  # ids out of time order
        stores.messages.put_message(msg(mid, f"text {mid}", ts=T0 + timedelta(minutes=n)), recorded_at=T0)
    stores.messages.put_message(msg("0", channel="C2", ts=T0 + timedelta(minutes=1)), recorded_at=T0)
    stores.messages.mark_deleted("T1", "C1", "5", T0)
    found = stores.messages.live_between("T1", "C1", T0 + timedelta(minutes=1), T0 + timedelta(minutes=3))
    assert [m.message_id for m in found] == ["1"]  # "5" is deleted, "2" is at the end bound, "9" before
    every = stores.messages.live_between("T1", "C1", T0, T0 + timedelta(days=1))
    assert [m.message_id for m in every] == ["9", "1", "2"] and every[0].text == "text 9"
    assert (
        stores.messages.live_between("T1", "C1", T0 + timedelta(microseconds=1), T0 + timedelta(minutes=1))
        == []
    )


def test_author_names_are_lowercase_distinct_and_per_workspace(stores):
    stores.messages.put_message(msg("1", author_name="Alice"), recorded_at=T0)
    stores.messages.put_message(msg("2", author_name="alice", channel="C2"), recorded_at=T0)
    stores.messages.put_message(msg("3", author_name="Bob"), recorded_at=T0)
    stores.messages.put_message(msg("4", author_name=""), recorded_at=T0)
    stores.messages.put_message(msg("5", author_name="Carol", workspace="T2"), recorded_at=T0)
    assert stores.messages.author_names("T1") == frozenset({"alice", "bob"})
    assert stores.messages.author_names("T2") == frozenset({"carol"})


def test_channels_keep_a_known_name_when_an_event_has_none_and_sort_by_name(stores):
    stores.messages.put_channel(Channel("T1", "C9", "zeta", Visibility.PUBLIC, "slack"))
    stores.messages.put_channel(Channel("T1", "C1", "eng", Visibility.PUBLIC, "slack"))
    stores.messages.put_channel(Channel("T1", "C1", "", Visibility.PRIVATE, "slack"))
    stores.messages.put_channel(Channel("T1", "C2", "", Visibility.DM, "slack"))
    stores.messages.put_channel(Channel("T1", "C9", "alpha", Visibility.PRIVATE, "slack"))
    stores.messages.put_channel(Channel("T2", "C1", "other", Visibility.PUBLIC, "slack"))
    assert stores.messages.channels("T1") == [
        Channel("T1", "C2", "", Visibility.DM, "slack"),
        Channel("T1", "C9", "alpha", Visibility.PRIVATE, "slack"),
        Channel("T1", "C1", "eng", Visibility.PUBLIC, "slack"),
    ]


def test_erasing_an_author_blanks_their_messages_only(stores):
    stores.messages.put_message(msg("1", author_id="U1"), recorded_at=T0)
    stores.messages.put_message(msg("2", author_id="U1", channel="C2"), recorded_at=T0)
    stores.messages.put_message(msg("3", author_id="U2", author_name="Bob"), recorded_at=T0)
    stores.messages.mark_deleted("T1", "C2", "2", T0)
    for message_id in ("1", "3"):
        stores.messages.put_attachments("T1", "C1", message_id, [Attachment(name=f"file{message_id}.pdf")])
    assert stores.messages.authored("T1", "U1") == [("C1", "1"), ("C2", "2")]
    stores.messages.erase_author("T1", "U1", T0 + timedelta(days=1))
    files = stores.messages._media_references(Scope("T1", ["C1"]), ["file"], None, 10)
    assert [f.name for f in files] == ["file3.pdf"]  # the erased person's file is gone, not Bob's
    first, second = stores.messages.get_message("T1", "C1", "1"), stores.messages.get_message("T1", "C2", "2")
    assert (first.text, first.author_name, first.content_hash) == ("", "", "")
    assert first.deleted_at == T0 + timedelta(days=1) and second.deleted_at == T0
    assert stores.messages.get_message("T1", "C1", "3").text == "hello"  # control: someone else
    assert stores.messages.author_names("T1") == frozenset({"bob"})


def test_replies_are_the_live_messages_of_a_thread_after_its_opening_one(stores):
    stores.messages.put_message(msg("1", thread_id="1"), recorded_at=T0)
    stores.messages.put_message(msg("3", thread_id="1", ts=T0 + timedelta(minutes=2)), recorded_at=T0)
    stores.messages.put_message(msg("2", thread_id="1", ts=T0 + timedelta(minutes=1)), recorded_at=T0)
    stores.messages.put_message(msg("4", thread_id="1", ts=T0 + timedelta(minutes=3)), recorded_at=T0)
    stores.messages.put_message(msg("5", thread_id="9"), recorded_at=T0)  # control: another thread
    stores.messages.put_message(msg("6", thread_id="1", channel="C2"), recorded_at=T0)  # and channel
    stores.messages.mark_deleted("T1", "C1", "4", T0)
    assert [m.message_id for m in stores.messages.replies("T1", "C1", "1")] == ["2", "3"]
    assert stores.messages.replies("T1", "C1", "2") == []


def test_a_transaction_sees_its_own_message_writes_and_a_rolled_back_savepoint_leaves_none(stores):
    with stores.transaction():
        assert stores.messages.get_message("T1", "C1", "absent") is None
        stores.messages.put_message(msg("1", "kept"), recorded_at=T0)
        assert stores.messages.get_message("T1", "C1", "1").text == "kept"
        with pytest.raises(RuntimeError), stores.transaction(savepoint=True):
            stores.messages.put_message(msg("2", "dropped", author_name="Zed"), recorded_at=T0)
            stores.messages.put_message(msg("1", "overwritten"), recorded_at=T0)
            assert "zed" in stores.messages.author_names("T1")
            raise RuntimeError("undo this savepoint")
        assert stores.messages.get_message("T1", "C1", "1").text == "kept"
        assert stores.messages.get_message("T1", "C1", "2") is None
    assert stores.messages.get_message("T1", "C1", "1").text == "kept"
    assert stores.messages.get_message("T1", "C1", "2") is None
    assert stores.messages.author_names("T1") == frozenset({"alice"})


def test_attachments_are_found_by_every_word_in_scope_newest_first_and_replaced_whole(stores):
    pdf = Attachment(name="Q3 Roadmap.pdf", mime_type="application/pdf", size=5, url="https://x/1")
    png = Attachment(name="screen.png", mime_type="image/png", url="https://x/2")
    docx = Attachment(name="roadmap v2.docx", mime_type="application/msword", url="https://x/3")
    stores.messages.put_message(msg("m1"), recorded_at=T0)
    stores.messages.put_message(msg("m2", ts=T0 + timedelta(hours=1)), recorded_at=T0)
    stores.messages.put_message(msg("m3", channel="C2"), recorded_at=T0)
    stores.messages.put_message(msg("m4"), recorded_at=T0)
    stores.messages.put_attachments("T1", "C1", "m1", [pdf, png])
    stores.messages.put_attachments("T1", "C1", "m2", [docx])
    stores.messages.put_attachments("T1", "C2", "m3", [pdf])
    stores.messages.put_attachments("T1", "C1", "m4", [pdf])
    stores.messages.mark_deleted("T1", "C1", "m4", T0)

    def found(channels, words, kind=None, limit=10):
        refs = stores.messages._media_references(Scope("T1", channels), words, kind, limit)
        return [(r.message_id, r.name) for r in refs]

    assert found(["C1"], ["ROADMAP"]) == [("m2", "roadmap v2.docx"), ("m1", "Q3 Roadmap.pdf")]
    assert found(["C1"], ["roadmap"], limit=1) == [("m2", "roadmap v2.docx")]
    assert found(["C1"], ["roadmap", "pdf"]) == [("m1", "Q3 Roadmap.pdf")]
    assert found(["C1"], ["png"]) == [("m1", "screen.png")]  # the mime type counts too
    assert found(["C1"], [], AttachmentKind.PDF) == [("m1", "Q3 Roadmap.pdf")]  # m4 is deleted
    assert found(["C2"], ["roadmap"]) == [("m3", "Q3 Roadmap.pdf")]  # control: the other channel
    ref = stores.messages._media_references(Scope("T1", ["C1"]), ["q3"], None, 10)[0]
    assert (ref.author_name, ref.ts, ref.permalink, ref.size, ref.url) == (
        "Alice",
        T0,
        "https://x/m1",
        5,
        "https://x/1",
    )
    stores.messages.put_attachments("T1", "C1", "m1", [png])
    assert found(["C1"], ["q3"]) == [] and found(["C1"], ["screen"]) == [("m1", "screen.png")]


# ---- AuditLog ----


def _event(name: str, *fact_ids: str, at: datetime = T0) -> AuditEvent:
    return AuditEvent(
        name,
        "system",
        "why",
        at,
        "T1",
        "C1",
        fact_ids,
        ("hash",),
        {"state": {"version": 2, "evidence": ["m"]}},
    )


def test_audit_events_come_back_per_fact_in_append_order_with_every_field(stores):
    first = stores.audit.append(_event("created", "f1", at=T0))
    second = stores.audit.append(_event("evidence_added", "f1", "f2", at=T0 + timedelta(microseconds=1)))
    stores.audit.append(_event("created", "f3"))
    assert first < second
    events = stores.audit.events_for_fact("f1")
    assert [(e.event, e.seq) for e in events] == [("created", first), ("evidence_added", second)]
    assert events[1].at == T0 + timedelta(microseconds=1)
    keyed = stores.text_key.digest("hash")  # a content hash is stored keyed (see the next test)
    assert events[1].fact_ids == ("f1", "f2") and events[1].content_hashes == (keyed,)
    assert events[1].details == {"state": {"version": 2, "evidence": ["m"]}}
    assert [e.event for e in stores.audit.events_for_fact("f2")] == ["evidence_added"]
    assert stores.audit.events_for_fact("nobody") == []


def test_the_audit_log_keeps_content_hashes_only_keyed_with_the_secret(stores, tmp_path):
    plain = "0123456789abcdef0123456789abcdef"  # what content_hash() gives for some statement
    event = AuditEvent(
        "created", "system", "why", T0, "T1", "C1", ("f1",), (plain,), {"state": {"content_hash": plain}}
    )
    stores.audit.append(event)
    [stored] = stores.audit.events_for_fact("f1")
    assert plain not in stored.content_hashes and stored.details["state"]["content_hash"] != plain
    assert stored.content_hashes == (stores.text_key.digest(plain),)
    assert stored.details["state"]["content_hash"] == stores.text_key.digest(plain)
    # The secret decides the digest: another store's secret gives another (control: same input).
    other = EmbeddedStores(tmp_path / "other" / "s.sqlite3")
    assert other.text_key.digest(plain) != stores.text_key.digest(plain)
    assert EmbeddedStores(tmp_path / "other" / "s.sqlite3").text_key.digest(plain) == other.text_key.digest(
        plain
    )


def test_an_audit_event_appended_in_a_rolled_back_transaction_is_not_in_the_log(stores):
    with pytest.raises(RuntimeError), stores.transaction():
        stores.audit.append(_event("created", "f1"))
        raise RuntimeError("roll back")
    stores.audit.append(_event("created", "f2"))
    assert stores.audit.events_for_fact("f1") == []
    assert len(stores.audit.events_for_fact("f2")) == 1


def test_recent_audit_events_page_by_sequence_number_both_ways(stores):
    seqs = [stores.audit.append(_event("created", f"f{i}", at=T0 + timedelta(seconds=i))) for i in range(7)]
    stores.audit.append(dataclasses.replace(_event("created", "elsewhere", at=T0), channel="C9"))

    def page(**cursor):
        return [e.seq for e in stores.audit.recent("T1", ["C1"], T0, 3, **cursor)]

    newest_first = seqs[::-1]
    assert page() == newest_first[:3]
    assert page(before=newest_first[2]) == newest_first[3:6]
    assert page(before=newest_first[5]) == newest_first[6:]
    assert page(after=newest_first[6]) == newest_first[3:6]  # the 3 just newer, still newest first
    assert page(after=newest_first[0]) == []
    # ``since`` still bounds what is seen (only the events of the last two seconds here).
    recent = stores.audit.recent("T1", ["C1"], T0 + timedelta(seconds=5), 9)
    assert [e.seq for e in recent] == newest_first[:2]


def test_a_thread_is_its_opening_message_and_replies_in_time_order(stores):
    stores.messages.put_message(msg("1.1", "the question"), recorded_at=T0)
    stores.messages.put_message(msg("1.3", "second reply", thread_id="1.1", ts=T0 + timedelta(minutes=3)), T0)
    stores.messages.put_message(msg("1.2", "first reply", thread_id="1.1", ts=T0 + timedelta(minutes=1)), T0)
    stores.messages.put_message(msg("1.4", "another topic", ts=T0 + timedelta(minutes=2)), T0)
    assert [m.message_id for m in stores.messages.thread("T1", "C1", "1.1")] == ["1.1", "1.2", "1.3"]
    assert [m.message_id for m in stores.messages.thread("T1", "C1", "1.4")] == ["1.4"]  # control
    found = stores.messages.by_permalink("T1", "C1", ["https://x/1.2", "https://x/nope"])
    assert found == {"https://x/1.2": "1.2"}
    assert stores.messages.by_permalink("T1", "C2", ["https://x/1.2"]) == {}  # another channel's: none


# ---- ReviewQueue ----


def test_one_open_review_item_per_pair_and_a_closed_pair_may_open_again(stores):
    first = stores.review.open("T1", "C1", "contested", "old", "new", "why", T0)
    assert stores.review.open("T1", "C1", "contested", "old", "new", "again", T0) == first
    other = stores.review.open("T1", "C1", "contested", "new", "old", "why", T0)
    assert other != first
    stores.review.close(first, "rev", "accept", T0 + timedelta(hours=1))
    reopened = stores.review.open("T1", "C1", "contested", "old", "new", "why", T0)
    assert reopened not in (first, other)


def test_review_items_list_by_scope_and_status_in_opening_order(stores):
    a = stores.review.open("T1", "C1", "contested", "a1", "a2", "why", T0)
    b = stores.review.open("T1", "C2", "manual_conflict", "b1", "b2", "why", T0)
    c = stores.review.open("T1", "C1", "rejected_returns", "c1", "c1", "why", T0)
    stores.review.open("T2", "C1", "contested", "d1", "d2", "why", T0)
    stores.review.close(c, "rev", "reject", T0)
    assert [i.id for i in stores.review.items(Scope("T1", ["C1", "C2"]))] == [a, b]
    assert [i.id for i in stores.review.items(Scope("T1", ["C1"]))] == [a]
    assert [i.id for i in stores.review.items(Scope("T1", ["C1"]), "rejected")] == [c]
    assert stores.review.items(Scope("T1", ["C3"])) == []


def test_closing_a_review_item_records_who_and_when_once(stores):
    item_id = stores.review.open("T1", "C1", "contested", "old", "new", "a reason", T0)
    opened = stores.review.get(item_id)
    assert (opened.status, opened.reason, opened.opened_at, opened.closed_at) == (
        "open",
        "a reason",
        T0,
        None,
    )
    stores.review.close(item_id, "rev", "accept", T0 + timedelta(hours=1))
    stores.review.close(item_id, "late", "reject", T0 + timedelta(hours=2))
    closed = stores.review.get(item_id)
    assert (closed.status, closed.reviewer, closed.decision, closed.closed_at) == (
        "accepted",
        "rev",
        "accept",
        T0 + timedelta(hours=1),
    )
    assert (closed.kind, closed.older_fact, closed.newer_fact) == ("contested", "old", "new")
    assert stores.review.get(item_id + 1000) is None


# ---- Tombstones ----


def test_a_tombstone_is_found_by_its_scope_and_hash_and_the_latest_reason_wins(stores):
    assert stores.tombstones.reason("T1", "C1", "h") is None
    stores.tombstones.add("T1", "C1", "h", "source deleted", T0)
    assert stores.tombstones.reason("T1", "C1", "h") == "source deleted"
    assert stores.tombstones.reason("T1", "C2", "h") is None  # control: another channel
    assert stores.tombstones.reason("T1", "C1", "other") is None
    stores.tombstones.add("T1", "C1", "h", "rejected", T0 + timedelta(hours=1))
    assert stores.tombstones.reason("T1", "C1", "h") == "rejected"


def test_forgetting_tombstones_drops_only_those_hashes_of_that_channel(stores):
    for channel, content_hash in (("C1", "a"), ("C1", "b"), ("C2", "a")):
        stores.tombstones.add("T1", channel, content_hash, "source deleted", T0)
    with stores.transaction():
        stores.tombstones.forget("T1", "C1", ["a", "absent"])
        assert stores.tombstones.reason("T1", "C1", "a") is None  # seen inside the transaction
    assert stores.tombstones.reason("T1", "C1", "a") is None
    assert stores.tombstones.reason("T1", "C1", "b") == "source deleted"  # control: another hash
    assert stores.tombstones.reason("T1", "C2", "a") == "source deleted"  # control: another channel


# ---- PageStore ----


def _page(slug: str, kind: PageKind = PageKind.TOPIC, channel: str = "C1") -> PageRef:
    return PageRef("T1", channel, slug, kind, slug.title())


def _version(page: PageRef, n: int, body: str = "body", at: datetime = T0) -> PageVersion:
    return PageVersion(page, n, at, (Section("s1", "One", 1, body, ("f1",)),), ("f1", "f2"), None)


def test_routes_make_pages_and_sections_idempotently(stores):
    overview = _page("overview", PageKind.OVERVIEW)
    topic = _page("deploys")
    stores.pages.record_routes("f2", [Route(topic, "b", "Bee", 2), Route(topic, "a", "Ay", 1)])
    stores.pages.record_routes("f1", [Route(topic, "a", "Ay", 1), Route(overview, "x", "Ex", 0)])
    stores.pages.record_routes("f1", [Route(topic, "a", "Ay", 1)])
    assert stores.pages.page(topic.page_id) == topic
    assert stores.pages.page("T1/C1/none") is None
    assert stores.pages.sections_of(topic.page_id) == {"a": ("Ay", 1, ["f1", "f2"]), "b": ("Bee", 2, ["f2"])}
    assert stores.pages.sections_holding(topic.page_id, ["f1"]) == {"a"}
    assert stores.pages.sections_holding(topic.page_id, ["f2", "zz"]) == {"a", "b"}
    assert stores.pages.sections_holding(topic.page_id, []) == set()
    assert stores.pages.current(topic.page_id) is None


def test_pages_list_by_scope_in_channel_kind_slug_order_with_their_versions(stores):
    pages = [
        _page("zeta"),
        _page("people", PageKind.ENTITY),
        _page("overview", PageKind.OVERVIEW),
        _page("decisions", PageKind.ROLE),
        _page("alpha"),
        _page("overview", PageKind.OVERVIEW, channel="C0"),
        _page("overview", PageKind.OVERVIEW, channel="C9"),
    ]
    for i, page in enumerate(pages):
        stores.pages.record_routes(f"f{i}", [Route(page, "s", "S", 0)])
    stores.pages.save(_version(pages[0], 1))
    listed = stores.pages.pages("T1", ["C1", "C0"])
    assert [(p.channel, p.slug, v) for p, v in listed] == [
        ("C0", "overview", 0),
        ("C1", "overview", 0),
        ("C1", "decisions", 0),
        ("C1", "alpha", 0),
        ("C1", "zeta", 1),
        ("C1", "people", 0),
    ]
    assert stores.pages.pages("T2", ["C1"]) == []


def test_page_versions_follow_each_other_and_a_stale_save_is_refused(stores):
    page = _page("deploys")
    stores.pages.record_routes("f1", [Route(page, "s1", "One", 1)])
    v1 = _version(page, 1, "first", T0)
    v2 = PageVersion(page, 2, T0 + timedelta(hours=1), v1.sections, ("f1",), "writer fell back")
    stores.pages.save(v1)
    stores.pages.save(v2)
    with pytest.raises(StalePage):
        stores.pages.save(_version(page, 2, "a second writer"))
    with pytest.raises(StalePage):
        stores.pages.save(_version(_page("never-routed"), 1))
    assert stores.pages.current(page.page_id) == v2
    assert stores.pages.version(page.page_id, 1) == v1
    assert stores.pages.version(page.page_id, 3) is None
    assert stores.pages.version("T1/C1/none", 1) is None


def test_purging_facts_drops_pages_left_empty_and_restarts_the_others(stores):
    shared, alone = _page("shared"), _page("alone")
    stores.pages.record_routes("gone", [Route(shared, "s", "S", 0), Route(alone, "s", "S", 0)])
    stores.pages.record_routes("kept", [Route(shared, "s", "S", 0)])
    stores.pages.save(_version(shared, 1))
    stores.pages.save(_version(alone, 1))
    assert stores.pages.purge_facts(["gone", "unknown"]) == [shared.page_id]
    assert stores.pages.page(alone.page_id) is None
    assert stores.pages.current(shared.page_id) is None and stores.pages.version(shared.page_id, 1) is None
    assert stores.pages.sections_of(shared.page_id) == {"s": ("S", 0, ["kept"])}
    assert [p.slug for p, _ in stores.pages.pages("T1", ["C1"])] == ["shared"]
    stores.pages.save(_version(shared, 1, "again"))  # starts again at version 1
    assert stores.pages.current(shared.page_id).sections[0].body == "again"
    assert stores.pages.purge_facts([]) == []
