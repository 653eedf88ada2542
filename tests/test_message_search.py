"""Nothing said is lost to search: every message is searchable through the one gate, beside the
facts; a fact covering a message stands for it; a retired value never returns as current through
the message that said it. Scope, as-of, known-at, edits, deletes and erasure hold for messages as
for facts, each exclusion paired with its control.

Every test runs against each message index (``every_fact_store``): the SQLite file's with the
embedded fact store, Weaviate's (``stores/weaviate/messages.py``, over the wire server) with the
Weaviate one, as the server stack pairs them. What a test reads below the gate, it reads from
whichever index the store holds (``_stored``, ``_raw_keyword``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from teamlore.capabilities import views
from teamlore.capabilities.facts import SearchMode
from teamlore.capabilities.hits import FactView, MessageView
from teamlore.domain import FactStatus, ReadView, Scope
from teamlore.errors import EmbedderUnavailable
from teamlore.stores.database import Database
from teamlore.stores.embedded.conversations import Conversations
from teamlore.stores.embedded.message_index import EmbeddedMessageIndex
from teamlore.workers import mutations

from .conftest import WS, event
from .helpers import KeepsNothing, put

pytestmark = pytest.mark.every_fact_store

SCOPE = Scope(WS, ["C1"])
HISTORY = ReadView(include_history=True)
PLAIN = "Our status page is hosted by Statuspage."


@pytest.fixture
def bare(make_lore):
    return make_lore("bare", extractor=KeepsNothing())


def _messages(result) -> list[str]:
    return [h.message.message_id for h in result.hits if isinstance(h, MessageView)]


def _facts(result) -> list[str]:
    return [h.fact.statement for h in result.hits if isinstance(h, FactView)]


def _in_file(lore) -> bool:
    return isinstance(lore.stores.message_index, EmbeddedMessageIndex)


def _stored(lore, message_id: str) -> list[tuple[str, str, str | None, bool]]:
    """(text, author name, cached vector key, holds a vector) of each stored version of a message
    of C1, in version order, read from the index the store holds."""
    index = lore.stores.message_index
    if _in_file(lore):
        rows = lore.stores.db.conn.execute(
            "SELECT text, author_name, embedding_key FROM message_versions"
            " WHERE channel = 'C1' AND message_id = ? ORDER BY version",
            (message_id,),
        ).fetchall()
        return [(r[0], r[1], r[2], r[2] is not None) for r in rows]
    from weaviate.classes.query import Filter

    found = index._c.query.fetch_objects(
        filters=Filter.by_property("channel").equal("C1")
        & Filter.by_property("message_id").equal(message_id),
        limit=100,
    )
    out = []
    for obj in sorted(found.objects, key=lambda o: o.properties["version"]):
        full = index._c.query.fetch_object_by_id(obj.uuid, include_vector=True)
        p = full.properties
        out.append((p["text"], p["author_name"], p.get("embedding_key"), bool(full.vector)))
    return out


def _raw_keyword(lore, text: str, view: ReadView) -> set[str]:
    """Message ids the index's raw keyword query returns (before the gate)."""
    hits = lore.stores.message_index._keyword(text, SCOPE, view.resolved(lore.clock()), 50)
    return {h.message.message_id for h in hits}


def _raw(
    lore, mode: SearchMode, text: str, scope: Scope, view: ReadView = ReadView()
) -> list[tuple[str, str]]:
    """(channel, text) of what the index's raw query of this mode returns, before the gate: scope
    and time must be compiled into it (defence in depth), not left to the gate."""
    index, resolved = lore.stores.message_index, view.resolved(lore.clock())
    vector = lore.embedder.embed_query(text)
    if mode is SearchMode.KEYWORD:
        hits = index._keyword(text, scope, resolved, 50)
    elif mode is SearchMode.SEMANTIC:
        hits = index._semantic(vector, scope, resolved, 50)
    else:
        hits = index._hybrid(text, vector, scope, resolved, 50)
    return [(h.message.channel, h.message.text) for h in hits]


