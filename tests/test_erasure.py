"""Erasing a person: their text gone from messages, facts, the keyword index and vectors."""

from __future__ import annotations

import sqlite3

import pytest

from teamlore.capabilities.facts import SearchMode
from teamlore.domain import ReadView, Scope

from .conftest import WS, event
from .helpers import put

pytestmark = pytest.mark.every_fact_store

SCOPE = Scope(WS, ["C1"])


def test_erasure_removes_a_persons_text_everywhere_and_keeps_the_audit_log(lore):
    put(
        lore,
        event("The Zanzibar project codename is Marigold.", author_id="U9", author_name="zed"),
        event("The office lease ends in December.", author_id="U9", author_name="zed"),
        event(
            "The office lease ends in December.", author_id="U2", author_name="ann", ts="2026-01-06T10:00:00Z"
        ),
    )
    lore.wiki.flush(everything=True)
    pages = [lore.stores.pages.current(p.page_id) for p, v in lore.stores.pages.pages(WS, ["C1"]) if v]
    assert any("Marigold" in page.markdown for page in pages)  # control: the wiki showed it
    # Control: before the erasure the statement is there to be found.
    found = lore.reader.search("Zanzibar Marigold codename", SCOPE, mode=SearchMode.KEYWORD).hits
    assert found[0].text == "The Zanzibar project codename is Marigold."
    audit_before = (
        sqlite3.connect(lore.settings.db_path).execute("SELECT count(*) FROM audit_log").fetchone()[0]
    )
    # Model output is cached by a hash of its prompt: it may quote them, so erasure clears it.
    lore.stores.model_cache.put("k", "extract", "m", '["The Zanzibar project codename is Marigold."]')
    report = lore.erase_author(WS, "U9", "dpo")
    assert report.messages == 2 and len(report.facts_erased) == 1
    assert len(report.facts_kept_without_their_evidence) == 1

    lore.wiki.flush(everything=True)
    db = sqlite3.connect(lore.settings.db_path)
    dump = "\n".join(db.iterdump())
    assert "Marigold" not in dump and "Zanzibar" not in dump
    assert "zed" not in {r[0] for r in db.execute("SELECT author_name FROM messages")}
    for mode in SearchMode:
        history = ReadView(include_history=True)
        hits = lore.reader.search("Zanzibar Marigold codename", SCOPE, history, mode=mode).hits
        assert not {h.key for h in hits} & set(report.facts_erased), mode
        assert not any("Marigold" in h.text for h in hits), mode
    # The pages were written again without it; the shared statement stays, on the other
    # person's evidence only.
    assert "office lease" in lore.stores.pages.current(f"{WS}/C1/overview").markdown
    kept = lore.reader.search("office lease", SCOPE).hits[0]
    assert kept.text == "The office lease ends in December."
    assert [s.author_name for s in kept.sources] == ["ann"]
    audit_after = db.execute("SELECT count(*) FROM audit_log").fetchone()[0]
    assert audit_after > audit_before
    assert db.execute("SELECT event FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone() == ("erased",)


def test_an_answer_built_from_an_erased_question_is_erased_with_it_and_read_again(lore):
    zed = {"author_id": "U9", "author_name": "zed"}
    put(
        lore,
        event("Is the Snorkelwhale offsite still on?", message_id="q1", thread_id="q1", **zed),
        event("yes, still on", message_id="a1", thread_id="q1", author_id="U2", author_name="ann"),
        event("Who owns the Brambleduck billing service?", message_id="q2", thread_id="q2", **zed),
        event("dana", message_id="a2", thread_id="q2", author_id="U2", author_name="ann"),
    )
    history = ReadView(include_history=True)
    before = lore.reader.search("Snorkelwhale offsite Brambleduck billing", SCOPE, history).hits
    answers = {h.key for h in before if "(re:" in h.text}
    assert len(answers) == 2  # control: the answers quote the questions
    report = lore.erase_author(WS, "U9", "dpo")
    assert report.answers_reread == 2 and answers <= set(report.facts_erased)
    for mode in SearchMode:
        hits = lore.reader.search("Snorkelwhale offsite Brambleduck billing", SCOPE, history, mode=mode).hits
        assert not any("snorkelwhale" in h.text.lower() or "brambleduck" in h.text.lower() for h in hits), (
            mode
        )
    for fact_id in answers:
        versions = lore.reader.history(fact_id, SCOPE).versions
        assert all(v.fact.statement == "" for v in versions)
    # The answers themselves are still there, as said (control: the other side of the erasure).
    kept = lore.reader.search("still on", SCOPE, mode=SearchMode.KEYWORD).hits
    assert any(h.text.startswith("yes, still on") for h in kept)
