"""Re-index from stored raw messages: new extraction lands, a second run changes nothing."""

from __future__ import annotations

import json
import sqlite3

import pytest

from teamlore.capabilities.reindex import reindex_channel
from teamlore.domain import Scope
from teamlore.extraction import Extraction, ExtractionStatus

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


def test_an_interrupted_reindex_resumes_after_its_last_checkpoint(make_lore, monkeypatch):
    from teamlore.capabilities import reindex

    monkeypatch.setattr(reindex, "PAGE", 1)  # one message per committed batch
    before = make_lore("r", extractor=NothingExtractor())
    texts = ("We decided Redis is the queue.", "The office lease ends in December.", "Lena owns the docs.")
    put(before, *(event(t, message_id=f"{n}.0001") for n, t in enumerate(texts, start=1)))
    before.close()
    lore = make_lore("r")
    seen: list[str] = []

    def stop_after_first(last: str) -> None:
        seen.append(last)
        raise KeyboardInterrupt  # the operator pressed Ctrl-C right after the first batch committed

    with pytest.raises(KeyboardInterrupt):
        reindex_channel(WS, "C1", lore.pipeline, checkpoint=stop_after_first)
    assert seen == ["1.0001"] and len(lore.reader.list(Scope(WS, ["C1"])).hits) == 1
    resumed = reindex_channel(WS, "C1", lore.pipeline, after=seen[-1])
    assert (resumed.messages, resumed.created) == (2, 2)
    assert len(lore.reader.list(Scope(WS, ["C1"])).hits) == 3


def test_the_reindex_command_resumes_from_its_checkpoint_and_then_starts_over(make_lore, tmp_path, capsys):
    from teamlore.cli import main
    from teamlore.stores.protocols import Checkpoint

    lore = make_lore("cli", extractor=NothingExtractor())
    put(lore, event("We decided Redis is the queue.", message_id="1.0001"))
    put(lore, event("The office lease ends in December.", message_id="2.0001"))
    # As an interrupted run leaves it: the first message's batch committed.
    lore.stores.checkpoints.put("reindex", WS, "C1", Checkpoint("1.0001", False, 1), lore.clock())
    lore.close()
    args = ["reindex", "-w", WS, "-c", "C1", "--data-dir", str(tmp_path / "cli"), "--json"]

    def run(*extra: str) -> int:
        with pytest.raises(SystemExit) as done:
            main([*args, *extra])
        assert done.value.code == 0
        return json.loads(capsys.readouterr().out)["C1"]["messages"]

    assert run() == 1  # only what came after the checkpoint
    assert run() == 2  # the last run finished: the next one starts over
    assert run("--restart") == 2
