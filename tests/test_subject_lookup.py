"""The resolver's lookup by words reads one channel's current facts only (``fact_subjects``): the
table holds exactly the current, not retired versions through every change a fact goes through,
and a store written before the table existed is filled when opened."""

from __future__ import annotations

from teamlore.stores.embedded import subjects
from teamlore.timeutil import SENTINEL_MICROS

from .conftest import WS, event
from .helpers import HashEmbedder, put


def _held(lore) -> set[int]:
    return {r[0] for r in lore.stores.db.conn.execute("SELECT rowid FROM fact_subjects")}


def _open_rows(lore) -> set[int]:
    return {
        r[0]
        for r in lore.stores.db.conn.execute(
            "SELECT vid FROM fact_versions WHERE recorded_to = ? AND status IN ('active', 'contested')",
            (SENTINEL_MICROS,),
        )
    }


def _related(lore, channel: str, text: str) -> list[str]:
    return [r.statement for r in lore.stores.facts.current_related(WS, channel, text, 12)]


def test_the_table_holds_exactly_the_current_open_versions_through_every_change(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    put(
        lore,
        event("The release date is May 5.", ts="2026-01-05T10:00:00Z"),
        event("Heads up: release moved to May 12, the vendor is late.", ts="2026-01-12T10:00:00Z"),
        event("The offsite is in Lisbon.", ts="2026-01-13T10:00:00Z"),
        event("Correction: the offsite is in Porto, not Lisbon.", ts="2026-01-13T10:10:00Z"),
        event("Standup is at 9:30.", ts="2026-01-14T10:00:00Z"),
        event("Standup is at 9:45.", ts="2026-01-14T10:20:00Z"),  # contested: both stay open
    )
    statuses = {
        r[0]: r[1]
        for r in lore.stores.db.conn.execute(
            "SELECT statement, status FROM fact_versions WHERE recorded_to = ?", (SENTINEL_MICROS,)
        )
    }
    assert statuses["The release date is May 5."] == "superseded"
    assert statuses["The offsite is in Lisbon."] == "retracted"
    assert statuses["Standup is at 9:30."] == "contested"
    assert _held(lore) == _open_rows(lore) and len(_held(lore)) == 4
    # A retired value is never a candidate again; the value that replaced it is.
    assert _related(lore, "C1", "release date") == ["Heads up: release moved to May 12, the vendor is late."]

    # Deleting the change's message brings the older value back, and into the table.
    change = "Heads up: release moved to May 12, the vendor is late."
    mid = lore.stores.db.conn.execute(
        "SELECT json_extract(evidence, '$[0]') FROM fact_versions WHERE statement = ?", (change,)
    ).fetchone()[0]
    put(lore, event(kind="message.deleted", message_id=mid, ts="2026-01-20T10:00:00Z"))
    assert _related(lore, "C1", "release date") == ["The release date is May 5."]
    assert _held(lore) == _open_rows(lore)

    # Erasing the author's messages erases their facts' rows too.
    lore.erase_author(WS, "U1", "dpo")
    assert _held(lore) == _open_rows(lore) == set()
    assert _related(lore, "C1", "release date") == []


def test_a_lookup_reads_its_own_channel_only(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    put(
        lore,
        event("The release date is May 5.", channel="C1"),
        event("The release date is June 9.", channel="C2"),
        event("The release date is July 1.", channel="C3", workspace="T2"),
    )
    assert _related(lore, "C1", "release moved") == ["The release date is May 5."]
    # Control: the same words in the other channel find that channel's fact.
    assert _related(lore, "C2", "release moved") == ["The release date is June 9."]
    assert [r.statement for r in lore.stores.facts.current_related("T2", "C3", "release moved", 12)] == [
        "The release date is July 1."
    ]


def test_a_store_written_before_the_table_existed_is_filled_when_opened(make_lore):
    lore = make_lore("hash", embedder=HashEmbedder())
    put(lore, event("The release date is May 5."), event("The offsite is in Lisbon."))
    conn = lore.stores.db.conn
    with lore.stores.db.transaction():
        conn.execute("DELETE FROM fact_subjects")
        conn.execute("DELETE FROM meta WHERE key = 'fact_subjects_built'")
    assert _related(lore, "C1", "release date") == []  # as an old store reads before it is opened
    again = make_lore("hash", embedder=HashEmbedder())  # the same data dir, opened again
    assert _held(again) == _open_rows(again) and len(_held(again)) == 2
    assert _related(again, "C1", "release date") == ["The release date is May 5."]
    # Once: opening it a third time writes nothing more.
    with again.stores.db.transaction() as conn:
        subjects.build_once(conn)
    assert _held(again) == _open_rows(again) and len(_held(again)) == 2


def test_a_row_left_behind_never_takes_a_current_fact_s_place(make_lore):
    """The lookup ranks inside the table before reading the versions; a row of a retired version
    left in the table (it should never be) must not push a current fact out of the best few."""
    lore = make_lore("hash", embedder=HashEmbedder())
    put(
        lore,
        event("The release date is May 5.", ts="2026-01-05T10:00:00Z"),
        event("Heads up: release moved to May 12, the vendor is late.", ts="2026-01-12T10:00:00Z"),
        event("The release notes live in the wiki.", ts="2026-01-13T10:00:00Z"),
        event("The release train leaves on Fridays.", ts="2026-01-14T10:00:00Z"),
    )
    conn = lore.stores.db.conn
    current = _related(lore, "C1", "release date")
    assert len(current) == 3 and "The release date is May 5." not in current
    two = [r.statement for r in lore.stores.facts.current_related(WS, "C1", "release date", 2)]
    assert two == current[:2]
    # The retired version's row put back, matching best of all ("release date" twice).
    retired = conn.execute(
        "SELECT vid FROM fact_versions WHERE statement = 'The release date is May 5.' AND recorded_to = ?",
        (SENTINEL_MICROS,),
    ).fetchone()[0]
    with lore.stores.db.transaction():
        subjects.add(conn, retired, WS, "C1", "The release date is May 5. release date", [])
    assert retired in _held(lore)  # the control: the stale row is there and would rank first
    assert [r.statement for r in lore.stores.facts.current_related(WS, "C1", "release date", 2)] == two
    assert _related(lore, "C1", "release date") == current