def _break_scope_and_time(lore, monkeypatch) -> None:
    """A backend bug: the index forgets scope and time in its raw queries."""
    if _in_file(lore):
        monkeypatch.setattr(
            Conversations,
            "_scope_parts",
            lambda self, scope, view: [(c, self._members[c], self._member_rows[c]) for c in self._members],
        )
        return
    from weaviate.classes.query import Filter

    from teamlore.stores.weaviate import filters

    monkeypatch.setattr(
        filters, "readable_messages", lambda scope, view: Filter.by_property("has_text").equal(True)
    )


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_message_no_fact_covers_is_found_and_says_what_it_is(bare, mode):
    put(bare, event(PLAIN, message_id="m1", author_name="rita"), event("lunch at noon?", message_id="m2"))
    result = bare.reader.search("where is our status page hosted", SCOPE, mode=mode, k=1)
    hit = result.hits[0]
    assert isinstance(hit, MessageView) and hit.kind == "message"
    assert (hit.message.message_id, hit.text) == ("m1", PLAIN)
    assert [s.message_id for s in hit.sources] == ["m1"] and hit.sources[0].author_name == "rita"
    assert result.receipt.kinds == {"message": 1}


@pytest.mark.parametrize("mode", list(SearchMode))
def test_the_same_query_finds_a_private_message_inside_its_scope_and_not_outside(bare, mode):
    put(
        bare, event("The Globex renewal is 40 dollars a seat.", channel="CPRIV", channel_visibility="private")
    )
    put(bare, event("The cafeteria serves tacos on Friday.", channel="CPUB"))
    query = "Globex renewal price per seat"
    inside = bare.reader.search(query, Scope(WS, ["CPRIV"]), mode=mode)
    outside = bare.reader.search(query, Scope(WS, ["CPUB"]), mode=mode)
    assert [h.channel for h in inside.hits] == ["CPRIV"]
    assert all(h.channel == "CPUB" for h in outside.hits)
    assert bare.reader.search(query, Scope("T2", ["CPRIV"]), mode=mode).hits == ()
    # Below the gate too: the index's own query stays inside the scope.
    assert {c for c, _ in _raw(bare, mode, query, Scope(WS, ["CPRIV"]))} == {"CPRIV"}
    assert {c for c, _ in _raw(bare, mode, query, Scope(WS, ["CPUB"]))} <= {"CPUB"}
    assert _raw(bare, mode, query, Scope("T2", ["CPRIV"])) == []


def test_the_gate_withholds_messages_a_broken_index_lets_through(bare, monkeypatch):
    put(
        bare, event("The Globex renewal is 40 dollars a seat.", channel="CPRIV", channel_visibility="private")
    )
    put(bare, event("The cafeteria serves tacos on Friday.", channel="CPUB"))
    _break_scope_and_time(bare, monkeypatch)
    result = bare.reader.search("Globex renewal price", Scope(WS, ["CPUB"]), mode=SearchMode.SEMANTIC)
    assert all(h.channel == "CPUB" for h in result.hits)
    assert result.receipt.withheld.get("out_of_scope") == 1
    control = bare.reader.search("Globex renewal price", Scope(WS, ["CPRIV"]), mode=SearchMode.SEMANTIC)
    assert [h.channel for h in control.hits] == ["CPRIV"]


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_message_is_found_as_of_when_it_was_posted_and_not_before(bare, mode):
    put(bare, event(PLAIN, ts="2026-03-01T10:00:00Z"))
    before = ReadView(valid_at=datetime(2026, 2, 28, tzinfo=UTC))
    after = ReadView(valid_at=datetime(2026, 3, 2, tzinfo=UTC))
    assert bare.reader.search("status page hosted", SCOPE, before, mode=mode).hits == ()
    assert [h.text for h in bare.reader.search("status page hosted", SCOPE, after, mode=mode).hits] == [PLAIN]
    # Below the gate too: the index's own query holds the time predicate.
    assert _raw(bare, mode, "status page hosted", SCOPE, before) == []
    assert _raw(bare, mode, "status page hosted", SCOPE, after) == [("C1", PLAIN)]


def test_known_at_finds_the_text_a_message_had_then(bare, clock):
    put(bare, event("The release train leaves on Tuesdays.", message_id="m1"))
    edited_at = clock.advance(days=1)
    clock.advance(days=1)
    put(bare, event("The release train leaves on Thursdays.", kind="message.edited", message_id="m1"))
    then = ReadView(known_at=edited_at)
    now = ReadView()
    assert [h.text for h in bare.reader.search("release train", SCOPE, then).hits] == [
        "The release train leaves on Tuesdays."
    ]
    assert [h.text for h in bare.reader.search("release train", SCOPE, now).hits] == [
        "The release train leaves on Thursdays."
    ]
    assert bare.reader.search("Tuesdays", SCOPE, now, mode=SearchMode.KEYWORD).hits == ()
    assert bare.reader.search("Tuesdays", SCOPE, then, mode=SearchMode.KEYWORD).hits != ()
    assert (
        bare.reader.search("release train", SCOPE, ReadView(known_at=edited_at - timedelta(days=2))).hits
        == ()
    )
    # Below the gate too: one version per moment known, and none before the message was stored.
    for mode in SearchMode:
        assert _raw(bare, mode, "release train", SCOPE, then) == [
            ("C1", "The release train leaves on Tuesdays.")
        ]
        assert _raw(bare, mode, "release train", SCOPE, now) == [
            ("C1", "The release train leaves on Thursdays.")
        ]
        assert (
            _raw(bare, mode, "release train", SCOPE, ReadView(known_at=edited_at - timedelta(days=2))) == []
        )


