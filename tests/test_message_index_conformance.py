"""The ``MessageIndex`` protocol, the same answers from each implementation: the SQLite file's
(``stores/embedded/message_index.py``) and Weaviate's (``stores/weaviate/messages.py``, through the
real client over the wire server; a real Weaviate with TEAMLORE_TEST_WEAVIATE_URL). The store
holding it is the one a configuration builds: Weaviate's index comes with Weaviate's facts.

What the search suites see through the gate (tests/test_message_search.py) rests on these: a
version per text, the conversation lookups that make passages, the undo of a failed event, and
deletes and erasure reaching every version."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from teamlore.domain import Message, ReadView, Scope, content_hash

pytestmark = pytest.mark.every_fact_store

WS, CH = "T1", "C1"
SCOPE = Scope(WS, [CH])
T0 = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


@pytest.fixture
def lore(make_lore):
    return make_lore()


@pytest.fixture
def index(lore):
    return lore.stores.message_index


def message(
    message_id: str,
    text: str,
    minutes: float = 0,
    thread_id: str | None = None,
    author_id: str = "U1",
    channel: str = CH,
) -> Message:
    return Message(
        platform="slack",
        workspace=WS,
        channel=channel,
        message_id=message_id,
        thread_id=thread_id,
        author_id=author_id,
        author_name="rita" if author_id == "U1" else "zed",
        ts=T0 + timedelta(minutes=minutes),
        text=text,
        permalink="",
        content_hash=content_hash(text),
    )


def put(lore, index, *messages: Message, at: datetime | None = None) -> list[bool]:
    """Index each message with a vector of its own text, in one transaction as the pipeline does."""
    keys = lore.embedder.ensure_passages([m.text for m in messages])
    with lore.stores.transaction():
        return [index.put(m, m.text, at or lore.clock(), keys[m.text]) for m in messages]


def found(index, text: str, view: ReadView = ReadView(), scope: Scope = SCOPE, clock=None) -> list[str]:
    """(message id: text) of the raw keyword hits, before the gate."""
    hits = index._keyword(text, scope, view.resolved(clock()), 20)
    return sorted(f"{h.message.message_id}: {h.message.text}" for h in hits)


def ids(versions) -> list[str]:
    return [v.message_id for v in versions]


def test_a_new_text_is_a_new_version_and_the_same_text_again_writes_nothing(lore, index, clock):
    assert put(lore, index, message("m1", "The release train leaves on Tuesdays.")) == [True]
    assert put(lore, index, message("m1", "The release train leaves on Tuesdays.")) == [False]
    first = clock()
    edited = clock.advance(hours=1)
    assert put(lore, index, message("m1", "The release train leaves on Thursdays.")) == [True]
    current = index.current(WS, CH, "m1")
    assert (current.version, current.text, current.recorded_from) == (
        2,
        "The release train leaves on Thursdays.",
        edited,
    )
    then = ReadView(known_at=first)
    assert found(index, "release train", then, clock=lore.clock) == [
        "m1: The release train leaves on Tuesdays."
    ]
    assert found(index, "release train", clock=lore.clock) == ["m1: The release train leaves on Thursdays."]
    # Scope: the same query in another channel and another workspace finds nothing (control above).
    assert found(index, "release train", scope=Scope(WS, ["C2"]), clock=lore.clock) == []
    assert found(index, "release train", scope=Scope("T2", [CH]), clock=lore.clock) == []


def test_the_message_before_and_after_in_a_conversation(lore, index):
    put(
        lore,
        index,
        message("m1", "who owns the billing service?", 0),
        message("m2", "the payments team, I think", 30),
        message("m3", "lunch at noon?", 60 + 4 * 60 + 1),  # past the gap: another conversation
        message("r1", "that's me", 45, thread_id="m1"),
        message("r2", "and the invoices too", 50, thread_id="m1"),
        message("a", "same minute, first by id", 60),
        message("b", "same minute, second by id", 60),
    )
    # Top level: the previous message within the gap, ties broken by message id.
    assert index.before(WS, CH, "m2", None, T0 + timedelta(minutes=30)).message_id == "m1"
    assert index.before(WS, CH, "m3", None, T0 + timedelta(minutes=301)) is None
    assert index.before(WS, CH, "b", None, T0 + timedelta(minutes=60)).message_id == "a"
    assert index.before(WS, CH, "a", None, T0 + timedelta(minutes=60)).message_id == "m2"
    assert ids(index.after(WS, CH, "a", None, T0 + timedelta(minutes=60))) == ["b"]
    # A thread: a first reply follows the opening message; the opening message is followed by the
    # next top-level message and by its first reply.
    assert index.before(WS, CH, "r1", "m1", T0 + timedelta(minutes=45)).message_id == "m1"
    assert index.before(WS, CH, "r2", "m1", T0 + timedelta(minutes=50)).message_id == "r1"
    assert ids(index.after(WS, CH, "m1", None, T0)) == ["m2", "r1"]
    assert ids(index.after(WS, CH, "r2", "m1", T0 + timedelta(minutes=50))) == []
    assert index.current(WS, CH, "m2").text == "the payments team, I think"
    assert index.current(WS, "C2", "m2") is None  # control: another channel


def test_a_deleted_message_is_skipped_by_the_conversation_and_keeps_no_text_in_any_version(
    lore, index, clock
):
    put(lore, index, message("m1", "The vault key rotates quarterly.", 0), message("m2", "noted, thanks", 5))
    before_delete = clock.advance(hours=1)
    put(lore, index, message("m1", "The vault key rotates monthly.", 0))
    at = clock.advance(hours=1)
    with lore.stores.transaction():
        index.withdraw(WS, CH, "m1", at)
    assert index.current(WS, CH, "m1") is None
    assert index.before(WS, CH, "m2", None, T0 + timedelta(minutes=5)) is None
    for view in (ReadView(), ReadView(known_at=before_delete), ReadView(include_history=True)):
        assert found(index, "vault key rotates", view, clock=lore.clock) == []
        assert found(index, "rita", view, clock=lore.clock) == [
            "m2: noted, thanks"
        ]  # control: the same author


def test_a_failed_event_leaves_no_version_of_its_own(lore, index, clock):
    put(lore, index, message("m1", "The staging database is PostgreSQL 14."))
    clock.advance(hours=1)
    with pytest.raises(RuntimeError), lore.stores.transaction():
        edit = message("m1", "The staging database is PostgreSQL 16.")
        index.put(edit, edit.text, clock(), lore.embedder.ensure_passages([edit.text])[edit.text])
        index.put(message("m9", "A brand new message."), "A brand new message.", clock(), None)
        raise RuntimeError("the event fails after the index was written")
    current = index.current(WS, CH, "m1")
    assert (current.version, current.text) == (1, "The staging database is PostgreSQL 14.")
    assert index.current(WS, CH, "m9") is None
    assert found(index, "staging database", clock=lore.clock) == [
        "m1: The staging database is PostgreSQL 14."
    ]
    # Control: the same writes committed are there.
    put(lore, index, message("m1", "The staging database is PostgreSQL 16."))
    assert index.current(WS, CH, "m1").version == 2


def test_erasing_an_author_blanks_every_version_and_names_their_current_messages(lore, index, clock):
    put(
        lore,
        index,
        message("m1", "The vault master key rotates every quarter.", 0, author_id="U9"),
        message("m2", "Noted, thanks for the heads up.", 1),
    )
    clock.advance(hours=1)
    put(lore, index, message("m1", "The vault master key rotates every month.", 0, author_id="U9"))
    with lore.stores.transaction():
        erased = index.erase_author(WS, "U9")
    assert [(m.message_id, m.version, m.text, m.author_name) for m in erased.messages] == [("m1", 2, "", "")]
    assert erased.vectors >= 2  # both versions' passages were theirs alone
    view = ReadView(include_history=True)
    assert found(index, "vault master key zed", view, clock=lore.clock) == []
    assert found(index, "heads up", view, clock=lore.clock) == [
        "m2: Noted, thanks for the heads up."
    ]  # control
    assert index.current(WS, CH, "m1") is None
    vector = lore.embedder.embed_query("vault master key rotates")
    assert [
        h.message.message_id for h in index._semantic(vector, SCOPE, view.resolved(lore.clock()), 20)
    ] == ["m2"]


def test_a_new_vector_replaces_the_old_one_and_the_old_goes_unless_shared(lore, index):
    put(lore, index, message("m1", "The build machines have 64 GB of RAM."))
    keys = lore.embedder.ensure_passages(["rita: The build machines have 64 GB of RAM.", "spare"])
    old_key = lore.embedder.key("The build machines have 64 GB of RAM.")
    with lore.stores.transaction():
        index.set_vector(WS, CH, "m1", keys["rita: The build machines have 64 GB of RAM."])
    cache = lore.stores.embeddings
    assert cache.get_vectors([old_key]) == {}  # nothing else used it
    assert keys["spare"] in cache.get_vectors([keys["spare"]])  # control: an unrelated vector stays
    vector = lore.embedder.embed_query("build machines memory")
    hits = index._semantic(vector, SCOPE, ReadView().resolved(lore.clock()), 5)
    assert [h.message.message_id for h in hits] == ["m1"]
