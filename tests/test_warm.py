"""``Teamlore.warm``: what a server does before it opens its port (``teamlore serve``, MCP over
HTTP): the search indexes are loaded from the file, not at the first search, and what was loaded
is frozen out of the cyclic garbage collector's full passes."""

from __future__ import annotations

import gc

from teamlore.stores.embedded.facts import EmbeddedFactBackend

from .conftest import event


def _held(lore) -> int:
    held = lore.stores.message_index._memory.size
    if isinstance(lore.stores.facts, EmbeddedFactBackend):
        held += lore.stores.facts._index.size
    return held


def test_warm_loads_every_indexed_row_of_the_file_before_any_search(make_lore):
    lore = make_lore()
    lore.ingest(
        [
            event("The build machines have 64 GB of RAM.", ts="2026-01-05T10:00:00Z"),
            event("Our status page is hosted by Statuspage.", ts="2026-01-05T10:01:00Z"),
            event("thanks!", ts="2026-01-05T10:02:00Z"),
        ]
    )
    conn = lore.stores.db.conn
    tables = ["message_versions"]
    if isinstance(lore.stores.facts, EmbeddedFactBackend):
        tables.append("fact_versions")
    in_file = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables)
    assert in_file >= 3
    # A second instance on the same store, as a server process starts: nothing held yet (control).
    fresh = make_lore()
    assert _held(fresh) == 0
    frozen = gc.get_freeze_count()
    try:
        assert fresh.warm() == in_file
        assert _held(fresh) == in_file
        assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