def test_a_deleted_message_is_gone_from_every_mode_and_from_the_index_itself(bare, clock):
    put(bare, event(PLAIN, message_id="m1"), event("The build machines have 64 GB of RAM.", message_id="m2"))
    before = clock.advance(hours=1)
    clock.advance(hours=1)
    put(bare, event(kind="message.deleted", message_id="m1"))
    for mode in SearchMode:
        assert "m1" not in _messages(bare.reader.search("status page hosted", SCOPE, mode=mode, k=5))
        # Its text is gone, not hidden: a view of the past does not bring it back either.
        past = bare.reader.search("status page hosted", SCOPE, ReadView(known_at=before), mode=mode, k=5)
        assert "m1" not in _messages(past)
    assert "m2" in _messages(bare.reader.search("build machines RAM", SCOPE))  # the control
    # The raw index (before the gate) holds no word of it, in any view.
    index = bare.stores.message_index
    for view in (ReadView(), ReadView(known_at=before), ReadView(include_history=True)):
        assert "m1" not in _raw_keyword(bare, "status page hosted", view)
        if _in_file(bare):
            assert index._matches("status page hosted", SCOPE, view.resolved(bare.clock())) == {}
    assert "m2" in _raw_keyword(bare, "build machines RAM", ReadView(known_at=before))  # the control
    rows = _stored(bare, "m1")
    assert rows and all((text, key, vector) == ("", None, False) for text, _, key, vector in rows)
    assert _stored(bare, "m2")[0][3]  # the control: a live message keeps its vector


def test_erasure_leaves_no_text_no_index_row_and_no_vector_of_the_persons_messages(bare):
    put(
        bare,
        event(
            "The vault master key rotates every quarter.", message_id="m1", author_id="U9", author_name="zed"
        ),
        event("Noted, thanks for the heads up.", message_id="m2", ts="2026-01-05T10:01:00Z"),
    )
    conn = bare.stores.db.conn
    follower_key = _stored(bare, "m2")[0][2]
    assert "m1" in _messages(bare.reader.search("vault master key rotation", SCOPE))
    assert "m1" in _raw_keyword(bare, "vault master key zed", ReadView())  # before: found
    bare.erase_author(WS, "U9", "dpo")
    for mode in SearchMode:
        assert "m1" not in _messages(bare.reader.search("vault master key rotation", SCOPE, mode=mode))
    assert "m1" not in _raw_keyword(bare, "vault master key zed", ReadView())
    if _in_file(bare):
        view = ReadView().resolved(bare.clock())
        assert bare.stores.message_index._matches("vault master key zed", SCOPE, view) == {}
    assert _stored(bare, "m1") == [("", "", None, False)]
    # The next message was embedded with the erased one as its context: it has a new vector, and
    # the old one (holding the erased words) is gone.
    new_key = _stored(bare, "m2")[0][2]
    assert new_key is not None and new_key != follower_key and _stored(bare, "m2")[0][3]
    assert conn.execute("SELECT count(*) FROM embeddings WHERE key = ?", (follower_key,)).fetchone()[0] == 0
    assert "m2" in _messages(bare.reader.search("heads up noted", SCOPE))  # the control


def test_a_message_is_found_through_the_conversation_around_it(bare):
    put(
        bare,
        event("look at this one", message_id="m1", ts="2026-01-06T10:00:00Z", author_name="mel"),
        event("I painted that lake sunrise last year", message_id="m2", ts="2026-01-06T10:01:00Z"),
        event("The cafeteria serves tacos on Friday.", message_id="m3", ts="2026-01-09T10:00:00Z"),
    )
    found = _messages(bare.reader.search("sunrise painting", SCOPE, mode=SearchMode.KEYWORD, k=3))
    assert found[:2] == ["m2", "m1"]  # m1 shares no word with the query: its neighbour does
    assert "m3" not in found  # days later: another conversation


