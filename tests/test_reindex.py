"""Re-index from stored raw messages: new extraction lands, a second run changes nothing."""

from __future__ import annotations

import sqlite3

from teamlore.domain import Scope
from teamlore.extraction import Extraction, ExtractionStatus
from teamlore.workers.reindex import reindex_channel

from .conftest import WS, event
from .helpers import put


class NothingExtractor:
    def extract(self, message, thread_parent):
        return Extraction(ExtractionStatus.NOOP, ())


def test_reindex_extracts_again_from_stored_messages_and_is_idempotent(make_lore):
    before = make_lore("r", extractor=NothingExtractor())
    put(before, event("We decided Redis is the queue."), event("The office lease ends in December."))
    assert before.reader.list(Scope(WS, ["C1"])).hits == ()
    before.close()

    lore = make_lore("r")  # same store, the heuristic extractor this time
    report = reindex_channel(WS, "C1", lore.pipeline)
    assert (report.messages, report.created) == (2, 2)
    assert len(lore.reader.list(Scope(WS, ["C1"])).hits) == 2
    versions = sqlite3.connect(lore.settings.db_path).execute("SELECT count(*) FROM fact_versions").fetchone()
    again = reindex_channel(WS, "C1", lore.pipeline)
    assert (again.created, again.retracted) == (0, 0)
    assert (
        sqlite3.connect(lore.settings.db_path).execute("SELECT count(*) FROM fact_versions").fetchone()
        == versions
    )