def test_a_thread_reply_is_found_through_its_opening_question(bare):
    put(
        bare,
        event("who owns the billing service?", message_id="q1", ts="2026-01-06T10:00:00Z"),
        event("that's me", message_id="a1", thread_id="q1", ts="2026-01-06T11:00:00Z", author_name="dana"),
        event("the office plants need water", message_id="x1", ts="2026-01-06T16:30:00Z"),
    )
    found = _messages(bare.reader.search("billing service owner", SCOPE, mode=SearchMode.KEYWORD, k=3))
    assert set(found[:2]) == {"q1", "a1"} and "x1" not in found


def test_a_covered_message_is_shown_as_its_fact(lore, bare):
    for store in (lore, bare):
        put(store, event("The staging database is PostgreSQL 14.", message_id="m1"))
    covered = lore.reader.search("staging database", SCOPE)
    assert [h.kind for h in covered.hits] == ["fact"]
    assert covered.hits[0].sources[0].message_id == "m1"
    control = bare.reader.search("staging database", SCOPE)  # the same message, no fact
    assert [h.kind for h in control.hits] == ["message"]


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_message_whose_fact_was_replaced_brings_back_the_current_value_not_its_own(lore, mode):
    put(lore, event("The staging database is PostgreSQL 14.", message_id="m1", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The staging database is PostgreSQL 16.", message_id="m2", ts="2026-02-05T10:00:00Z"))
    result = lore.reader.search("staging database PostgreSQL 14", SCOPE, mode=mode)
    texts = [h.text for h in result.hits]
    assert "The staging database is PostgreSQL 16." in texts
    assert not any("14" in t for t in texts)
    assert all(isinstance(h, FactView) for h in result.hits if "staging" in h.text)
    # What was said stays findable: shown under the current value as what it replaced.
    current = next(h for h in result.hits if h.text == "The staging database is PostgreSQL 16.")
    assert [m.message.message_id for m in current.replaced] == ["m1"]
    assert current.replaced[0].text == "The staging database is PostgreSQL 14."
    assert views.fact_view_json(current)["replaced"][0]["message_id"] == "m1"
    history = lore.reader.search("staging database PostgreSQL 14", SCOPE, HISTORY, mode=mode)
    kinds = {h.text: h.kind for h in history.hits}
    assert kinds["The staging database is PostgreSQL 14."] == "retired_fact"
    assert kinds["The staging database is PostgreSQL 16."] == "fact"
    # As of a moment before the change, the old value was the current one.
    then = lore.reader.search("staging database", SCOPE, ReadView(valid_at=datetime(2026, 1, 20, tzinfo=UTC)))
    assert [h.text for h in then.hits if "staging" in h.text] == ["The staging database is PostgreSQL 14."]


def test_a_message_whose_fact_a_reviewer_corrected_stands_as_the_correction(lore):
    placed = put(lore, event("The staging database is PostgreSQL 14.", message_id="m1"))[0]
    lore.review.correct_fact(placed.created[0], SCOPE, "The staging database is MySQL 8.", "rita")
    result = lore.reader.search("staging database PostgreSQL", SCOPE)
    assert [h.text for h in result.hits] == ["The staging database is MySQL 8."]


def test_a_message_whose_only_fact_was_retracted_is_withheld_not_shown_bare(lore, bare):
    for store in (lore, bare):
        put(store, event("The staging database is PostgreSQL 14.", message_id="m1"))
    fact = lore.stores.facts.current_version(lore.stores.facts.current_ids(WS, "C1")[0])
    now = lore.clock()
    retracted = mutations.next_version(fact, now, status=FactStatus.RETRACTED)
    lore.stores.facts.write_version(
        retracted, fact, mutations.audit_event("retracted", retracted, now, "rejected by a reviewer", "rita")
    )
    result = lore.reader.search("staging database PostgreSQL", SCOPE)
    assert result.hits == ()
    assert result.receipt.withheld == {"retired_value": 1, "retracted": 1}
    # The control: the same message with no fact at all is an answer.
    assert _messages(bare.reader.search("staging database PostgreSQL", SCOPE)) == ["m1"]


def test_the_keyword_fallback_gates_messages_the_same_way(lore, monkeypatch):
    put(lore, event("The staging database is PostgreSQL 14.", message_id="m1", ts="2026-01-05T10:00:00Z"))
    put(lore, event("The staging database is PostgreSQL 16.", message_id="m2", ts="2026-02-05T10:00:00Z"))
    put(lore, event(PLAIN, message_id="m3"))

    def broken(text):
        raise EmbedderUnavailable("the embedder is down")

    monkeypatch.setattr(lore.reader._embedder, "embed_query", broken)
    result = lore.reader.search("staging database PostgreSQL 14", SCOPE, mode=SearchMode.HYBRID)
    assert result.receipt.fallback_taken and result.receipt.mode_used == "keyword"
    assert not any("14" in h.text for h in result.hits)
    assert "The staging database is PostgreSQL 16." in [h.text for h in result.hits]
    assert PLAIN in [
        h.text for h in lore.reader.search("status page hosted", SCOPE, mode=SearchMode.HYBRID).hits
    ]


def test_a_store_of_schema_1_indexes_its_stored_messages_when_opened(tmp_path):
    path = tmp_path / "old.sqlite3"
    db = Database(path)
    db.conn.execute(
        "INSERT INTO messages (workspace, channel, message_id, platform, thread_id, author_id, author_name,"
        " ts, text, permalink, content_hash, edited_at, deleted_at, recorded_at)"
        " VALUES ('T1','C1','m1','slack',NULL,'U1','rita',?,?,'','h',NULL,NULL,?)",
        (1_767_607_200_000_000, PLAIN, 1_767_607_200_000_000),
    )
    db.conn.executescript(
        "DELETE FROM message_versions; UPDATE meta SET value = '1' WHERE key = 'schema_version';"
    )
    db.close()
    reopened = Database(path)
    assert reopened.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "5"
    memory = Conversations()
    memory.refresh(reopened.conn)
    found = memory.keyword("statuspage", Scope("T1", ["C1"]), ReadView().resolved(), 5)
    vids = [vid for vid, _ in found]
    found_ids = reopened.conn.execute(
        f"SELECT message_id FROM message_versions WHERE vid IN ({','.join('?' * len(vids))})", vids
    ).fetchall()
    assert [tuple(r) for r in found_ids] == [("m1",)]
    assert memory.keyword("statuspage", Scope("T1", ["C2"]), ReadView().resolved(), 5) == []  # control
    reopened.close()


def test_a_store_of_schema_2_loses_its_message_keyword_table_with_every_word_in_it(tmp_path):
    """Messages are ranked by keyword in memory since schema 3: the FTS5 table of schema 2 goes
    (it held the words of messages deleted since, until merged); so does the table of every fact
    version since schema 4 (the resolver reads ``fact_subjects``)."""
    path = tmp_path / "old.sqlite3"
    db = Database(path)
    db.conn.executescript(
        "CREATE VIRTUAL TABLE message_fts USING fts5(text, author_name, channel,"
        " content='message_versions', content_rowid='vid', tokenize='porter unicode61 remove_diacritics 2');"
        " UPDATE meta SET value = '2' WHERE key = 'schema_version';"
    )
    db.close()
    reopened = Database(path)
    tables = {r[0] for r in reopened.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "message_fts" not in tables and "fact_fts" not in tables and "fact_subjects" in tables
    assert reopened.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "5"
    reopened.close()


def test_a_deleted_message_matches_nothing_not_even_by_its_author_also_after_a_rebuild(bare, clock):
    """The keyword index holds a deleted message's row (its place in time) but no word of it: the
    author's name no longer reaches it, as the index learns it and as it is rebuilt from the file.
    Control: the same author's other message, same query, same view."""
    put(
        bare,
        event(
            "The vault master key rotates every quarter.", message_id="m1", author_id="U9", author_name="zed"
        ),
        event(
            "Deploys go out on Fridays.",
            message_id="m2",
            author_id="U9",
            author_name="zed",
            ts="2026-01-05T10:01:00Z",
        ),
    )
    before = clock.advance(hours=1)
    clock.advance(hours=1)
    put(bare, event(kind="message.deleted", message_id="m1"))
    # Known before the deletion: the deleted version is in time, so only its words could hide it.
    raw_view = ReadView(known_at=before, include_history=True)
    assert _raw_keyword(bare, "what did zed say", raw_view) == {"m2"}
    if not _in_file(bare):
        return
    conn = bare.stores.db.conn
    index = bare.stores.message_index
    view = raw_view.resolved(bare.clock())
    for rebuilt in (False, True):
        if rebuilt:
            conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'message_index_generation'")
        found = index._matches("what did zed say", SCOPE, view)
        ids = {r[0]: r[1] for r in conn.execute("SELECT vid, message_id FROM message_versions")}
        assert sorted({ids[vid] for vid in found}) == ["m2"]
